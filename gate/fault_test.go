package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// policyFS is a one-file bundle holding the Rego module src.
func policyFS(src string) fs.FS {
	return fstest.MapFS{"policy.rego": {Data: []byte(src)}}
}

const okFields = `"deny": [], "risk": "low", "requires_approval": false, "action_name": "browser.click"`

// fakeOPA serves the two GET requests New makes and answers every decision
// with decide.
func fakeOPA(t *testing.T, decide http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/policies", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"result": [{"id": "p.rego", "raw": "package aegis.browser"}]}`)
	})
	mux.HandleFunc("GET /v1/data/aegis/config", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"result": {"limits": {}}}`)
	})
	mux.HandleFunc("POST /v1/data/aegis/browser/decision", decide)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestFaultInjection breaks the policy path in every way the gate must
// survive and checks that 100 percent of randomized actions are denied,
// fail closed, with an audit event each: 1,000 actions per fault (300 for
// the two timeouts), over 30,000 in all. Compile-time faults make New fail
// and hand back a deny-all gate; run-time faults fail each decision.
func TestFaultInjection(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	type fault struct {
		name    string
		opts    func(t *testing.T) Options
		make    func(t *testing.T) (*Gate, error) // instead of opts
		newErr  bool                              // New itself must fail
		samples int                               // 0 = n
	}
	faults := []fault{
		{name: "missing policy", newErr: true, opts: func(*testing.T) Options {
			return Options{PolicyPath: "/nonexistent/aegis-policy"}
		}},
		{name: "empty policy directory", newErr: true, opts: func(t *testing.T) Options {
			return Options{PolicyPath: t.TempDir()}
		}},
		{name: "policy without rego files", newErr: true, opts: func(*testing.T) Options {
			return Options{PolicyFS: fstest.MapFS{"data.json": {Data: []byte(`{}`)}}}
		}},
		{name: "not a bundle tarball", newErr: true, opts: func(t *testing.T) Options {
			p := t.TempDir() + "/bundle.tar.gz"
			if err := os.WriteFile(p, []byte("this is not gzip"), 0o644); err != nil {
				t.Fatal(err)
			}
			return Options{PolicyPath: p}
		}},
		{name: "compile error: syntax", newErr: true, opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := {")}
		}},
		{name: "compile error: unsafe variable", newErr: true, opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := x if { x > 1 }\n")}
		}},
		{name: "compile error: network builtin", newErr: true, opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1:1\"})\n")}
		}},
		{name: "compile error: malformed data", newErr: true, opts: func(*testing.T) Options {
			return Options{PolicyFS: fstest.MapFS{
				"policy.rego": {Data: []byte("package aegis.browser\n\ndecision := 1\n")},
				"data.json":   {Data: []byte(`{"aegis": `)},
			}}
		}},
		{name: "evaluation error: division by zero", opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := {\"allow\": true, " + okFields + "} if {\n\tx := input.step_index / 0\n\tx > 0\n}\n")}
		}},
		{name: "evaluation error: builtin misuse", opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := {\"allow\": true, " + okFields + "} if {\n\tto_number(input.action.type) > 0\n}\n")}
		}},
		{name: "evaluation error: conflicting outputs", opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := {\"allow\": true, " + okFields + "} if input.step_index\n\ndecision := {\"allow\": false} if input.now\n")}
		}},
		{name: "timeout: a policy that loops", samples: 300, opts: func(*testing.T) Options {
			return Options{Timeout: 2 * time.Millisecond, PolicyFS: policyFS(`package aegis.browser

decision := {"allow": true, ` + okFields + `} if {
	count([x | some i in numbers.range(1, 2000); some j in numbers.range(1, 2000); some k in numbers.range(1, 2000); x := i + j + k]) > 0
}
`)}
		}},
		{name: "undefined result", opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := {\"allow\": true} if false\n")}
		}},
		{name: "undefined: other package", opts: func(*testing.T) Options {
			return Options{PolicyFS: policyFS("package someone.else\n\ndecision := {\"allow\": true, " + okFields + "}\n")}
		}},
		{name: "mistyped: decision is a string", opts: mistyped(`"allow"`)},
		{name: "mistyped: decision is true", opts: mistyped(`true`)},
		{name: "mistyped: allow is a string", opts: mistyped(`{"allow": "true", ` + okFields + `}`)},
		{name: "mistyped: allow missing", opts: mistyped(`{` + okFields + `}`)},
		{name: "mistyped: allow with deny reasons", opts: mistyped(`{"allow": true, "deny": [{"rule": "x", "message": "no"}], "risk": "low", "requires_approval": false, "action_name": "browser.click"}`)},
		{name: "mistyped: deny not a collection", opts: mistyped(`{"allow": true, "deny": "none", "risk": "low", "requires_approval": false, "action_name": "browser.click"}`)},
		{name: "mistyped: risk unknown", opts: mistyped(`{"allow": true, "deny": [], "risk": "none", "requires_approval": false, "action_name": "browser.click"}`)},
		{name: "mistyped: requires_approval missing", opts: mistyped(`{"allow": true, "deny": [], "risk": "low", "action_name": "browser.click"}`)},
		{name: "mistyped: action name", opts: mistyped(`{"allow": true, "deny": [], "risk": "low", "requires_approval": false, "action_name": "click"}`)},
		{name: "mistyped: reason without rule", opts: mistyped(`{"allow": false, "deny": [{"message": "no"}], "risk": "low", "requires_approval": false, "action_name": "browser.click"}`)},
		{name: "mistyped: exception status", opts: mistyped(`{"allow": true, ` + okFields + `, "exceptions": [{"status": "granted", "why": "x"}]}`)},
		{name: "mistyped: permission", opts: mistyped(`{"allow": true, ` + okFields + `, "permission": 3}`)},
		{name: "remote: unreachable", newErr: true, opts: func(*testing.T) Options {
			return Options{OPAURL: "http://127.0.0.1:1"}
		}},
		{name: "remote: server gone after start", make: func(t *testing.T) (*Gate, error) {
			s := fakeOPA(t, func(w http.ResponseWriter, _ *http.Request) {})
			g, err := New(context.Background(), Options{OPAURL: s.URL})
			if err != nil {
				t.Fatalf("remote gate: %v", err)
			}
			s.Close()
			return g, nil
		}},
		{name: "remote: error status", opts: remote(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"code": "internal_error"}`, http.StatusInternalServerError)
		})},
		{name: "remote: malformed JSON", opts: remote(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"result": {`) })},
		{name: "remote: undefined result", opts: remote(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{}`) })},
		{name: "remote: mistyped result", opts: remote(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"result": {"allow": 1}}`) })},
		{name: "remote: hangs past the timeout", samples: 300, opts: func(t *testing.T) Options {
			s := fakeOPA(t, func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(50 * time.Millisecond):
				}
			})
			return Options{OPAURL: s.URL, Timeout: 2 * time.Millisecond}
		}},
		{name: "remote: plain http to a non-loopback host", newErr: true, opts: func(*testing.T) Options {
			return Options{OPAURL: "http://opa.example:8181"}
		}},
		{name: "remote: no policy loaded", newErr: true, opts: func(t *testing.T) Options {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/policies", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"result": []}`) })
			s := httptest.NewServer(mux)
			t.Cleanup(s.Close)
			return Options{OPAURL: s.URL}
		}},
	}
	total := 0
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var events atomic.Int64
			var badEvent atomic.Value
			var g *Gate
			var err error
			if f.make != nil {
				g, err = f.make(t)
			} else {
				g, err = New(context.Background(), f.opts(t))
			}
			if f.newErr {
				var le *PolicyLoadError
				if !errors.As(err, &le) {
					t.Fatalf("New: got %v, want a *PolicyLoadError", err)
				}
				if g == nil || g.Err() == nil {
					t.Fatalf("New returned no deny-all gate")
				}
			} else if err != nil {
				t.Fatalf("New: %v", err)
			}
			g.audit = func(e Event) {
				events.Add(1)
				if e.Kind != EventFailClosed || e.Reason == "" || e.Err == nil || e.DecisionID == "" {
					badEvent.Store(fmt.Sprintf("%+v", e))
				}
			}
			samples := n
			if f.samples > 0 {
				samples = f.samples
			}
			r := rand.New(rand.NewPCG(uint64(len(f.name)), 42))
			for i := 0; i < samples; i++ {
				req := randomRequest(r)
				d := g.Decide(context.Background(), req)
				if d.Allow || d.Result != contract.ResultDenied || !d.FailClosed || d.Error == "" || d.Err == nil || !hasRule(d.Reasons, RuleFailClosed) {
					t.Fatalf("action %d (%+v): got %s allow=%v failClosed=%v %v", i, req.Action, d.Result, d.Allow, d.FailClosed, d.Reasons)
				}
				if i%1000 == 0 {
					if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
						t.Fatalf("fail-closed record is not schema-valid: %v", err)
					}
				}
			}
			if got, want := events.Load(), int64(samples); got != want {
				t.Errorf("audit events = %d, want one per decision (%d)", got, want)
			}
			if e := badEvent.Load(); e != nil {
				t.Errorf("malformed audit event: %v", e)
			}
			total += samples
		})
	}
	t.Logf("%d randomized actions over %d faults: all denied", total, len(faults))
	if !testing.Short() && total < 10000 {
		t.Errorf("only %d actions, want at least 10,000", total)
	}
}

