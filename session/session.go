// Package session runs one governed browser session: the loop that wires
// the Planner and the Navigator (the model, which is hostile), the gate
// (the policy, which decides), the driver (the browser, showing hostile
// pages), the approver (a human or a rule) and the evidence bundle.
//
// The loop (Run):
//
//  1. Create the evidence bundle (nothing runs unrecorded), emit
//     session.started, open the driver.
//  2. Navigate to the task's first URL, gated like any other action.
//  3. Observe, and ask the Planner for a plan.
//  4. Observe (unless the last observation is still current), ask the
//     Navigator for a batch, validate it again (navigator.Validate), and
//     for each action in turn: check the budgets; resolve the target
//     element through the driver (driver.Describe); ask the gate, with that
//     element; when the gate pauses the action, ask the approver and, on a
//     yes, grant an approval bound to the action's hash and ask the gate
//     again; run the allowed action (secret placeholders resolved only in
//     the copy handed to driver.Act); record everything. The batch stops
//     at the first denial or failure, after a navigate, when the URL
//     changes, and after a click (that is not the last action) when the
//     page's DOM hash changed from the observation the batch was planned
//     on: the rest is skipped and the Navigator asked again on the new
//     page. Denials and failures go back to the Navigator as feedback.
//  5. Repeat until the Navigator says done (and its last batch ran
//     entirely), says failed, errs, or a budget or loop stops the session.
//
// Every proposed action ends with a final decision record in the bundle:
// the gate's, or, when the session refuses what the gate allowed or
// paused, a copy of it with result denied and the session's own rule
// (RuleApprovalDenied, RuleApprovalTimeout, RuleApprovalUnavailable,
// RuleSecretTarget, RuleSecretUnknown, RuleActionBudget), its own time and
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
// (Session.Abort or the caller's context), duration_exceeded
// (Task.MaxDurationMs), action_limit_exceeded (an action proposed beyond
// Task.MaxActions), or failed (an error, the Navigator giving up, a loop,
// too many denials). Whatever the outcome, session.ended is emitted and the
// evidence bundle sealed.
//
// Loop detection: the same action (type and fields, ignoring id and reason)
// on the same page failing or being denied Config.LoopThreshold times, or
// succeeding that many times on an unchanged page (waits excepted), forces
// a revision of the plan; once the revisions (Config.MaxReplans) are used
// up, the next loop fails the session.
//
// Secrets: the model, the gate, the evidence and the events only ever see
// {{secret:NAME}} placeholders. Config.Secrets resolves them in the copy of
// a type action handed to driver.Act, and nowhere else, and only when the
// gate judged the target field sensitive (a password, one-time code or card
// field, or one matching a sensitive selector), so that a model cannot type
// a secret into a comment box; the evidence writer
// masks the values anyway (evidence.Options.Secrets), and the Navigator
// scrubs them from observations.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

// Defaults of a Config's zero fields and of a task without budgets.
const (
	// DefaultMaxActions bounds the executed actions of a task without
	// maxActions. The first navigation counts.
	DefaultMaxActions = 50
	// DefaultMaxDuration bounds a task without maxDurationMs.
	DefaultMaxDuration = 10 * time.Minute
	// DefaultApprovalTimeout is how long an approver may take.
	DefaultApprovalTimeout = 5 * time.Minute
	// ApprovalTTL is how long a granted approval stays valid: the gate
	// consumes it right away.
	ApprovalTTL = 2 * time.Minute
	// DefaultLoopThreshold is K of loop detection.
	DefaultLoopThreshold = 3
	// DefaultMaxReplans is how many loops are answered by revising the
	// plan before the next one fails the session.
	DefaultMaxReplans = 1
	// DefaultMaxDenials is how many denied actions a session tolerates.
	DefaultMaxDenials = 20
)

// Rules the session adds to decision records it writes itself: when an
// approval request is refused (the gate paused the action, and the
// approver, or its absence, turned the pause into a denial), and when it
// refuses to type a secret the gate allowed.
const (
	// RuleApprovalDenied: the approver refused.
	RuleApprovalDenied = "approval_denied"
	// RuleApprovalTimeout: the approver gave no answer in time.
	RuleApprovalTimeout = "approval_timeout"
	// RuleApprovalUnavailable: no approver could be asked (no approval
	// store, or the approver failed).
	RuleApprovalUnavailable = "approval_unavailable"
	// RuleSecretTarget: a secret placeholder typed into a field the gate
	// did not judge sensitive.
	RuleSecretTarget = "secret_target_not_sensitive"
	// RuleSecretUnknown: a placeholder of a secret the session does not
	// hold, or a malformed one.
	RuleSecretUnknown = "secret_unknown"
	// RuleActionBudget: an action past Task.MaxActions that the policy
	// allowed (the embedded policy denies it itself, step_budget_exceeded).
	RuleActionBudget = "session_action_budget"
)

