package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// the benchmark can subtract exactly the model's time. The prompt's hash,
// which llm.Client computes for the call record, is left out of the
// model's time: it is the harness's work.
type instantModel struct {
	mu     sync.Mutex
	steps  int                // navigator answers before done
	action func(i int) string // the i-th action
	n      int
	spent  time.Duration
}

func (m *instantModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	hash := llm.PromptHash(req.Messages)
	t0 := time.Now()
	m.mu.Lock()
	defer func() {
		m.spent += time.Since(t0)
		m.mu.Unlock()
	}()
	resp := llm.Response{Purpose: req.Purpose, Model: "instant", PromptHash: hash, Attempts: 1, FinishReason: "stop"}
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
// The evidence writer creates two files per observation and one per
// artifact, and what creating a file costs depends on the file system
// more than on aegis: 20-30 µs on tmpfs or a journaled ext4, but up to
// 0.75 ms on an ext4 without a journal whose block group saw many recent
// deletions (it skips inodes freed in the last minutes, reading each one's
// table block; see BENCHMARKS.md). create-before-µs and create-after-µs
// are that cost, measured in the bundles' directory before and after the
// sessions (Chromium's own files churn the same file system meanwhile);
// AEGIS_TEST_EVIDENCE puts the bundles elsewhere (and keeps them).
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

// benchConfig returns the configuration of a session of steps Navigator
// steps on url, each answered at once by an instantModel with action(i),
// and that model.
func benchConfig(b *testing.B, url string, steps int, action func(int) string) (session.Config, *instantModel) {
	b.Helper()
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
	return cfgFor(b, in, pl, nav), m
}

func benchSteps(b *testing.B, url string, action func(int) string) {
	const steps = 40
	root := evRoot(b)
	createBefore := createCost(b, root)
	var total, model, drv, gateT, ev, evWait, seal, agents, bus time.Duration
	var n int
	for i := 0; i < b.N; i++ {
		cfg, m := benchConfig(b, url, steps, action)
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
	createAfter := createCost(b, root)
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
	b.ReportMetric(float64(createBefore.Nanoseconds())/1000, "create-before-µs")
	b.ReportMetric(float64(createAfter.Nanoseconds())/1000, "create-after-µs")
}

// createCost is the median time to create (and close) an empty file in a
// new directory under root, as the evidence writer does for each
// observation and artifact. The files stay until root is removed:
// deleting them would itself slow later creations on some file systems.
func createCost(b *testing.B, root string) time.Duration {
	b.Helper()
	dir, err := os.MkdirTemp(root, "create-probe-")
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 15)
	for i := range ds {
		t0 := time.Now()
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			err = f.Close()
		}
		ds[i] = time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
