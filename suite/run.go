package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/session"
)

// Task is one task of a suite.
type Task struct {
	// Name names it in the index and the progress lines (TaskFile.Name).
	Name string
	// Input is the task (seed 003 ComputerUseInput).
	Input contract.Input
	// NoModel says its agent calls no model (steps, script): it uses no
	// tokens, so it starts without a share of the suite's token budget.
	NoModel bool
}

// Attempt is one run of a task: Options.Run runs it as a session.
type Attempt struct {
	Task Task
	// Endpoint is the Playwright server the session connects to; "" for
	// the browser the process launches (shared by the suite's sessions).
	Endpoint string
	// Evidence is the directory the session's bundle goes in (as
	// EVIDENCE/SESSION-ID): the task's own under the suite's directory.
	Evidence string
	// Log writes a line of the session's, prefixed with the task's name,
	// between the lines of the other sessions (for --verbose).
	Log func(line string)
}

// RunFunc runs an attempt as a session until it ends, and returns its
// result: a session that could not start returns a Result without a
// session id and the error why.
type RunFunc func(ctx context.Context, a Attempt) (session.Result, error)

// Options configures Run.
type Options struct {
	// Parallel is how many tasks run at once, at least 1.
	Parallel int
	// Endpoints are the Playwright servers the tasks go to, round-robin
	// (see fleet for a server that fails); none means the browser the
	// process launches, one for the whole suite.
	Endpoints []string
	// Dir is the suite's directory: the index's, each task's bundles under
	// Dir/TASK (the task file's name without .json).
	Dir string
	// MaxDuration bounds the suite's wall time: the tasks not started by
	// then are not run, the running ones are cancelled (they end aborted,
	// sealed). 0: no bound.
	MaxDuration time.Duration
	// MaxActions and MaxTokens bound the executed actions and the model
	// tokens of all the tasks together, running ones included: each
	// attempt runs with a grant (see grant) held for it while it runs, so
	// that the total bounds what is predicted (a session refuses a call
	// predicted to pass its grant; it may pass it by what an endpoint
	// reports beyond the prediction): its fair share of what the
	// budget has left (that divided by the slots that could start an
	// attempt now: the free of Parallel, at most the tasks still to
	// start; for tokens, the tasks that call a model), at least 1 action
	// and MinTokenGrant tokens, and at most its
	// task's own budget (maxActions, else the session's default;
	// hints.maxTokens). A task whose agent calls no model (NoModel) gets
	// no tokens: it uses none. A task starts only when the budget has
	// that least grant left; once it has not (and no running task can
	// give some back), or a task was cut short by a grant that was all the
	// budget had left (it ended by its budget, which the suite's had cut
	// below its own), no task starts, and StoppedBy names the budget. A
	// task cut short by its fair share leaves the rest to the others. 0:
	// no bound.
	MaxActions, MaxTokens int
	// Run runs an attempt. Required.
	Run RunFunc
	// ServerUp reports whether the Playwright server at the endpoint can
	// still give a browser (nil) or why not, after an attempt on it did not
	// complete. It must do real work on the server within a bounded time
	// (aegis suite opens and closes a browser context on it): a connection
	// that merely looks open says nothing of a server that hangs. Required
	// with Endpoints.
	ServerUp func(ctx context.Context, endpoint string) error
	// Progress receives a line per task as it ends; nil: none.
	Progress io.Writer
	// OnStart, when set, is called as each attempt starts (tests).
	OnStart func(Attempt)
}

// Outcome is what Run returns: the index (its StoppedBy says what
// stopped the suite early, if anything did), and why in words.
type Outcome struct {
	Index Index
	// StopReason says what stopped the suite for people, with the
	// numbers: "the suite's --max-actions budget (40) was reached: 42
	// actions"; "" when nothing stopped it.
	StopReason string
}

// OK reports whether every task completed and nothing stopped the suite.
func (o Outcome) OK() bool { return o.Index.AllCompleted() }

// MinTokenGrant is the fewest tokens a task that calls a model starts
// with under a suite token budget (Options.MaxTokens): 8,192, one model
// call with room for a full answer (llm.DefaultCompletionBound, the bound
// a budget sends) and a prompt as large (the instructions, the plan and
// a small page's snapshot). A session refuses a call it predicts would
// pass its budget before sending it, and cuts the answer's bound to what
// is left, so a task started with much less would end at its first calls
// having done nothing. A task whose own hints.maxTokens is smaller needs
// only that, and a suite budget smaller than it is granted whole to the
// first task.
const MinTokenGrant = 2 * llm.DefaultCompletionBound