// Config configures one session.
type Config struct {
	// Task is the task (seed 003 ComputerUseInput): the goal, the allowed
	// URLs (the first is opened first; the list is the allowlist, by
	// origin), the budgets and the hints. Required; it must be valid under
	// the input schema.
	Task contract.Input
	// SessionID identifies the session everywhere (driver, gate, evidence,
	// events); "" means driver.NewSessionID().
	SessionID string
	// Driver configures the browser session. Mode is required. The session
	// sets SessionID, AllowedOrigins (the origins of Task.URLs),
	// SensitiveSelectors (Policy's) and PolicyContext; the rest (Browser,
	// BrowserEndpoint, Headed, timeouts, observation limits) is the
	// caller's.
	Driver driver.Config
	// Gate judges every action. Required: create it once with
	// gate.New(ctx, gate.Options{Approvals: Approvals, ...}) and share it
	// between sessions (the policy is compiled once). A gate whose policy
	// failed to load denies everything, and so fails the session.
	Gate *gate.Gate
	// Approvals is the approval store Gate was created with: approvals are
	// granted into it. nil means no approval can be granted: every paused
	// action is denied.
	Approvals *gate.Approvals
	// Preset is the policy's security preset (safe, balanced, power,
	// developer); "" is the policy's default (power).
	Preset string
	// Permission overrides the preset's permission level (disabled,
	// observe, control, full); "" means the preset's.
	Permission string
	// Policy is the session's additions to the policy data: blocked
	// domains, sensitive selectors (also masked by the driver), governed
	// exceptions.
	Policy gate.SessionPolicy
	// Planner makes the plan and revises it. Required.
	Planner planner.Planner
	// Navigator proposes the actions. Required.
	Navigator navigator.Navigator
	// Approver answers approval requests; nil refuses them all
	// (PolicyApprover{Mode: ApproveDeny}).
	Approver Approver
	// ApprovalTimeout bounds one approval request; 0 means
	// DefaultApprovalTimeout. No answer in time is a refusal.
	ApprovalTimeout time.Duration
	// Secrets resolves {{secret:NAME}} placeholders in the text of type
	// actions when the driver runs them; the evidence writer masks their
	// values. nil means none.
	Secrets *secrets.Set
	// EvidenceRoot is the directory the bundle is created in (as
	// EvidenceRoot/SESSIONID); it is created if missing. Required.
	EvidenceRoot string
	// Signer, when set, signs the seal of the bundle.
	Signer evidence.Signer
	// Bus receives the stream events; nil means a new one (Session.Bus).
	Bus *Bus
	// Model names the model, for the manifest; "" when none.
	Model string
	// Version is the aegis version, for the manifest; "" means "(devel)".
	Version string
	// LoopThreshold is K of loop detection; 0 means DefaultLoopThreshold.
	LoopThreshold int
	// MaxReplans bounds the plan revisions forced by loops; 0 means
	// DefaultMaxReplans, negative none.
	MaxReplans int
	// MaxDenials fails the session when more actions than this were
	// denied; 0 means DefaultMaxDenials.
	MaxDenials int
	// MaxSteps bounds the Navigator calls; 0 means twice the action budget
	// plus 10.
	MaxSteps int
	// OnStep, when set, is called after every action the session handled
	// (executed, denied, failed, or stopped by the budget), synchronously.
	OnStep func(StepReport)
	// Clock gives the time; nil means time.Now.
	Clock func() time.Time
}

// StepReport describes one action the session handled, for progress
// lines.
type StepReport struct {
	// Index is the action's position in the action budget (executed
	// actions so far plus one) and Budget the budget.
	Index, Budget int
	// Step is the Navigator call that proposed the action (0 for the first
	// navigation).
	Step int
	// Action is the action as proposed (placeholders, never values).
	Action contract.Action
	// Target is the element the action addressed; nil when none.
	Target *contract.Element
	// Decision is the gate's final result: allowed, approved or denied;
	// "" when the action never reached the gate (target not found).
	Decision contract.DecisionResult
	// Risk is the gate's risk.
	Risk contract.RiskTag
	// Reasons are the deny rules, for a denial.
	Reasons []contract.Reason
	// Executed says the driver ran the action; OK that it succeeded.
	Executed, OK bool
	// Error is the driver's error code and message, when it failed.
	Error string
	// Duration is how long the action took in the driver.
	Duration time.Duration
}

// Timings splits a session's wall-clock time. Harness is everything but
// the model, the browser and the human: gate, evidence, validation, bus and
// bookkeeping.
type Timings struct {
	// Total is the session's wall-clock time.
	Total time.Duration
	// Agents is the time spent in the Planner and the Navigator (model
	// calls, prompt building, answer validation).
	Agents time.Duration
	// Driver is the time spent in the driver (open, observe, describe,
	// act, close).
	Driver time.Duration
	// Approval is the time spent waiting for approvers.
	Approval time.Duration
	// Gate is the time spent in gate decisions.
	Gate time.Duration
	// Evidence is the time spent writing the bundle (sealing included),
	// mostly in the background, overlapping the rest.
	Evidence time.Duration
	// EvidenceWait is the part of it the session waited for: before an
	// action runs (its decision must be in the bundle first), and at the
	// seal.
	EvidenceWait time.Duration
	// Seal is the time the seal took (fsync of every file included), a
	// cost per session rather than per step.
	Seal time.Duration
	// Bus is the time spent publishing events.
	Bus time.Duration
	// Steps counts the Navigator calls.
	Steps int
}

// Harness returns Total less Agents, Driver and Approval.
func (t Timings) Harness() time.Duration { return t.Total - t.Agents - t.Driver - t.Approval }

