package session_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/session"
)

// instantModel is a model that answers at once, in process, and measures
// the time spent inside it (nothing but the answer's formatting), so that
// the benchmark can subtract exactly the model's time.
type instantModel struct {
	mu     sync.Mutex
	steps  int                // navigator answers before done
	action func(i int) string // the i-th action
	n      int
	spent  time.Duration
}

func (m *instantModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	t0 := time.Now()
	m.mu.Lock()
	defer func() {
		m.spent += time.Since(t0)
		m.mu.Unlock()
	}()
	resp := llm.Response{Purpose: req.Purpose, Model: "instant", PromptHash: llm.PromptHash(req.Messages), Attempts: 1, FinishReason: "stop"}
	if req.Purpose == llm.PurposePlan {
		resp.Content = planAnswer
		return resp, nil
	}
	i := m.n
	m.n++
	status := "continue"
	if i == m.steps-1 {
		status = "done"
	}
	resp.Content = `{"actions":[` + m.action(i) + `],"status":"` + status + `","summary":"step"}`
	resp.Latency = time.Since(t0)
	return resp, nil
}

// formAction fills the demo shop's order form: type, select, click and
// extract in turn, never the same action twice on the same page.
func formAction(i int) string {
	switch i % 4 {
	case 0:
		return aType(fmt.Sprintf("t%d", i), "#name", fmt.Sprintf("Customer %d", i), false)
	case 1:
		v := "express"
		if (i/4)%2 == 1 {
			v = "standard"
		}
		return fmt.Sprintf(`{"id":"s%d","type":"select","reason":"shipping","policyTags":[],"selector":"#shipping","value":%q}`, i, v)
	case 2:
		return aClick(fmt.Sprintf("c%d", i), "#gift")
	}
	return aExtract(fmt.Sprintf("e%d", i), "text", "")
}

// catalogueAction works on a catalogue of 2,000 elements: type a quantity,
// click an item's link, scroll, in turn.
func catalogueAction(i int) string {
	switch i % 3 {
	case 0:
		return aType(fmt.Sprintf("q%d", i), fmt.Sprintf(`input[name="qty-%d"]`, 10*i+2), fmt.Sprint(i+1), false)
	case 1:
		return aClick(fmt.Sprintf("l%d", i), fmt.Sprintf(`[data-testid="item-link-%d"]`, 10*i+1))
	}
	return fmt.Sprintf(`{"id":"r%d","type":"scroll","reason":"more","policyTags":[],"direction":"down","amountPx":300}`, i)
}

// BenchmarkSessionStep measures the harness's overhead per step: sessions
// of 40 Navigator steps with the real browser and a model that answers at
// once, on the demo shop's order form (a small page: type, select, click,
// extract in turn) and on a catalogue of 2,000 elements (/big?n=2000, the
// driver benchmarks' page: type, click, scroll). Harness = step time less
// the model's time (inside Complete) and the driver's (inside driver
// calls): the gate, the evidence writer, prompt building and answer
// validation, the bus and the bookkeeping. The seal (an fsync of every
// file of the bundle, once per session) is reported apart, and loop-% is
// the harness less the Navigator's prompt building and answer validation
// (package navigator's own cost): the session loop's share.
//
//	go test ./session/ -run '^$' -bench SessionStep -benchtime 3x
func BenchmarkSessionStep(b *testing.B) {
	s := newSite(b)
	for _, bc := range []struct {
		name   string
		path   string
		action func(int) string
	}{
		{"form", "/form", formAction},
		{"catalogue", "/big?n=2000", catalogueAction},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchSteps(b, s.URL+bc.path, bc.action)
		})
	}
}

func benchSteps(b *testing.B, url string, action func(int) string) {
	const steps = 40
	var total, model, drv, gateT, ev, evWait, seal, agents, bus time.Duration
	var n int
	for i := 0; i < b.N; i++ {
		m := &instantModel{steps: steps, action: action}
		pl, err := planner.NewLLM(m, planner.LLMOptions{})
		if err != nil {
			b.Fatal(err)
		}
		nav, err := navigator.NewLLM(m, navigator.LLMOptions{})
		if err != nil {
			b.Fatal(err)
		}
		in := task("Work the page", []string{url}, "")
		in.MaxActions = intp(100)
		cfg := cfgFor(b, in, pl, nav)
		res, err := session.Run(context.Background(), cfg)
		if err != nil || res.Status != contract.SessionCompleted {
			b.Fatalf("status %s err %v", res.Status, err)
		}
		tm := res.Timings
		total += tm.Total
		model += m.spent
		drv += tm.Driver
		gateT += tm.Gate
		ev += tm.Evidence
		evWait += tm.EvidenceWait
		seal += tm.Seal
		agents += tm.Agents
		bus += tm.Bus
		n += tm.Steps
	}
	harness := total - model - drv - seal
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(100*float64(harness)/float64(total-seal), "harness-%")
	b.ReportMetric(100*float64(harness+seal)/float64(total), "harness+seal-%")
	b.ReportMetric(100*float64(harness-(agents-model))/float64(total-seal), "loop-%")
	b.ReportMetric(per(total-seal), "ms/step")
	b.ReportMetric(per(harness), "harness-ms/step")
	b.ReportMetric(per(drv), "driver-ms/step")
	b.ReportMetric(per(model), "model-ms/step")
	b.ReportMetric(per(agents-model), "prompt+validate-ms/step")
	b.ReportMetric(per(gateT), "gate-ms/step")
	b.ReportMetric(per(ev), "evidence-ms/step")
	b.ReportMetric(per(evWait-seal), "evidence-wait-ms/step")
	b.ReportMetric(per(seal), "seal-ms/step")
	b.ReportMetric(per(bus)*1000, "bus-µs/step")
}
