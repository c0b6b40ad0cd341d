package suite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/session"
)

// fakeTasks returns n tasks named t01.json, t02.json...
func fakeTasks(n int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{Name: fmt.Sprintf("t%02d.json", i+1)}
	}
	return tasks
}

// result is a session's result as the fakes make it: its bundle under the
// attempt's evidence directory.
func result(a Attempt, n int, status contract.SessionStatus, actions, tokens int) session.Result {
	id := fmt.Sprintf("s-%d", n)
	res := session.Result{Status: status, Tokens: tokens,
		Evidence: session.EvidenceInfo{Dir: filepath.Join(a.Evidence, id), Sealed: true, HeadHash: fmt.Sprintf("%064x", sha256.Sum256([]byte(a.Evidence+id)))}}
	res.Output.ComputerUseSessionID = id
	res.Output.ActionsExecuted = actions
	if status != contract.SessionCompleted {
		res.Output.Summary = "failed on its own"
	}
	return res
}

// runWritten runs the tasks as Run does, then writes the index as aegis
// suite does (WriteIndex: the schema and checkIndex refuse an index that
// breaks them) and reads it back (ReadIndex), so that every index the
// runner makes in these tests is one the schema accepts.
func runWritten(t *testing.T, ctx context.Context, tasks []Task, o Options) (Outcome, error) {
	t.Helper()
	out, err := Run(ctx, tasks, o)
	if err != nil {
		return out, err
	}
	if err := WriteIndex(o.Dir, out.Index); err != nil {
		t.Fatalf("the runner's index is refused: %v", err)
	}
	got, err := ReadIndex(filepath.Join(o.Dir, IndexFile))
	if err != nil {
		t.Fatalf("the runner's index does not read back: %v", err)
	}
	if !reflect.DeepEqual(got, out.Index) {
		t.Errorf("index read back\n%+v\nwant\n%+v", got, out.Index)
	}
	return out, nil
}