// EvidenceInfo says where the bundle is and whether it was sealed.
type EvidenceInfo struct {
	// Dir is the bundle directory; "" when it could not be created.
	Dir string `json:"dir,omitempty"`
	// Sealed says the seal was written.
	Sealed bool `json:"sealed"`
	// HeadHash and MerkleRoot are the seal's; Entries the ledger's length.
	HeadHash   string `json:"headHash,omitempty"`
	MerkleRoot string `json:"merkleRoot,omitempty"`
	Entries    int    `json:"entries,omitempty"`
	// Signer is the seal signature's key id, when signed.
	Signer string `json:"signer,omitempty"`
	// Error says why the bundle is not sealed.
	Error string `json:"error,omitempty"`
}

// Result is the outcome of a session.
type Result struct {
	// Output is the ComputerUseOutput (seed 003), valid under the output
	// schema. Its status is the seed's: a failed session reports
	// "aborted" there, and its Extra members say the truth: "endStatus"
	// (always: the session's status, failed included) and, for a failed
	// session, "error" {code, message}. "evidence" holds EvidenceInfo and
	// "artifacts" the extracted artifacts (values cut to 16 KiB).
	Output contract.Output
	// Status is how the session ended, failed included.
	Status contract.SessionStatus
	// Evidence says where the bundle is.
	Evidence EvidenceInfo
	// Denied counts the denied actions; Approved the approved ones.
	Denied, Approved int
	// Artifacts are the artifacts extracted, in order.
	Artifacts []contract.Artifact
	// Timings splits the session's time.
	Timings Timings
}

