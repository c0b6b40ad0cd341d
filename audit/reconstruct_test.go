package audit_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
)

// The element the synthetic session's click targets.
var nextButton = contract.Element{Tag: "button", Type: "button", ID: "next", Role: "button", Label: "Next page", Text: "Next"}

// synthetic writes, without a browser, the sealed bundle of a two-step
// session judged by the embedded policy: a navigation, then a click on
// nextButton. With oldGate, the decisions are written as a gate that did
// not record targets wrote them (no target member).
func synthetic(t *testing.T, oldGate bool) string {
	t.Helper()
	ctx := context.Background()
	g, err := gate.New(ctx, gate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const sid, origin = "synthetic-1", "https://shop.example"
	maxActions := 20
	task := contract.Input{Goal: "Read the cart.", URLs: []string{origin + "/"}, MaxActions: &maxActions}
	m := contract.Manifest{
		SessionID: sid, Task: task, Driver: contract.ModePlaywright,
		Versions: contract.Versions{Aegis: "test", Policy: g.PolicyVersion()},
	}
	if oldGate {
		m.FormatVersion = contract.ManifestFormatVersion1 // decisions without their action were written before aegis-evidence/2
	}
	w, err := evidence.Create(t.TempDir(), m, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 23, 10, 0, 0, 0, time.UTC)
	cur := "about:blank"
	for i, step := range []struct {
		action contract.Action
		target *contract.Element
		url    string
	}{
		{contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open the cart", PolicyTags: []string{}, URL: origin + "/cart"}, nil, origin + "/cart"},
		{contract.Action{ID: "a2", Type: contract.ActClick, Reason: "see more items", PolicyTags: []string{}, Selector: "#next"}, &nextButton, origin + "/cart?page=2"},
	} {
		d := g.Decide(ctx, gate.Request{
			SessionID: sid, StepIndex: i + 1, Action: step.action, Target: step.target, ActiveURL: cur,
			Session: gate.Session{AllowedOrigins: task.URLs, Permission: "full", MaxStepBudget: maxActions, DecisionLogID: testDecisionLog},
			Now:     at,
		})
		if !d.Allow {
			t.Fatalf("step %d: %s %v", i+1, d.Result, d.Reasons)
		}
		if step.target != nil && (d.Target == nil || *d.Target != *step.target) {
			t.Fatalf("step %d: the decision records target %+v, want %+v", i+1, d.Target, step.target)
		}
		if oldGate { // written before targets, and actions and active URLs with them, were recorded
			d.Target, d.Action, d.ActiveURL = nil, nil, nil
		}
		if err := w.Decision(d.DecisionRecord); err != nil {
			t.Fatal(err)
		}
		stamp := at.Format(time.RFC3339Nano)
		if err := w.Action(step.action, contract.ToolResult{
			ActionID: step.action.ID, Action: step.action.PolicyName(), RiskTag: d.Risk, SessionID: sid,
			OK: true, URL: step.url, StartedAt: stamp, EndedAt: stamp,
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: step.action.ID, ActionType: step.action.Type,
			RiskLevel: d.Risk, Summary: "did " + step.action.ID, Timestamp: stamp}); err != nil {
			t.Fatal(err)
		}
		cur = step.url
	}
	if _, err := w.Seal(ctx, contract.SessionCompleted, at, nil); err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

// TestReconstructFromRecord: the gate request is rebuilt from the record:
// the click's target is the element the decision recorded, and the rebuilt
// request reproduces the recorded action hash.
func TestReconstructFromRecord(t *testing.T) {
	dir := synthetic(t, false)
	b, err := audit.Open(context.Background(), dir, audit.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(b.Steps))
	}
	nav, err := b.Reconstruct(b.Steps[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if nav.Request.Target != nil || !nav.Exact {
		t.Errorf("navigation: target %+v, exact %v %v; want none, exact", nav.Request.Target, nav.Exact, nav.Gaps)
	}
	click, err := b.Reconstruct(b.Steps[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := click.Request.Target, nextButton; got == nil || *got != want {
		t.Errorf("click target %+v, want %+v", got, want)
	}
	if !click.Exact || len(click.Gaps) != 0 {
		t.Errorf("click: exact %v, gaps %v; want exact", click.Exact, click.Gaps)
	}
	if got, want := click.Request.ActiveURL, "https://shop.example/cart"; got != want {
		t.Errorf("click active URL %s, want %s", got, want)
	}
	r, err := audit.DiffPolicy(context.Background(), dir, audit.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 0 || r.Evaluated != 2 || r.Exact != 2 || len(r.Unevaluated) != 0 {
		t.Errorf("diff under the same policy: %d changes, %d evaluated, %d exact, unevaluated %+v; want 0, 2, 2, none", len(r.Changes), r.Evaluated, r.Exact, r.Unevaluated)
	}
	// The recorded element is what is judged again: its label ("Next page"),
	// which neither the selector nor the action holds, is a high-risk
	// pattern to a stricter policy.
	stricter := policyDir(t, func(c map[string]any) {
		risk := c["risk"].(map[string]any)
		risk["high_risk_patterns"] = append(risk["high_risk_patterns"].([]any), "next page")
	})
	r = diffPolicy(t, dir, stricter)
	if got, want := steps(r.Changes), []int{2}; !slices.Equal(got, want) {
		t.Fatalf("changed steps %v, want %v", got, want)
	}
	if c := r.Changes[0]; c.Recorded.Verdict != audit.VerdictAllow || c.Now.Verdict != audit.VerdictApproval || !hasRule(c.Now.Reasons, "high_risk_pattern") || !c.Exact {
		t.Errorf("step 2: %+v, want allow -> approval for a high-risk pattern, exact", c)
	}
}

// TestPolicyDiffPredatesTargets: a bundle written before targets were
// recorded still verifies; its decisions on an element cannot be judged
// again and say why, and the others are judged as usual.
func TestPolicyDiffPredatesTargets(t *testing.T) {
	dir := synthetic(t, true)
	if _, err := evidence.Verify(context.Background(), dir, evidence.VerifyOptions{}); err != nil {
		t.Fatalf("a bundle without targets does not verify: %v", err)
	}
	b, err := audit.Open(context.Background(), dir, audit.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Reconstruct(b.Steps[1], 0); !errors.Is(err, audit.ErrNoTarget) {
		t.Errorf("Reconstruct of the click: %v, want ErrNoTarget", err)
	}
	r, err := audit.DiffPolicy(context.Background(), dir, audit.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Evaluated != 1 || r.Exact != 1 || len(r.Changes) != 0 {
		t.Errorf("evaluated %d, exact %d, %d changes; want the navigation judged again exactly, unchanged", r.Evaluated, r.Exact, len(r.Changes))
	}
	if len(r.Unevaluated) != 1 || r.Unevaluated[0].Step != 2 || !strings.Contains(r.Unevaluated[0].Why, "predates target recording") {
		t.Fatalf("unevaluated %+v, want step 2: the bundle predates target recording", r.Unevaluated)
	}
	if got := r.Unevaluated[0].Recorded.Verdict; got != audit.VerdictAllow {
		t.Errorf("step 2 recorded verdict %s, want allow", got)
	}
}
