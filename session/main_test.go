package session_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/internal/browsertest"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// One Chromium for the whole test binary; each session opens its own
// browser context. The gate is realGate's (fake_test.go).
var shared = browsertest.Shared{Options: driver.BrowserOptions{Isolate: true}}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

func browser(t testing.TB) *driver.Browser {
	t.Helper()
	return shared.Browser(t)
}

// site is the demo shop behind a recorder, plus a page of dangerous
// buttons: the server side of what a session did.
type site struct {
	URL string
	rec *browsertest.Recorder
}

const dangerBody = `<!doctype html><html><head><meta charset="utf-8"><title>Billing</title></head><body>
<h1>Billing</h1>
<p>Your plan renews soon.</p>
<button type="button" id="pay" onclick="fetch('/danger/paid',{method:'POST'}).then(()=>{document.getElementById('out').textContent='Paid'})">Pay now</button>
<button type="button" id="delete" onclick="fetch('/danger/deleted',{method:'POST'}).then(()=>{document.getElementById('out').textContent='Deleted'})">Delete account</button>
<button type="button" id="harmless" onclick="document.getElementById('out').textContent='Thanks'">Say thanks</button>
<p id="out" role="status"></p>
</body></html>`

// riskyNameBody is a harmless help page served under paths that hold
// high-risk URL words (/pay-info, /help/transfer-guide.html).
const riskyNameBody = `<!doctype html><html><head><meta charset="utf-8"><title>Help</title></head><body>
<h1>How payments work</h1>
<p>Payments and transfers are confirmed on the next page.</p>
<p><a href="/orders">Your orders</a></p>
</body></html>`

// searchBody is a test-local page with a live search box: every keystroke
// is sent to the site (GET /find/results?q=...), so what is typed into the
// box is what the site receives. Nothing about the box is sensitive.
const searchBody = `<!doctype html><html><head><meta charset="utf-8"><title>Find</title></head><body>
<h1>Find an order</h1>
<label for="q">Search</label>
<input type="search" id="q" name="q" autocomplete="off" oninput="fetch('/find/results?q='+encodeURIComponent(this.value))">
<p id="out" role="status"></p>
</body></html>`