// Error is the error of a failed session.
type Error struct {
	// Code classifies the failure: config, evidence, driver, policy,
	// planner, navigator, navigator_gave_up, loop, denials, step_limit,
	// observe, approval.
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

func validate(cfg *Config) error {
	bad := func(format string, args ...any) error {
		return &Error{Code: "config", Msg: fmt.Sprintf(format, args...)}
	}
	if _, err := contract.Encode(schemas.KindInput, cfg.Task); err != nil {
		return &Error{Code: "config", Msg: "invalid task", Err: err}
	}
	switch {
	case cfg.Driver.Mode == "":
		return bad("Driver.Mode is required")
	case cfg.Gate == nil:
		return bad("a gate is required")
	case cfg.Planner == nil:
		return bad("a planner is required")
	case cfg.Navigator == nil:
		return bad("a navigator is required")
	case cfg.EvidenceRoot == "":
		return bad("an evidence root is required")
	}
	if cfg.SessionID != "" && !idRe.MatchString(cfg.SessionID) {
		return bad("session id %q: want letters, digits, '.', '_' and '-', at most 128, starting with a letter or digit", Sanitize(cfg.SessionID, 140))
	}
	if _, err := origins(cfg.Task.URLs); err != nil {
		return &Error{Code: "config", Msg: "task URLs", Err: err}
	}
	if cfg.Approver == nil {
		cfg.Approver = PolicyApprover{Mode: ApproveDeny}
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = DefaultApprovalTimeout
	}
	if cfg.LoopThreshold <= 0 {
		cfg.LoopThreshold = DefaultLoopThreshold
	}
	if cfg.MaxReplans == 0 {
		cfg.MaxReplans = DefaultMaxReplans
	} else if cfg.MaxReplans < 0 {
		cfg.MaxReplans = 0
	}
	if cfg.MaxDenials <= 0 {
		cfg.MaxDenials = DefaultMaxDenials
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = "(devel)"
	}
	return nil
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// origins returns the http(s) origins of the task's URLs, for the driver.
func origins(urls []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return nil, fmt.Errorf("%q is not an absolute http(s) URL without user info", raw)
		}
		o, err := driver.NormalizeOrigin(u.Scheme + "://" + u.Host)
		if err != nil {
			return nil, err
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out, nil
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

// ending is how the session ends.
type ending struct {
	status  contract.SessionStatus
	summary string
	err     *Error
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

	w   *evidence.Writer
	rec *recorder
	drv driver.Driver

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
	feedback                   []navigator.Feedback
	loops                      *loopDetector
	replans                    int
	loopHit                    string // why the last batch tripped loop detection
	artifacts                  []contract.Artifact
	shotURIs                   map[string]string // driver's image uri → bundle uri
	lastSummary                string
	t                          Timings
}

func newRun(s *Session) *run {
	cfg := &s.cfg
	r := &run{s: s, cfg: cfg, id: s.id, start: cfg.Clock(), wall: time.Now(), curURL: "about:blank", shotURIs: map[string]string{}}
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
	// The writer publishes the event on the bus once it is in
	// events.jsonl (publish), so the bus carries exactly that file.
	return r.record(func() error { return r.w.Event(ev) })
}

// publish puts an event the writer recorded on the bus. It runs on the
// recorder's goroutine.
func (r *run) publish(ev contract.StreamEvent) {
	t0 := time.Now()
	_ = r.s.bus.Publish(ev)
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

// --- the loop -----------------------------------------------------------

func (r *run) execute() ending {
	cfg := r.cfg
	root := cfg.EvidenceRoot
	if err := os.MkdirAll(root, 0o755); err != nil {
		return r.fail("evidence", "cannot create the evidence root "+root, err)
	}
	model := cfg.Model
	m := contract.Manifest{
		SessionID: r.id,
		Task:      cfg.Task,
		Driver:    cfg.Driver.Mode,
		StartedAt: stamp(r.start),
		Versions:  contract.Versions{Aegis: cfg.Version, Policy: cfg.Gate.PolicyVersion(), Model: model},
	}
	t0 := time.Now()
	w, err := evidence.Create(root, m, evidence.Options{Secrets: secretValues(cfg.Secrets), Clock: cfg.Clock, OnEvent: r.publish})
	r.t.Evidence += time.Since(t0)
	if err != nil {
		return r.fail("evidence", "cannot create the evidence bundle", err)
	}
	r.w = w
	r.rec = newRecorder()
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
	dc.PolicyContext = contract.PolicyContext{
		Classification: dc.PolicyContext.Classification, AllowVisionEscalation: dc.PolicyContext.AllowVisionEscalation,
		MaxStepBudget: r.maxActions, DecisionLogID: r.decLog,
	}
	t0 = time.Now()
	drv, err := driver.Open(r.ctx, dc)
	r.t.Driver += time.Since(t0)
	if err != nil {
		return r.errorEnding("driver", "cannot open the browser", err)
	}
	r.drv = drv

	// The first URL, gated like any other action.
	first := r.uniqueIDs([]contract.Action{{ID: "start", Type: contract.ActNavigate, Reason: "open the task's first URL", PolicyTags: []string{}, URL: cfg.Task.URLs[0]}})[0]
	out, end := r.handle(first, true, "")
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
		if !r.fresh {
			if err := r.observe(); err != nil {
				return r.errorEnding("observe", "cannot observe the page", err)
			}
		}
		r.step++
		r.t.Steps++
		feedback := r.feedback
		r.feedback = nil
		t0 := time.Now()
		resp, err := cfg.Navigator.Next(r.ctx, navigator.Request{
			Goal: cfg.Task.Goal, Plan: r.plan, Step: r.step,
			Progress: r.progress, Feedback: feedback, Observation: r.obs,
		})
		r.t.Agents += time.Since(t0)
		if e := r.modelCalls(resp.Calls); e != nil {
			return r.fail("evidence", "cannot record", e)
		}
		if err != nil {
			return r.errorEnding("navigator", "the navigator failed", err)
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

// batch runs the actions of one Navigator answer. complete says every
// action ran and succeeded.
func (r *run) batch(actions []contract.Action) (complete bool, end *ending) {
	planned := r.obs.State.DOMHash
	for i, a := range actions {
		out, end := r.handle(a, i == len(actions)-1, planned)
		if end != nil {
			return false, end
		}
		if out.outcome != navigator.OutcomeOK || out.stop || r.loopHit != "" {
			for _, rest := range actions[i+1:] {
				r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: rest, Outcome: navigator.OutcomeSkipped, Detail: "not run: " + out.why()})
			}
			return out.outcome == navigator.OutcomeOK && i == len(actions)-1, nil
		}
	}
	return true, nil
}

// outcome is how one action ended.
type outcome struct {
	outcome navigator.Outcome
	detail  string
	stop    bool   // the page changed: stop the batch
	stopWhy string // why
}

func (o outcome) why() string {
	switch {
	case o.outcome == navigator.OutcomeDenied:
		return "an earlier action of the batch was denied"
	case o.outcome != navigator.OutcomeOK:
		return "an earlier action of the batch failed"
	case o.stopWhy != "":
		return o.stopWhy
	}
	return "the batch was stopped"
}

// needsTarget reports whether the gate must judge the action on its
// resolved element.
func needsTarget(a contract.Action) bool {
	switch a.Type {
	case contract.ActClick, contract.ActType, contract.ActSelect:
		return true
	case contract.ActExtract:
		return a.Selector != ""
	}
	return false
}

// handle takes one action through describe, gate, approval, act and
// record. planned is the DOM hash the batch was planned on ("" for the
// first navigation).
func (r *run) handle(a contract.Action, last bool, planned string) (outcome, *ending) {
	cfg := r.cfg
	report := StepReport{Index: r.executed + 1, Budget: r.maxActions, Step: r.step, Action: a}
	before := r.curURL

	// Resolve the target on the page, so the gate judges what the action
	// would really touch.
	var target *contract.Element
	if needsTarget(a) {
		t0 := time.Now()
		el, err := r.drv.Describe(r.ctx, a.Selector)
		r.t.Driver += time.Since(t0)
		if err != nil {
			if e, ok := r.ctxEnding(); ok {
				return outcome{}, &e
			}
			code := driver.CodeOf(err)
			msg := driverMessage(err)
			report.Error = string(code) + ": " + msg
			r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeFailed, Detail: report.Error})
			r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackError, Code: string(code), Message: "the target could not be resolved on the page: " + msg})
			if e := r.emitError("action.target_unresolved", fmt.Sprintf("action %s (%s): %s", bound(a.ID, 128), a.Type, report.Error)); e != nil {
				end := r.fail("evidence", "cannot record", e)
				return outcome{}, &end
			}
			r.noteLoop(a, before, planned, false)
			r.report(report)
			return outcome{outcome: navigator.OutcomeFailed, detail: report.Error}, nil
		}
		target = &el
		report.Target = target
	}

	req := gate.Request{
		SessionID: r.id, StepIndex: r.executed + 1, Action: a, Target: target, ActiveURL: r.curURL,
		Session: gate.Session{
			AllowedOrigins: cfg.Task.URLs, Permission: cfg.Permission, Preset: cfg.Preset,
			MaxStepBudget: r.maxActions, DecisionLogID: r.decLog,
		},
		Policy: cfg.Policy,
		Now:    r.now(),
	}
	d, end := r.decide(req)
	if end != nil {
		return outcome{}, end
	}
	if d.Result == contract.ResultPaused {
		d, end = r.approve(req, d, target)
		if end != nil {
			return outcome{}, end
		}
	}
	if d.Allow {
		if rule, msg := r.secretVeto(a, d.DecisionRecord); rule != "" {
			if d, end = r.sessionDenial(d, rule, msg); end != nil {
				return outcome{}, end
			}
		}
	}
	report.Decision, report.Risk = d.Result, d.Risk

	overBudget := r.executed >= r.maxActions
	if d.Allow && overBudget {
		// The policy should have denied it (step_budget_exceeded); a
		// custom one did not. The session holds the budget all the same.
		if d, end = r.sessionDenial(d, RuleActionBudget, fmt.Sprintf("the action budget of %d is used up", r.maxActions)); end != nil {
			return outcome{}, end
		}
	}
	if !d.Allow || overBudget {
		if !d.Allow {
			r.denied++
		}
		report.Decision = contract.ResultDenied
		report.Reasons = d.Reasons
		reasons := make([]string, 0, len(d.Reasons))
		rules := make([]string, 0, len(d.Reasons))
		for _, rs := range d.Reasons {
			reasons = append(reasons, rs.Rule+": "+rs.Message)
			rules = append(rules, rs.Rule)
		}
		detail := "denied by the policy: " + strings.Join(rules, ", ")
		r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeDenied, Detail: detail})
		code := ""
		if len(rules) > 0 {
			code = rules[0]
		}
		r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackDenied, Code: code, Message: "the policy denied this action; do not repeat it, take another way", Reasons: reasons})
		if e := r.emitError("policy.denied", fmt.Sprintf("action %s (%s) denied: %s", bound(a.ID, 128), a.Type, strings.Join(reasons, "; "))); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return outcome{}, &end
		}
		r.report(report)
		if overBudget {
			return outcome{}, &ending{status: contract.SessionActionLimitExceeded, summary: fmt.Sprintf("stopped: the action budget of %d was used up and the navigator proposed more", r.maxActions)}
		}
		r.noteLoop(a, before, planned, false)
		return outcome{outcome: navigator.OutcomeDenied, detail: detail}, nil
	}

	// Allowed: run it, once everything before it is in the bundle.
	// Placeholders are resolved in the copy handed to the driver only.
	if e := r.flush(); e != nil {
		end := r.fail("evidence", "cannot record the decision", e)
		return outcome{}, &end
	}
	t0 := time.Now()
	res, actErr, secretErr := r.act(a)
	dur := time.Since(t0)
	r.t.Driver += dur
	if secretErr != nil {
		msg := secretErr.Error()
		report.Error = "secret: " + msg
		r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeFailed, Detail: report.Error})
		r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackError, Code: "secret_refused", Message: msg})
		if e := r.emitError("action.secret_refused", fmt.Sprintf("action %s: %s", bound(a.ID, 128), msg)); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return outcome{}, &end
		}
		r.noteLoop(a, before, planned, false)
		r.report(report)
		return outcome{outcome: navigator.OutcomeFailed, detail: report.Error}, nil
	}
	res.RiskTag = d.Risk
	r.executed++
	r.fresh = false
	report.Executed, report.OK, report.Duration = true, res.OK, dur
	rec := a
	if rec.Type == contract.ActType && rec.Redact {
		// Redacted here, not by the writer: the writer would mask every
		// later occurrence of the text, a text the model chose. A model
		// typing "allowed" or a word of the goal with redact true would
		// then corrupt later records or make the manifest at the seal
		// differ from the one at the start: a bundle that does not verify.
		// Secret values are masked by name all the same (Options.Secrets).
		rec.Text = evidence.RedactedText
	}
	if e := r.record(func() error { return r.w.Action(rec, res) }); e != nil {
		end := r.fail("evidence", "cannot record the action", e)
		return outcome{}, &end
	}
	if res.URL != "" {
		r.curURL = res.URL
	}
	evURL := r.curURL
	if e := r.emit(contract.StreamEvent{
		Type: contract.EventAction, ActionID: bound(a.ID, 128), ActionType: a.Type, RiskLevel: d.Risk,
		URL: &evURL, Summary: actionSummary(a, target, res),
	}); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return outcome{}, &end
	}
	if a.Type == contract.ActExtract {
		if e := r.takeArtifacts(); e != nil {
			end := r.fail("evidence", "cannot record an artifact", e)
			return outcome{}, &end
		}
	}
	if !res.OK {
		if e, ok := r.ctxEnding(); ok {
			r.report(report)
			return outcome{}, &e
		}
		code, msg := contract.CodeInternal, "the driver failed"
		if res.Error != nil {
			code, msg = res.Error.Code, res.Error.Message
		} else if actErr != nil {
			msg = driverMessage(actErr)
		}
		report.Error = string(code) + ": " + msg
		r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeFailed, Detail: report.Error})
		r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackError, Code: string(code), Message: msg})
		if e := r.emitError("action."+string(code), fmt.Sprintf("action %s (%s) failed: %s", bound(a.ID, 128), a.Type, msg)); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return outcome{}, &end
		}
		r.noteLoop(a, before, planned, false)
		r.report(report)
		return outcome{outcome: navigator.OutcomeFailed, detail: report.Error}, nil
	}
	r.report(report)

	out := outcome{outcome: navigator.OutcomeOK, detail: okDetail(a, res, r.curURL)}
	switch {
	case a.Type == contract.ActNavigate:
		out.stop, out.stopWhy = true, "a navigation loaded a new page"
	case r.curURL != before:
		out.stop, out.stopWhy = true, "the URL changed"
	case a.Type == contract.ActClick && !last:
		if err := r.observe(); err != nil {
			return outcome{}, ptr(r.errorEnding("observe", "cannot observe the page", err))
		}
		if r.obs.State.DOMHash != planned || r.obs.State.ActiveURL != before {
			out.stop, out.stopWhy = true, "the page changed"
		}
	}
	r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeOK, Detail: out.detail})
	r.noteLoop(a, before, planned, true)
	return out, nil
}

