package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
)

// ending is how the session ends.
type ending struct {
	status  contract.SessionStatus
	summary string
	err     *Error
	budget  string // the model budget that ended it (Result.Budget)
}

// run is the state of one running session.
type run struct {
	busTime atomic.Int64    // nanoseconds spent publishing events
	ids     map[string]bool // action ids used so far (uniqueIDs)
	s       *Session
	cfg     *Config
	id      string
	ctx     context.Context
	start   time.Time // by Config.Clock, for the records
	wall    time.Time // by the monotonic clock, for Timings
	maxDur  time.Duration

	w   Recorder
	rec *writeQueue
	drv driver.Driver
	eff *effects // the driver's Effects: what the page does, judged

	// approveMu makes approvals one at a time: the session's own and those
	// of effects, asked from the driver's goroutines.
	approveMu sync.Mutex

	maxActions int
	maxSteps   int
	decLog     string

	executed, denied, approved int
	step                       int
	obsSeq                     int
	obs                        contract.Observation // the current observation
	fresh                      bool                 // obs was taken after the last executed action
	curURL                     string
	plan                       *contract.Plan
	progress                   []navigator.Progress
	planRan                    navigator.PlanItem // the furthest plan item that ran (offline navigators)
	feedback                   []navigator.Feedback
	loops                      *loopDetector
	replans                    int
	loopHit                    string // why the last batch tripped loop detection
	effectStop                 string // why an effect drained since the last action stops its batch (noteEffectStop)
	effectRefused              bool   // that effect was refused
	artifacts                  []contract.Artifact
	vision                     bool              // the model may be shown the page (visionAllowed)
	image                      *llm.Image        // the screenshot to show with the next Navigator call (queueImage)
	escalateWhy                string            // why the session escalates before the next Navigator call (noteEscalation)
	escalations                int               // the session's own vision escalations so far
	synthetic                  bool              // the action handled is the session's own escalation
	shotURIs                   map[string]string // driver's image uri → bundle uri
	lastSummary                string
	t                          Timings

	// refused holds what an approver refused in this session (intentKey
	// → who refused it): the same action proposed again is refused
	// without asking again. lastRefusal says the latest refusal: a
	// session that then ends for want of a way forward ends aborted by
	// it, not failed (refusedEnding).
	refused     map[string]*refusal
	lastRefusal *refusal

	// approvalKey is the session's approval key (evidence.NewApprovalKey),
	// in this process's memory only: the bundle commits to it as the
	// session starts and reveals it at the seal, and every approval the
	// session grants carries a MAC under it (stampApproval).
	approvalKey []byte
}

func newRun(s *Session) *run {
	cfg := &s.cfg
	r := &run{s: s, cfg: cfg, id: s.id, start: cfg.Clock(), wall: time.Now(), curURL: "about:blank", shotURIs: map[string]string{}, refused: map[string]*refusal{}}
	r.maxActions = DefaultMaxActions
	if cfg.Task.MaxActions != nil {
		r.maxActions = *cfg.Task.MaxActions
	}
	r.maxSteps = cfg.MaxSteps
	if r.maxSteps <= 0 {
		r.maxSteps = 2*r.maxActions + 10
	}
	r.decLog = "dec-" + s.id
	if len(r.decLog) > 128 {
		r.decLog = r.decLog[:128]
	}
	r.loops = newLoopDetector(cfg.LoopThreshold)
	return r
}

func (r *run) now() time.Time { return r.cfg.Clock() }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (r *run) fail(code, msg string, err error) ending {
	return ending{status: contract.SessionFailed, summary: msg, err: &Error{Code: code, Msg: msg, Err: err}}
}

// ctxEnding reports how the session ends when its context is done.
func (r *run) ctxEnding() (ending, bool) {
	if r.ctx.Err() == nil {
		return ending{}, false
	}
	cause := context.Cause(r.ctx)
	var ab *abortError
	switch {
	case errors.Is(cause, errDuration):
		return ending{status: contract.SessionDurationExceeded, summary: fmt.Sprintf("stopped: the duration budget of %v ran out after %d actions", r.maxDur, r.executed)}, true
	case errors.As(cause, &ab):
		return ending{status: contract.SessionAborted, summary: fmt.Sprintf("aborted after %d actions: %s", r.executed, ab.reason)}, true
	}
	return ending{status: contract.SessionAborted, summary: fmt.Sprintf("aborted after %d actions: %v", r.executed, cause)}, true
}

// errorEnding turns an error into the session's end, letting the context
// speak first: an error caused by the end of the context is that end.
func (r *run) errorEnding(code, msg string, err error) ending {
	if e, ok := r.ctxEnding(); ok {
		return e
	}
	return r.fail(code, msg, err)
}

