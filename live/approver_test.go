package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/session"
)

// approvalEvent is the approval_required event the session emits before
// it asks for action id.
func approvalEvent(id string, i int) contract.StreamEvent {
	return contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: id, ActionType: contract.ActClick, Summary: "click #pay \"Pay\" (risk high: high_risk)", Timestamp: stamp(i)}
}

// ask publishes the request's event and asks ap, as the session does, and
// returns the answer when it comes.
func ask(t *testing.T, fs *fakeSession, ap *Approver, id, hash string, i int, timeout time.Duration) <-chan session.ApprovalAnswer {
	t.Helper()
	if err := fs.bus.Publish(approvalEvent(id, i)); err != nil {
		t.Fatal(err)
	}
	out := make(chan session.ApprovalAnswer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ans, err := ap.Approve(ctx, session.ApprovalRequest{SessionID: fs.id, Action: contract.Action{ID: id, Type: contract.ActClick}, ActionHash: hash})
		if err != nil {
			ans = session.ApprovalAnswer{Approver: "error: " + err.Error()}
		}
		out <- ans
	}()
	return out
}

func decision(fs *fakeSession, id string, d contract.ApprovalDecision) contract.ControlRequest {
	return contract.ControlRequest{Action: contract.ControlDecision, ComputerUseSessionID: fs.id, ActionID: id, Decision: d}
}

// TestFirstDecisionWins: two clients decide the same approval; the first
// decision is the answer, names its client, and the second is told who
// decided.
func TestFirstDecisionWins(t *testing.T) {
	ap := NewApprover()
	srv, fs, hs := testServer(t, Options{}, SessionOptions{Approver: ap})
	a, b := mustDial(t, hs, srv, fs.id), mustDial(t, hs, srv, fs.id)
	answer := ask(t, fs, ap, "a1", "h1", 1, time.Minute)
	for _, c := range []*websocket.Conn{a, b} {
		if ev, _ := readEvent(t, c); ev.Type != contract.EventApprovalRequired {
			t.Fatalf("got %+v, want the approval request", ev)
		}
	}
	if err := a.WriteJSON(decision(fs, "a1", contract.ApprovalDeny)); err != nil {
		t.Fatal(err)
	}
	ans := <-answer
	if ans.Approved || !strings.HasPrefix(ans.Approver, "live client ") {
		t.Fatalf("answer %+v, want a refusal by a live client", ans)
	}
	if err := b.WriteJSON(decision(fs, "a1", contract.ApprovalApprove)); err != nil {
		t.Fatal(err)
	}
	ev, _ := readEvent(t, b)
	if ev.Type != contract.EventError || ev.Code != CodeAlreadyDecided || !strings.Contains(ev.Message, ans.Approver) || !strings.Contains(ev.Message, "deny") {
		t.Fatalf("second decision: %+v, want %s naming %q and deny", ev, CodeAlreadyDecided, ans.Approver)
	}
}

// TestDecisionIsBoundToTheShownRequest: a decision applies only to the
// approval request this connection was shown last.
func TestDecisionIsBoundToTheShownRequest(t *testing.T) {
	ap := NewApprover()
	srv, fs, hs := testServer(t, Options{DecideWait: 200 * time.Millisecond}, SessionOptions{Approver: ap})
	c := mustDial(t, hs, srv, fs.id)
	expectCode := func(req contract.ControlRequest, code string) {
		t.Helper()
		if err := c.WriteJSON(req); err != nil {
			t.Fatal(err)
		}
		ev, _ := readEvent(t, c)
		if ev.Type != contract.EventError || ev.Code != code {
			t.Fatalf("decision %+v: got %+v, want error %s", req, ev, code)
		}
	}
	// Nothing shown yet.
	expectCode(decision(fs, "a1", contract.ApprovalApprove), CodeNotShown)

	// Shown a1; a decision for another id is refused.
	answer := ask(t, fs, ap, "a1", "h1", 1, time.Minute)
	readEvent(t, c)
	expectCode(decision(fs, "a2", contract.ApprovalApprove), CodeNotShown)
	if err := c.WriteJSON(decision(fs, "a1", contract.ApprovalApprove)); err != nil {
		t.Fatal(err)
	}
	if ans := <-answer; !ans.Approved {
		t.Fatalf("answer %+v, want approved", ans)
	}

	// A request that timed out cannot be decided any more.
	answer = ask(t, fs, ap, "a3", "h3", 3, 50*time.Millisecond)
	readEvent(t, c)
	if ans := <-answer; ans.Approved {
		t.Fatalf("unanswered request approved: %+v", ans)
	}
	expectCode(decision(fs, "a3", contract.ApprovalApprove), CodeNoPending)

	// An approval_required whose request the session never asks (another
	// approver answers it): the decision waits DecideWait, then fails.
	if err := fs.bus.Publish(approvalEvent("a4", 4)); err != nil {
		t.Fatal(err)
	}
	readEvent(t, c)
	expectCode(decision(fs, "a4", contract.ApprovalApprove), CodeNoPending)
}

// TestDecideWaitsForTheRequest: a decision that arrives between the
// event and the session's call to Approve is kept until the call.
func TestDecideWaitsForTheRequest(t *testing.T) {
	ap := NewApprover()
	done := make(chan error, 1)
	go func() { done <- ap.Decide(context.Background(), 1, contract.ApprovalApprove, "client x") }()
	ans, err := ap.Approve(context.Background(), session.ApprovalRequest{Action: contract.Action{ID: "a1"}})
	if err != nil || !ans.Approved || ans.Approver != "client x" {
		t.Fatalf("Approve: %+v %v, want approved by client x", ans, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Decide: %v", err)
	}
	// Request 1 is over: a decision for it now is stale once 2 is asked.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, _ = ap.Approve(ctx, session.ApprovalRequest{Action: contract.Action{ID: "a2"}})
	}()
	waitFor(t, "request 2", func() bool { _, seq, ok := ap.Pending(); return ok && seq == 2 })
	if err := ap.Decide(context.Background(), 1, contract.ApprovalDeny, "late"); !errors.Is(err, ErrStale) {
		t.Errorf("decision for a replaced request: %v, want ErrStale", err)
	}
	if err := ap.Decide(context.Background(), 2, "maybe", "x"); err == nil {
		t.Error("unknown decision accepted")
	}
}
