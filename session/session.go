// Package session runs one governed browser session: the loop that wires
// the Planner and the Navigator (the model, which is hostile), the gate
// (the policy, which decides), the driver (the browser, showing hostile
// pages), the approver (a human or a rule) and the evidence bundle.
//
// The loop's parts are handed in (Config): the driver is opened by
// Config.OpenDriver (driver.Open, driver.OpenExtension, or a fake), the
// gate is a Decider (*gate.Gate), approvals go through an Approver and are
// granted into Grants (*gate.Approvals), and the evidence is written
// through a Recorder created by Config.Evidence (EvidenceDir: an
// *evidence.Writer). Secrets arrive loaded (secrets.Load).
//
// The loop (Run):
//
//  1. Create the evidence bundle (nothing runs unrecorded), emit
//     session.started, open the driver (Config.OpenDriver).
//  2. Navigate to the task's first URL, gated like any other action.
//  3. Observe, and ask the Planner for a plan.
//  4. Observe (unless the last observation is still current), ask the
//     Navigator for a batch, validate it again (navigator.Validate), and
//     for each action in turn: check the budgets; resolve the target
//     element through the driver (driver.Describe); ask the gate, with that
//     element; when the gate pauses the action, ask the approver and, on a
//     yes, grant an approval bound to the action's hash and ask the gate
//     again (the decision records the approval with the channel it came
//     on and a MAC under the session's approval key, a key drawn at the
//     start that the bundle commits to and reveals at the seal:
//     evidence/FORMAT.md, section 8, rule 16); run the allowed action (secret placeholders resolved only in
//     the copy handed to driver.Act); record everything. The batch runs
//     on while each next target is still the element the Navigator saw in
//     the observation the batch was planned on, as it was seen there
//     (driver.Observed, which Describe reports at no extra cost: the same
//     node, visible, enabled, of the role and name listed, and, for a
//     click, type or select, not covered by another element), so clicks
//     that only change classes or attributes do not cut it. It stops at
//     the first denial or failure, after a navigate, when the URL changes,
//     after an action that needed approval (anyone's: a person's or a
//     rule's), after an action one of whose effects was refused or needed
//     approval, and at a target that is no longer that element as seen
//     (replaced, removed, hidden, disabled, renamed, given another role,
//     covered: that action is skipped, before the gate); a target the
//     observation did not list (a selector the model wrote) is checked as
//     before: after a click, the page is observed again and any change of
//     its DOM hash stops the batch. The rest is skipped, each action
//     reported to the Navigator as skipped with the reason, and the
//     Navigator asked again on the page as it is. Denials and failures go
//     back to the Navigator as feedback. An action repeated within one
//     batch is not counted for loop detection (the action budget bounds
//     it).
//  5. Repeat until the Navigator says done (and its last batch ran
//     entirely), says failed, errs, or a budget or loop stops the session.
//
// Every proposed action ends with a final decision record in the bundle:
// the gate's, or, when the session refuses what the gate allowed or
// paused, a copy of it with result denied and the session's own rule
// (RuleApprovalDenied, RuleApprovalTimeout, RuleApprovalUnavailable,
// RuleActionBudget), its own time and
// decision id. An action whose target the driver cannot find never
// reaches the gate; an error event (action.target_unresolved) records it.
//
// Evidence is written by a goroutine of its own, in order, overlapping the
// model call, the element lookup and the gate; the session waits for it
// before every action it hands the driver (the decision that allowed the
// action is in the bundle first) and before the seal, and any write
// failure fails the session. When the session ends on a live page it takes
// a last observation, so the bundle shows the page as it was left.
//
// The session ends with one of seed 003's statuses: completed, aborted
// (Session.Abort, the caller's context, or the model budget), duration_exceeded
// (Task.MaxDurationMs), action_limit_exceeded (an action proposed beyond
// Task.MaxActions), or failed (an error, the Navigator giving up, a loop,
// too many denials). Whatever the outcome, session.ended is emitted and the
// evidence bundle sealed.
//
// Budgets: besides the action and duration budgets (Task.MaxActions,
// Task.MaxDurationMs), a task may bound the tokens of its model calls
// (hints.maxTokens, contract.Input.MaxTokens) and what they cost
// (hints.maxCostUsd, contract.Input.MaxCostUSD, at the models' prices from
// the model registry). The Planner's and the Navigator's model clients
// share one llm.Budget (Config.Budget), charged with the usage each
// response reports (prompt and completion tokens, as every model-call
// record holds them, with the call's cost when the model is priced). The session reads it after each
// Planner and Navigator answer: once the calls passed the budget, the
// session ends aborted before it runs anything of that answer, its summary
// naming the budget, after an error event with code
// session.budget_exceeded (CodeBudgetExceeded). A call the budget predicts
// would pass it (the prompt's estimated tokens plus the client's
// completion bound are more, or cost more, than what is left; see
// llm.Budget.EstimatePromptTokens) is not sent, and ends the session the
// same way. Step reports and the Result carry the tokens used, the cost,
// and the budgets.
//
// Vision escalation: a session may show the model screenshots of its page
// only when the model accepts images (Config.ModelImages) and the policy
// allows it for the session's classification (Config.Classification, the
// stricter of the caller's and the task's hints.classification, restricted
// when neither names one). The session asks the gate once at the start (a
// Probe decision on an extract screenshot with vision true, nothing
// recorded): allowed, or paused for approval without a deny reason (the
// policy data's vision.risk at a level that requires approval: each
// escalation is then put to the approver when it happens), means yes. Its
// answer is the observations' policyContext
// allowVisionEscalation, which alone makes the Navigator's prompt say how
// to ask. The screenshot of an allowed extract with vision true, masked
// and stored in the bundle, goes with the next Navigator call (the stored
// bytes; the model-call record lists its path and SHA-256; one image a
// call, the newest). After a batch in which an action failed or its
// target was covered, and when loop detection fires, the session itself
// runs one such extract (id vision-N) through the gate before asking the
// Navigator again: at most once per observation and MaxVisionEscalations
// times per session, counted in the action budget like any extract but
// only while the budget leaves the Navigator an action after it; it feeds
// neither loop detection nor the count of denials, and its denial is
// recorded and otherwise silent (no feedback, no image). The step report
// marks it (StepReport.Vision). A screenshot whose bytes differ from the
// hash its record commits to is not shown (an error event,
// vision.image_mismatch).
//
// Loop detection: the same action (type and fields, ignoring id and reason)
// on the same page failing or being denied Config.LoopThreshold times, or
// succeeding that many times on an unchanged page (waits excepted), forces
// a revision of the plan; once the revisions (Config.MaxReplans) are used
// up, the next loop fails the session.
//
// Effects: what the page does on the network, whatever made it (a link, a
// form, a script, a timer), is an effect of the action that caused it: the
// action the driver is running, else the last one it ran. The driver tells
// the session (driver.Effects, which the session hands it in
// driver.Config.Effects) of every request its boundary refused, and asks it
// about every state-changing request it holds; the session asks the gate
// (gate.Request.Effect, with the action's request), sends a paused effect
// to the approver like a paused action (ApprovalRequest.Effect), and
// records each effect as decision records of that action (Effect set),
// written after the action's own record; a refused one is the session's
// denial (RuleEffectRefused). A denied effect is also an error event
// (effect.denied), a progress report (StepReport.Effect) and, for a
// navigation, a state-changing request, a download or a peer channel,
// feedback to the Navigator. At most MaxEffectRecords effects are recorded
// per action (effect.limit counts the rest, which are refused). An effect
// before the first action reached the driver is refused and recorded as
// an error event (effect.before_start). Denied effects do not count as
// denied actions. An action the driver did not run because the page or the
// element changed since the decision (contract.CodeTargetChanged) fails
// with feedback saying so; it is no denial either. When Describe reports
// that the target is in a document of another origin than the session's
// URL, the gate judges the action on that origin (the active URL).
//
// Secrets: the model, the gate, the evidence and the events only ever see
// {{secret:NAME}} placeholders. Config.Secrets resolves them in the copy of
// a type action handed to driver.Act, and nowhere else, once the gate
// allowed it: the gate knows where each secret may go (gate.Session.Secrets:
// its declared origins, else the task's first origin), and the policy lets
// a secret be typed only into a field sensitive by its own facts (a
// password, one-time code or card field, or one matching a sensitive
// selector) on one of them, so that a model cannot type a secret into a
// comment box or on another site; the evidence writer
// masks the values anyway (evidence.Options.Secrets), and the Navigator
// scrubs them from observations.
package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// Error is the error of a failed session.
type Error struct {
	// Code classifies the failure: config, evidence, driver, policy,
	// planner, navigator, navigator_gave_up, loop, denials, step_limit,
	// observe, approval, refused (a rule, such as --approve=deny, refused
	// the one way forward; a person's refusal ends the session aborted).
	Code string
	// Msg says what happened.
	Msg string
	// Err is the cause, if any.
	Err error
}

