package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/a11ytest"
)

// requestCounter counts the API requests (/v1/...) a server gets, by
// path, and can play a server going away: every request then gets HTTP
// 503.
type requestCounter struct {
	next http.Handler
	down atomic.Bool

	mu    sync.Mutex
	count map[string]int
}

func (rc *requestCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		rc.mu.Lock()
		kind := "sessions"
		if strings.HasSuffix(r.URL.Path, "/stream") {
			kind = "stream"
		}
		rc.count[kind]++
		rc.mu.Unlock()
	}
	if rc.down.Load() {
		httpError(w, http.StatusServiceUnavailable, "closing", "the server is closing")
		return
	}
	rc.next.ServeHTTP(w, r)
}

// counts returns the counts and starts again from zero.
func (rc *requestCounter) counts() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	c := rc.count
	rc.count = map[string]int{}
	return c
}

// consolePage opens a page in its own context; with clock, the page's
// timers are Playwright's fake ones, which the test moves on
// (Clock.RunFor) and which otherwise run in real time until paused
// (Clock.PauseAt; axe-core's checks need them running).
func consolePage(t *testing.T, b playwright.Browser, url string, clock bool) playwright.Page {
	t.Helper()
	ctx, err := b.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	page, err := ctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	if clock {
		if err := page.Clock().Install(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := page.Goto(url); err != nil {
		t.Fatal(err)
	}
	return page
}

// waitJS waits until the expression holds on the page. It asks through
// the DevTools protocol (Page.Evaluate), which the page's CSP and a
// test's fake clock leave alone.
func waitJS(t *testing.T, page playwright.Page, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := page.Evaluate(expr)
		if b, _ := v.(bool); b && err == nil {
			return
		}
		if time.Now().After(deadline) {
			text, _ := page.InnerText("body")
			t.Fatalf("the console never showed %s (%s): %v\n%s", what, expr, err, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// evalJS evaluates an expression on the page.
func evalJS[T any](t *testing.T, page playwright.Page, expr string) T {
	t.Helper()
	v, err := page.Evaluate(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	out, ok := v.(T)
	if !ok {
		t.Fatalf("%s = %#v (%T)", expr, v, v)
	}
	return out
}

// decisionRows is the console's decision rows, "STEP TYPE RESULT RISK".
const decisionRows = `() => [...document.querySelectorAll("tr[data-kind=decision]")].map(r =>
	r.dataset.step + " " + r.dataset.actionType + " " + r.dataset.result + " " + r.cells[2].textContent).join("\n")`

// TestConsoleInChromium: the console in Chromium shows the goal in its
// header, the steps numbered by the decisions' stepIndex, each
// screenshot inside its step, the risk of a pending approval, Approve and
// Deny as the palette's primary and danger buttons, and the outcome; it
// passes axe-core's WCAG A/AA checks in the light and the dark scheme
// while running, with an approval pending, ended, and with a refused
// token, which it says and never retries.
func TestConsoleInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	const goal = "Read the orders table of the demo shop"
	srv, err := NewServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := newFakeSession("s-console-1")
	bundle := newFakeBundle(t, fs)
	srv.Add(fs, SessionOptions{Dir: bundle.dir, Goal: goal, Approver: NewApprover()})
	rc := &requestCounter{next: srv.Handler(), count: map[string]int{}}
	hs := httptest.NewServer(rc)
	t.Cleanup(hs.Close)
	browser := a11ytest.Launch(t)
	page := consolePage(t, browser, hs.URL+"/?session="+fs.id+"#token="+srv.Token(), false)

	act := func(id string, typ contract.ActionType, risk contract.RiskTag, summary string) {
		u := "http://127.0.0.1:8080/orders"
		bundle.event(contract.StreamEvent{Type: contract.EventAction, ActionID: id, ActionType: typ, RiskLevel: risk, URL: &u, Summary: summary})
	}
	bundle.event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: fs.id})
	bundle.decision("a1", contract.ActNavigate, 1, contract.ResultAllowed, contract.RiskLow)
	act("a1", contract.ActNavigate, contract.RiskLow, "navigate to http://127.0.0.1:8080/login")
	bundle.decision("a2", contract.ActType, 2, contract.ResultAllowed, contract.RiskMedium)
	act("a2", contract.ActType, contract.RiskMedium, `type into #password "Password" (redacted text)`)
	bundle.decision("a3", contract.ActClick, 3, contract.ResultDenied, contract.RiskHigh, "payment_blocked")
	bundle.event(contract.StreamEvent{Type: contract.EventError, Code: "policy.denied", Message: "action a3 (click) denied: payment_blocked: because payment_blocked"})
	bundle.decision("a4", contract.ActClick, 3, contract.ResultAllowed, contract.RiskLow)
	act("a4", contract.ActClick, contract.RiskLow, `click #sign-in "Sign in"`)
	bundle.decision("a5", contract.ActExtract, 4, contract.ResultAllowed, contract.RiskLow)
	act("a5", contract.ActExtract, contract.RiskLow, "extract screenshot")
	bundle.screenshot("a5-image", 320, 180)

	waitJS(t, page, "the screenshot in step 4", `() => { const i = document.querySelector("section[data-step='4'] img"); return i && i.complete && i.naturalWidth === 320; }`)
	if got := evalJS[string](t, page, `() => document.querySelector("header h1").textContent`); got != goal {
		t.Errorf("header h1 %q, want the goal %q", got, goal)
	}
	if got := evalJS[string](t, page, `() => document.getElementById("session").textContent`); !strings.Contains(got, fs.id) {
		t.Errorf("the session id is not in the header: %q", got)
	}
	if got, want := evalJS[string](t, page, `() => [...document.querySelectorAll(".step h2")].map(h => h.textContent).join(",")`), "Start,Step 1,Step 2,Step 3,Step 4"; got != want {
		t.Errorf("step headings %q, want %q", got, want)
	}
	wantRows := "1 navigate allowed low\n2 type allowed medium\n3 click denied high\n3 click allowed low\n4 extract allowed low"
	if got := evalJS[string](t, page, decisionRows); got != wantRows {
		t.Errorf("decision rows:\n%s\nwant\n%s", got, wantRows)
	}
	if got := evalJS[int](t, page, `() => document.querySelectorAll("img").length`); got != 1 {
		t.Errorf("%v images, want the one screenshot, inside its step", got)
	}
	a11ytest.RequireClean(t, page, "console-running")

	bundle.decision("a6", contract.ActClick, 5, contract.ResultPaused, contract.RiskHigh)
	bundle.event(contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: "a6", ActionType: contract.ActClick, URL: strPtr("http://127.0.0.1:8080/form"), Summary: `click #place-order "Place order" (risk high: payment)`})
	waitJS(t, page, "the approval", `() => !document.getElementById("approval").hidden`)
	if got := evalJS[string](t, page, `() => { const r = document.querySelector("section[data-step='5'] tr[data-kind=approval]"); return r.cells[2].textContent + " " + r.cells[2].className; }`); got != "high risk-high" {
		t.Errorf("the approval row's risk cell: %q, want high in risk-high", got)
	}
	if got := evalJS[string](t, page, `() => document.getElementById("approval-title").textContent + " / " + document.getElementById("approval-risk").textContent`); got != "Approval required for step 5 / high risk" {
		t.Errorf("approval panel: %q", got)
	}
	if got := evalJS[string](t, page, `() => document.getElementById("approve").className + " " + document.getElementById("deny").className`); got != "btn-primary btn-danger" {
		t.Errorf("Approve and Deny classes: %q", got)
	}
	// Checked as a person answers it: the buttons take clicks (750 ms
	// after the approval showed).
	waitJS(t, page, "Approve and Deny enabled", `() => !document.getElementById("approve").disabled && !document.getElementById("deny").disabled`)
	a11ytest.RequireClean(t, page, "console-approval")

	bundle.decision("a6", contract.ActClick, 5, contract.ResultApproved, contract.RiskHigh)
	bundle.event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: "a6", Decision: contract.ApprovalApprove})
	act("a6", contract.ActClick, contract.RiskHigh, `click #place-order "Place order"`)
	bundle.event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "completed: Read the orders table"})
	fs.bus.Close()
	waitJS(t, page, "the outcome", `() => document.getElementById("status").textContent.includes("Session completed")`)
	if got := evalJS[string](t, page, decisionRows); got != wantRows+"\n5 click approved high" {
		t.Errorf("decision rows after the approval:\n%s", got)
	}
	if evalJS[bool](t, page, `() => !document.getElementById("approval").hidden`) {
		t.Errorf("the approval panel is still shown")
	}
	a11ytest.RequireClean(t, page, "console-ended")

	// A wrong token (a stale one, from an earlier run): the console says
	// so, and tries nothing more however long it stays open.
	rc.counts()
	stale := consolePage(t, browser, hs.URL+"/?session="+fs.id+"#token="+strings.Repeat("x", 43), true)
	waitJS(t, stale, "the refusal", `() => document.getElementById("notice").textContent.includes("refused this page's token")`)
	if err := stale.Clock().RunFor(10 * 60 * 1000); err != nil {
		t.Fatal(err)
	}
	if got := evalJS[string](t, stale, `() => document.getElementById("notice").textContent`); !strings.Contains(got, "Open the address the terminal printed") {
		t.Errorf("the refusal does not say what to do: %q", got)
	}
	if got := rc.counts(); got["sessions"] != 1 || got["stream"] != 0 {
		t.Errorf("with a refused token the console made %v requests, want one look at /v1/sessions and no stream", got)
	}
	a11ytest.RequireClean(t, stale, "console-refused")
}

