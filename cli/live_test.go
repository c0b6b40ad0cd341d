package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/internal/a11ytest"
	"github.com/aegis-run/aegis/internal/seedtest"
	"github.com/aegis-run/aegis/live"
)

// stderrWatch is a stderr that tests can wait on.
type stderrWatch struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func newStderrWatch() *stderrWatch { return &stderrWatch{more: make(chan struct{})} }

func (w *stderrWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	close(w.more)
	w.more = make(chan struct{})
	return n, err
}

func (w *stderrWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// wait returns the first submatch of re once stderr matches it.
func (w *stderrWatch) wait(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		w.mu.Lock()
		m := re.FindStringSubmatch(w.b.String())
		more := w.more
		w.mu.Unlock()
		if m != nil {
			return m[1]
		}
		select {
		case <-more:
		case <-timeout:
			t.Fatalf("stderr never matched %s:\n%s", re, w.String())
		}
	}
}

var (
	consoleLine = regexp.MustCompile(`live console: (http://\S+)`)
	streamLine  = regexp.MustCompile(`live stream:  (ws://\S+)`)
)

// liveDemo runs "aegis demo --listen" with the extra arguments and returns
// the console URL, the stream URL, the token, the evidence root, stderr and
// the exit code to come.
type liveDemo struct {
	console, stream, token, evidence string
	stderr                           *stderrWatch
	stdout                           *bytes.Buffer
	code                             chan int
}

func startLiveDemo(t *testing.T, extra ...string) *liveDemo {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	dir := t.TempDir()
	d := &liveDemo{evidence: filepath.Join(dir, "evidence"), stderr: newStderrWatch(), stdout: &bytes.Buffer{}, code: make(chan int, 1)}
	tokenFile := filepath.Join(dir, "token")
	args := append([]string{"demo", "--listen", "127.0.0.1:0", "--listen-token-file", tokenFile,
		"--evidence", d.evidence, "--approval-timeout", "90s", "--linger", "0"}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	go func() { d.code <- Run(ctx, args, Stdio{Out: d.stdout, Err: d.stderr}) }()
	d.console = d.stderr.wait(t, consoleLine)
	d.stream = d.stderr.wait(t, streamLine)
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(tokenFile); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	d.token = strings.TrimSpace(string(b))
	if !strings.Contains(d.console, "#token="+d.token) {
		t.Fatalf("console address %s does not carry the token of the token file", d.console)
	}
	return d
}

// exit waits for the demo's exit code.
func (d *liveDemo) exit(t *testing.T) int {
	t.Helper()
	select {
	case c := <-d.code:
		return c
	case <-time.After(3 * time.Minute):
		t.Fatalf("the demo did not end:\n%s", d.stderr.String())
	}
	return -1
}

// bundle is the demo's one bundle directory.
func (d *liveDemo) bundle(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir(d.evidence)
	if err != nil || len(entries) != 1 {
		t.Fatalf("evidence root: %v %v", entries, err)
	}
	return filepath.Join(d.evidence, entries[0].Name())
}

// eventLines returns events.jsonl, line by line.
func eventLines(t *testing.T, bundle string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bundle, evidence.FileEvents))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// watcher reads a stream until it ends and keeps the frames.
type watcher struct {
	conn   *websocket.Conn
	frames []string
	err    error
	done   chan struct{}
}

func watch(t *testing.T, url, token string, hdr http.Header) *watcher {
	t.Helper()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Authorization", "Bearer "+token)
	c, _, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return &watcher{conn: c, done: make(chan struct{})}
}

func (w *watcher) run() *watcher {
	go func() {
		defer close(w.done)
		for {
			w.conn.SetReadDeadline(time.Now().Add(3 * time.Minute))
			_, b, err := w.conn.ReadMessage()
			if err != nil {
				w.err = err
				return
			}
			w.frames = append(w.frames, string(b))
		}
	}()
	return w
}

