package gate

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// TestVirtualCacheAgreesWithOPAs runs random sequences of Push, Pop, Put
// and Get on the flat virtual cache and on OPA's own, and compares every
// answer: the flat cache must be a drop-in replacement.
func TestVirtualCacheAgreesWithOPAs(t *testing.T) {
	refs := []ast.Ref{
		ast.MustParseRef("data.aegis.browser.decision"),
		ast.MustParseRef("data.aegis.browser.full_decision"),
		ast.MustParseRef("data.aegis.browser.check_url"),
		ast.MustParseRef("data.aegis.browser.navigation_harmless"),
		append(ast.MustParseRef("data.aegis.browser.navigation_harmless"), ast.BooleanTerm(true)),
		append(ast.MustParseRef("data.aegis.browser.navigation_harmless"), ast.BooleanTerm(false)),
		ast.MustParseRef("data.aegis.browser"),
		ast.MustParseRef("data.other.decision"),
	}
	values := []*ast.Term{nil, ast.BooleanTerm(true), ast.StringTerm("x"), ast.MustParseTerm(`{"allow": true}`)}
	r := rand.New(rand.NewPCG(7, 11))
	for run := 0; run < 200; run++ {
		var flat flatVirtualCache
		opa := topdown.NewVirtualCache()
		depth := 0
		for op := 0; op < 60; op++ {
			ref := refs[r.IntN(len(refs))]
			where := fmt.Sprintf("run %d op %d", run, op)
			switch n := r.IntN(10); {
			case n == 0:
				flat.Push()
				opa.Push()
				depth++
			case n == 1 && depth > 0:
				flat.Pop()
				opa.Pop()
				depth--
			case n < 6:
				v := values[r.IntN(len(values))]
				flat.Put(ref, v)
				opa.Put(ref, v)
			default:
				gotV, gotU := flat.Get(ref)
				wantV, wantU := opa.Get(ref)
				if gotU != wantU || !gotV.Equal(wantV) {
					t.Fatalf("%s: Get(%v) = %v, %v; OPA's = %v, %v", where, ref, gotV, gotU, wantV, wantU)
				}
			}
		}
		if got, want := len(flat.Keys()), len(opa.Keys()); got != want {
			t.Fatalf("run %d: %d keys, OPA's cache has %d", run, got, want)
		}
	}
}

// TestCachesCopyTheirKeys: the evaluator reuses the buffers its refs live
// in, so a cache must not keep the caller's slice.
func TestCachesCopyTheirKeys(t *testing.T) {
	ref := ast.MustParseRef("data.aegis.browser.check_url")
	buf := append(ast.Ref(nil), ref...)
	var v flatVirtualCache
	v.Put(buf, ast.BooleanTerm(true))
	var b flatBaseCache
	b.Put(buf, ast.String("doc"))
	buf[3] = ast.StringTerm("overwritten")
	if got, _ := v.Get(ref); !got.Equal(ast.BooleanTerm(true)) {
		t.Errorf("virtual cache after the caller reused its buffer: got %v, want true", got)
	}
	if got := b.Get(ref); got == nil || got.Compare(ast.String("doc")) != 0 {
		t.Errorf("base cache after the caller reused its buffer: got %v, want \"doc\"", got)
	}
}

// TestBaseCache: a document answers for refs below it; putting a document
// replaces those cached below it; a ref above a cached document, or beside
// it, is not cached.
func TestBaseCache(t *testing.T) {
	config := ast.MustParseTerm(`{"limits": {"max_step_budget": 200}, "urls": {"allowed_schemes": ["https"]}}`).Value
	var c flatBaseCache
	c.Put(ast.MustParseRef("data.aegis.config.limits.max_step_budget"), ast.Number("100"))
	c.Put(ast.MustParseRef("data.aegis.config"), config)
	tests := []struct {
		ref  string
		want ast.Value // nil: not cached
	}{
		{"data.aegis.config", config},
		{"data.aegis.config.limits.max_step_budget", ast.Number("200")}, // the later, containing put wins
		{"data.aegis.config.urls.allowed_schemes", ast.MustParseTerm(`["https"]`).Value},
		{"data.aegis.config.missing", nil},
		{"data.aegis", nil},
		{"data.aegis.browser", nil},
	}
	for _, tt := range tests {
		got := c.Get(ast.MustParseRef(tt.ref))
		switch {
		case tt.want == nil && got != nil:
			t.Errorf("Get(%s) = %v, want not cached", tt.ref, got)
		case tt.want != nil && (got == nil || got.Compare(tt.want) != 0):
			t.Errorf("Get(%s) = %v, want %v", tt.ref, got, tt.want)
		}
	}
	if got, want := len(c.entries), 1; got != want {
		t.Errorf("%d entries after a containing put, want %d", got, want)
	}
}

// TestPooledCachesStartEmpty: a cache handed back to the pool keeps
// nothing of the evaluation that used it.
func TestPooledCachesStartEmpty(t *testing.T) {
	c := getCaches()
	ref := ast.MustParseRef("data.aegis.browser.decision")
	c.virtual.Push()
	c.virtual.Put(ref, ast.BooleanTerm(true))
	c.base.Put(ref, ast.Boolean(true))
	putCaches(c)
	for i := 0; i < 4; i++ {
		c := getCaches()
		if v, undefined := c.virtual.Get(ref); v != nil || undefined {
			t.Fatalf("a pooled virtual cache still holds %v (undefined %v)", v, undefined)
		}
		if v := c.base.Get(ref); v != nil {
			t.Fatalf("a pooled base cache still holds %v", v)
		}
		if len(c.virtual.frames) != 0 || c.virtual.start != 0 {
			t.Fatalf("a pooled virtual cache has frames %v start %d", c.virtual.frames, c.virtual.start)
		}
		putCaches(c)
	}
}
