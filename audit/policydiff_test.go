package audit_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
)

func diffPolicy(t *testing.T, bundle, policy string) *audit.DiffReport {
	t.Helper()
	r, err := audit.DiffPolicy(context.Background(), bundle, audit.DiffOptions{PolicyPath: policy})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Changes {
		t.Logf("step %d %s %s: %s %s -> %s %v (exact %v %v)", c.Step, c.ActionID, c.Kind, c.Recorded.Verdict, rules(c.Recorded.Reasons), c.Now.Verdict, rules(c.Now.Reasons), c.Exact, c.Gaps)
	}
	return r
}

func steps(cs []audit.Change) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.Step)
	}
	return out
}

func rules(rs []contract.Reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Rule)
	}
	return out
}

func hasRule(rs []contract.Reason, rule string) bool { return slices.Contains(rules(rs), rule) }

// TestPolicyDiffSame: under the policy that judged it, no decision
// changes, and every decision whose action hash can be recomputed (all but
// the redacted password) is reconstructed exactly.
func TestPolicyDiffSame(t *testing.T) {
	bundle, _ := demoBundle(t)
	r := diffPolicy(t, bundle, "")
	if len(r.Changes) != 0 {
		t.Fatalf("%d changes under the same policy", len(r.Changes))
	}
	if r.Evaluated != 11 || r.Exact != 10 {
		t.Errorf("evaluated %d, exact %d; want 11 and 10 (the redacted password's hash is keyed)", r.Evaluated, r.Exact)
	}
	if len(r.Unevaluated) != 1 || r.Unevaluated[0].Step != 10 || r.Unevaluated[0].Recorded.Verdict != audit.VerdictDeny {
		t.Errorf("unevaluated %+v, want step 10, the recorded denial whose action did not run", r.Unevaluated)
	}
	if r.Policy != r.RecordedPolicy {
		t.Errorf("policy %s, recorded %s", r.Policy, r.RecordedPolicy)
	}
}

// TestPolicyDiffStricter: a step budget of 5 denies every later step that
// the record allowed, with both reasons.
func TestPolicyDiffStricter(t *testing.T) {
	bundle, _ := demoBundle(t)
	dir := policyDir(t, func(c map[string]any) { c["limits"].(map[string]any)["max_step_budget"] = 5 })
	r := diffPolicy(t, bundle, dir)
	if got, want := steps(r.Changes), []int{6, 7, 8, 9, 11, 12}; !slices.Equal(got, want) {
		t.Fatalf("changed steps %v, want %v", got, want)
	}
	for _, c := range r.Changes {
		if c.Kind != audit.ChangeVerdict || c.Now.Verdict != audit.VerdictDeny || !hasRule(c.Now.Reasons, "step_budget_exceeded") {
			t.Errorf("step %d: %+v, want denied for step_budget_exceeded", c.Step, c)
		}
	}
	c8 := r.Changes[2]
	if c8.Recorded.Verdict != audit.VerdictApproval || !hasRule(c8.Recorded.Reasons, "high_risk_pattern") {
		t.Errorf("step 8 recorded %+v, want an approval for a high-risk pattern", c8.Recorded)
	}
	if !c8.Exact {
		t.Errorf("step 8 not reconstructed exactly: %v", c8.Gaps)
	}
}

// TestPolicyDiffStricterDomains: blocking the demo's host denies every
// executed step.
func TestPolicyDiffStricterDomains(t *testing.T) {
	bundle, _ := demoBundle(t)
	dir := policyDir(t, func(c map[string]any) { c["urls"].(map[string]any)["blocked_domains"] = []any{"127.0.0.1"} })
	r := diffPolicy(t, bundle, dir)
	if got, want := steps(r.Changes), []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12}; !slices.Equal(got, want) {
		t.Fatalf("changed steps %v, want %v", got, want)
	}
	for _, c := range r.Changes {
		if !hasRule(c.Now.Reasons, "blocked_domain") {
			t.Errorf("step %d: now %+v, want blocked_domain", c.Step, c.Now)
		}
	}
}

// TestPolicyDiffLooser: a policy that asks no approval for high risk lets
// the two approved steps run without one.
func TestPolicyDiffLooser(t *testing.T) {
	bundle, _ := demoBundle(t)
	dir := policyDir(t, func(c map[string]any) { c["risk"].(map[string]any)["approval_required"] = []any{} })
	r := diffPolicy(t, bundle, dir)
	if got, want := steps(r.Changes), []int{3, 8}; !slices.Equal(got, want) {
		t.Fatalf("changed steps %v, want %v", got, want)
	}
	for _, c := range r.Changes {
		if c.Recorded.Verdict != audit.VerdictApproval || c.Now.Verdict != audit.VerdictAllow || len(c.Recorded.Reasons) == 0 {
			t.Errorf("step %d: %+v, want approval -> allow with the recorded reasons", c.Step, c)
		}
	}
	changes, err := audit.PolicyDiff(context.Background(), bundle, dir)
	if err != nil || len(changes) != 2 {
		t.Errorf("PolicyDiff: %d changes, %v", len(changes), err)
	}
}