// TestConsoleRetriesADroppedConnection: when the server goes away, the
// console tries again a bounded number of times, with backoff, then says
// it lost the connection and stops.
func TestConsoleRetriesADroppedConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	srv, err := NewServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := newFakeSession("s-console-2")
	bundle := newFakeBundle(t, fs)
	srv.Add(fs, SessionOptions{Dir: bundle.dir, Goal: "watch"})
	rc := &requestCounter{next: srv.Handler(), count: map[string]int{}}
	hs := httptest.NewServer(rc)
	t.Cleanup(hs.Close)
	bundle.event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: fs.id})
	page := consolePage(t, a11ytest.Launch(t), hs.URL+"/?session="+fs.id+"#token="+srv.Token(), true)
	waitJS(t, page, "the stream", `() => document.getElementById("conn").textContent === "live"`)

	rc.down.Store(true)
	rc.counts()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	_ = srv.Close(gone) // closes the stream at once
	for i := 1; i <= 5; i++ {
		waitJS(t, page, "a retry", `() => document.getElementById("notice").textContent.includes("attempt `+itoa(i)+` of 5")`)
		if err := page.Clock().RunFor(8000); err != nil {
			t.Fatal(err)
		}
	}
	waitJS(t, page, "the end of the retries", `() => document.getElementById("notice").textContent.includes("Lost the connection")`)
	if err := page.Clock().RunFor(10 * 60 * 1000); err != nil {
		t.Fatal(err)
	}
	if got := rc.counts(); got["sessions"] != 5 || got["stream"] != 0 {
		t.Errorf("the console made %v requests while the server was gone, want 5 looks at /v1/sessions", got)
	}
}
