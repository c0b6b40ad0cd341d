package gate

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/race"
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
	if race.Enabled {
		t.Skip("pure computation: make test runs it without -race (the agreement target)")
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

// commonRequests are the actions a session takes most, each allowed
// without approval: the fast path's reason to exist.
func commonRequests() map[string]Request {
	with := func(a contract.Action, target *contract.Element) Request {
		req := baseRequest()
		a.ID, a.Reason, a.PolicyTags = "a1", "r", []string{}
		req.Action, req.Target = a, target
		return req
	}
	input := &contract.Element{Tag: "input", Type: "text", Name: "name", ID: "name", Label: "Full name"}
	return map[string]Request{
		"click":         baseRequest(),
		"click_box":     with(contract.Action{Type: contract.ActClick, Selector: "#gift"}, &contract.Element{Tag: "input", Type: "checkbox", ID: "gift", Label: "Gift wrap"}),
		"type":          with(contract.Action{Type: contract.ActType, Selector: "#name", Text: "Customer 4"}, input),
		"select":        with(contract.Action{Type: contract.ActSelect, Selector: "#shipping", Value: "express"}, &contract.Element{Tag: "select", Name: "shipping", ID: "shipping", Label: "Shipping"}),
		"extract_page":  with(contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText}, nil),
		"extract_table": with(contract.Action{Type: contract.ActExtract, Selector: "#orders", Extract: contract.ExtractTable}, &contract.Element{Tag: "table", ID: "orders"}),
		"scroll":        with(contract.Action{Type: contract.ActScroll, Direction: contract.ScrollDown, AmountPx: 300}, nil),
		"wait":          with(contract.Action{Type: contract.ActWait, DurationMs: 500}, nil),
		"navigate":      with(contract.Action{Type: contract.ActNavigate, URL: "https://shop.example/products"}, nil),
	}
}

// TestCommonActionsTakeTheFastPath: every common action of a session is
// decided on the policy's fast path (the full rules cost several times
// more), and allowed.
func TestCommonActionsTakeTheFastPath(t *testing.T) {
	ctx := context.Background()
	g := sharedGate(t)
	marked, _, _, err := newLocal(ctx, Options{}, `data.aegis.browser.decision with data.aegis.browser.full_decision as "full"`)
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range commonRequests() {
		t.Run(name, func(t *testing.T) {
			if d := g.Decide(ctx, req); d.Result != contract.ResultAllowed {
				t.Fatalf("got %s %v, want allowed", d.Result, d.Reasons)
			}
			in, err := g.buildInput(&req, testNow, actionMap(req.Action), elementMap(req.Target))
			if err != nil {
				t.Fatal(err)
			}
			got, err := marked.eval(ctx, in, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if got.Compare(ast.String("full")) == 0 {
				t.Error("decided by the full rules, want the fast path")
			}
		})
	}
}