func ptr[T any](v T) *T { return &v }

func hasRule(rs []contract.Reason, rule string) bool {
	for _, r := range rs {
		if r.Rule == rule {
			return true
		}
	}
	return false
}

// act runs an allowed action. The text of a type action has its secret
// placeholders resolved in the copy handed to the driver, which lives only
// in this call (secretVeto has checked them before the decision was
// final). A placeholder that does not resolve is secretErr, and nothing
// runs.
func (r *run) act(a contract.Action) (res contract.ToolResult, actErr, secretErr error) {
	run := a
	if a.Type == contract.ActType && strings.Contains(a.Text, secrets.Prefix) {
		text, err := r.cfg.Secrets.Resolve(a.Text)
		if err != nil {
			return contract.ToolResult{}, nil, err
		}
		run.Text = text
	}
	res, actErr = r.drv.Act(r.ctx, run)
	return res, actErr, nil
}

// decide asks the gate and records the decision.
func (r *run) decide(req gate.Request) (gate.Decision, *ending) {
	t0 := time.Now()
	d := r.cfg.Gate.Decide(r.ctx, req)
	r.t.Gate += time.Since(t0)
	if e := r.record(func() error { return r.w.Decision(d.DecisionRecord) }); e != nil {
		end := r.fail("evidence", "cannot record the decision", e)
		return d, &end
	}
	if d.FailClosed {
		if ce, ok := r.ctxEnding(); ok {
			return d, &ce
		}
		if e := r.emitError("gate.fail_closed", "the policy could not answer, so the action was denied: "+d.Error); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return d, &end
		}
	}
	return d, nil
}