// --- evidence and events ------------------------------------------------

// record queues one evidence write (see recorder), or runs it at once
// once the recorder is stopped; an error, now or of an earlier write,
// stops the session.
func (r *run) record(f func() error) error {
	var err error
	if r.rec != nil {
		err = r.rec.add(f)
	} else {
		t0 := time.Now()
		err = f()
		r.t.Evidence += time.Since(t0)
	}
	if err != nil && !errors.Is(err, evidence.ErrQuarantined) {
		return &Error{Code: "evidence", Msg: "the evidence bundle cannot be written", Err: err}
	}
	return nil
}

// flush waits until every queued record is written: before an action
// runs, the decision that allowed it is in the bundle.
func (r *run) flush() error {
	if r.rec == nil {
		return nil
	}
	t0 := time.Now()
	err := r.rec.flush()
	r.t.EvidenceWait += time.Since(t0)
	if err != nil {
		return &Error{Code: "evidence", Msg: "the evidence bundle cannot be written", Err: err}
	}
	return nil
}

// emit writes an event to the evidence, then publishes it.
func (r *run) emit(ev contract.StreamEvent) error {
	if ev.Timestamp == "" {
		ev.Timestamp = stamp(r.now())
	}
	ev = filterEvent(r.cfg.Secrets, ev)
	// The writer publishes the event on the bus once it is in
	// events.jsonl (publish), so the bus carries exactly that file.
	return r.record(func() error { return r.w.Event(ev) })
}

// publish puts an event the writer recorded on the bus. It runs on the
// recorder's goroutine.
func (r *run) publish(ev contract.StreamEvent) {
	t0 := time.Now()
	// The events the session emits are filtered already (emit); the
	// writer's own pass the filter here, so that the live stream holds no
	// value whatever the writer's masker knows.
	_ = r.s.bus.Publish(filterEvent(r.cfg.Secrets, ev))
	r.busTime.Add(int64(time.Since(t0)))
}

func (r *run) emitError(code, msg string) error {
	return r.emit(contract.StreamEvent{Type: contract.EventError, Code: code, Message: bound(msg, 2000)})
}

// modelCalls records the model calls of a Planner or Navigator answer in
// model-calls.jsonl, for the current step (0 for the first plan).
func (r *run) modelCalls(calls []llm.CallRecord) error {
	step, now := r.step, r.now()
	for _, c := range calls {
		mc := c.ModelCall(r.id, step, now)
		if err := r.record(func() error { return r.w.ModelCall(mc) }); err != nil {
			return err
		}
	}
	return nil
}

// CodeBudgetExceeded is the code of the error event that records the end
// of a session by its model budget (see "Budgets" in the package
// documentation).
const CodeBudgetExceeded = "session.budget_exceeded"

// budgetEnding ends the session aborted when the model budget is passed
// (by the calls so far), refused a call it predicted would pass it (err
// wraps that *llm.BudgetError), or refused a call of a model it has no
// price for under the cost budget (llm.ErrUnpriced), after an error event
// naming the budget; nil when none of these. The context speaks first, as
// in errorEnding.
func (r *run) budgetEnding(err error) *ending {
	var be *llm.BudgetError
	var msg, budget string
	switch {
	case errors.As(err, &be), errors.As(r.cfg.Budget.Exceeded(), &be):
		msg, budget = be.Error(), be.Budget
	case errors.Is(err, llm.ErrUnpriced):
		msg, budget = fmt.Sprintf("the cost budget (%s) cannot be kept: %v", llm.BudgetCost, err), llm.BudgetCost
	default:
		return nil
	}
	if e, ok := r.ctxEnding(); ok {
		return &e
	}
	if e := r.emitError(CodeBudgetExceeded, msg); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return &end
	}
	return &ending{status: contract.SessionAborted, summary: fmt.Sprintf("aborted after %d actions: %s", r.executed, msg), budget: budget}
}

// --- the loop -----------------------------------------------------------

