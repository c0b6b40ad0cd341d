package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// evaluator answers the policy query for one input document (see
// buildInput): the embedded engine (localEval) or a remote OPA server
// (remoteEval).
type evaluator interface {
	eval(ctx context.Context, input map[string]any, now time.Time) (ast.Value, error)
}

// errUndefined is the error of an evaluation that produced no decision.
var errUndefined = errors.New("the policy produced no decision (undefined result)")

// deniedBuiltins are builtins a gate policy may not call: they reach the
// network or are not reproducible, and a decision must be recomputable from
// its record.
var deniedBuiltins = map[string]bool{
	"http.send": true, "net.lookup_ip_addr": true, "rand.intn": true,
	"uuid.rfc4122": true, "opa.runtime": true, "trace": true, "print": true,
}

func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0]
	for _, b := range c.Builtins {
		if !deniedBuiltins[b.Name] {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	return c
}

// localEval evaluates the policy's query, prepared once, with OPA's
// embedded engine.
type localEval struct {
	pq rego.PreparedEvalQuery
}

// newLocal reads the policy the options name and prepares Query on it,
// once: strict builtin errors, the capabilities without deniedBuiltins,
// Rego v1.
func newLocal(ctx context.Context, opts Options) (evaluator, string, string, error) {
	files, err := readPolicy(opts)
	if err != nil {
		return nil, "", "", err
	}
	version := files.version()
	b, err := files.bundle(false)
	if err != nil {
		return nil, version, files.source, err
	}
	pq, err := rego.New(
		rego.Query(Query),
		rego.ParsedBundle("aegis", b),
		// Keep the data in the store as AST, so that an evaluation reads
		// data.aegis.config without converting it.
		rego.StoreReadAST(true),
		rego.StrictBuiltinErrors(true),
		rego.Capabilities(capabilities()),
		rego.SetRegoVersion(ast.RegoV1),
		// Hand the result over as AST: parseDecision reads it directly.
		rego.GenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, version, files.source, &PolicyLoadError{Path: files.path, Stage: "compile", Err: err}
	}
	return &localEval{pq: pq}, version, files.source, nil
}

// eval evaluates the prepared query on input at the pinned time now; ctx's
// end cancels the evaluation.
func (l *localEval) eval(ctx context.Context, input map[string]any, now time.Time) (ast.Value, error) {
	rs, err := l.pq.Eval(ctx, rego.EvalInput(input), rego.EvalTime(now))
	if err != nil {
		return nil, err
	}
	return singleResult(rs)
}

func singleResult(rs rego.ResultSet) (ast.Value, error) {
	switch {
	case len(rs) == 0:
		return nil, errUndefined
	case len(rs) > 1 || len(rs[0].Expressions) != 1:
		return nil, fmt.Errorf("the policy produced %d results, want exactly one", len(rs))
	}
	t, ok := rs[0].Expressions[0].Value.(*ast.Term)
	if !ok {
		return nil, fmt.Errorf("the policy result is a %T, not an AST term", rs[0].Expressions[0].Value)
	}
	return t.Value, nil
}
