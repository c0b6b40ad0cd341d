package gate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/contract"
)

// benchRequests are realistic requests: allowed clicks, types, selects
// and page extracts (the common case), a high-risk click that pauses, a
// denied navigation, and an allowed state-changing effect of a click.
func benchRequests() map[string]Request {
	allowed := baseRequest()
	pay := baseRequest()
	pay.Target = &contract.Element{Tag: "button", Text: "Pay now"}
	denied := baseRequest()
	navigateTo("https://evil.example/login")(&denied)
	typed := baseRequest()
	typeInto("#search", &contract.Element{Tag: "input", Type: "search", Label: "Search products"}, false)(&typed)
	common := commonRequests()
	effect := baseRequest()
	causing(contract.EffectRequest, "POST", "https://shop.example", "/api/cart", "qty", "sku")(&effect)
	return map[string]Request{
		"allowed_click": allowed, "allowed_type": typed, "paused_high_risk": pay, "denied_origin": denied,
		"allowed_select": common["select"], "allowed_extract_page": common["extract_page"],
		"allowed_effect": effect,
	}
}

// BenchmarkDecide measures one whole decision with the prepared query:
// building the input, hashing the action, evaluating the embedded policy
// and checking its result. Besides ns/op it reports the median and the
// 95th percentile of the per-decision wall time in microseconds, measured
// one decision at a time, and cpu-µs/op: the process's CPU time (garbage
// collection included) per decision, which other processes' load on the
// shared cores does not inflate.
func BenchmarkDecide(b *testing.B) {
	g := sharedGate(b)
	reqs := benchRequests()
	names := make([]string, 0, len(reqs))
	for n := range reqs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		req := reqs[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			if d := g.Decide(ctx, req); d.FailClosed {
				b.Fatal(d.Err)
			}
			samples := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				start := time.Now()
				g.Decide(ctx, req)
				samples = append(samples, time.Since(start))
			}
			cpu := processCPU() - cpu0
			b.StopTimer()
			slices.Sort(samples)
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(len(samples)), "cpu-µs/op")
			b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "median-µs")
			b.ReportMetric(float64(samples[len(samples)*95/100].Nanoseconds())/1e3, "p95-µs")
		})
	}
}

// TestNoRecompilationPerDecision evaluates the prepared query many times
// with OPA's metrics on: no parse or compile timer may appear, only the
// conversion of the input document and evaluation.
func TestNoRecompilationPerDecision(t *testing.T) {
	g := sharedGate(t)
	l, ok := g.ev.(*localEval)
	if !ok {
		t.Fatalf("evaluator is a %T", g.ev)
	}
	for name, req := range benchRequests() {
		in := buildInput(&req, testNow, actionhash.Action(req.Action), actionhash.Element(req.Target), actionhash.Effect(req.Effect))
		for i := 0; i < 100; i++ {
			m := metrics.New()
			if _, err := l.pq.Eval(context.Background(), rego.EvalInput(in), rego.EvalTime(testNow), rego.EvalMetrics(m)); err != nil {
				t.Fatal(err)
			}
			for k := range m.All() {
				if k == "timer_rego_input_parse_ns" {
					continue // the input document, converted per decision
				}
				if strings.Contains(k, "compile") || strings.Contains(k, "parse") {
					t.Fatalf("%s: decision %d recorded %s: the query was compiled or parsed again", name, i, k)
				}
			}
			if _, ok := m.All()["timer_rego_query_eval_ns"]; !ok {
				t.Fatalf("%s: no evaluation timer: metrics not recorded (%v)", name, m.All())
			}
		}
	}
}