func newSite(t testing.TB) *site {
	t.Helper()
	s := &site{}
	demo := demosite.Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /danger", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, dangerBody)
	})
	mux.HandleFunc("POST /danger/{what}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	// Pages whose paths hold high-risk URL words (issue 15): harmless
	// pages a task may start on, and GET endpoints that pay or transfer
	// money when loaded.
	for _, p := range []string{"/pay-info", "/help/transfer-guide.html"} {
		mux.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, riskyNameBody)
		})
	}
	for _, p := range []string{"/pay/confirm", "/transfer/send"} {
		mux.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<!doctype html><title>Done</title><p>Payment sent.</p>")
		})
	}
	mux.HandleFunc("GET /find", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, searchBody)
	})
	mux.HandleFunc("GET /find/results", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.Handle("/", demo)
	s.rec = browsertest.Record(mux)
	srv := httptest.NewServer(s.rec)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// requests returns the requests the site received whose "METHOD /path"
// starts with prefix.
func (s *site) requests(prefix string) []string { return s.rec.Requests(prefix) }

// awaitRequests waits until the site has received n requests starting
// with prefix (a page's own requests land after the action that caused
// them returns) and returns them; it fails the test after a generous
// guard that a passing run never reaches.
func (s *site) awaitRequests(t testing.TB, prefix string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := s.requests(prefix)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *site) all() string { return s.rec.All() }

// cfgFor returns a session config for task with the shared browser, the
// real gate, evidence in a temporary directory, and the given agents.
func cfgFor(t testing.TB, task contract.Input, pl planner.Planner, nav navigator.Navigator) session.Config {
	t.Helper()
	b := browser(t)
	g, approvals := realGate(t)
	return session.Config{
		Task:       task,
		Driver:     driver.Config{Mode: contract.ModeSandbox, Browser: b, ActionTimeout: 2 * time.Second},
		OpenDriver: driver.Open,
		Gate:       g,
		Approvals:  approvals,
		Planner:    pl,
		Navigator:  nav,
		Evidence:   session.EvidenceDir(evRoot(t)),
	}
}

func intp(n int) *int { return &n }

func task(goal string, urls []string, hints string) contract.Input {
	in := contract.Input{Goal: goal, URLs: urls}
	if hints != "" {
		in.Hints = json.RawMessage(hints)
	}
	return in
}

// stepsAgents returns the planner and navigator of a steps task.
func stepsAgents(t testing.TB, in contract.Input, set *secrets.Set) (planner.Planner, navigator.Navigator) {
	t.Helper()
	nav, err := navigator.NewStepsFromHints(in.Hints, navigator.StepsOptions{BaseURL: in.URLs[0], Secrets: set, ExpectWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.FromHints(in.Goal, in.Hints)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := planner.NewStatic(plan)
	if err != nil {
		t.Fatal(err)
	}
	return pl, nav
}

// llmAgents returns LLM agents that talk to srv.
func llmAgents(t testing.TB, srv *llmtest.Server, set *secrets.Set, mutate ...func(*llm.Config)) (planner.Planner, navigator.Navigator) {
	t.Helper()
	cfg := llm.Config{BaseURL: srv.URL, Model: "test-model", Timeout: 5 * time.Second, MaxRetries: 2, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Guard: set.Guard()}
	for _, f := range mutate {
		f(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := planner.NewLLM(c, planner.LLMOptions{Secrets: set})
	if err != nil {
		t.Fatal(err)
	}
	nav, err := navigator.NewLLM(c, navigator.LLMOptions{Secrets: set})
	if err != nil {
		t.Fatal(err)
	}
	return pl, nav
}

// run runs a session with a generous test deadline.
func run(t testing.TB, cfg session.Config) (session.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return session.Run(ctx, cfg)
}

// verify checks that the bundle of res is sealed and verifies, that the
// output is schema-valid, and returns the bundle's files by path.
func verify(t testing.TB, res session.Result) map[string][]byte {
	t.Helper()
	if _, err := contract.Encode(schemas.KindOutput, res.Output); err != nil {
		t.Errorf("output is not schema-valid: %v", err)
	}
	if !res.Evidence.Sealed {
		t.Fatalf("bundle not sealed: %+v", res.Evidence)
	}
	rep, err := evidence.Verify(context.Background(), res.Evidence.Dir, evidence.VerifyOptions{})
	if err != nil {
		t.Fatalf("bundle %s does not verify: %v", res.Evidence.Dir, err)
	}
	if rep.Status != res.Status || rep.HeadHash != res.Evidence.HeadHash {
		t.Errorf("verified status %s head %s, want %s %s", rep.Status, rep.HeadHash, res.Status, res.Evidence.HeadHash)
	}
	// Every approval names its channel, and its MAC checked under the key
	// the seal revealed (evidence/FORMAT.md, section 8, rule 16).
	named := 0
	for _, n := range rep.Approvals.Channels {
		named += n
	}
	if rep.Approvals.Unnamed != 0 || rep.Approvals.MACs != named {
		t.Errorf("approvals %+v: want every one with its channel and its MAC checked", rep.Approvals)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(res.Evidence.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(res.Evidence.Dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lines decodes a JSON Lines file of the bundle.
func lines[T any](t testing.TB, files map[string][]byte, name string) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(files[name]))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

type actionLine struct {
	Action contract.Action     `json:"action"`
	Result contract.ToolResult `json:"result"`
}

func decisions(t testing.TB, files map[string][]byte) []contract.DecisionRecord {
	return lines[contract.DecisionRecord](t, files, "decisions.jsonl")
}

// lastDecision is the last decision recorded about action id; nil when
// there is none.
func lastDecision(t testing.TB, files map[string][]byte, id string) *contract.DecisionRecord {
	var last *contract.DecisionRecord
	for _, d := range decisions(t, files) {
		if d.ActionID == id {
			last = &d
		}
	}
	return last
}

func actions(t testing.TB, files map[string][]byte) []actionLine {
	return lines[actionLine](t, files, "actions.jsonl")
}

func events(t testing.TB, files map[string][]byte) []contract.StreamEvent {
	return lines[contract.StreamEvent](t, files, "events.jsonl")
}

// noSecret fails when value appears in any file of the bundle or any
// request the model received.
func noSecret(t testing.TB, value string, files map[string][]byte, srv *llmtest.Server) {
	t.Helper()
	for name, b := range files {
		if bytes.Contains(b, []byte(value)) {
			t.Errorf("the secret's value appears in %s", name)
		}
	}
	if srv != nil {
		for i, r := range srv.Requests() {
			if bytes.Contains(r.Raw, []byte(value)) {
				t.Errorf("the secret's value appears in model request %d", i)
			}
		}
	}
}

func eventTypes(evs []contract.StreamEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Type))
	}
	return strings.Join(s, " ")
}

// evRoot is a temporary evidence root, or $AEGIS_TEST_EVIDENCE to keep
// the bundles for inspection.
func evRoot(t testing.TB) string {
	if d := os.Getenv("AEGIS_TEST_EVIDENCE"); d != "" {
		return d
	}
	return t.TempDir()
}

// planAnswer is the plan the fake model gives.
const planAnswer = `{"goal":"x","steps":[{"id":"s1","description":"do the task","successCriteria":"the task is done"}]}`

// fakeModel is an OpenAI-compatible fake: the Planner gets planAnswer (or
// plan, when it is set), and the n-th Navigator request (from 0) is
// answered by nav.
func fakeModel(t testing.TB, plan llmtest.Reply, nav func(n int, r *llmtest.Request) llmtest.Reply) *llmtest.Server {
	t.Helper()
	if plan == nil {
		plan = llmtest.Answer(planAnswer)
	}
	srv := llmtest.NewServer(t)
	var mu sync.Mutex
	count := 0
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if isPlanner(r) {
			plan(w, r)
			return
		}
		mu.Lock()
		n := count
		count++
		mu.Unlock()
		nav(n, r)(w, r)
	})
	return srv
}

func isPlanner(r *llmtest.Request) bool {
	return len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "You are the Planner")
}

// navRequests returns the Navigator's requests among srv's.
func navRequests(srv *llmtest.Server) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range srv.Requests() {
		if !isPlanner(&r) {
			out = append(out, r)
		}
	}
	return out
}

// taskDoc returns the task and history messages of a Navigator request.
func taskDoc(r llmtest.Request) string {
	var doc string
	for _, m := range r.Messages {
		if strings.HasPrefix(m.Content, navigator.TaskHeader) || strings.HasPrefix(m.Content, navigator.HistoryHeader) {
			doc += m.Content
		}
	}
	return doc
}

// answer is a Navigator answer with the given status and raw actions.
func answer(status string, actions ...string) llmtest.Reply {
	return llmtest.Answer(`{"actions":[` + strings.Join(actions, ",") + `],"status":"` + status + `","summary":"` + status + ` after ` + fmt.Sprint(len(actions)) + ` actions"}`)
}

// Raw actions for answers.
func aNavigate(id, url string) string {
	return fmt.Sprintf(`{"id":%q,"type":"navigate","reason":"go","policyTags":[],"url":%q}`, id, url)
}
func aClick(id, sel string) string {
	return fmt.Sprintf(`{"id":%q,"type":"click","reason":"click","policyTags":[],"selector":%q}`, id, sel)
}
func aType(id, sel, text string, redact bool) string {
	return fmt.Sprintf(`{"id":%q,"type":"type","reason":"type","policyTags":[],"selector":%q,"text":%q,"redact":%v}`, id, sel, text, redact)
}
func aWait(id string, ms int) string {
	return fmt.Sprintf(`{"id":%q,"type":"wait","reason":"wait","policyTags":[],"durationMs":%d}`, id, ms)
}
func aExtract(id, kind, sel string) string {
	if sel == "" {
		return fmt.Sprintf(`{"id":%q,"type":"extract","reason":"read","policyTags":[],"extract":%q}`, id, kind)
	}
	return fmt.Sprintf(`{"id":%q,"type":"extract","reason":"read","policyTags":[],"extract":%q,"selector":%q}`, id, kind, sel)
}

// script answers the n-th request with replies[n], and the last one after.
func script(replies ...llmtest.Reply) func(int, *llmtest.Request) llmtest.Reply {
	return func(n int, _ *llmtest.Request) llmtest.Reply {
		return replies[min(n, len(replies)-1)]
	}
}
