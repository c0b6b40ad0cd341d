package live

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/a11ytest"
	"github.com/aegis-run/aegis/session"
)

// syncBuffer is a server log the test reads while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// controls returns the log's lines about the console's control requests
// (carried out or refused).
func (s *syncBuffer) controls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
		if strings.Contains(l, `"console"`) && (strings.Contains(l, " decided ") || strings.Contains(l, "control request refused") || strings.Contains(l, " aborts ")) {
			out = append(out, l)
		}
	}
	return out
}

// TestConsoleApprovalButtons: a click on Approve or Deny disables both
// until another approval is shown, a newly shown approval's buttons take
// no click for 750 ms (the page's clock, moved by the test), and a click
// on a disabled button sends nothing: a second click meant for one
// approval never answers the next.
func TestConsoleApprovalButtons(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	log := &syncBuffer{}
	srv, err := NewServer(Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	fs := newFakeSession("s-console-3")
	bundle := newFakeBundle(t, fs)
	ap := NewApprover()
	srv.Add(fs, SessionOptions{Dir: bundle.dir, Goal: "approve twice", Approver: ap})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	page := consolePage(t, a11ytest.Launch(t), hs.URL+"/?session="+fs.id+"#token="+srv.Token(), true)
	bundle.event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: fs.id})
	waitJS(t, page, "the stream", `() => document.getElementById("conn").textContent === "live"`)
	// The page's clock moves only when the test moves it.
	if err := page.Clock().PauseAt(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	// ask announces an approval of action id at step and asks the
	// approver, as a session does (the event, then the question).
	ask := func(id string, step int) <-chan session.ApprovalAnswer {
		bundle.decision(id, contract.ActClick, step, contract.ResultPaused, contract.RiskHigh)
		bundle.event(contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: id, ActionType: contract.ActClick, URL: strPtr("http://127.0.0.1:8080/form"), Summary: "click #" + id})
		out := make(chan session.ApprovalAnswer, 1)
		go func() {
			ans, err := ap.Approve(t.Context(), session.ApprovalRequest{SessionID: fs.id, Action: contract.Action{ID: id, Type: contract.ActClick}})
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("approve %s: %v", id, err)
			}
			out <- ans
		}()
		return out
	}
	disabled := func(what string, want bool) {
		t.Helper()
		got := evalJS[string](t, page, `() => document.getElementById("approve").disabled + " " + document.getElementById("deny").disabled`)
		if w := map[bool]string{true: "true true", false: "false false"}[want]; got != w {
			t.Errorf("%s: Approve and Deny disabled %q, want %q", what, got, w)
		}
	}
	forceClick := func(id string) {
		t.Helper()
		// A person's click on the button, disabled or not (Force skips
		// Playwright's wait for it to be enabled).
		if err := page.Locator("#" + id).Click(playwright.LocatorClickOptions{Force: playwright.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(ms int) {
		t.Helper()
		if err := page.Clock().RunFor(ms); err != nil {
			t.Fatal(err)
		}
	}

	first := ask("a1", 1)
	waitJS(t, page, "the first approval", `() => !document.getElementById("approval").hidden && document.getElementById("approval-summary").textContent.includes("#a1")`)
	disabled("just shown", true)
	forceClick("approve")
	run(749)
	disabled("749 ms after it was shown", true)
	run(1)
	disabled("750 ms after it was shown", false)

	// One click answers; both buttons are disabled at once, and a second
	// click sends nothing.
	if err := page.Locator("#approve").Click(); err != nil {
		t.Fatal(err)
	}
	disabled("right after the click", true)
	forceClick("approve")
	forceClick("deny")
	if ans := <-first; !ans.Approved {
		t.Fatalf("the first approval was answered %+v, want approved", ans)
	}

	// The next approval arrives while the person clicks: its buttons take
	// no click before 750 ms.
	bundle.decision("a1", contract.ActClick, 1, contract.ResultApproved, contract.RiskHigh)
	bundle.event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: "a1", Decision: contract.ApprovalApprove})
	second := ask("a2", 2)
	waitJS(t, page, "the second approval", `() => !document.getElementById("approval").hidden && document.getElementById("approval-summary").textContent.includes("#a2")`)
	disabled("the next approval, just shown", true)
	forceClick("approve")
	run(750)
	disabled("the next approval, 750 ms after it was shown", false)
	if err := page.Locator("#deny").Click(); err != nil {
		t.Fatal(err)
	}
	disabled("right after the Deny", true)
	forceClick("approve")
	if ans := <-second; ans.Approved {
		t.Fatalf("the second approval was answered %+v, want denied", ans)
	}

	// The server saw two requests: the one per approval the person meant.
	// (A click sent before the Deny would have arrived before it, on the
	// same connection; one sent after it is refused and logged: end the
	// stream and let the console's connection close first.)
	bundle.event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionAborted, Summary: "aborted: denied"})
	fs.bus.Close()
	waitJS(t, page, "the outcome", `() => document.getElementById("status").textContent.includes("Session aborted")`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = srv.Close(ctx)
	waitFor(t, "the console to leave", func() bool { return srv.clientCount() == 0 })
	got := log.controls()
	if len(got) != 2 || !strings.Contains(got[0], "decided approve for action a1") || !strings.Contains(got[1], "decided deny for action a2") {
		t.Errorf("control requests the server got:\n%s\nwant one approve of a1, one deny of a2", strings.Join(got, "\n"))
	}
}