// stopError is the cause of a suite's context that a budget ended.
type stopError struct {
	stop Stop
	msg  string
}

func (e *stopError) Error() string { return e.msg }

// Run runs the tasks, Options.Parallel at a time, each as a session of
// its own (Options.Run) with its own bundle under Options.Dir, and returns
// their index, the tasks in the order given. It returns an error only for
// options it cannot run with; a task's failure is in its result.
func Run(ctx context.Context, tasks []Task, o Options) (Outcome, error) {
	switch {
	case o.Parallel < 1:
		return Outcome{}, fmt.Errorf("suite: parallel %d: want 1 or more", o.Parallel)
	case o.Run == nil:
		return Outcome{}, errors.New("suite: no Run")
	case len(o.Endpoints) > 0 && o.ServerUp == nil:
		return Outcome{}, errors.New("suite: endpoints without ServerUp")
	case o.MaxDuration < 0 || o.MaxActions < 0 || o.MaxTokens < 0:
		return Outcome{}, errors.New("suite: a negative budget")
	}
	start := time.Now()
	var cancel context.CancelFunc = func() {}
	if o.MaxDuration > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, o.MaxDuration, &stopError{StopDuration, fmt.Sprintf("the suite's --max-duration budget (%v) ran out", o.MaxDuration)})
	}
	defer cancel()
	names := make([]string, len(tasks))
	hashes := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = t.Name
		h, err := TaskHash(t.Input)
		if err != nil {
			return Outcome{}, fmt.Errorf("suite: task %s: %w", t.Name, err)
		}
		hashes[i] = h
	}
	r := &runner{
		o:        o,
		results:  make([]TaskResult, len(tasks)),
		hashes:   hashes,
		slugs:    slugs(names),
		toStart:  len(tasks),
		toStartM: modelTasks(tasks),
		fleet:    newFleet(o.Endpoints),
		progress: newProgress(o.Progress, len(tasks)),
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, t := range tasks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		g, stop, why := r.admit(ctx, t, true)
		if stop != "" {
			r.notRun(tasks[i:], i, stop, why)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.runTask(ctx, i, t, g)
		}()
	}
	wg.Wait()
	if r.stop == "" && ctx.Err() != nil && r.cancelled {
		r.stop, r.why = stopOf(ctx)
	}
	if r.stop == "" && r.hit != "" {
		r.stop, r.why = r.hit, r.hitWhy
	}
	end := time.Now()
	return Outcome{
		Index: Index{
			FormatVersion: FormatVersion,
			StartedAt:     start.UTC().Format(time.RFC3339Nano),
			EndedAt:       end.UTC().Format(time.RFC3339Nano),
			DurationMs:    end.Sub(start).Milliseconds(),
			Parallel:      o.Parallel,
			Tasks:         r.results,
			StoppedBy:     r.stop,
		},
		StopReason: r.why,
	}, nil
}

// runner is one Run's state.
type runner struct {
	o        Options
	results  []TaskResult // by task; each written by its task's goroutine
	hashes   []string     // TaskHash of each task
	slugs    []string
	fleet    *fleet
	progress *progress

	mu        sync.Mutex
	actions   int           // executed by the attempts that ended
	tokens    int           // used by the attempts that ended
	held      grant         // held by the attempts running (see grant)
	running   int           // attempts running (holding a grant)
	toStart   int           // tasks not admitted yet
	toStartM  int           // of them, tasks that call a model
	released  chan struct{} // closed (and replaced) when an attempt ends
	cancelled bool          // an attempt ended while the suite's context was done
	hit       Stop          // a suite budget that cut a task short
	hitWhy    string
	stop      Stop
	why       string
}

// grant is what an attempt may use of the suite's budgets (0: the budget
// is not set, or, for tokens, the task calls no model): its fair share of
// what the budget has left once the attempts that ended and those running
// have taken theirs, at most its task's own budget (see
// Options.MaxActions). The suite holds it while the attempt runs, and
// counts what the attempt used instead once it ends, so that the tasks
// together stay within what a suite budget bounds (what is predicted: a
// session may pass its grant by what an endpoint reports beyond the
// prediction): a task starts only when the budget has room for it.
type grant struct {
	actions, tokens int
	// allActions and allTokens: the grant was everything the budget had
	// left (its share was the whole rest, before its task's own budget
	// capped it), so that a task it cut short leaves no room for another.
	allActions, allTokens bool
}