func TestRunIndex(t *testing.T) {
	dir := t.TempDir()
	var n atomic.Int64
	var progress bytes.Buffer
	out, err := runWritten(t, context.Background(), fakeTasks(5), Options{
		Parallel: 2,
		Dir:      dir,
		Progress: &progress,
		Run: func(ctx context.Context, a Attempt) (session.Result, error) {
			status := contract.SessionCompleted
			if a.Task.Name == "t03.json" {
				status = contract.SessionFailed
			}
			return result(a, int(n.Add(1)), status, 2, 0), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.OK() || out.Index.StoppedBy != "" {
		t.Errorf("OK %v, stopped %q: want a failed task, nothing stopped", out.OK(), out.Index.StoppedBy)
	}
	if got := out.Index; got.FormatVersion != FormatVersion || got.Parallel != 2 || len(got.Tasks) != 5 {
		t.Fatalf("index %+v", got)
	}
	for i, got := range out.Index.Tasks {
		wantName := fmt.Sprintf("t%02d.json", i+1)
		if got.Name != wantName || got.Actions != 2 || got.Endpoint != "" {
			t.Errorf("task %d = %+v, want %s with 2 actions", i, got, wantName)
		}
		if !strings.HasPrefix(got.Bundle, strings.TrimSuffix(wantName, ".json")+"/s-") || got.HeadHash == "" {
			t.Errorf("%s: bundle %q head %q, want TASK/SESSION-ID, relative to the suite's directory", got.Name, got.Bundle, got.HeadHash)
		}
		if got.Completed() == (got.Error != "") {
			t.Errorf("%s: status %q, error %q", got.Name, got.Status, got.Error)
		}
	}
	if got := strings.Count(progress.String(), "\n"); got != 5 {
		t.Errorf("%d progress lines, want 5:\n%s", got, progress.String())
	}
	if !strings.Contains(progress.String(), "FAILED  t03.json  failed: failed on its own  2 actions") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// TestUnsealed: a session whose bundle did not seal has no status in the
// index, whatever it reported (completed included): it did not complete,
// its error says so, and the suite does not pass.
func TestUnsealed(t *testing.T) {
	var n atomic.Int64
	out, err := runWritten(t, context.Background(), fakeTasks(3), Options{Parallel: 1, Dir: t.TempDir(),
		Run: func(ctx context.Context, a Attempt) (session.Result, error) {
			res := result(a, int(n.Add(1)), contract.SessionCompleted, 2, 0)
			switch a.Task.Name {
			case "t02.json":
				res.Evidence = session.EvidenceInfo{Dir: res.Evidence.Dir, Error: "seal: disk full"}
			case "t03.json":
				res = result(a, int(n.Load()), contract.SessionFailed, 1, 0)
				res.Evidence = session.EvidenceInfo{Dir: res.Evidence.Dir, Error: "seal: disk full"}
			}
			return res, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		got       TaskResult
		wantError string
	}{
		{out.Index.Tasks[1], "the session ended completed but its bundle is not sealed: seal: disk full"},
		{out.Index.Tasks[2], "the session ended failed but its bundle is not sealed: seal: disk full; failed on its own"},
	}
	for _, tt := range tests {
		got := tt.got
		if got.Status != "" || got.HeadHash != "" || got.Completed() || got.Error != tt.wantError || got.Bundle == "" || got.Skipped {
			t.Errorf("%s = %+v, want no status, no head hash, its bundle, error %q", got.Name, got, tt.wantError)
		}
	}
	if tot := out.Index.Totals(); tot.Completed != 1 || tot.Failed != 2 || out.OK() {
		t.Errorf("totals %+v, OK %v: want 1 completed, 2 failed, not OK", tot, out.OK())
	}
}

// fleetCase is a fleet of servers a, b (and c) in a test of the rule of
// fleet: down says which servers cannot give a browser, fail which tasks
// fail on their own.
type fleetCase struct {
	mu      sync.Mutex
	down    map[string]bool
	fail    map[string]bool
	probes  []string
	n       int
	killsOn func(a Attempt) // marks servers down as an attempt starts
}

func (f *fleetCase) run(ctx context.Context, a Attempt) (session.Result, error) {
	f.mu.Lock()
	if f.killsOn != nil {
		f.killsOn(a)
	}
	f.n++
	n, down, fail := f.n, f.down[a.Endpoint], f.fail[a.Task.Name]
	f.mu.Unlock()
	switch {
	case down:
		// The browser went away: the session fails, sealed.
		return result(a, n, contract.SessionFailed, 0, 0), errors.New("driver: cannot open the browser")
	case fail:
		return result(a, n, contract.SessionFailed, 1, 0), nil
	}
	return result(a, n, contract.SessionCompleted, 1, 0), nil
}

func (f *fleetCase) up(ctx context.Context, ep string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes = append(f.probes, ep)
	if f.down[ep] {
		return errors.New("connection refused")
	}
	return nil
}

// TestServerFailure checks the rule of fleet: an attempt is its server's
// failure only when it did not complete and the server cannot give a
// browser after it; then the server is out and the task retried once
// elsewhere.
func TestServerFailure(t *testing.T) {
	t.Run("the task's own failure", func(t *testing.T) {
		f := &fleetCase{down: map[string]bool{}, fail: map[string]bool{"t02.json": true}}
		out := runFleet(t, f, 4, 1, "ws://a", "ws://b")
		for _, got := range out.Index.Tasks {
			if len(got.Retries) > 0 {
				t.Errorf("%s retried: %+v", got.Name, got.Retries)
			}
		}
		if got := out.Index.Tasks[1]; got.Status != contract.SessionFailed || got.Error != "failed on its own" {
			t.Errorf("t02 = %+v", got)
		}
		// Round-robin, and both servers still in it.
		if got := endpoints(out); !slices.Equal(got, []string{"ws://a", "ws://b", "ws://a", "ws://b"}) {
			t.Errorf("endpoints %v", got)
		}
		if !slices.Equal(f.probes, []string{"ws://b"}) {
			t.Errorf("probed %v, want only the server of the task that failed", f.probes)
		}
	})
	t.Run("a completed task never probes", func(t *testing.T) {
		f := &fleetCase{down: map[string]bool{}}
		out := runFleet(t, f, 3, 1, "ws://a", "ws://b")
		if !out.OK() || len(f.probes) != 0 {
			t.Errorf("OK %v, probes %v", out.OK(), f.probes)
		}
	})
	t.Run("a server that went away", func(t *testing.T) {
		f := &fleetCase{down: map[string]bool{}}
		f.killsOn = func(a Attempt) {
			if a.Endpoint == "ws://b" {
				f.down["ws://b"] = true
			}
		}
		out := runFleet(t, f, 5, 1, "ws://a", "ws://b")
		if !out.OK() {
			t.Fatalf("not OK: %+v", out.Index.Tasks)
		}
		got := out.Index.Tasks[1]
		if len(got.Retries) != 1 || got.Retries[0].Endpoint != "ws://b" || got.Retries[0].Bundle != "t02/s-2" ||
			!strings.Contains(got.Retries[0].Error, "connection refused") || got.Endpoint != "ws://a" || got.Bundle != "t02/s-3" {
			t.Errorf("t02 = %+v, want completed on ws://a after a retry from ws://b", got)
		}
		if got := endpoints(out); !slices.Equal(got, []string{"ws://a", "ws://a", "ws://a", "ws://a", "ws://a"}) {
			t.Errorf("endpoints %v: ws://b stayed in the rotation", got)
		}
	})
	t.Run("every server gone", func(t *testing.T) {
		f := &fleetCase{down: map[string]bool{"ws://a": true, "ws://b": true}}
		out := runFleet(t, f, 3, 1, "ws://a", "ws://b")
		first := out.Index.Tasks[0]
		if len(first.Retries) != 1 || !strings.Contains(first.Error, "the server failed too") {
			t.Errorf("t01 = %+v, want one retry, then the second server's failure", first)
		}
		for _, got := range out.Index.Tasks[1:] {
			if got.Status != "" || got.Bundle != "" || !strings.Contains(got.Error, ErrNoServer.Error()) || !strings.Contains(got.Error, "ws://a failed (connection refused)") {
				t.Errorf("%s = %+v, want no session, for no server left", got.Name, got)
			}
		}
		if out.OK() {
			t.Error("OK")
		}
	})
	t.Run("an attempt that may have changed state is not retried", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			edit func(*session.Result)
			want string
		}{
			{"approved", func(r *session.Result) { r.Approved = 1 }, "not retried: the attempt executed 1 approved action(s)"},
			{"unreadable bundle", func(r *session.Result) { r.Output.ActionsExecuted = 2 }, "not retried: the attempt executed 2 action(s) and its bundle does not show"},
			{"no bundle", func(r *session.Result) { r.Output.ActionsExecuted = 2; r.Evidence = session.EvidenceInfo{} }, "left no bundle"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := &fleetCase{down: map[string]bool{"ws://b": true}}
				var attempts atomic.Int64
				out, err := runWritten(t, context.Background(), fakeTasks(2), Options{Parallel: 1, Dir: t.TempDir(), Endpoints: []string{"ws://b", "ws://a"},
					Run: func(ctx context.Context, a Attempt) (session.Result, error) {
						attempts.Add(1)
						res, err := f.run(ctx, a)
						if a.Endpoint == "ws://b" {
							tc.edit(&res)
						}
						return res, err
					},
					ServerUp: f.up,
				})
				if err != nil {
					t.Fatal(err)
				}
				got := out.Index.Tasks[0]
				if len(got.Retries) != 0 || got.Endpoint != "ws://b" || got.Completed() || !strings.Contains(got.Error, "the server failed: connection refused") || !strings.Contains(got.Error, tc.want) {
					t.Errorf("t01 = %+v, want failed on ws://b, not retried (%q)", got, tc.want)
				}
				if tc.name != "no bundle" && got.Bundle == "" {
					t.Errorf("t01 = %+v: the attempt's bundle is not recorded", got)
				}
				if n := attempts.Load(); n != 2 || !out.Index.Tasks[1].Completed() {
					t.Errorf("%d attempts, t02 %+v; want t02 completed on ws://a", n, out.Index.Tasks[1])
				}
			})
		}
	})
	t.Run("a stopping suite is nobody's failure", func(t *testing.T) {
		f := &fleetCase{down: map[string]bool{"ws://a": true}}
		ctx, cancel := context.WithCancel(context.Background())
		var probes int
		out, err := runWritten(t, ctx, fakeTasks(2), Options{Parallel: 1, Dir: t.TempDir(), Endpoints: []string{"ws://a", "ws://b"},
			Run: func(ctx context.Context, a Attempt) (session.Result, error) {
				cancel()
				return f.run(ctx, a)
			},
			ServerUp: func(ctx context.Context, ep string) error { probes++; return f.up(ctx, ep) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if probes != 0 || len(out.Index.Tasks[0].Retries) != 0 || out.Index.StoppedBy != StopInterrupted {
			t.Errorf("probes %d, t01 %+v, stopped %q", probes, out.Index.Tasks[0], out.Index.StoppedBy)
		}
	})
}

func runFleet(t *testing.T, f *fleetCase, n, parallel int, eps ...string) Outcome {
	t.Helper()
	out, err := runWritten(t, context.Background(), fakeTasks(n), Options{Parallel: parallel, Dir: t.TempDir(), Endpoints: eps, Run: f.run, ServerUp: f.up})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func endpoints(out Outcome) []string {
	var eps []string
	for _, t := range out.Index.Tasks {
		eps = append(eps, t.Endpoint)
	}
	return eps
}

func TestBudgets(t *testing.T) {
	each := func(actions, tokens int) RunFunc {
		var n atomic.Int64
		return func(ctx context.Context, a Attempt) (session.Result, error) {
			return result(a, int(n.Add(1)), contract.SessionCompleted, actions, tokens), nil
		}
	}
	tests := []struct {
		name    string
		o       Options
		ran     int
		stopped Stop
	}{
		{"actions", Options{MaxActions: 5, Run: each(3, 0)}, 2, StopActions},
		{"tokens", Options{MaxTokens: 100, Run: each(1, 100)}, 1, StopTokens},
		{"actions not reached", Options{MaxActions: 50, Run: each(3, 0)}, 4, ""},
		{"reached by the last task", Options{MaxActions: 12, Run: each(3, 0)}, 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var progress bytes.Buffer
			tt.o.Parallel, tt.o.Dir, tt.o.Progress = 1, t.TempDir(), &progress
			out, err := runWritten(t, context.Background(), fakeTasks(4), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, got := range out.Index.Tasks {
				if got.Completed() {
					ran++
				} else if got.Status != "" || !got.Skipped || !strings.HasPrefix(got.Error, "not run: the suite's --max-") {
					t.Errorf("%s = %+v, want not run", got.Name, got)
				}
			}
			if ran != tt.ran || out.Index.StoppedBy != tt.stopped || out.OK() != (tt.stopped == "") {
				t.Errorf("ran %d, stopped %q (%s), want %d, %q", ran, out.Index.StoppedBy, out.StopReason, tt.ran, tt.stopped)
			}
			if want := fmt.Sprintf("[4/4] NOT RUN t04.json  the suite's --%s budget", tt.stopped); tt.stopped != "" && !strings.Contains(progress.String(), want) {
				t.Errorf("progress lacks %q:\n%s", want, progress.String())
			}
		})
	}
	t.Run("the running tasks are bound", func(t *testing.T) {
		// Each task may take 2 actions and uses all it is given; the
		// suite's 5 leave the third task 1: it is cut short, the fourth
		// is not run, and the tasks together take 5.
		tasks := fakeTasks(4)
		for i := range tasks {
			two := 2
			tasks[i].Input = contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, MaxActions: &two}
		}
		// The first two run at once (they meet), so that the second
		// is granted beside the first.
		var n atomic.Int64
		var mu sync.Mutex
		var caps []int
		m := newMeeting(2)
		out, err := runWritten(t, context.Background(), tasks, Options{Parallel: 2, Dir: t.TempDir(), MaxActions: 5,
			Run: func(ctx context.Context, a Attempt) (session.Result, error) {
				m.enter(t)
				defer m.leave()
				limit := *a.Task.Input.MaxActions
				mu.Lock()
				caps = append(caps, limit)
				mu.Unlock()
				status := contract.SessionCompleted
				if limit < 2 {
					status = contract.SessionActionLimitExceeded
				}
				return result(a, int(n.Add(1)), status, limit, 0), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		tot := out.Index.Totals()
		slices.Sort(caps)
		if tot.Actions != 5 || !slices.Equal(caps, []int{1, 2, 2}) || out.Index.StoppedBy != StopActions || tot.Skipped != 1 {
			t.Errorf("actions %d, caps %v, stopped %q (%s), skipped %d; want 5, [1 2 2], max-actions, 1", tot.Actions, caps, out.Index.StoppedBy, out.StopReason, tot.Skipped)
		}
		// The line's task hash is the task as the session ran it.
		for _, got := range out.Index.Tasks {
			if got.Status == contract.SessionActionLimitExceeded {
				want := tasks[0].Input
				one := 1
				want.MaxActions = &one
				if h, _ := TaskHash(want); got.TaskHash != h {
					t.Errorf("%s: task hash %s, want the cut task's %s", got.Name, got.TaskHash, h)
				}
			}
		}
	})
	t.Run("tokens bind the running tasks", func(t *testing.T) {
		// Tasks without a token budget of their own, each needing two
		// calls; the suite's 24,000 tokens. Alone, the first is granted
		// them all. The second is granted what is left when that is at
		// least MinTokenGrant (8,192), else not started.
		tests := []struct {
			name     string
			perCall  int
			caps     []int
			tokens   int
			cutShort bool
		}{
			// 14,000 used, 10,000 left: the second's second call would
			// pass its grant and is refused unsent; it ends aborted by
			// its budget with 7,000 used, fewer than its grant, cut
			// short: the suite stops.
			{"cut short", 7000, []int{24000, 10000}, 21000, true},
			// 16,000 used, 8,000 left: less than a task starts with.
			{"too little left", 8000, []int{24000}, 16000, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var n atomic.Int64
				var mu sync.Mutex
				var caps []int
				tasks := fakeTasks(3)
				for i := range tasks {
					tasks[i].Input = contract.Input{Goal: "g", URLs: []string{"https://example.com/"}}
				}
				out, err := runWritten(t, context.Background(), tasks, Options{Parallel: 1, Dir: t.TempDir(), MaxTokens: 24000,
					Run: func(ctx context.Context, a Attempt) (session.Result, error) {
						limit, err := a.Task.Input.MaxTokens()
						if err != nil {
							t.Error(err)
						}
						mu.Lock()
						caps = append(caps, limit)
						mu.Unlock()
						return modelSession(a, int(n.Add(1)), 2, tt.perCall), nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				tot := out.Index.Totals()
				if tot.Tokens != tt.tokens || !slices.Equal(caps, tt.caps) || out.Index.StoppedBy != StopTokens || tot.Skipped != 3-len(tt.caps) || out.OK() {
					t.Errorf("tokens %d, caps %v, stopped %q (%s), skipped %d; want %d, %v, max-tokens, %d", tot.Tokens, caps, out.Index.StoppedBy, out.StopReason, tot.Skipped, tt.tokens, tt.caps, 3-len(tt.caps))
				}
				if got := out.Index.Tasks[1]; tt.cutShort && (got.Status != contract.SessionAborted || got.Tokens != 7000) {
					t.Errorf("t02 = %+v, want aborted by its budget with 7,000 tokens", got)
				}
				if !strings.Contains(out.StopReason, "--max-tokens budget (24000)") {
					t.Errorf("stop reason %q", out.StopReason)
				}
			})
		}
	})
	t.Run("cut short by its fair share", func(t *testing.T) {
		// --parallel 2, 100,000 tokens, 3 tasks: t01 is granted half and
		// needs 60,000 (two calls of 30,000): cut short by its fair share,
		// it leaves the rest to the others: t03 runs on what is left.
		tasks := fakeTasks(3)
		for i := range tasks {
			tasks[i].Input = contract.Input{Goal: "g", URLs: []string{"https://example.com/"}}
		}
		m := newMeeting(2)
		var mu sync.Mutex
		caps := map[string]int{}
		var n atomic.Int64
		out, err := runWritten(t, context.Background(), tasks, Options{Parallel: 2, Dir: t.TempDir(), MaxTokens: 100000,
			Run: func(ctx context.Context, a Attempt) (session.Result, error) {
				m.enter(t)
				defer m.leave()
				limit, _ := a.Task.Input.MaxTokens()
				mu.Lock()
				caps[a.Task.Name] = limit
				mu.Unlock()
				if a.Task.Name == "t01.json" {
					return modelSession(a, int(n.Add(1)), 2, 30000), nil
				}
				return modelSession(a, int(n.Add(1)), 1, 10000), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.Index.StoppedBy != "" || !out.Index.Tasks[2].Completed() || out.Index.Tasks[0].Status != contract.SessionAborted {
			t.Errorf("stopped %q (%s), tasks %+v; want t01 aborted, t03 completed, nothing stopped", out.Index.StoppedBy, out.StopReason, out.Index.Tasks)
		}
		// t03's grant depends on which of the others ended first.
		delete(caps, "t03.json")
		if got, want := caps, (map[string]int{"t01.json": 50000, "t02.json": 50000}); !maps.Equal(got, want) {
			t.Errorf("grants %v, want %v", got, want)
		}
	})
	t.Run("tasks without a model share no tokens", func(t *testing.T) {
		// One task calls a model, two do not: it is granted the whole
		// token budget, though two slots could start.
		tasks := fakeTasks(3)
		tasks[1].NoModel, tasks[2].NoModel = true, true
		var first, n atomic.Int64
		out, err := runWritten(t, context.Background(), tasks, Options{Parallel: 2, Dir: t.TempDir(), MaxTokens: 100000,
			Run: func(ctx context.Context, a Attempt) (session.Result, error) {
				if !a.Task.NoModel {
					limit, _ := a.Task.Input.MaxTokens()
					first.Store(int64(limit))
				}
				return result(a, int(n.Add(1)), contract.SessionCompleted, 1, 0), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := first.Load(); got != 100000 || !out.OK() {
			t.Errorf("t01 granted %d, OK %v; want 100000, true", got, out.OK())
		}
	})
	t.Run("a suite budget smaller than a task starts with", func(t *testing.T) {
		// The first task is granted the whole budget, under MinTokenGrant.
		var caps []int
		out, err := runWritten(t, context.Background(), fakeTasks(2), Options{Parallel: 1, Dir: t.TempDir(), MaxTokens: 500,
			Run: func(ctx context.Context, a Attempt) (session.Result, error) {
				limit, _ := a.Task.Input.MaxTokens()
				caps = append(caps, limit)
				return modelSession(a, len(caps), 1, 400), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(caps, []int{500}) || out.Index.StoppedBy != StopTokens || !out.Index.Tasks[0].Completed() {
			t.Errorf("caps %v, stopped %q, t01 %+v", caps, out.Index.StoppedBy, out.Index.Tasks[0])
		}
	})
	t.Run("duration", func(t *testing.T) {
		// A task runs until the suite's time is out: it ends aborted; the
		// others are not run.
		var n atomic.Int64
		out, err := runWritten(t, context.Background(), fakeTasks(3), Options{Parallel: 1, Dir: t.TempDir(), MaxDuration: 1,
			Run: func(ctx context.Context, a Attempt) (session.Result, error) {
				<-ctx.Done()
				res := result(a, int(n.Add(1)), contract.SessionAborted, 0, 0)
				res.Output.Summary = "aborted after 0 actions: " + context.Cause(ctx).Error()
				return res, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.Index.StoppedBy != StopDuration || !strings.Contains(out.StopReason, "--max-duration") {
			t.Errorf("stopped %q (%s)", out.Index.StoppedBy, out.StopReason)
		}
		for _, got := range out.Index.Tasks {
			if got.Status != contract.SessionAborted && !strings.HasPrefix(got.Error, "not run: the suite's --max-duration budget") {
				t.Errorf("%s = %+v, want aborted or not run", got.Name, got)
			}
		}
	})
}

// TestGrantsShared: under suite budgets, --parallel 2 runs two tasks at
// once (the fake sessions meet: each waits until two run), each granted
// its share of what is left: half of the budgets to the first, what is
// left to the second (the one slot that could start); a task that calls
// no model gets no tokens, and its task is run as it is.
func TestGrantsShared(t *testing.T) {
	tasks := fakeTasks(5)
	for i := range tasks {
		tasks[i].Input = contract.Input{Goal: "g", URLs: []string{"https://example.com/"}}
	}
	tasks[4].NoModel = true
	m := newMeeting(2)
	var mu sync.Mutex
	type grantOf struct{ actions, tokens int }
	grants := map[string]grantOf{}
	var n atomic.Int64
	out, err := runWritten(t, context.Background(), tasks, Options{Parallel: 2, Dir: t.TempDir(), MaxTokens: 100000, MaxActions: 40,
		Run: func(ctx context.Context, a Attempt) (session.Result, error) {
			m.enter(t)
			defer m.leave()
			tokens, _ := a.Task.Input.MaxTokens()
			actions := 0
			if a.Task.Input.MaxActions != nil {
				actions = *a.Task.Input.MaxActions
			}
			mu.Lock()
			grants[a.Task.Name] = grantOf{actions, tokens}
			mu.Unlock()
			if a.Task.NoModel {
				return result(a, int(n.Add(1)), contract.SessionCompleted, 1, 0), nil
			}
			return modelSession(a, int(n.Add(1)), 1, 1000), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() || out.Index.StoppedBy != "" {
		t.Fatalf("OK %v, stopped %q (%s): %+v", out.OK(), out.Index.StoppedBy, out.StopReason, out.Index.Tasks)
	}
	if got := m.most(); got != 2 {
		t.Errorf("at most %d tasks ran at once, want 2", got)
	}
	if got, want := grants["t01.json"], (grantOf{20, 50000}); got != want {
		t.Errorf("t01 granted %+v, want %+v (half of each budget)", got, want)
	}
	if got, want := grants["t02.json"], (grantOf{20, 50000}); got != want {
		t.Errorf("t02 granted %+v, want %+v (what is left, for the one slot)", got, want)
	}
	if got := grants["t05.json"]; got.tokens != 0 || got.actions == 0 {
		t.Errorf("t05 (no model) granted %+v, want actions and no tokens", got)
	}
}

// meeting makes fake sessions run at once: each waits in enter until n
// have entered (or a minute passed, a failure: the runner did not start
// them together), and it records the most that were in at once.
type meeting struct {
	mu       sync.Mutex
	n, in    int
	max      int
	together chan struct{}
	met      bool
}

func newMeeting(n int) *meeting { return &meeting{n: n, together: make(chan struct{})} }

func (m *meeting) enter(t *testing.T) {
	m.mu.Lock()
	m.in++
	m.max = max(m.max, m.in)
	if m.in >= m.n && !m.met {
		m.met = true
		close(m.together)
	}
	m.mu.Unlock()
	select {
	case <-m.together:
	case <-time.After(time.Minute):
		// Only a failure waits this long: no second session started
		// while this one ran.
		t.Errorf("no %d sessions ran at once", m.n)
	}
}

func (m *meeting) leave() {
	m.mu.Lock()
	m.in--
	m.mu.Unlock()
}

func (m *meeting) most() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max
}

// modelSession is a fake session that calls a model as a real one does
// under a token budget (hints.maxTokens): calls calls of perCall tokens,
// an action after each; a call it predicts would pass the budget is
// refused before it is sent, and the session ends aborted by its budget
// (Result.Budget) with fewer tokens than its limit.
func modelSession(a Attempt, n, calls, perCall int) session.Result {
	limit, _ := a.Task.Input.MaxTokens()
	used := 0
	for i := range calls {
		if limit > 0 && used+perCall > limit {
			res := result(a, n, contract.SessionAborted, i, used)
			res.Budget = llm.BudgetTokens
			res.Output.Summary = fmt.Sprintf("aborted after %d actions: the token budget (maxTokens %d) would be passed", i, limit)
			return res
		}
		used += perCall
	}
	return result(a, n, contract.SessionCompleted, calls, used)
}

// TestProgressWhole runs many tasks at once, each logging lines, and
// checks that every line came out whole.
func TestProgressWhole(t *testing.T) {
	var buf bytes.Buffer
	var n atomic.Int64
	_, err := runWritten(t, context.Background(), fakeTasks(20), Options{Parallel: 8, Dir: t.TempDir(), Progress: &buf,
		Run: func(ctx context.Context, a Attempt) (session.Result, error) {
			for i := range 20 {
				a.Log(fmt.Sprintf("step %d/20  click #x \"X\"  allowed (low)", i+1))
			}
			return result(a, int(n.Add(1)), contract.SessionCompleted, 20, 0), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^(\[t\d\d\.json\] step \d+/20  click #x "X"  allowed \(low\)|\[\d+/20\] ok      t\d\d\.json  20 actions \S+  t\d\d/s-\d+)$`)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 20*21 {
		t.Errorf("%d lines, want %d", len(lines), 20*21)
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("line %q", l)
		}
	}
	if !strings.Contains(buf.String(), "[20/20] ok") {
		t.Error("no [20/20]")
	}
}

func TestRunOptions(t *testing.T) {
	run := func(context.Context, Attempt) (session.Result, error) { return session.Result{}, nil }
	for _, o := range []Options{
		{Parallel: 0, Run: run},
		{Parallel: 1},
		{Parallel: 1, Run: run, Endpoints: []string{"ws://a"}},
		{Parallel: 1, Run: run, MaxActions: -1},
	} {
		if _, err := Run(context.Background(), fakeTasks(1), o); err == nil {
			t.Errorf("Run with %+v: no error", o)
		}
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.json", "a.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "b.json")
	got, err := Files([]string{one, dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []TaskFile{{one, one}, {"a.json", filepath.Join(dir, "a.json")}, {"b.json", one}}
	if !slices.Equal(got, want) {
		t.Errorf("Files = %v, want %v", got, want)
	}
	if _, err := Files(nil); !errors.Is(err, ErrNoTasks) {
		t.Errorf("Files(nil) = %v, want ErrNoTasks", err)
	}
	if _, err := Files([]string{t.TempDir()}); !errors.Is(err, ErrNoTasks) {
		t.Errorf("Files(empty dir) = %v, want ErrNoTasks", err)
	}
}

func TestSlugs(t *testing.T) {
	got := slugs([]string{"a.json", "x/a.json", "we ird$.json", "..json", "a-2.json"})
	want := []string{"a", "a-2", "we_ird_", "task", "a-2-2"}
	if !slices.Equal(got, want) {
		t.Errorf("slugs = %v, want %v", got, want)
	}
}

// TestLongErrors: an error of any length (a session's summary, a
// server's error) is cut for the index, which is written whatever it is.
func TestLongErrors(t *testing.T) {
	long := strings.Repeat("é", 70000) // past the schema's 65,536 characters
	f := &fleetCase{down: map[string]bool{"ws://b": true}}
	out, err := runWritten(t, context.Background(), fakeTasks(2), Options{Parallel: 1, Dir: t.TempDir(), Endpoints: []string{"ws://b", "ws://a"},
		Run: func(ctx context.Context, a Attempt) (session.Result, error) {
			res, err := f.run(ctx, a)
			if a.Task.Name == "t02.json" {
				res = result(a, 9, contract.SessionFailed, 1, 0)
				res.Output.Summary = long
			}
			return res, err
		},
		ServerUp: func(ctx context.Context, ep string) error {
			if err := f.up(ctx, ep); err != nil {
				return fmt.Errorf("%w: %s", err, long)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	first, second := out.Index.Tasks[0], out.Index.Tasks[1]
	if len(first.Retries) != 1 || !first.Completed() {
		t.Fatalf("t01 = %+v, want completed after a retry", first)
	}
	for _, got := range []string{first.Retries[0].Error, second.Error} {
		if len(got) > MaxErrorBytes+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
			t.Errorf("error of %d bytes, want at most %d, cut with an ellipsis", len(got), MaxErrorBytes)
		}
	}
}