// sessionFrames are the frames that are session events, without the
// error events the server sent this client alone about its own requests.
func (w *watcher) sessionFrames(t *testing.T) []string {
	t.Helper()
	<-w.done
	var ce *websocket.CloseError
	if !errors.As(w.err, &ce) || ce.Code != websocket.CloseNormalClosure {
		t.Errorf("watcher ended with %v, want a normal close", w.err)
	}
	var out []string
	for _, f := range w.frames {
		if err := seedtest.CheckEvent([]byte(f)); err != nil {
			t.Errorf("frame: %v: %s", err, f)
		}
		if strings.Contains(f, `"code":"`+live.CodeBadRequest+`"`) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// consoleBrowser opens the console in headless Chromium through the aegis
// driver, in a context of its own in the tests' shared browser.
func consoleBrowser(t *testing.T, consoleURL string) driver.Driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	origin := consoleURL[:strings.Index(consoleURL[len("http://"):], "/")+len("http://")]
	d, err := driver.Open(ctx, driver.Config{Mode: contract.ModePlaywright, Browsers: sharedBrowsers, AllowedOrigins: []string{origin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	if res, err := d.Act(ctx, contract.Action{ID: "open", Type: contract.ActNavigate, PolicyTags: []string{}, URL: consoleURL}); err != nil || !res.OK {
		t.Fatalf("open the console: %v %+v", err, res)
	}
	return d
}

// waitText observes the console until its visible text contains want.
func waitText(t *testing.T, d driver.Driver, want string) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		cancel()
		if err == nil && strings.Contains(obs.DOMText, want) {
			return obs.DOMText
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console never showed %q (last: %v)\n%s", want, err, obs.DOMText)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func click(t *testing.T, d driver.Driver, selector string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := d.Act(ctx, contract.Action{ID: "c", Type: contract.ActClick, PolicyTags: []string{}, Selector: selector}); err != nil || !res.OK {
		t.Fatalf("click %s: %v %+v", selector, err, res)
	}
}

// TestLiveConsoleApprovesWhileOthersWatch: the demo waits for approval on
// the live channel; the web console in Chromium approves it, while
// watchers join early and late, one never reads, one sends garbage, and
// intruders are refused. The run completes; every reading watcher got
// exactly the lines of events.jsonl, in order.
func TestLiveConsoleApprovesWhileOthersWatch(t *testing.T) {
	d := startLiveDemo(t)
	early := []*watcher{watch(t, d.stream, d.token, nil).run(), watch(t, d.stream, d.token, nil).run()}
	stalled := watch(t, d.stream, d.token, nil) // never reads
	defer stalled.conn.Close()
	garbage := watch(t, d.stream, d.token, nil)
	if err := garbage.conn.WriteMessage(websocket.TextMessage, []byte(`{"action":"approve-everything"}`)); err != nil {
		t.Fatal(err)
	}
	garbage.run()
	for _, tt := range []struct {
		name string
		hdr  http.Header
		want int
	}{
		{"no token", http.Header{}, http.StatusUnauthorized},
		{"wrong token", http.Header{"Authorization": {"Bearer " + strings.Repeat("A", len(d.token))}}, http.StatusUnauthorized},
		{"foreign origin", http.Header{"Authorization": {"Bearer " + d.token}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
	} {
		_, resp, err := websocket.DefaultDialer.Dial(d.stream, tt.hdr)
		if resp == nil || resp.StatusCode != tt.want {
			t.Errorf("%s: %v %v, want HTTP %d", tt.name, resp, err, tt.want)
		}
	}

	console := consoleBrowser(t, d.console)
	waitText(t, console, "Approval required")
	late := watch(t, d.stream, d.token, nil).run()
	// One approval: "Place order" (the password is typed where its secret
	// is bound, without approval).
	waitText(t, console, "Place order")
	click(t, console, "#approve")
	text := waitText(t, console, "Session completed")
	if code := d.exit(t); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, d.stdout, d.stderr)
	}
	if !strings.Contains(text, "approval granted") {
		t.Errorf("the console does not show the approvals:\n%s", text)
	}

	bundle := d.bundle(t)
	want := eventLines(t, bundle)
	for i, w := range append(early, late, garbage) {
		got := w.sessionFrames(t)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("watcher %d got %d events, events.jsonl has %d; they differ:\ngot  %q\nwant %q", i, len(got), len(want), got, want)
		}
	}
	if !strings.Contains(strings.Join(garbage.frames, "\n"), `"code":"bad_request"`) {
		t.Errorf("the garbage sender got no bad_request error: %q", garbage.frames)
	}
	decisions, _ := os.ReadFile(filepath.Join(bundle, evidence.FileDecisions))
	if !strings.Contains(string(decisions), `live client`) || !strings.Contains(string(decisions), `console`) {
		t.Errorf("the decisions do not name the console as the approver")
	}
	if !strings.Contains(string(decisions), `"channel":"live"`) {
		t.Errorf("the approval does not name the live console as its channel")
	}
	rep, err := evidence.Verify(context.Background(), bundle, evidence.VerifyOptions{})
	if err != nil || rep.Status != "completed" {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestLiveConsoleDenies: Deny in the console refuses the action; the demo
// cannot place its order and ends aborted by that refusal, which names
// the console.
func TestLiveConsoleDenies(t *testing.T) {
	d := startLiveDemo(t)
	console := consoleBrowser(t, d.console)
	waitText(t, console, "Approval required")
	click(t, console, "#deny")
	waitText(t, console, "approval refused")
	if code := d.exit(t); code != ExitAborted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitAborted, d.stderr)
	}
	if !strings.Contains(d.stderr.String(), "DENIED (high): approval_denied: denied by a person in the live console") {
		t.Errorf("stderr does not show the denial:\n%s", d.stderr)
	}
	decisions, _ := os.ReadFile(filepath.Join(d.bundle(t), evidence.FileDecisions))
	if !strings.Contains(string(decisions), "console") {
		t.Errorf("the refusal does not name the console")
	}
}

// TestLiveConsoleAborts: Abort in the console ends the run as aborted,
// with its bundle sealed.
func TestLiveConsoleAborts(t *testing.T) {
	d := startLiveDemo(t)
	console := consoleBrowser(t, d.console)
	waitText(t, console, "Approval required")
	click(t, console, "#abort")
	waitText(t, console, "Session aborted")
	if code := d.exit(t); code != ExitAborted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitAborted, d.stderr)
	}
	rep, err := evidence.Verify(context.Background(), d.bundle(t), evidence.VerifyOptions{})
	if err != nil || rep.Status != "aborted" {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	lines := eventLines(t, d.bundle(t))
	if last := lines[len(lines)-1]; !strings.Contains(last, `"status":"aborted"`) {
		t.Errorf("last event %s, want session.ended aborted", last)
	}
}

// TestLiveUsage: --approve live needs --listen; a bad --listen is a usage
// error.
func TestLiveUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"run", "--approve", "live", "--goal", "g", "--url", "http://127.0.0.1:1/"}, ExitUsage, "needs --listen"},
		{[]string{"demo", "--approve", "live"}, ExitUsage, "needs --listen"},
		{[]string{"demo", "--listen", "nonsense"}, ExitUsage, "HOST:PORT"},
		{[]string{"demo", "--listen", "127.0.0.1:0", "--linger", "-1s"}, ExitUsage, "--linger -1s: want 0 or more"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		errb := newStderrWatch()
		if got := Run(context.Background(), tt.args, Stdio{Out: &out, Err: errb}); got != tt.want {
			t.Errorf("aegis %v = %d, want %d (%s)", tt.args, got, tt.want, errb)
		}
		if !strings.Contains(errb.String(), tt.msg) {
			t.Errorf("aegis %v: stderr %q lacks %q", tt.args, errb, tt.msg)
		}
	}
}