func (r *run) execute() ending {
	cfg := r.cfg
	model := cfg.Model
	m := contract.Manifest{
		SessionID: r.id,
		Task:      cfg.Task,
		Driver:    cfg.Driver.Mode,
		StartedAt: stamp(r.start),
		Versions:  contract.Versions{Aegis: cfg.Version, Policy: cfg.Gate.PolicyVersion(), Model: model, ModelID: cfg.ModelID, ModelDigest: cfg.ModelDigest, ModelPath: cfg.ModelPath, ModelPrices: cfg.ModelPrices},
	}
	key, err := evidence.NewApprovalKey()
	if err != nil {
		return r.fail("evidence", "cannot draw the approval key", err)
	}
	r.approvalKey = key
	t0 := time.Now()
	w, err := cfg.Evidence(m, evidence.Options{Secrets: cfg.Secrets.Values(), Clock: cfg.Clock, OnEvent: r.publish, ApprovalKey: key})
	r.t.Evidence += time.Since(t0)
	var re *rootError
	switch {
	case errors.As(err, &re):
		return r.fail("evidence", "cannot create the evidence root "+re.root, re.err)
	case err != nil:
		return r.fail("evidence", "cannot create the evidence bundle", err)
	case w == nil:
		return r.fail("evidence", "cannot create the evidence bundle", errors.New("no recorder"))
	}
	r.w = w
	r.rec = newWriteQueue()
	if err := r.emit(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: r.id, Timestamp: stamp(r.start)}); err != nil {
		return r.fail("evidence", "cannot record the start", err)
	}
	if err := cfg.Gate.Err(); err != nil {
		// The gate denies everything; say why before it does.
		if e := r.emitError("gate.unavailable", "the policy is not loaded, every action will be denied: "+err.Error()); e != nil {
			return r.fail("evidence", "cannot record", e)
		}
	}
	if e, ok := r.ctxEnding(); ok {
		return e
	}

	dc := cfg.Driver
	dc.SessionID = r.id
	dc.AllowedOrigins, _ = origins(cfg.Task.URLs)
	dc.SensitiveSelectors = append(append([]string(nil), dc.SensitiveSelectors...), cfg.Policy.SensitiveSelectors...)
	r.vision = r.visionAllowed()
	dc.PolicyContext = contract.PolicyContext{
		Classification: cfg.Classification, AllowVisionEscalation: r.vision,
		MaxStepBudget: r.maxActions, DecisionLogID: r.decLog,
	}
	r.eff = newEffects(r)
	dc.Effects = r.eff
	t0 = time.Now()
	drv, err := cfg.OpenDriver(r.ctx, dc)
	r.t.Driver += time.Since(t0)
	if err == nil && drv == nil {
		err = errors.New("no driver")
	}
	if err != nil {
		return r.errorEnding("driver", "cannot open the browser", err)
	}
	r.drv = drv

	// The first URL, gated like any other action.
	first := r.uniqueIDs([]contract.Action{{ID: "start", Type: contract.ActNavigate, Reason: "open the task's first URL", PolicyTags: []string{}, URL: cfg.Task.URLs[0]}})[0]
	out, end := r.handle(first, &batchPos{})
	if end != nil {
		return *end
	}
	switch out.outcome {
	case navigator.OutcomeOK:
	case navigator.OutcomeDenied:
		return r.errorEnding("policy", "the policy denied the task's first URL: "+out.detail, nil)
	default:
		return r.errorEnding("driver", "the task's first URL could not be opened: "+out.detail, nil)
	}
	if err := r.observe(); err != nil {
		return r.errorEnding("observe", "cannot observe the page", err)
	}

	// The plan.
	t0 = time.Now()
	obs := r.obs
	plan, calls, err := cfg.Planner.Plan(r.ctx, planner.Request{Goal: cfg.Task.Goal, StartURLs: cfg.Task.URLs, Observation: &obs})
	r.t.Agents += time.Since(t0)
	if e := r.modelCalls(calls); e != nil {
		return r.fail("evidence", "cannot record", e)
	}
	if end := r.budgetEnding(err); end != nil {
		return *end
	}
	if err != nil {
		return r.errorEnding("planner", "the planner failed", err)
	}
	if e := r.record(func() error { return r.w.Plan(plan) }); e != nil {
		return r.fail("evidence", "cannot record the plan", e)
	}
	r.plan = &plan

	for {
		if e, ok := r.ctxEnding(); ok {
			return e
		}
		if r.step >= r.maxSteps {
			return r.fail("step_limit", fmt.Sprintf("the navigator was asked %d times without finishing", r.step), nil)
		}
		if end := r.escalate(); end != nil {
			return *end
		}
		if !r.fresh {
			if err := r.observe(); err != nil {
				return r.errorEnding("observe", "cannot observe the page", err)
			}
		}
		// What the page did meanwhile, before the Navigator is asked (its
		// denials are feedback).
		if e := r.drainEffects(); e != nil {
			return r.fail("evidence", "cannot record", e)
		}
		r.step++
		r.t.Steps++
		r.ageRefusal()
		feedback := r.feedback
		r.feedback = nil
		t0 := time.Now()
		resp, err := cfg.Navigator.Next(r.ctx, navigator.Request{
			Goal: cfg.Task.Goal, Plan: r.plan, Step: r.step,
			Progress: r.progress, Feedback: feedback, Observation: r.obs, Images: r.takeImages(),
		})
		r.t.Agents += time.Since(t0)
		if e := r.modelCalls(resp.Calls); e != nil {
			return r.fail("evidence", "cannot record", e)
		}
		if end := r.budgetEnding(err); end != nil {
			return *end
		}
		if err != nil {
			e := r.errorEnding("navigator", "the navigator failed", err)
			if rej := (*navigator.RejectedError)(nil); e.err != nil && errors.As(err, &rej) {
				// An offline agent stopped on a denial or failure: that is why.
				e.summary = "the navigator stopped: " + bound(rej.Error(), 1000)
			}
			return e
		}
		// Whatever the navigator promises, its answer is checked again.
		nr, err := navigator.Validate(resp.NavigatorResponse, cfg.Secrets)
		if err != nil {
			return r.fail("navigator", "the navigator gave an invalid answer", err)
		}
		if nr.Summary != "" {
			r.lastSummary = nr.Summary
		}
		complete, end := r.batch(r.uniqueIDs(nr.Actions))
		if end != nil {
			return *end
		}
		if r.denied > cfg.MaxDenials {
			return r.fail("denials", fmt.Sprintf("%d actions were denied (at most %d): the navigator does not find an allowed way", r.denied, cfg.MaxDenials), nil)
		}
		switch {
		case nr.Status == contract.StatusFailed:
			return r.fail("navigator_gave_up", "the navigator gave up: "+bound(nr.Summary, 1000), nil)
		case nr.Status == contract.StatusDone && complete:
			return ending{status: contract.SessionCompleted, summary: nr.Summary}
		case r.loopHit != "":
			r.noteEscalation("no progress")
			if end := r.replan(); end != nil {
				return *end
			}
		}
	}
}