func mistyped(value string) func(*testing.T) Options {
	return func(*testing.T) Options {
		return Options{PolicyFS: policyFS("package aegis.browser\n\ndecision := " + value + "\n")}
	}
}

func remote(h http.HandlerFunc) func(*testing.T) Options {
	return func(t *testing.T) Options { return Options{OPAURL: fakeOPA(t, h).URL} }
}

func TestNilGateDenies(t *testing.T) {
	var g *Gate
	d := g.Decide(context.Background(), baseRequest())
	if d.Allow || !d.FailClosed {
		t.Fatalf("nil gate: %+v", d.DecisionRecord)
	}
	if g.Err() == nil || g.PolicyVersion() != emptyVersion {
		t.Errorf("nil gate: Err %v, version %s", g.Err(), g.PolicyVersion())
	}
}

func TestPanickingAuditStillDenies(t *testing.T) {
	g, _ := New(context.Background(), Options{PolicyPath: "/nonexistent", Audit: func(Event) { panic("sink down") }})
	if d := g.Decide(context.Background(), baseRequest()); d.Allow || !d.FailClosed {
		t.Fatalf("got %+v", d.DecisionRecord)
	}
}

func TestPanicInEvaluationDenies(t *testing.T) {
	g := &Gate{ev: panicEval{}, version: emptyVersion, timeout: time.Second, clock: time.Now}
	d := g.Decide(context.Background(), baseRequest())
	if d.Allow || !d.FailClosed || !strings.Contains(d.Error, "panic") {
		t.Fatalf("got %+v", d.DecisionRecord)
	}
}

type panicEval struct{}

func (panicEval) eval(context.Context, map[string]any, time.Time) (ast.Value, error) { panic("boom") }

func TestCanceledContextDenies(t *testing.T) {
	g := sharedGate(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := g.Decide(ctx, baseRequest()); d.Allow || !d.FailClosed {
		t.Fatalf("canceled context: %+v", d.DecisionRecord)
	}
}