// approve asks the approver about a paused action. On a yes it grants an
// approval bound to the action's hash and asks the gate again; on a no, a
// timeout or a failure it records the pause as a denial.
func (r *run) approve(req gate.Request, paused gate.Decision, target *contract.Element) (gate.Decision, *ending) {
	a := req.Action
	evURL := req.ActiveURL
	reasons := append(append([]contract.Reason(nil), paused.ApprovalReasons...), paused.RiskReasons...)
	var why []string
	for _, rs := range reasons {
		why = append(why, rs.Rule)
	}
	if e := r.emit(contract.StreamEvent{
		Type: contract.EventApprovalRequired, ActionID: bound(a.ID, 128), ActionType: a.Type, URL: &evURL,
		Summary: bound(fmt.Sprintf("%s (risk %s: %s)", DescribeAction(a, target), paused.Risk, strings.Join(why, ", ")), 2000),
	}); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return paused, &end
	}
	rule, msg := RuleApprovalUnavailable, "no approval store: nothing can be approved"
	var ans ApprovalAnswer
	if r.cfg.Approvals != nil {
		actx, cancel := context.WithTimeout(r.ctx, r.cfg.ApprovalTimeout)
		t0 := time.Now()
		var err error
		ans, err = r.cfg.Approver.Approve(actx, ApprovalRequest{
			SessionID: r.id, Action: a, Target: target, URL: req.ActiveURL, Risk: paused.Risk,
			Reasons: reasons, ActionHash: paused.ActionHash,
		})
		r.t.Approval += time.Since(t0)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if e, ok := r.ctxEnding(); ok {
			return paused, &e
		}
		switch {
		case timedOut && !ans.Approved:
			rule, msg = RuleApprovalTimeout, fmt.Sprintf("no approval within %v: denied", r.cfg.ApprovalTimeout)
		case err != nil:
			rule, msg = RuleApprovalUnavailable, "the approver failed: "+err.Error()
			ans.Approved = false
		case !ans.Approved:
			rule, msg = RuleApprovalDenied, "the approver "+Sanitize(ans.Approver, 256)+" refused the action"
		}
	}
	if ans.Approved {
		approver := ans.Approver
		if approver == "" {
			approver = "unnamed approver"
		}
		grant, err := r.cfg.Approvals.Grant(paused.ActionHash, Sanitize(approver, 256), r.now(), ApprovalTTL)
		if err != nil {
			rule, msg = RuleApprovalUnavailable, "the approval could not be granted: "+err.Error()
		} else {
			req.ApprovalID = grant.ID
			req.Now = r.now()
			d, end := r.decide(req)
			if end != nil {
				return d, end
			}
			decision := contract.ApprovalDeny
			if d.Allow {
				decision = contract.ApprovalApprove
				r.approved++
			}
			if e := r.emit(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: decision}); e != nil {
				end := r.fail("evidence", "cannot record", e)
				return d, &end
			}
			return d, nil
		}
	}
	// The pause becomes a denial, recorded as a decision of its own so that
	// decisions.jsonl ends every proposed action with its final result.
	d, end := r.sessionDenial(paused, rule, msg)
	if end != nil {
		return d, end
	}
	if e := r.emit(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: contract.ApprovalDeny}); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return d, &end
	}
	return d, nil
}