// TestLingerMinutes: the lingering is said in minutes when it is whole
// minutes.
func TestLingerMinutes(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{5 * time.Minute, "5 min"}, {time.Hour, "60 min"}, {90 * time.Second, "1m30s"}, {30 * time.Second, "30s"}} {
		if got := minutes(tt.d); got != tt.want {
			t.Errorf("minutes(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestWriteSecretFile: the token file is 0600 in a 0700 directory; a file
// left at its path is replaced, and a link planted there is not written
// through.
func TestWriteSecretFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	path := filepath.Join(dir, "token")
	if err := writeSecretFile(path, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", st.Mode().Perm())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSecretFile(path, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two\n" {
		t.Errorf("token file holds %q, want the new token", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := writeSecretFile(path, []byte("three\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the token was written through a planted link: %q", b)
	}
	if st, _ := os.Lstat(path); st.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the link is still there")
	}
}

// TestLiveConsoleStepsAndLinger: "aegis run --listen" with a steps task
// that needs one approval and takes a screenshot. The console in Chromium
// shows the goal in its header, the approval with its risk, the steps
// numbered as the CLI numbers them, the screenshot inside its step, and
// passes axe-core in both schemes; after the run the process lingers
// (--linger) and the console is still served, until Ctrl-C (the context
// ends), which exits with the run's status.
func TestLiveConsoleStepsAndLinger(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	const goal = "Order for Ada and look at the orders"
	site := demoSite(t)
	secretsFile := writeFile(t, "secrets", "SHOP_PASSWORD=linger-test-Pa55-4b2a\n", 0o600)
	task := writeFile(t, "task.json", `{"goal":"`+goal+`","urls":["`+site+`/login"],"hints":{"steps":[
		"type \"demo\" into \"Username\"",
		"type \"{{secret:SHOP_PASSWORD}}\" into \"Password\"",
		"click \"Sign in\"",
		"expect \"Signed in as demo\"",
		"navigate /form",
		"type \"Ada Lovelace\" into \"Full name\"",
		"type \"ada@example.com\" into \"Email\"",
		"select \"Express\" in \"Shipping\"",
		"click \"Gift wrap\"",
		"click \"Place order\"",
		"expect \"Thank you, Ada Lovelace!\"",
		"navigate /orders",
		"extract screenshot"]}}`, 0o644)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	stderr, stdout := newStderrWatch(), &bytes.Buffer{}
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, []string{"run", "--listen", "127.0.0.1:0", "--listen-token-file", tokenFile,
			"--evidence", filepath.Join(dir, "evidence"), "--secrets-file", secretsFile,
			"--approval-timeout", "90s", "--linger", "10m", task}, Stdio{Out: stdout, Err: stderr})
	}()
	consoleURL := stderr.wait(t, consoleLine)

	browser := a11ytest.Launch(t)
	page := openPage(t, browser, consoleURL)
	waitPage(t, page, "the approval", `() => !document.getElementById("approval").hidden`)
	if got := pageEval[string](t, page, `() => document.querySelector("header h1").textContent`); got != goal {
		t.Errorf("header %q, want the goal %q", got, goal)
	}
	risk := pageEval[string](t, page, `() => { const r = [...document.querySelectorAll("tr[data-kind=approval]")].pop(); return r.cells[2].textContent + " " + r.cells[2].className; }`)
	if risk != "high risk-high" {
		t.Errorf("the approval row's risk: %q, want high", risk)
	}
	a11ytest.RequireClean(t, page, "cli-console-approval")
	if err := page.Click("#approve"); err != nil {
		t.Fatal(err)
	}
	waitPage(t, page, "the outcome", `() => document.getElementById("status").textContent.includes("Session completed")`)
	lingerURL := stderr.wait(t, regexp.MustCompile(`the console stays open at (http://\S+) \(bearer token in \S+\) until Ctrl-C \(or 10 min\)`))
	if page, _, _ := strings.Cut(consoleURL, "#"); lingerURL != page {
		t.Errorf("the lingering console is at %s, the run's at %s", lingerURL, page)
	}
	// The token is printed once, with the console's address at the start.
	if n := strings.Count(stderr.String(), "#token="); n != 1 {
		t.Errorf("the token was printed %d times, want once:\n%s", n, stderr)
	}

	// One numbering: the console's steps are the CLI's "step N/50".
	var cli []string
	for _, m := range regexp.MustCompile(`(?m)^step (\d+)/\d+  (\w+) `).FindAllStringSubmatch(stderr.String(), -1) {
		cli = append(cli, m[1]+" "+m[2])
	}
	console := pageEval[string](t, page, `() => [...document.querySelectorAll("tr[data-kind=decision]:not([data-effect])")].map(r => r.dataset.step + " " + r.dataset.actionType).join("\n")`)
	if len(cli) < 10 || console != strings.Join(cli, "\n") {
		t.Errorf("console steps:\n%s\nCLI steps:\n%s", console, strings.Join(cli, "\n"))
	}

	// The page is still served after the run ended: a new one shows the
	// whole run, the screenshot inside the step of its extract.
	select {
	case c := <-code:
		t.Fatalf("the run exited (%d) instead of lingering\n%s", c, stderr)
	default:
	}
	again := openPage(t, browser, consoleURL)
	waitPage(t, again, "the screenshot in its step", `() => { const r = [...document.querySelectorAll("tr[data-kind=decision][data-action-type=extract]")].pop();
		const i = r && r.closest("section").querySelector("img"); return !!i && i.complete && i.naturalWidth > 0; }`)
	waitPage(t, again, "the outcome", `() => document.getElementById("status").textContent.includes("Session completed")`)
	a11ytest.RequireClean(t, again, "cli-console-ended")

	interrupt() // Ctrl-C
	select {
	case c := <-code:
		if c != ExitOK {
			t.Errorf("exit %d after the lingering, want the run's %d\n%s", c, ExitOK, stderr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("Ctrl-C did not end the lingering\n%s", stderr)
	}
	if _, err := os.Stat(tokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token file is still there: %v", err)
	}
}

// openPage opens the console in a page of its own in the axe-core test
// browser.
func openPage(t *testing.T, b playwright.Browser, url string) playwright.Page {
	t.Helper()
	bc, err := b.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	page, err := bc.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := page.Goto(url); err != nil {
		t.Fatal(err)
	}
	return page
}

// waitPage waits until expr holds on the page, asking through the
// DevTools protocol (which the page's CSP leaves alone).
func waitPage(t *testing.T, page playwright.Page, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		v, err := page.Evaluate(expr)
		if b, _ := v.(bool); b && err == nil {
			return
		}
		if time.Now().After(deadline) {
			text, _ := page.InnerText("body")
			t.Fatalf("the console never showed %s: %v\n%s", what, err, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pageEval evaluates expr on the page.
func pageEval[T any](t *testing.T, page playwright.Page, expr string) T {
	t.Helper()
	v, err := page.Evaluate(expr)
	out, ok := v.(T)
	if err != nil || !ok {
		t.Fatalf("%s: %#v %v", expr, v, err)
	}
	return out
}
