package nativehost_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/nativehost"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// The end-to-end tests: real headless Chromium with the unpacked
// extension, and a freshly built aegis installed as its native messaging
// host in the browser's profile. Each test opens the demo shop in a tab,
// opens the popup's page for that tab in another, and drives the popup as
// a person would: the extension starts aegis, which runs the session on
// the shop's tab.

// site is the demo shop behind a request log.
type site struct {
	URL string
	mu  sync.Mutex
	log []string
}

func newSite(t *testing.T, h http.Handler) *site {
	s := &site{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.log = append(s.log, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *site) count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.log {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// popupRun is one session started from the popup.
type popupRun struct {
	t     *testing.T
	b     *nativehosttest.Browser
	demo  playwright.Page
	popup playwright.Page
}

// startFromPopup opens url in a tab, opens the popup for it, fills in the
// goal and the steps, and clicks Start.
func startFromPopup(t *testing.T, b *nativehosttest.Browser, url, goal string, steps ...string) *popupRun {
	t.Helper()
	return startWithPreset(t, b, "", url, goal, steps...)
}

// startWithPreset is startFromPopup with a permission preset ("" leaves
// the popup's default).
func startWithPreset(t *testing.T, b *nativehosttest.Browser, preset, url, goal string, steps ...string) *popupRun {
	t.Helper()
	demo, err := b.Context.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = demo.Close() })
	if _, err := demo.Goto(url); err != nil {
		t.Fatal(err)
	}
	tab := b.TabID(t, demo)
	popup, err := b.Context.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = popup.Close() })
	if _, err := popup.Goto(b.PopupURL(tab)); err != nil {
		t.Fatal(err)
	}
	r := &popupRun{t: t, b: b, demo: demo, popup: popup}
	r.until("the popup knows its tab", func() bool {
		v, _ := popup.Locator("#origins").InputValue()
		return v != ""
	})
	origin, _ := popup.Locator("#origins").InputValue()
	if !strings.HasPrefix(url, origin) {
		t.Fatalf("allowed origins default to %q, want the tab's origin", origin)
	}
	must(t, popup.Locator("#goal").Fill(goal))
	must(t, popup.Locator("#steps").Fill(strings.Join(steps, "\n")))
	if preset != "" {
		if _, err := popup.Locator("#preset").SelectOption(playwright.SelectOptionValues{Values: &[]string{preset}}); err != nil {
			t.Fatal(err)
		}
	}
	// The popup shows the last session until the new one runs: wait for
	// a bundle no earlier session had, so that nothing reads the old
	// session's steps.
	must(t, popup.Locator("#start").Click())
	r.until("the session started", func() bool {
		if r.visible("#error") {
			return true
		}
		e := r.text("#evidence")
		if e == "" {
			return false
		}
		_, seen := bundlesSeen.LoadOrStore(e, true)
		return !seen
	})
	return r
}

