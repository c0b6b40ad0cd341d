package session_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/session"
)

// BenchmarkBatch measures what a model call buys on the multi-step fixture
// tasks (fixtureTasks: tabs, custom checkboxes, an accordion around a
// form, a three-field form with a custom radio group, whose clicks change
// classes and attributes), in real Chromium with the real gate, answered
// by a model that plans on what it sees (sightedModel, an OpenAI-API
// server): actions/call is the actions run (the first URL's navigation
// left out) per Navigator call, calls/task the Navigator calls per task
// (the Planner's one call comes on top), observes/task the observations
// taken, ms/task the wall time of a session, the browser's start left out
// (one Chromium for the benchmark, a fresh context per session).
//
//	go test ./session/ -run '^$' -bench Batch -benchtime 5x
func BenchmarkBatch(b *testing.B) {
	base := fixtureSite(b)
	for _, ft := range fixtureTasks {
		b.Run(ft.name, func(b *testing.B) {
			var calls, acts int
			var observes atomic.Int64
			var wall time.Duration
			for i := 0; i < b.N; i++ {
				m := newSightedModel(b, ft.steps)
				pl, nav := llmAgents(b, m.srv, nil)
				cfg := cfgFor(b, task("Do the task", []string{base + "/" + ft.page}, ""), pl, nav)
				open := cfg.Evidence
				cfg.Evidence = func(man contract.Manifest, o evidence.Options) (session.Recorder, error) {
					rec, err := open(man, o)
					return countObservations{rec, &observes}, err
				}
				t0 := time.Now()
				res, err := session.Run(context.Background(), cfg)
				wall += time.Since(t0)
				if err != nil || res.Status != contract.SessionCompleted {
					b.Fatalf("status %s err %v", res.Status, err)
				}
				calls += m.calls
				acts += res.Output.ActionsExecuted - 1
			}
			b.ReportMetric(float64(acts)/float64(calls), "actions/call")
			b.ReportMetric(float64(calls)/float64(b.N), "calls/task")
			b.ReportMetric(float64(observes.Load())/float64(b.N), "observes/task")
			b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms/task")
		})
	}
}

// countObservations is a Recorder that counts the observations recorded.
type countObservations struct {
	session.Recorder
	n *atomic.Int64
}

func (c countObservations) Observation(seq int, obs contract.Observation) error {
	c.n.Add(1)
	return c.Recorder.Observation(seq, obs)
}