// Error returns the code and the message.
func (e *Error) Error() string {
	s := "session: " + e.Code + ": " + e.Msg
	if e.Err != nil && !strings.Contains(e.Msg, e.Err.Error()) {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// abortError is the cause of a context canceled by Abort.
type abortError struct{ reason string }

func (e *abortError) Error() string { return "aborted: " + e.reason }

// errDuration is the cause of the context that ends at the duration
// budget.
var errDuration = errors.New("the session's duration budget ran out")

// Session is one session, made by New and run once by Run. Bus and Abort
// may be used from other goroutines while it runs.
type Session struct {
	cfg Config
	id  string
	bus *Bus

	mu      sync.Mutex
	cancel  context.CancelCauseFunc
	aborted *abortError
	ran     bool
}

// New checks cfg and returns the session, without starting anything.
func New(cfg Config) (*Session, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	id := cfg.SessionID
	if id == "" {
		id = driver.NewSessionID()
	}
	bus := cfg.Bus
	if bus == nil {
		bus = NewBus(0)
	}
	return &Session{cfg: cfg, id: id, bus: bus}, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Bus returns the session's event bus; subscribe before Run to see every
// event live (or later with FromStart).
func (s *Session) Bus() *Bus { return s.bus }

// Abort stops the session with status aborted: the action under way is
// abandoned, the driver closed, and the bundle sealed. It may be called
// before, during or after Run (after, it does nothing).
func (s *Session) Abort(reason string) {
	if reason == "" {
		reason = "aborted by the operator"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted != nil {
		return
	}
	s.aborted = &abortError{reason: Sanitize(reason, 500)}
	if s.cancel != nil {
		s.cancel(s.aborted)
	}
}

// Run runs the session described by cfg (see New and Session.Run).
func Run(ctx context.Context, cfg Config) (Result, error) {
	s, err := New(cfg)
	if err != nil {
		return Result{Status: contract.SessionFailed}, err
	}
	return s.Run(ctx)
}

// Run runs the session until it ends, and returns its result. The error is
// nil unless the session failed (then it is an *Error, and Result.Status
// is failed); a session that could not even create its evidence bundle
// returns a Result without one. Run may be called once.
func (s *Session) Run(ctx context.Context) (Result, error) {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return Result{Status: contract.SessionFailed}, &Error{Code: "config", Msg: "a session runs once"}
	}
	s.ran = true
	actx, cancel := context.WithCancelCause(ctx)
	s.cancel = cancel
	if s.aborted != nil {
		cancel(s.aborted)
	}
	s.mu.Unlock()
	defer cancel(nil)

	r := newRun(s)
	maxDur := DefaultMaxDuration
	if d := s.cfg.Task.MaxDurationMs; d != nil {
		maxDur = time.Duration(*d) * time.Millisecond
	}
	rctx, rcancel := context.WithDeadlineCause(actx, time.Now().Add(maxDur), errDuration)
	defer rcancel()
	r.ctx = rctx
	r.maxDur = maxDur

	end := r.execute()
	return r.finish(end)
}