// bundlesSeen holds the evidence bundles the popup showed at the start of
// a session (startFromPopup).
var bundlesSeen sync.Map

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// until polls cond for up to 30 s.
func (r *popupRun) until(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			phase, _ := r.popup.Locator("#phase").TextContent()
			errText, _ := r.popup.Locator("#error").TextContent()
			r.t.Fatalf("%s: not after 30 s (phase %q, error %q, steps %q)\nhost log:\n%s", what, phase, errText, r.steps(), r.b.HostLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *popupRun) text(sel string) string {
	s, _ := r.popup.Locator(sel).TextContent()
	return s
}

func (r *popupRun) visible(sel string) bool {
	v, _ := r.popup.Locator(sel).IsVisible()
	return v
}

func (r *popupRun) steps() []string {
	s, _ := r.popup.Locator("#step-list li.step").AllTextContents()
	return s
}

// ended waits for the session's end and returns its status (from the
// popup's result panel) and its evidence bundle's directory.
func (r *popupRun) ended() (contract.SessionStatus, string) {
	r.t.Helper()
	r.until("the session ends", func() bool { return r.text("#phase") == "ended" })
	status, _ := r.popup.Locator("#outcome").GetAttribute("data-status")
	r.t.Logf("ended: %s: %s; steps: %q", status, r.text("#summary"), r.steps())
	return contract.SessionStatus(status), r.text("#evidence")
}

func verify(t *testing.T, dir string, want contract.SessionStatus) *evidence.Report {
	t.Helper()
	rep, err := evidence.Verify(context.Background(), dir, evidence.VerifyOptions{})
	if err != nil {
		t.Fatalf("the bundle %q does not verify: %v", dir, err)
	}
	if want != "" && rep.Status != want {
		t.Errorf("bundle status %s, want %s", rep.Status, want)
	}
	return rep
}

func TestPopupEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	shop := newSite(t, demosite.Handler())
	elsewhere := newSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Elsewhere</title><h1>Another site</h1><form method="post" action="/take"><button id="submit">Place order</button></form>`)
	}))
	// A task given without steps goes to this model, which proposes the
	// same click on "Place order" whatever it is told.
	model := llmtest.NewServer(t)
	model.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"place the order","steps":[{"id":"s1","description":"place the order","successCriteria":"the order is placed"}]}`)(w, r)
			return
		}
		llmtest.Answer(`{"actions":[{"id":"o1","type":"click","selector":"#submit","reason":"place the order","policyTags":[]}],"status":"continue","summary":"placing the order"}`)(w, r)
	})
	b := nativehosttest.Start(t, nativehosttest.Options{Binary: aegisBinary(t), Config: nativehost.Config{
		Model: &nativehost.ModelConfig{BaseURL: model.URL, Model: "test-model", APIKey: "sk-test-key"},
	}})

	t.Run("StepsRunCompletes", func(t *testing.T) {
		r := startFromPopup(t, b, shop.URL+"/form", "fill in the order form and read my orders",
			`type "Ada Lovelace" into "Full name"`,
			`select "Express" in "Shipping"`,
			`navigate /orders`,
			`extract table "Orders"`,
		)
		status, dir := r.ended()
		if status != contract.SessionCompleted {
			t.Fatalf("status %s: %s", status, r.text("#summary"))
		}
		rep := verify(t, dir, contract.SessionCompleted)
		if rep.Entries == 0 {
			t.Errorf("report = %+v", rep)
		}
		steps := r.steps()
		if len(steps) < 5 || !strings.Contains(strings.Join(steps, "\n"), "extract table") {
			t.Errorf("steps shown: %q", steps)
		}
		for _, s := range steps {
			if !strings.Contains(s, "✓") {
				t.Errorf("step not shown as done: %q", s)
			}
		}
		if got, _ := r.demo.Locator("h1").TextContent(); got != "Your orders" {
			t.Errorf("the tab shows %q, want the orders", got)
		}
	})

	order := []string{`type "Ada Lovelace" into "Full name"`, `click "Place order"`, `expect "Thank you, Ada Lovelace!"`}

	t.Run("ApprovalApproved", func(t *testing.T) {
		posts := shop.count("POST /form")
		r := startFromPopup(t, b, shop.URL+"/form", "place the order", order...)
		r.until("the approval prompt", func() bool { return r.visible("#approval") })
		action, target, page, risk, reasons := r.text("#ap-action"), r.text("#ap-target"), r.text("#ap-page"), r.text("#ap-risk"), r.text("#ap-reasons")
		if !strings.Contains(action, "click #submit") || !strings.Contains(target, `<button id="submit"`) || !strings.Contains(target, "Place order") ||
			page != shop.URL+"/form" || risk != "high" || reasons == "" {
			t.Errorf("prompt: action %q, target %q, page %q, risk %q, reasons %q", action, target, page, risk, reasons)
		}
		if shop.count("POST /form") != posts {
			t.Fatal("the order was placed before the approval")
		}
		must(t, r.popup.Locator("#approve").Click())
		status, dir := r.ended()
		if status != contract.SessionCompleted {
			t.Fatalf("status %s: %s", status, r.text("#summary"))
		}
		// The approval names the popup, and its MAC checked under the key
		// the seal revealed (evidence/FORMAT.md, section 8, rule 16).
		if rep := verify(t, dir, contract.SessionCompleted); rep.Approvals.Channels[contract.ApprovalChannelPopup] != 1 || rep.Approvals.MACs != 1 {
			t.Errorf("approvals %+v, want one from the popup, its MAC checked", rep.Approvals)
		}
		if got := shop.count("POST /form") - posts; got != 1 {
			t.Errorf("%d orders placed, want 1", got)
		}
		if s := strings.Join(r.steps(), "\n"); !strings.Contains(s, "→ approved") {
			t.Errorf("steps do not show the approval: %s", s)
		}
	})

	t.Run("ApprovalDenied", func(t *testing.T) {
		posts := shop.count("POST /form")
		r := startFromPopup(t, b, shop.URL+"/form", "place the order", order...)
		r.until("the approval prompt", func() bool { return r.visible("#approval") })
		must(t, r.popup.Locator("#deny").Click())
		status, dir := r.ended()
		// The steps have no other way: the person's Deny ends the session.
		if summary := r.text("#summary"); status != contract.SessionAborted || !strings.Contains(summary, "denied by a person in the popup") {
			t.Fatalf("status %s, summary %q; want aborted, denied by a person in the popup", status, summary)
		}
		verify(t, dir, contract.SessionAborted)
		if shop.count("POST /form") != posts {
			t.Error("the denied order was placed")
		}
		if s := strings.Join(r.steps(), "\n"); !strings.Contains(s, "click #submit") || !strings.Contains(s, "→ denied") || !strings.Contains(s, "approval_denied") {
			t.Errorf("steps do not show the denial: %s", s)
		}
	})

	// Issue 17: a person's Deny in the popup ends the action; the model
	// proposing it again is refused without a second question, and the
	// session ends aborted by the person's refusal, not failed.
	t.Run("DenyNotAskedAgain", func(t *testing.T) {
		posts := shop.count("POST /form")
		calls := len(model.Requests())
		r := startFromPopup(t, b, shop.URL+"/form", "place the order")
		r.until("the approval prompt", func() bool { return r.visible("#approval") })
		must(t, r.popup.Locator("#deny").Click())
		status, dir := r.ended()
		summary := r.text("#summary")
		if status != contract.SessionAborted || !strings.Contains(summary, "denied by a person in the popup") {
			t.Fatalf("status %s, summary %q; want aborted, denied by a person in the popup", status, summary)
		}
		verify(t, dir, contract.SessionAborted)
		if shop.count("POST /form") != posts {
			t.Error("the denied order was placed")
		}
		if got := len(model.Requests()) - calls; got < 3 {
			t.Errorf("the model was asked %d times; the test needs it to propose the click again", got)
		}
		events := readLines(t, filepath.Join(dir, "events.jsonl"))
		asked := 0
		for _, e := range events {
			if strings.Contains(e, `"approval_required"`) {
				asked++
			}
		}
		if asked != 1 {
			t.Errorf("%d approval requests, want 1: the refused click was asked again", asked)
		}
		decisions := strings.Join(readLines(t, filepath.Join(dir, "decisions.jsonl")), "\n")
		if !strings.Contains(decisions, "not asked again") {
			t.Error("no decision says the repeated click was refused without asking")
		}
		if s := strings.Join(r.steps(), "\n"); !strings.Contains(s, "denied by a person in the popup") {
			t.Errorf("the popup's steps do not say who denied: %s", s)
		}
	})

	t.Run("AbortFromPopup", func(t *testing.T) {
		orders := shop.count("GET /orders")
		r := startFromPopup(t, b, shop.URL+"/form", "wait a long time", `wait 30s`, `navigate /orders`)
		r.until("the first step", func() bool { return len(r.steps()) >= 1 })
		time.Sleep(300 * time.Millisecond) // inside the wait
		start := time.Now()
		must(t, r.popup.Locator("#abort").Click())
		status, dir := r.ended()
		if status != contract.SessionAborted {
			t.Fatalf("status %s", status)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the abort took %v", d)
		}
		verify(t, dir, contract.SessionAborted)
		time.Sleep(300 * time.Millisecond)
		if shop.count("GET /orders") != orders {
			t.Error("a step after the abort ran")
		}
	})

	// The session's tab is under the boundary: whatever navigates it (the
	// page, a script, the person), it does not leave the allowed origins
	// while the session runs; the session goes on on the allowed page.
	t.Run("TabNavigatedAwayMidAction", func(t *testing.T) {
		posts := shop.count("POST /form")
		r := startFromPopup(t, b, shop.URL+"/form", "place the order", `wait 3s`, `click "Place order"`)
		r.until("the first step", func() bool { return len(r.steps()) >= 1 })
		// The person tries to take the tab elsewhere during the wait action.
		time.Sleep(time.Second)
		if _, err := r.demo.Goto(elsewhere.URL + "/"); err == nil || !strings.Contains(err.Error(), "ERR_BLOCKED_BY_CLIENT") {
			t.Fatalf("the tab left the allowed origins during the session: %v", err)
		}
		r.until("the approval prompt", func() bool { return r.visible("#approval") })
		must(t, r.popup.Locator("#deny").Click())
		status, dir := r.ended()
		if status == contract.SessionCompleted {
			t.Fatal("a denied order completed the session")
		}
		verify(t, dir, "")
		if elsewhere.count("") != 0 || shop.count("POST /form") != posts {
			t.Errorf("the other site was reached (%d requests) or an order placed", elsewhere.count(""))
		}
		s := strings.Join(r.steps(), "\n")
		if !strings.Contains(s, "wait 3000ms") {
			t.Errorf("the wait was not under way when the tab was taken elsewhere: %s", s)
		}
	})

	// The extension misbehaving (a forged message from its worker): a
	// result for an action never sent is refused, and the session aborted
	// with the violation in its sealed evidence.
	t.Run("ResultForActionNeverSent", func(t *testing.T) {
		r := startFromPopup(t, b, shop.URL+"/form", "wait", `wait 20s`)
		r.until("the first step", func() bool { return len(r.steps()) >= 1 })
		if _, err := b.Worker.Evaluate(`post(session.host, { kind: 'response', id: 987654, result: { value: '{"ok":true}' } })`); err != nil {
			t.Fatal(err)
		}
		status, dir := r.ended()
		if status != contract.SessionAborted || !strings.Contains(r.text("#summary"), "protocol violation") {
			t.Fatalf("status %s, summary %q", status, r.text("#summary"))
		}
		verify(t, dir, contract.SessionAborted)
		if n := r.text("#notices"); !strings.Contains(n, "987654") {
			t.Errorf("the popup does not show the refusal: %q", n)
		}
	})

	// An approval for another action's hash is refused, and the pending
	// action denied and recorded: the order is never placed.
	t.Run("ApprovalForAnotherHash", func(t *testing.T) {
		posts := shop.count("POST /form")
		r := startFromPopup(t, b, shop.URL+"/form", "place the order", order...)
		r.until("the approval prompt", func() bool { return r.visible("#approval") })
		v, err := b.Worker.Evaluate(`hostCall(session.host, 'approval.answer', { actionId: state.approval.actionId, actionHash: '0'.repeat(64), decision: 'approve' }).then(() => 'accepted', (e) => e.code + ' ' + e.message)`)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := v.(string); !strings.HasPrefix(s, "10 ") {
			t.Fatalf("the forged approval was answered %v, want approval_mismatch (10)", v)
		}
		status, dir := r.ended()
		if status == contract.SessionCompleted {
			t.Fatal("the session completed")
		}
		verify(t, dir, "")
		if shop.count("POST /form") != posts {
			t.Error("the order was placed")
		}
		if s := strings.Join(r.steps(), "\n"); !strings.Contains(s, "→ denied") || !strings.Contains(s, "approval_mismatch") {
			t.Errorf("the denial is not shown: %s", s)
		}
	})

	// The extension disconnects mid-session: the host aborts the session,
	// seals the evidence and exits within a second.
	t.Run("ExtensionDisconnects", func(t *testing.T) {
		r := startFromPopup(t, b, shop.URL+"/form", "wait", `wait 20s`)
		r.until("the first step", func() bool { return len(r.steps()) >= 1 })
		dir := r.text("#evidence")
		pid := lastHostPID(t, b.HostLog())
		start := time.Now()
		if _, err := b.Worker.Evaluate(`(() => { const h = session.host; session = null; closeHost(h); return true; })()`); err != nil {
			t.Fatal(err)
		}
		for processAlive(pid) {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("the host (pid %d) is still running", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("the host exited %v after the disconnection, want within a second", d)
		}
		verify(t, dir, contract.SessionAborted)
		if log := b.HostLog(); !strings.Contains(log, "ended and sealed") {
			t.Errorf("host log:\n%s", log)
		}
		_, _ = b.Worker.Evaluate(`(() => { state = freshState(); broadcast(); })()`)
	})

	t.Run("HostKilledMidRun", func(t *testing.T) {
		orders := shop.count("GET /orders")
		r := startFromPopup(t, b, shop.URL+"/form", "wait, then read the orders", `wait 20s`, `navigate /orders`)
		r.until("the first step", func() bool { return len(r.steps()) >= 1 })
		pid := lastHostPID(t, b.HostLog())
		proc, err := os.FindProcess(pid)
		if err == nil {
			err = proc.Kill()
		}
		if err != nil {
			t.Fatalf("kill the host (pid %d): %v", pid, err)
		}
		r.until("the popup shows the error", func() bool { return r.visible("#error") })
		if e := r.text("#error"); !strings.Contains(e, "aegis host stopped") || r.text("#phase") != "error" {
			t.Errorf("error %q, phase %q", e, r.text("#phase"))
		}
		time.Sleep(1500 * time.Millisecond)
		if shop.count("GET /orders") != orders {
			t.Error("an action ran after the host died")
		}
		// The popup can start again.
		if dis, _ := r.popup.Locator("#start").IsDisabled(); dis {
			t.Error("Start stays disabled after the host died")
		}
	})
}

var pidRe = regexp.MustCompile(`started by chrome-extension://[a-p]{32}/ \(pid (\d+),`)

func lastHostPID(t *testing.T, log string) int {
	t.Helper()
	m := pidRe.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		t.Fatalf("no host pid in the log:\n%s", log)
	}
	pid, _ := strconv.Atoi(m[len(m)-1][1])
	return pid
}

// processAlive reports whether the process pid still runs (and is not a
// zombie waiting for Chrome to reap it).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// readLines returns the lines of a .jsonl file of a bundle.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}
