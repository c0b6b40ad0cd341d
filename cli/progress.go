package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/session"
)

// progressLine renders one action for stderr, such as
// `step 3/50  click #sign-in "Sign in"  allowed (medium)  12ms  tokens
// 12,345/50,000` (the tokens the model calls used so far and the token
// budget, when there is one; no tokens without model calls), followed by
// what they cost when the model is priced or the task has a cost budget:
// `tokens 12,345/50,000 · $0.0042/$0.10`. An action of
// an offline navigator ends with its item of the plan: `step 3/50  click
// #submit "Submit"  allowed (medium)  12ms  script 2/5`.
//
// An effect of an action reads `effect of step 3  click #continue
// "Continue" causes POST https://shop.example/pay (fields: card)  DENIED
// (high): approval_denied`.
func progressLine(r session.StepReport) string {
	var b strings.Builder
	if r.Effect != nil {
		fmt.Fprintf(&b, "effect of step %d  %s  ", r.Index, session.DescribeEffect(r.Action, r.Target, *r.Effect))
	} else {
		fmt.Fprintf(&b, "step %d/%d  %s  ", r.Index, r.Budget, session.DescribeAction(r.Action, r.Target))
	}
	switch {
	case r.Decision == "":
		b.WriteString("not run")
	case r.Decision == contract.ResultDenied:
		rules := make([]string, len(r.Reasons))
		for i, rs := range r.Reasons {
			rules[i] = rs.Rule
		}
		fmt.Fprintf(&b, "DENIED (%s): %s", r.Risk, strings.Join(rules, ", "))
		if len(r.Reasons) == 1 && r.Reasons[0].Rule == session.RuleApprovalDenied {
			// Who refused it: a person (and where) or a rule.
			b.WriteString(": " + session.Sanitize(r.Reasons[0].Message, 200))
		}
	default:
		fmt.Fprintf(&b, "%s (%s)", r.Decision, r.Risk)
	}
	if r.Executed {
		fmt.Fprintf(&b, "  %s", r.Duration.Round(time.Millisecond))
	}
	if r.Error != "" {
		b.WriteString("  failed: " + session.Sanitize(r.Error, 200))
	}
	if t := usage(r.Tokens, r.MaxTokens, r.CostUSD, r.MaxCostUSD, r.Priced); t != "" {
		b.WriteString("  " + t)
	}
	if r.Effect == nil && r.Plan.N > 0 {
		b.WriteString("  " + r.Plan.String())
	}
	if r.Vision {
		b.WriteString("  vision")
	}
	return b.String()
}

// tokens says what the model calls used of the token budget: "tokens
// 12,345/50,000", "tokens 12,345" without a budget, "" when nothing was
// used and there is no budget.
func tokens(used, budget int) string {
	switch {
	case budget > 0:
		return "tokens " + text.Thousands(used) + "/" + text.Thousands(budget)
	case used > 0:
		return "tokens " + text.Thousands(used)
	}
	return ""
}

// usage is tokens, followed by the cost when the calls are priced or
// there is a cost budget: "tokens 12,345/50,000 · $0.0042/$0.10",
// "tokens 12,345 · $0.0042" without budgets.
func usage(used, budget int, cost, maxCost float64, priced bool) string {
	t := tokens(used, budget)
	if !priced && maxCost == 0 {
		return t
	}
	if t == "" {
		t = "tokens 0"
	}
	t += " · " + text.USD(cost)
	if maxCost > 0 {
		t += "/" + text.USD(maxCost)
	}
	return t
}

// endLine says how the session ended, how much of an offline navigator's
// plan ran ("script 3/5 ran"), why when it did not complete, and where the
// bundle is.
func endLine(res session.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "aegis: %s in %s: %d actions, %d denied, %d approved", res.Status,
		res.Timings.Total.Round(10*time.Millisecond), res.Output.ActionsExecuted, res.Denied, res.Approved)
	if t := usage(res.Tokens, res.MaxTokens, res.CostUSD, res.MaxCostUSD, res.Priced); t != "" {
		b.WriteString(", " + t)
	}
	if p := res.Plan.String(); p != "" {
		b.WriteString(", " + p + " ran")
	}

	switch {
	case res.Evidence.Sealed:
		fmt.Fprintf(&b, "; evidence %s (sealed, head %s)", res.Evidence.Dir, short(res.Evidence.HeadHash))
	case res.Evidence.Dir != "":
		fmt.Fprintf(&b, "; evidence %s NOT SEALED: %s", res.Evidence.Dir, res.Evidence.Error)
	default:
		fmt.Fprintf(&b, "; no evidence bundle: %s", res.Evidence.Error)
	}
	if res.Status != contract.SessionCompleted && res.Output.Summary != "" {
		fmt.Fprintf(&b, "\naegis: why: %s", session.Sanitize(res.Output.Summary, 600))
	}
	return b.String()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
