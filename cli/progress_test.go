package cli

import (
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/session"
)

// TestProgressLine: an action's line and the line of an effect it caused.
func TestProgressLine(t *testing.T) {
	click := contract.Action{ID: "c1", Type: contract.ActClick, Selector: "#continue"}
	target := &contract.Element{Tag: "button", Text: "Continue"}
	post := &contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://shop.example", Path: "/pay", Fields: []string{"card"}}
	tests := []struct {
		r    session.StepReport
		want string
	}{
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Effect: post, Decision: contract.ResultDenied, Risk: contract.RiskHigh, Reasons: []contract.Reason{{Rule: "approval_denied", Message: "denied by a person at the terminal (the effect was refused)"}}},
			`effect of step 3  click #continue "Continue" causes POST https://shop.example/pay (fields: card)  DENIED (high): approval_denied: denied by a person at the terminal (the effect was refused)`},
		{session.StepReport{Index: 5, Budget: 50, Action: click, Target: target, Decision: contract.ResultDenied, Risk: contract.RiskHigh, Reasons: []contract.Reason{{Rule: "payment_action", Message: "a payment"}}},
			`step 5/50  click #continue "Continue"  DENIED (high): payment_action`},
		{session.StepReport{Index: 4, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, Duration: time.Millisecond, Error: "target_changed: the page changed between the decision and the action"},
			`step 4/50  click #continue "Continue"  allowed (low)  1ms  failed: target_changed: the page changed between the decision and the action`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, Tokens: 12345, MaxTokens: 50000},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms  tokens 12,345/50,000`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, Tokens: 1234567},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms  tokens 1,234,567`},
		{session.StepReport{Index: 1, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, MaxTokens: 900},
			`step 1/50  click #continue "Continue"  allowed (low)  12ms  tokens 0/900`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, Tokens: 12345, MaxTokens: 50000, CostUSD: 0.0042, MaxCostUSD: 0.1, Priced: true},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms  tokens 12,345/50,000 · $0.0042/$0.10`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, Tokens: 12345, CostUSD: 0.0042, Priced: true},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms  tokens 12,345 · $0.0042`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, Tokens: 9000, Priced: true},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms  tokens 9,000 · $0.00`},
		{session.StepReport{Index: 1, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, MaxCostUSD: 2.5},
			`step 1/50  click #continue "Continue"  allowed (low)  12ms  tokens 0 · $0.00/$2.50`},
		{session.StepReport{Index: 3, Budget: 50, Action: click, Target: target, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 12 * time.Millisecond, Plan: navigator.PlanItem{Kind: "script", N: 2, Total: 5}},
			`step 3/50  click #continue "Continue"  allowed (low)  12ms  script 2/5`},
		{session.StepReport{Index: 6, Budget: 50, Action: contract.Action{ID: "vision-1", Type: contract.ActExtract, Extract: contract.ExtractScreenshot, Vision: true}, Decision: contract.ResultAllowed, Risk: contract.RiskLow, Executed: true, OK: true, Duration: 70 * time.Millisecond, Vision: true},
			`step 6/50  extract screenshot  allowed (low)  70ms  vision`},
	}
	for _, tc := range tests {
		if got := progressLine(tc.r); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestEndLine: how a session ended, where its bundle is, and, when it did
// not complete, why.
func TestEndLine(t *testing.T) {
	sealed := session.EvidenceInfo{Dir: "/ev/s-1", Sealed: true, HeadHash: "0123456789abcdef"}
	tests := []struct {
		res  session.Result
		want string
	}{
		{session.Result{Status: contract.SessionCompleted, Output: contract.Output{Summary: "done", ActionsExecuted: 3}, Evidence: sealed, Timings: session.Timings{Total: 1500 * time.Millisecond}},
			"aegis: completed in 1.5s: 3 actions, 0 denied, 0 approved; evidence /ev/s-1 (sealed, head 0123456789ab…)"},
		{session.Result{Status: contract.SessionAborted, Output: contract.Output{Summary: "denied by a person in the popup: click #pay \"Pay\"\x1b[2J", ActionsExecuted: 1}, Denied: 2, Evidence: sealed, Timings: session.Timings{Total: time.Second}},
			"aegis: aborted in 1s: 1 actions, 2 denied, 0 approved; evidence /ev/s-1 (sealed, head 0123456789ab…)\naegis: why: denied by a person in the popup: click #pay \"Pay\"[2J"},
		{session.Result{Status: contract.SessionAborted, Output: contract.Output{Summary: "aborted after 2 actions: the token budget (maxTokens 1,800) was passed: 2,100 tokens used", ActionsExecuted: 2}, Tokens: 2100, MaxTokens: 1800, Evidence: sealed, Timings: session.Timings{Total: time.Second}},
			"aegis: aborted in 1s: 2 actions, 0 denied, 0 approved, tokens 2,100/1,800; evidence /ev/s-1 (sealed, head 0123456789ab…)\naegis: why: aborted after 2 actions: the token budget (maxTokens 1,800) was passed: 2,100 tokens used"},
		{session.Result{Status: contract.SessionAborted, Output: contract.Output{Summary: "aborted after 2 actions: the cost budget (maxCostUsd $0.01) was passed: cost $0.0123 of $0.01", ActionsExecuted: 2}, Tokens: 2100, CostUSD: 0.0123, MaxCostUSD: 0.01, Priced: true, Evidence: sealed, Timings: session.Timings{Total: time.Second}},
			"aegis: aborted in 1s: 2 actions, 0 denied, 0 approved, tokens 2,100 · $0.0123/$0.01; evidence /ev/s-1 (sealed, head 0123456789ab…)\naegis: why: aborted after 2 actions: the cost budget (maxCostUsd $0.01) was passed: cost $0.0123 of $0.01"},
		{session.Result{Status: contract.SessionFailed, Output: contract.Output{Summary: "the navigator stopped: action s3 denied", ActionsExecuted: 3}, Denied: 1, Plan: navigator.PlanItem{Kind: "script", N: 2, Total: 4}, Evidence: sealed, Timings: session.Timings{Total: time.Second}},
			"aegis: failed in 1s: 3 actions, 1 denied, 0 approved, script 2/4 ran; evidence /ev/s-1 (sealed, head 0123456789ab…)\naegis: why: the navigator stopped: action s3 denied"},
	}
	for _, tc := range tests {
		if got := endLine(tc.res); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}
