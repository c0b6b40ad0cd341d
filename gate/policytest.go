package gate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// PolicyTest is the outcome of one Rego test rule (test_*).
type PolicyTest struct {
	// Package is the test's package, such as "data.aegis.browser_test".
	Package string `json:"package"`
	// Name is the test rule's name.
	Name string `json:"name"`
	// Location is file:row of the test.
	Location string `json:"location"`
	// Pass, Fail and Skip say how it ended; Error is set when it could not
	// be evaluated (an error also fails the run).
	Pass  bool   `json:"pass"`
	Fail  bool   `json:"fail,omitempty"`
	Skip  bool   `json:"skip,omitempty"`
	Error string `json:"error,omitempty"`
	// Duration is how long the test took.
	Duration time.Duration `json:"duration"`
}

// PolicyTestReport is the result of RunPolicyTests.
type PolicyTestReport struct {
	// Tests are the test results, sorted by package and name.
	Tests []PolicyTest `json:"tests"`
	// Coverage is the percentage of the policy's lines (test files
	// excluded) that the tests evaluated.
	Coverage float64 `json:"coverage"`
	// Files maps each policy file to its coverage percentage.
	Files map[string]float64 `json:"files"`
	// NotCovered lists the lines no test evaluated, as file:row-row.
	NotCovered []string `json:"notCovered,omitempty"`
}

// Passed reports whether every test passed (skipped tests do not count)
// and there was at least one.
func (r *PolicyTestReport) Passed() bool {
	n := 0
	for _, t := range r.Tests {
		if t.Fail || t.Error != "" {
			return false
		}
		if t.Pass {
			n++
		}
	}
	return n > 0
}

// RunPolicyTests runs the Rego unit tests (*_test.rego) of the policy at
// path (a bundle directory or .tar.gz; "" means the embedded policy) with
// OPA's tester, builtin errors raised as in the gate, and measures the
// coverage of the policy files.
func RunPolicyTests(ctx context.Context, path string) (*PolicyTestReport, error) {
	files, err := readPolicy(Options{PolicyPath: path})
	if err != nil {
		return nil, err
	}
	name := path
	if name == "" {
		name = SourceEmbedded
	}
	b, err := files.bundle(true)
	if err != nil {
		return nil, err
	}
	modules := map[string]*ast.Module{}
	for _, m := range b.Modules {
		modules[m.Path] = m.Parsed
	}
	store := inmem.NewFromObject(b.Data)
	cov := cover.New()
	compiler := ast.NewCompiler().
		WithCapabilities(capabilities()).
		WithEnablePrintStatements(false)
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		RaiseBuiltinErrors(true).
		SetCoverageQueryTracer(cov).
		SetTimeout(30 * time.Second)
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Abort(ctx, txn)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return nil, &PolicyLoadError{Path: name, Stage: "compile", Err: err}
	}
	report := &PolicyTestReport{Files: map[string]float64{}}
	for r := range ch {
		t := PolicyTest{Package: r.Package, Name: r.Name, Fail: r.Fail, Skip: r.Skip, Duration: r.Duration}
		if r.Location != nil {
			t.Location = fmt.Sprintf("%s:%d", strings.TrimPrefix(r.Location.File, "/"), r.Location.Row)
		}
		if r.Error != nil {
			t.Error = r.Error.Error()
		}
		t.Pass = !t.Fail && !t.Skip && t.Error == ""
		report.Tests = append(report.Tests, t)
	}
	sort.Slice(report.Tests, func(i, j int) bool {
		if report.Tests[i].Package != report.Tests[j].Package {
			return report.Tests[i].Package < report.Tests[j].Package
		}
		return report.Tests[i].Name < report.Tests[j].Name
	})

	policyModules := map[string]*ast.Module{}
	for p, m := range modules {
		if !isTestFile(p) {
			policyModules[p] = m
		}
	}
	cr := cov.Report(policyModules)
	covered, total := 0, 0
	var names []string
	for f := range cr.Files {
		if !isTestFile(f) {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	for _, f := range names {
		fr := cr.Files[f]
		file := strings.TrimPrefix(f, "/")
		report.Files[file] = fr.Coverage
		for _, rg := range fr.Covered {
			covered += rg.End.Row - rg.Start.Row + 1
		}
		for _, rg := range fr.NotCovered {
			total += rg.End.Row - rg.Start.Row + 1
			report.NotCovered = append(report.NotCovered, fmt.Sprintf("%s:%d-%d", file, rg.Start.Row, rg.End.Row))
		}
	}
	total += covered
	if total > 0 {
		report.Coverage = 100 * float64(covered) / float64(total)
	}
	return report, nil
}