// sessionDenial records a denial the session adds to a gate decision (an
// approval refused, a secret refused): a copy of the decision with result
// denied, the session's rule as its reason, its own time and its own
// decision id (gate.DecisionID over the same fields).
func (r *run) sessionDenial(g gate.Decision, rule, msg string) (gate.Decision, *ending) {
	now := r.now().UTC()
	d := g
	d.Allow = false
	d.Result = contract.ResultDenied
	d.Reasons = []contract.Reason{{Rule: rule, Message: bound(msg, 1000)}}
	d.EvaluatedAt = now.Format(time.RFC3339Nano)
	d.DecisionID = gate.DecisionID(d.PolicyVersion, d.ActionHash, d.StepIndex, now)
	d.DurationUs = 0
	d.Approval = nil
	d.FailClosed, d.Error, d.Err = false, "", nil
	if e := r.record(func() error { return r.w.Decision(d.DecisionRecord) }); e != nil {
		end := r.fail("evidence", "cannot record the decision", e)
		return d, &end
	}
	return d, nil
}

// secretVeto returns why the session refuses an action the gate allowed:
// a type action whose text holds a secret placeholder may only type into a
// field the gate judged sensitive (risk reason sensitive_field), and only
// secrets the session holds.
func (r *run) secretVeto(a contract.Action, d contract.DecisionRecord) (rule, msg string) {
	if a.Type != contract.ActType || !strings.Contains(a.Text, secrets.Prefix) {
		return "", ""
	}
	if !hasRule(d.RiskReasons, "sensitive_field") {
		return RuleSecretTarget, "a secret may only be typed into a field the policy judges sensitive (a password, one-time code or card field, or one matching a sensitive selector); this field is not"
	}
	if err := secrets.Check(a.Text); err != nil {
		return RuleSecretUnknown, err.Error()
	}
	for _, n := range secrets.Find(a.Text) {
		if !r.cfg.Secrets.Has(n) {
			return RuleSecretUnknown, fmt.Sprintf("no secret named %s in this session", n)
		}
	}
	return "", ""
}

// observe observes the page (retrying once, for a page in the middle of a
// navigation) and records the observation.
func (r *run) observe() error {
	t0 := time.Now()
	obs, err := r.drv.Observe(r.ctx, driver.ObserveOptions{})
	if err != nil && r.ctx.Err() == nil {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.ctx.Done():
		}
		obs, err = r.drv.Observe(r.ctx, driver.ObserveOptions{})
	}
	r.t.Driver += time.Since(t0)
	if err != nil {
		return err
	}
	for i, a := range obs.ExtractedArtifacts {
		if u, ok := r.shotURIs[a.Value]; ok && a.Type == contract.ArtifactScreenshot {
			obs.ExtractedArtifacts[i].Value = u
		}
	}
	seq := r.obsSeq
	if err := r.record(func() error { return r.w.Observation(seq, obs) }); err != nil {
		return err
	}
	r.obsSeq++
	r.obs, r.fresh = obs, true
	if obs.State.ActiveURL != "" {
		r.curURL = obs.State.ActiveURL
	}
	return nil
}

// takeArtifacts records what an extract action produced: images first
// (under their own id), then the artifact records.
func (r *run) takeArtifacts() error {
	t0 := time.Now()
	exs := r.drv.TakeArtifacts()
	r.t.Driver += time.Since(t0)
	for _, ex := range exs {
		art := ex.Artifact
		if ex.Image != nil {
			// The image's record is needed now: write it in line.
			if err := r.flush(); err != nil {
				return err
			}
			id := art.ID + "-image"
			t0 := time.Now()
			rec, err := r.w.Image(id, ex.Data, evidence.ImageMeta{SourceURL: ex.Image.SourceURL, ActionID: ex.Image.ActionID})
			r.t.EvidenceWait += time.Since(t0)
			if err != nil && !errors.Is(err, evidence.ErrQuarantined) {
				return err
			}
			if rec.URI == "" {
				continue // quarantined: the writer recorded why
			}
			r.shotURIs[art.Value] = rec.URI
			art.Value, art.Hash = rec.URI, ""
			ev := contract.StreamEvent{Type: contract.EventScreenshot, URL: &rec.URI}
			if rec.Width > 0 && rec.Height > 0 {
				w, h := rec.Width, rec.Height
				ev.Width, ev.Height = &w, &h
			}
			if err := r.emit(ev); err != nil {
				return err
			}
		}
		if err := r.record(func() error { return r.w.Artifact(art) }); err != nil {
			return err
		}
		r.artifacts = append(r.artifacts, art)
	}
	return nil
}

func (r *run) report(rep StepReport) {
	if r.cfg.OnStep != nil {
		r.cfg.OnStep(rep)
	}
}

// noteLoop feeds loop detection with one outcome.
func (r *run) noteLoop(a contract.Action, url, planned string, ok bool) {
	if why := r.loops.note(a, url, planned, ok); why != "" && r.loopHit == "" {
		r.loopHit = why
	}
}

