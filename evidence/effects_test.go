package evidence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// TestEffectDecisions: decisions about effects of an action (Effect set)
// follow the action's line, decide no action, and are counted; one about
// an action that no line records yet is refused.
func TestEffectDecisions(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	click := contract.Action{ID: "a1", Type: contract.ActClick, Reason: "continue", PolicyTags: []string{}, Selector: "#continue"}
	post := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://example.com", Path: "/pay", Fields: []string{"card"}}
	effect := func(id string, r contract.DecisionResult) contract.DecisionRecord {
		return effectDecision(id, click, r, post)
	}
	if err := w.Decision(effect("early", contract.ResultDenied)); err == nil || !strings.Contains(err.Error(), "no action line before it") {
		t.Fatalf("an effect decision before its action: %v", err)
	}
	for _, step := range []func() error{
		func() error { return w.Decision(decision("click", click, contract.ResultAllowed)) },
		func() error { return w.Action(click, result(click, true)) },
		func() error { return w.Event(actionEvent(click, "clicked continue", "2026-01-23T10:15:00Z")) },
		func() error { return w.Decision(effect("paused", contract.ResultPaused)) },
		func() error { return w.Decision(effect("approved", contract.ResultApproved)) },
		func() error { return w.Decision(effect("denied", contract.ResultDenied)) },
		// An allowed effect decides no action: a second line of the
		// action is not authorized by it.
		func() error { return w.Decision(effect("allowed", contract.ResultAllowed)) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Action(click, result(click, true)); err == nil {
		t.Error("an allowed effect authorized its action a second time")
	}
	if err := w.Event(actionEvent(click, "clicked continue", "2026-01-23T10:15:00Z")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 10, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(context.Background(), w.Dir(), VerifyOptions{})
	if err == nil || !strings.Contains(err.Error(), "without an allow decision") {
		t.Fatalf("verify: %v", err)
	}
}

// TestEffectDecisionsVerify: a bundle with effect decisions verifies, and
// the report counts them.
func TestEffectDecisionsVerify(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	click := contract.Action{ID: "a1", Type: contract.ActClick, Reason: "continue", PolicyTags: []string{}, Selector: "#continue"}
	post := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://example.com", Path: "/pay", Fields: []string{"card"}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Decision(decision("click", click, contract.ResultAllowed)))
	must(w.Action(click, result(click, true)))
	must(w.Event(actionEvent(click, "clicked continue", "2026-01-23T10:15:00Z")))
	for _, r := range []contract.DecisionResult{contract.ResultPaused, contract.ResultApproved, contract.ResultDenied, contract.ResultAllowed} {
		must(w.Decision(effectDecision("effect-"+string(r), click, r, post)))
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 10, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), w.Dir(), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Effects, (EffectCounts{Decisions: 4, Denied: 1, Approved: 1}); got != want || rep.Counts.Decisions != 5 {
		t.Errorf("effects %+v, want %+v; decisions %d", got, want, rep.Counts.Decisions)
	}
}
