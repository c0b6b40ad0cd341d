package audit_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
)

// effectBundle writes, as the session does, a bundle in which a click on
// "Continue" causes a POST to a payment endpoint (held, approved by alice)
// and a navigation to a foreign origin (refused by the browser boundary),
// followed by a denied navigation; it returns the sealed bundle.
func effectBundle(t *testing.T) string {
	t.Helper()
	sid := "effects-1"
	task := contract.Input{Goal: "Check out the basket", URLs: []string{"https://shop.example/checkout"}}
	pv := strings.Repeat("ab", 32)
	w, err := evidence.Create(t.TempDir(), contract.Manifest{SessionID: sid, Task: task, Driver: contract.ModePlaywright, Versions: contract.Versions{Aegis: "test", Policy: pv}}, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tick := func() time.Time { at = at.Add(time.Millisecond); return at }
	stamp := func() string { return tick().Format(time.RFC3339Nano) }
	decide := func(a contract.Action, target *contract.Element, step int, result contract.DecisionResult, risk contract.RiskTag) contract.DecisionRecord {
		now := tick()
		var plain *gate.Gate
		hash := plain.ActionHash(gate.Request{SessionID: sid, ActiveURL: "https://shop.example/checkout", Action: a, Target: target})
		judged, page := a, "https://shop.example/checkout"
		d := contract.DecisionRecord{
			DecisionID: gate.DecisionID(pv, hash, step, now), SessionID: sid, StepIndex: step, ActionID: a.ID, ActionHash: hash,
			Action: &judged, ActiveURL: &page,
			ActionName: a.PolicyName(), Target: target, PolicyVersion: pv, PolicySource: "embedded", Result: result, Risk: risk,
			Reasons: []contract.Reason{}, EvaluatedAt: now.Format(time.RFC3339Nano), DurationUs: 80, DecisionLogID: "dlog-1",
		}
		switch result {
		case contract.ResultAllowed:
			d.Allow = true
		case contract.ResultDenied:
			d.Reasons = []contract.Reason{{Rule: "origin_not_allowed", Message: "https://evil.example is not an allowed origin"}}
		}
		return d
	}
	result := func(a contract.Action) contract.ToolResult {
		return contract.ToolResult{ActionID: a.ID, Action: a.PolicyName(), RiskTag: contract.RiskLow, SessionID: sid, OK: true, URL: "https://shop.example/checkout", StartedAt: stamp(), EndedAt: stamp()}
	}
	tags := []string{}
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: sid, Timestamp: stamp()}))
	open := contract.Action{ID: "start", Type: contract.ActNavigate, Reason: "open the task's first URL", PolicyTags: tags, URL: "https://shop.example/checkout"}
	must(w.Decision(decide(open, nil, 1, contract.ResultAllowed, contract.RiskLow)))
	must(w.Action(open, result(open)))
	must(w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: open.ID, ActionType: open.Type, RiskLevel: contract.RiskLow, Summary: "opened the checkout", Timestamp: stamp()}))

	click := contract.Action{ID: "c1", Type: contract.ActClick, Reason: "continue to the next step", PolicyTags: tags, Selector: "#continue"}
	target := &contract.Element{Tag: "button", Type: "button", ID: "continue", Role: "button", Label: "Continue", Text: "Continue", Origin: "https://shop.example"}
	must(w.Decision(decide(click, target, 2, contract.ResultAllowed, contract.RiskLow)))
	must(w.Action(click, result(click)))
	must(w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: click.ID, ActionType: click.Type, RiskLevel: contract.RiskLow, Summary: "clicked Continue", Timestamp: stamp()}))
	// The click's POST, held and approved; the decisions bind the effect.
	pay := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://shop.example", Path: "/pay", Fields: []string{"amount", "card"}, ResourceType: "fetch"}
	paused := decide(click, target, 2, contract.ResultPaused, contract.RiskHigh)
	var plain *gate.Gate // the effect decision's hash binds the effect (evidence/FORMAT.md, rule 15)
	paused.Effect, paused.ActionHash = &pay, plain.ActionHash(gate.Request{SessionID: sid, ActiveURL: "https://shop.example/checkout", Action: click, Target: target, Effect: &pay})
	paused.RequiresApproval = true
	paused.ApprovalReasons = []contract.Reason{{Rule: "high_risk_effect", Message: "a POST to a payment endpoint"}}
	paused.RiskReasons = []contract.Reason{{Rule: "payment_effect", Message: "POST /pay"}}
	must(w.Decision(paused))
	u := "https://shop.example/checkout"
	must(w.Event(contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: "c1", ActionType: contract.ActClick, URL: &u, Summary: `click #continue "Continue" causes POST https://shop.example/pay (fields: amount, card) (risk high: high_risk_effect)`, Timestamp: stamp()}))
	approved := paused
	approved.Allow, approved.Result = true, contract.ResultApproved
	approved.EvaluatedAt = tick().Format(time.RFC3339Nano)
	approved.DecisionID = gate.DecisionID(pv, approved.ActionHash, 2, at)
	approved.Approval = &contract.ApprovalRef{ID: "apr-" + strings.Repeat("1", 32), Approver: "alice", ApprovedAt: approved.EvaluatedAt, ExpiresAt: at.Add(2 * time.Minute).Format(time.RFC3339Nano), ActionHash: approved.ActionHash}
	must(w.Decision(approved))
	must(w.Event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: "c1", Decision: contract.ApprovalApprove, Timestamp: stamp()}))
	// The foreign navigation the boundary refused: the session's denial.
	steal := contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Origin: "https://evil.example", Path: "/steal", ResourceType: "document", Refused: "origin https://evil.example is not allowed"}
	refused := decide(click, target, 2, contract.ResultDenied, contract.RiskLow)
	refused.Effect = &steal
	refused.Reasons = []contract.Reason{{Rule: "effect_refused", Message: steal.Refused}}
	must(w.Decision(refused))
	must(w.Event(contract.StreamEvent{Type: contract.EventError, Code: "effect.denied", Message: "action c1 (click): GET https://evil.example/steal (navigation): denied: effect_refused", Timestamp: stamp()}))

	leave := contract.Action{ID: "n1", Type: contract.ActNavigate, Reason: "leave", PolicyTags: tags, URL: "https://evil.example/"}
	must(w.Decision(decide(leave, nil, 3, contract.ResultDenied, contract.RiskMedium)))
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "checked out", Timestamp: stamp()}))
	_, err = w.Seal(context.Background(), contract.SessionCompleted, tick(), nil)
	must(err)
	return w.Dir()
}