// admit waits until the suite's budgets have room for an attempt of t
// (first: its first, not a retry), and returns its grant (held from then
// on); or what stopped the suite (the context ended, a budget is spent, a
// task was cut short by its grant, or a budget has too little left for
// a task while no attempt runs that could give some back).
func (r *runner) admit(ctx context.Context, t Task, first bool) (grant, Stop, string) {
	for {
		if stop, why := r.stopped(ctx); stop != "" {
			return grant{}, stop, why
		}
		r.mu.Lock()
		left, leftM := r.toStart, r.toStartM
		if !first {
			// The retry, beside the tasks still to start.
			left++
			if !t.NoModel {
				leftM++
			}
		}
		g, lack, why := r.room(t, left, leftM)
		if lack == "" {
			r.held.actions += g.actions
			r.held.tokens += g.tokens
			r.running++
			if first {
				r.toStart--
				if !t.NoModel {
					r.toStartM--
				}
			}
			r.mu.Unlock()
			return g, "", ""
		}
		if r.running == 0 {
			// Nothing running can give any back: it will never have room.
			r.mu.Unlock()
			return grant{}, lack, why
		}
		if r.released == nil {
			r.released = make(chan struct{})
		}
		ch := r.released
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

// room returns the grant of an attempt of t starting now, with left
// tasks (its own included) that could take the free slots, leftM of them
// calling a model (those share the tokens); or, when a budget has less
// left than the least grant t needs, that budget and why (r.mu held).
func (r *runner) room(t Task, left, leftM int) (grant, Stop, string) {
	free := r.o.Parallel - r.running
	slots := max(1, min(free, left))
	var g grant
	if r.o.MaxActions > 0 {
		rest := r.o.MaxActions - r.actions - r.held.actions
		if rest < 1 {
			return grant{}, StopActions, fmt.Sprintf("the suite's --max-actions budget (%d) was reached: %d actions", r.o.MaxActions, r.actions)
		}
		share := max(1, rest/slots)
		g.actions, g.allActions = min(ownActions(t.Input), share), share >= rest
	}
	if r.o.MaxTokens > 0 && !t.NoModel {
		rest := r.o.MaxTokens - r.tokens - r.held.tokens
		own, err := t.Input.MaxTokens()
		if err != nil {
			own = 0
		}
		least := min(MinTokenGrant, r.o.MaxTokens)
		if own > 0 {
			least = min(least, own)
		}
		if rest < least {
			return grant{}, StopTokens, fmt.Sprintf("the suite's --max-tokens budget (%d) was reached: %d tokens used, %d left, fewer than a task starts with (%d)", r.o.MaxTokens, r.tokens, max(0, r.o.MaxTokens-r.tokens), least)
		}
		share := min(max(least, rest/max(1, min(free, leftM))), contract.MaxTaskTokens)
		g.tokens, g.allTokens = share, share >= rest
		if own > 0 {
			g.tokens = min(g.tokens, own)
		}
	}
	return g, "", ""
}

// modelTasks counts the tasks that call a model.
func modelTasks(tasks []Task) int {
	n := 0
	for _, t := range tasks {
		if !t.NoModel {
			n++
		}
	}
	return n
}

// ownActions is the task's own action budget: its maxActions, else the
// session's default.
func ownActions(in contract.Input) int {
	if in.MaxActions != nil {
		return *in.MaxActions
	}
	return session.DefaultMaxActions
}

// capped returns the task's input with its budgets cut to the grant
// (which is at most its own: see room).
func capped(in contract.Input, g grant) (contract.Input, error) {
	if g.actions > 0 && g.actions < ownActions(in) {
		n := g.actions
		in.MaxActions = &n
	}
	if g.tokens > 0 {
		if own, err := in.MaxTokens(); err != nil || own == 0 || g.tokens < own {
			c, err := in.WithMaxTokens(g.tokens)
			if err != nil {
				return in, fmt.Errorf("cannot cut its token budget to the suite's grant: %w", err)
			}
			in = c
		}
	}
	return in, nil
}

// release gives back what an attempt held (r.mu not held), waking the
// tasks waiting for room.
func (r *runner) release(g grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releaseLocked(g)
}

func (r *runner) releaseLocked(g grant) {
	r.running--
	r.held.actions -= g.actions
	r.held.tokens -= g.tokens
	if r.released != nil {
		close(r.released)
		r.released = nil
	}
}

// stopped says whether no task may start any more, and why: the context
// ended (a budget, an interruption), a total budget was reached, or a
// task was cut short by a grant that was all the budget had left (the
// budget is as good as spent: a task started on what is left would be
// cut short too). A task cut short by its fair share stops nothing: room
// says when too little is left.
func (r *runner) stopped(ctx context.Context) (Stop, string) {
	if ctx.Err() != nil {
		return stopOf(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.hit != "":
		return r.hit, r.hitWhy
	case r.o.MaxActions > 0 && r.actions >= r.o.MaxActions:
		return StopActions, fmt.Sprintf("the suite's --max-actions budget (%d) was reached: %d actions", r.o.MaxActions, r.actions)
	case r.o.MaxTokens > 0 && r.tokens >= r.o.MaxTokens:
		return StopTokens, fmt.Sprintf("the suite's --max-tokens budget (%d) was reached: %d tokens", r.o.MaxTokens, r.tokens)
	}
	return "", ""
}

// stopOf says why ctx ended: a suite budget, else an interruption.
func stopOf(ctx context.Context) (Stop, string) {
	cause := context.Cause(ctx)
	var se *stopError
	if errors.As(cause, &se) {
		return se.stop, se.msg
	}
	return StopInterrupted, fmt.Sprintf("the suite was interrupted: %v", cause)
}

// notRunPrefix starts the error of a task a stopped suite did not run.
const notRunPrefix = "not run: "

// notRun marks tasks (from index first) as not run, for the reason.
func (r *runner) notRun(tasks []Task, first int, stop Stop, why string) {
	r.mu.Lock()
	r.stop, r.why = stop, why
	r.mu.Unlock()
	for i, t := range tasks {
		res := TaskResult{Name: t.Name, TaskHash: r.hashes[first+i], Error: cutError(notRunPrefix + why), Skipped: true}
		r.results[first+i] = res
		r.progress.taskEnded(res)
	}
}

// runTask runs task i, retrying it once on another server when its
// server failed (see fleet), and writes its result.
func (r *runner) runTask(ctx context.Context, i int, t Task, g grant) {
	start := time.Now()
	res := TaskResult{Name: t.Name, TaskHash: r.hashes[i]}
	var failedOn []string // the servers that failed the task
	var down error        // how the last of them failed
	for first := true; ; first = false {
		if !first {
			// A retry needs room in the suite's budgets too.
			var stop Stop
			var why string
			if g, stop, why = r.admit(ctx, t, false); stop != "" {
				res.Error = fmt.Sprintf("%s (the server failed: %v; not retried: %s)", res.Error, down, why)
				break
			}
		}
		ep := ""
		if len(r.o.Endpoints) > 0 {
			var err error
			if ep, err = r.fleet.pick(failedOn); err != nil {
				r.release(g)
				if down == nil {
					res.Error = err.Error()
				} else {
					res.Error = fmt.Sprintf("%s (the server failed: %v; not retried: %v)", res.Error, down, err)
				}
				break
			}
		}
		if down != nil {
			res.Retries = append(res.Retries, Retry{Endpoint: res.Endpoint, Error: fmt.Sprintf("%s (the server failed: %v)", res.Error, down), Bundle: res.Bundle})
		}
		run := t
		var err error
		if run.Input, err = capped(t.Input, g); err != nil {
			r.release(g)
			res.Error = err.Error()
			break
		}
		a := Attempt{
			Task:     run,
			Endpoint: ep,
			Evidence: filepath.Join(r.o.Dir, r.slugs[i]),
			Log:      func(line string) { r.progress.log(t.Name, line) },
		}
		if r.o.OnStart != nil {
			r.o.OnStart(a)
		}
		sr, err := r.o.Run(ctx, a)
		r.count(ctx, sr, g, a.Task.Input, t.Input)
		r.fill(&res, ep, sr, err)
		if h, err := TaskHash(a.Task.Input); err == nil {
			res.TaskHash = h // the task as the session ran it (its budgets cut)
		}
		if down = serverFailed(ctx, r.o.ServerUp, ep, sr); down == nil {
			break
		}
		r.fleet.fail(ep, down)
		failedOn = append(failedOn, ep)
		if len(res.Retries) > 0 {
			// Retried once already: the task ends with this attempt.
			res.Error = fmt.Sprintf("%s (the server failed too: %v)", res.Error, down)
			break
		}
		if why := irreversible(ctx, sr); why != "" {
			res.Error = fmt.Sprintf("%s (the server failed: %v; not retried: %s)", res.Error, down, why)
			break
		}
	}
	res.DurationMs = time.Since(start).Milliseconds()
	res.Error = cutError(res.Error)
	for j := range res.Retries {
		res.Retries[j].Error = cutError(res.Retries[j].Error)
	}
	r.results[i] = res
	r.progress.taskEnded(res)
}

// count adds an attempt's actions and tokens to the suite's totals, in
// place of its grant, and notes a suite budget that cut it short: its
// grant was all the budget had left, its budget (ran, against its task's
// own) was the suite's grant, and the
// session ended by it: it used up its actions without completing, or its
// model budget ended it (session.Result.Budget), whether passed or a call
// refused before it was sent because it would have passed it.
func (r *runner) count(ctx context.Context, sr session.Result, g grant, ran, own contract.Input) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions += sr.Output.ActionsExecuted
	r.tokens += sr.Tokens
	r.releaseLocked(g)
	if ctx.Err() != nil && sr.Status != contract.SessionCompleted {
		r.cancelled = true
	}
	if sr.Status == contract.SessionCompleted || r.hit != "" {
		return
	}
	if g.allActions && ran.MaxActions != nil && (own.MaxActions == nil || *ran.MaxActions < *own.MaxActions) && sr.Output.ActionsExecuted >= *ran.MaxActions {
		r.hit, r.hitWhy = StopActions, fmt.Sprintf("the suite's --max-actions budget (%d) was reached: %d actions, a task cut short", r.o.MaxActions, r.actions)
	}
	ranT, _ := ran.MaxTokens()
	ownT, _ := own.MaxTokens()
	if g.allTokens && ranT > 0 && (ownT == 0 || ranT < ownT) && sr.Budget == llm.BudgetTokens {
		r.hit, r.hitWhy = StopTokens, fmt.Sprintf("the suite's --max-tokens budget (%d) was reached: %d tokens, a task cut short", r.o.MaxTokens, r.tokens)
	}
}

// fill sets the task's result from its latest attempt's. The status is
// the sealed bundle's: a session whose bundle could not be sealed has
// none in the index (nothing bears it out), whatever it reported, and
// its error says how it ended and why the bundle is not sealed; it did
// not complete. runTask cuts the error to MaxErrorBytes at its end.
func (r *runner) fill(res *TaskResult, ep string, sr session.Result, err error) {
	*res = TaskResult{Name: res.Name, TaskHash: res.TaskHash, Endpoint: ep, Retries: res.Retries}
	if sr.Output.ComputerUseSessionID == "" {
		res.Error = "the session could not start"
		if err != nil {
			res.Error += ": " + err.Error()
		}
		return
	}
	res.Actions = sr.Output.ActionsExecuted
	res.Denials = sr.Denied
	res.Approvals = sr.Approved
	res.Tokens = sr.Tokens
	if sr.Evidence.Dir != "" {
		res.Bundle = r.rel(sr.Evidence.Dir)
	}
	if !sr.Evidence.Sealed {
		why := sr.Evidence.Error
		if why == "" {
			why = "no seal was written"
		}
		what := "its bundle is not sealed"
		if res.Bundle == "" {
			what = "it has no evidence bundle"
		}
		res.Error = fmt.Sprintf("the session ended %s but %s: %s", sr.Status, what, why)
		if sr.Status != contract.SessionCompleted {
			res.Error += "; " + endedWhy(sr, err)
		}
		return
	}
	res.Status = sr.Status
	res.HeadHash = sr.Evidence.HeadHash
	if sr.Status != contract.SessionCompleted {
		res.Error = endedWhy(sr, err)
	}
}

// MaxErrorBytes bounds an error in the index (TaskResult.Error,
// Retry.Error): a longer one is cut, with an ellipsis, well within the
// schema's bound (65,536 characters), so that no error, however long,
// keeps the index from being written.
const MaxErrorBytes = 8192

// cutError cuts an error for the index (MaxErrorBytes).
func cutError(s string) string { return text.Ellipsize(s, MaxErrorBytes) }

// endedWhy says why a session did not complete: its summary, else its
// error, else its status.
func endedWhy(sr session.Result, err error) string {
	switch {
	case sr.Output.Summary != "":
		return sr.Output.Summary
	case err != nil:
		return err.Error()
	}
	return string(sr.Status)
}

// rel is dir relative to the suite's directory, slash-separated.
func (r *runner) rel(dir string) string {
	base, err := filepath.Abs(r.o.Dir)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	rel, err := filepath.Rel(base, abs)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	return filepath.ToSlash(rel)
}