// replan answers a loop: a revised plan, or the end of the session.
func (r *run) replan() *ending {
	why := r.loopHit
	r.loopHit = ""
	if r.replans >= r.cfg.MaxReplans {
		e := r.fail("loop", "loop detected: "+why, nil)
		return &e
	}
	r.replans++
	if err := r.emitError("session.loop_detected", "loop detected, revising the plan: "+why); err != nil {
		e := r.fail("evidence", "cannot record", err)
		return &e
	}
	if !r.fresh {
		if err := r.observe(); err != nil {
			e := r.errorEnding("observe", "cannot observe the page", err)
			return &e
		}
	}
	t0 := time.Now()
	obs := r.obs
	plan, calls, err := r.cfg.Planner.Plan(r.ctx, planner.Request{
		Goal: r.cfg.Task.Goal, StartURLs: r.cfg.Task.URLs, Observation: &obs, Previous: r.plan,
		Reason: "Loop detected: " + why + ". Change the approach: the same action keeps failing, being denied, or not changing the page.",
	})
	r.t.Agents += time.Since(t0)
	if e := r.modelCalls(calls); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return &end
	}
	if end := r.budgetEnding(err); end != nil {
		return end
	}
	if err != nil {
		e := r.errorEnding("planner", "the planner failed to revise the plan", err)
		return &e
	}
	if e := r.record(func() error { return r.w.Plan(plan) }); e != nil {
		end := r.fail("evidence", "cannot record the plan", e)
		return &end
	}
	r.plan = &plan
	r.loops.reset()
	r.feedback = append(r.feedback, navigator.Feedback{
		ActionID: "session", Kind: navigator.FeedbackError, Code: "loop_detected",
		Message: "loop detected (" + why + "); the plan was revised: take another way, do not repeat that action",
	})
	return nil
}

// uniqueIDs gives every action an id no earlier action of the session
// had: a model may number each batch from a1 again, and an id must name
// one action in the evidence (artifacts are stored under it) and in the
// live channel, where a decision on an approval names the action by id.
// A repeated id gets the first free suffix .2, .3...; ids stay valid
// (ASCII letters, digits, '.', '_', '-', at most 128 characters).
func (r *run) uniqueIDs(actions []contract.Action) []contract.Action {
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	for i := range actions {
		id := actions[i].ID
		for k := 2; r.ids[id]; k++ {
			suffix := "." + strconv.Itoa(k)
			base := actions[i].ID
			if len(base)+len(suffix) > maxIDLen {
				base = base[:maxIDLen-len(suffix)]
			}
			id = base + suffix
		}
		r.ids[id] = true
		actions[i].ID = id
	}
	return actions
}

// maxIDLen is the longest id the schemas allow.
const maxIDLen = 128