// finish ends the session: closes the driver, emits session.ended, seals
// the bundle, closes the bus, and builds the result.
func (r *run) finish(end ending) (Result, error) {
	if end.status == "" {
		end = r.fail("internal", "the session ended without a status", nil)
	}
	if end.summary == "" {
		end.summary = r.lastSummary
	}
	if end.summary == "" {
		end.summary = string(end.status)
	}
	bg := context.WithoutCancel(r.ctx)
	if r.drv != nil && !r.fresh && r.ctx.Err() == nil && r.rec != nil {
		// The page as the session left it, and the records of what was
		// extracted last, belong in the evidence.
		octx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		saved := r.ctx
		r.ctx = octx
		err := r.observe()
		r.ctx = saved
		cancel()
		if err != nil && end.err == nil && end.status == contract.SessionCompleted {
			_ = r.emitError("session.final_observation", "the final page could not be observed: "+bound(err.Error(), 500))
		}
	}
	if r.drv != nil {
		cctx, cancel := context.WithTimeout(bg, 15*time.Second)
		t0 := time.Now()
		_ = r.drv.Close(cctx)
		r.t.Driver += time.Since(t0)
		cancel()
	}
	res := Result{Status: end.status, Denied: r.denied, Approved: r.approved, Artifacts: r.artifacts}
	if r.rec != nil {
		t0 := time.Now()
		spent, err := r.rec.stop()
		r.t.EvidenceWait += time.Since(t0)
		r.t.Evidence += spent
		r.rec = nil // from here on, records are written in line
		if err != nil && end.err == nil {
			end = r.fail("evidence", "the evidence bundle cannot be written", err)
		}
	}
	if r.w != nil {
		if end.err != nil {
			_ = r.emitError("session."+end.err.Code, end.err.Error())
		}
		_ = r.emit(contract.StreamEvent{Type: contract.EventSessionEnded, Status: end.status, Summary: bound(end.summary, 4000)})
		res.Evidence.Dir = r.w.Dir()
		sctx, cancel := context.WithTimeout(bg, 60*time.Second)
		t0 := time.Now()
		m, err := r.w.Seal(sctx, end.status, r.now(), r.cfg.Signer)
		r.t.Seal = time.Since(t0)
		r.t.Evidence += r.t.Seal
		r.t.EvidenceWait += r.t.Seal
		cancel()
		if err != nil {
			res.Evidence.Error = err.Error()
		} else if m.Seal != nil {
			res.Evidence.Sealed = true
			res.Evidence.HeadHash, res.Evidence.MerkleRoot, res.Evidence.Entries = m.Seal.HeadHash, m.Seal.MerkleRoot, m.Seal.Entries
			res.Evidence.Signer = m.Signer
		}
	} else if end.err != nil {
		res.Evidence.Error = end.err.Error()
	}
	r.s.bus.Close()
	r.t.Bus = time.Duration(r.busTime.Load())
	r.t.Total = time.Since(r.wall)
	res.Timings = r.t
	res.Output = r.output(end, res)
	if end.err != nil {
		return res, end.err
	}
	return res, nil
}

// maxArtifactValue bounds an artifact's value in the output.
const maxArtifactValue = 16 << 10

func (r *run) output(end ending, res Result) contract.Output {
	wire := end.status
	if wire == contract.SessionFailed {
		wire = contract.SessionAborted
	}
	out := contract.Output{
		ComputerUseSessionID: r.id,
		Status:               wire,
		Summary:              end.summary,
		ActionsExecuted:      r.executed,
		DurationMs:           int(res.Timings.Total.Milliseconds()),
	}
	if r.curURL != "" && r.curURL != "about:blank" {
		u := r.curURL
		out.LastURL = &u
	}
	out.Evidence, _ = json.Marshal(res.Evidence)
	out.Extra = map[string]json.RawMessage{}
	out.Extra["endStatus"], _ = json.Marshal(end.status)
	if end.err != nil {
		out.Extra["error"], _ = json.Marshal(map[string]string{"code": end.err.Code, "message": end.err.Error()})
	}
	type artOut struct {
		ID        string                `json:"id"`
		Type      contract.ArtifactType `json:"type"`
		SourceURL string                `json:"sourceUrl"`
		Selector  string                `json:"sourceSelector,omitempty"`
		Value     string                `json:"value"`
		Truncated bool                  `json:"truncated,omitempty"`
	}
	arts := []artOut{}
	for _, a := range r.artifacts {
		v := bound(a.Value, maxArtifactValue)
		arts = append(arts, artOut{ID: a.ID, Type: a.Type, SourceURL: a.SourceURL, Selector: a.SourceSelector, Value: v, Truncated: v != a.Value})
	}
	out.Extra["artifacts"], _ = json.Marshal(arts)
	out.Extra["denied"], _ = json.Marshal(r.denied)
	out.Extra["approved"], _ = json.Marshal(r.approved)
	return out
}

// --- helpers ------------------------------------------------------------

// bound cuts s to at most n bytes on a rune boundary, marking the cut.
func bound(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// driverMessage returns a driver error's message without its code.
func driverMessage(err error) string {
	var de *driver.Error
	if errors.As(err, &de) {
		return bound(de.ToolError().Message, 1000)
	}
	return bound(err.Error(), 1000)
}

// actionSummary says what an executed action did, for the action event.
func actionSummary(a contract.Action, target *contract.Element, res contract.ToolResult) string {
	s := DescribeAction(a, target)
	if res.OK {
		s += ": ok"
	} else if res.Error != nil {
		s += ": failed (" + string(res.Error.Code) + ")"
	}
	return bound(s, 2000)
}

// okDetail is the progress detail of a successful action.
func okDetail(a contract.Action, res contract.ToolResult, url string) string {
	d := "now on " + bound(url, 500)
	if len(res.ArtifactIDs) > 0 {
		d += "; extracted " + strings.Join(res.ArtifactIDs, ", ") + " (in the next observation's extractedArtifacts)"
	}
	return d
}