// TestOpenEffects: a bundle with effects verifies, and its effects are
// under the action that caused them, a pause with its approval as one
// effect; the action's own decisions are unchanged.
func TestOpenEffects(t *testing.T) {
	b, err := audit.Open(context.Background(), effectBundle(t), audit.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Verification.Status != audit.StatusValid || b.Verification.Report.Effects != (evidence.EffectCounts{Decisions: 3, Denied: 1, Approved: 1}) {
		t.Fatalf("verification %s %+v", b.Verification.Status, b.Verification.Report.Effects)
	}
	if len(b.Steps) != 3 {
		t.Fatalf("%d steps, want start, c1, n1", len(b.Steps))
	}
	s := b.Steps[1]
	if s.Action == nil || s.Action.ID != "c1" || len(s.Decisions) != 1 || !s.Final().Allow {
		t.Fatalf("step 2 %+v", s)
	}
	if len(s.Effects) != 2 {
		t.Fatalf("%d effects, want the POST and the navigation", len(s.Effects))
	}
	pay, steal := s.Effects[0], s.Effects[1]
	if len(pay.Decisions) != 2 || pay.Final().Result != contract.ResultApproved || audit.EffectTitle(pay.Effect) != "POST https://shop.example/pay" {
		t.Errorf("the POST %+v", pay)
	}
	if len(steal.Decisions) != 1 || steal.Final().Allow || steal.Effect.Refused == "" {
		t.Errorf("the navigation %+v", steal)
	}
	if len(b.Steps[0].Effects) != 0 || len(b.Steps[2].Effects) != 0 || b.Steps[2].Executed() {
		t.Errorf("effects elsewhere: %+v %+v", b.Steps[0], b.Steps[2])
	}
}

// TestTamperedEffect: changing what an effect was (where the POST went)
// breaks the bundle at that decision.
func TestTamperedEffect(t *testing.T) {
	dir := effectBundle(t)
	p := filepath.Join(dir, "decisions.jsonl")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(data, []byte(`"path":"/pay"`), []byte(`"path":"/ok"`), 1)
	if bytes.Equal(forged, data) {
		t.Fatal("no effect path to change")
	}
	if err := os.WriteFile(p, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = audit.Open(context.Background(), dir, audit.OpenOptions{})
	var te *audit.TamperedError
	var ve *evidence.VerifyError
	if !errors.As(err, &te) || !errors.As(err, &ve) || ve.File != "decisions.jsonl" || ve.Line != 3 {
		t.Fatalf("open a tampered effect: %v", err)
	}
}

// TestReportEffects: the report shows each effect under the action that
// caused it (method, destination, fields, outcome, risk, reasons, who
// approved), in Chromium too.
func TestReportEffects(t *testing.T) {
	page := report(t, effectBundle(t))
	_, text := checkSelfContained(t, page)
	i := strings.Index(text, "Step 2: click #continue")
	j := strings.Index(text, "Step 3: ")
	if i < 0 || j < i {
		t.Fatalf("no step 2 before step 3 in the report")
	}
	step := text[i:j]
	for _, want := range []string{
		"Effects of this action (2)", "allowed; 1 of its effects denied",
		"POST https://shop.example/pay", "approved", "amount, card (names only", "https://shop.example/pay (origin and path",
		"risk high", "high_risk_effect", "approved by alice",
		"GET https://evil.example/steal", "not done: denied", "effect_refused", "Refused by the browser boundary",
		"the browser boundary refused it before any policy saw it",
	} {
		if !strings.Contains(step, want) {
			t.Errorf("step 2 of the report lacks %q", want)
		}
	}
	if strings.Contains(text[:i], "Effects of this action") || strings.Contains(text[j:], "Effects of this action") {
		t.Error("effects shown under another step")
	}
	obs, pwned := render(t, page, "effects-report")
	for _, want := range []string{"Effects of this action (2)", "POST https://shop.example/pay", "GET https://evil.example/steal"} {
		if !strings.Contains(obs.DOMText, want) {
			t.Errorf("the rendered report does not show %q", want)
		}
	}
	if n := pwned.Load(); n != 0 {
		t.Errorf("rendering the report made %d requests besides the report", n)
	}
}

// TestPolicyDiffEffects: the effects the gate judged are judged again
// (the refused navigation is not: no policy saw it), and a change about
// one names the effect.
func TestPolicyDiffEffects(t *testing.T) {
	r, err := audit.DiffPolicy(context.Background(), effectBundle(t), audit.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// start, c1 and its POST (n1 never ran: unevaluated).
	if r.Evaluated != 3 || len(r.Unevaluated) != 1 {
		t.Errorf("evaluated %d, unevaluated %+v", r.Evaluated, r.Unevaluated)
	}
	for _, c := range r.Changes {
		if c.ActionID == "c1" && c.Effect != nil && audit.EffectTitle(*c.Effect) != "POST https://shop.example/pay" {
			t.Errorf("change %+v", c)
		}
		if c.Effect != nil && c.Effect.Refused != "" {
			t.Errorf("a refused effect was judged again: %+v", c)
		}
	}
}
