package gate

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/aegis-run/aegis/contract"
)

// TestFastPathAgreesWithFullRules evaluates the embedded policy's decision
// (with the memoized session prelude, as the gate does, and without it) and
// its full_decision (every rule, no fast path) on 10,000 random requests:
// they must be equal, so the fast path never decides anything the full
// rules would not. It also checks that the sample exercises both
// paths and every result.
func TestFastPathAgreesWithFullRules(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	ctx := context.Background()
	g := sharedGate(t)
	local := g.ev.(*localEval)
	full, _, _, err := newLocal(ctx, Options{}, "data.aegis.browser.full_decision")
	if err != nil {
		t.Fatal(err)
	}
	// The decision with full_decision replaced by a marker: "full" when
	// the fast path was not taken.
	marked, _, _, err := newLocal(ctx, Options{}, `data.aegis.browser.decision with data.aegis.browser.full_decision as "full"`)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2026, 1))
	fast := 0
	results := map[contract.DecisionResult]int{}
	rules := map[string]int{}
	for i := 0; i < n; i++ {
		req := randomRequest(r)
		in, err := g.buildInput(&req, testNow, actionMap(req.Action), elementMap(req.Target))
		if err != nil {
			t.Fatal(err)
		}
		got, err := g.ev.eval(ctx, in, testNow)
		if err != nil {
			t.Fatalf("request %d: decision: %v", i, err)
		}
		want, err := full.eval(ctx, in, testNow)
		if err != nil {
			t.Fatalf("request %d: full_decision: %v", i, err)
		}
		if got.Compare(want) != 0 {
			t.Fatalf("request %d (%+v): decision differs from full_decision\n got %v\nwant %v", i, req.Action, got, want)
		}
		// Without the session prelude (a remote OPA's input) the decision
		// is the same.
		v, err := in.astValue(nil)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := local.pq.Eval(ctx, rego.EvalParsedInput(v), rego.EvalTime(testNow))
		if err != nil {
			t.Fatalf("request %d: decision without prelude: %v", i, err)
		}
		bare, err := singleResult(rs)
		if err != nil {
			t.Fatalf("request %d: decision without prelude: %v", i, err)
		}
		if bare.Compare(want) != 0 {
			t.Fatalf("request %d (%+v): decision without the prelude differs from full_decision\n got %v\nwant %v", i, req.Action, bare, want)
		}
		m, err := marked.eval(ctx, in, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if m.Compare(ast.String("full")) != 0 {
			fast++
		}
		d := g.Decide(ctx, req)
		results[d.Result]++
		for _, rs := range d.Reasons {
			rules[rs.Rule]++
		}
	}
	t.Logf("%d requests: %d on the fast path; results %v; deny rules %v", n, fast, results, rules)
	if fast < n/20 {
		t.Errorf("only %d of %d requests took the fast path: the comparison says little", fast, n)
	}
	for _, res := range []contract.DecisionResult{contract.ResultAllowed, contract.ResultDenied, contract.ResultPaused} {
		if results[res] == 0 {
			t.Errorf("no %s decision in the sample", res)
		}
	}
}
