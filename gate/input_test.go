package gate

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// TestInputDocumentMatchesAST builds the input of 3,000 random requests
// both ways: the JSON document a remote OPA receives, converted by OPA, and
// the AST the local engine builds directly. They must be the same document,
// member for member and number for number.
func TestInputDocumentMatchesAST(t *testing.T) {
	g := sharedGate(t)
	r := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 3000; i++ {
		req := randomRequest(r)
		in, err := g.buildInput(&req, req.Now, actionMap(req.Action), elementMap(req.Target))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ast.InterfaceToValue(in.document())
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.astValue(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Compare(want) != 0 || got.String() != want.String() {
			t.Fatalf("request %d: the AST input differs from the document\n got %v\nwant %v", i, got, want)
		}
	}
}

// TestPreludeDependsOnlyOnItsKey evaluates the embedded policy's prelude
// afresh for random requests and compares it with the one memoized for
// another request under the same key (the same session and page, any
// action, target, step or time): a prelude that read anything outside its
// key would differ.
func TestPreludeDependsOnlyOnItsKey(t *testing.T) {
	ctx := context.Background()
	g := sharedGate(t)
	l := g.ev.(*localEval)
	r := rand.New(rand.NewPCG(5, 3))
	defined := 0
	for i := 0; i < 1000; i++ {
		req := randomRequest(r)
		other := randomRequest(r)
		other.SessionID, other.ActiveURL, other.Session, other.Policy = req.SessionID, req.ActiveURL, req.Session, req.Policy
		a, err := g.buildInput(&req, req.Now, actionMap(req.Action), elementMap(req.Target))
		if err != nil {
			t.Fatal(err)
		}
		b, err := g.buildInput(&other, other.Now, actionMap(other.Action), elementMap(other.Target))
		if err != nil {
			t.Fatal(err)
		}
		if a.sf.key != b.sf.key || a.state != b.state {
			t.Fatalf("request %d: the same session and page have different prelude keys", i)
		}
		memo, err := l.sessionPrelude(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		v, err := a.preludeValue()
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := l.prelude.Eval(ctx, rego.EvalParsedInput(v), rego.EvalTime(req.Now))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(fresh) == 0 && memo == nil:
		case len(fresh) == 1 && memo != nil:
			defined++
			if got := fresh[0].Expressions[0].Value.(*ast.Term); got.Value.Compare(memo.Value) != 0 {
				t.Fatalf("request %d: prelude %v, memoized %v", i, got, memo)
			}
		default:
			t.Fatalf("request %d: prelude %v, memoized %v", i, fresh, memo)
		}
	}
	if defined < 100 {
		t.Errorf("the prelude was defined for only %d of 1000 requests", defined)
	}
}
