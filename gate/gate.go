// Package gate decides, for every browser action a Navigator proposes,
// whether it may run: it evaluates the aegis OPA policy (package policy, or a
// policy given with --policy or served by a remote OPA) on the action, the
// element the driver resolved for it, and the session's facts, and returns
// a decision record (seed 001 section 5).
//
// The gate is the security boundary of aegis: the model that proposed the
// action and the page it runs on are assumed hostile. So the gate fails
// closed: a policy that does not load or compile, an evaluation error, a
// timeout, an undefined or mistyped result, or an unreachable remote OPA
// all yield a deny with the reason, and an audit event. The only way to an
// allow is a policy decision object whose every field has the expected
// type, with allow true and no deny reasons, that also passes the Go-side
// floor (well-formed http(s) navigation targets, bounded target elements),
// and, when the action requires approval, a valid approval bound to the
// action's hash.
//
// Hosts are parsed and normalized in Go (NormalizeURL) and handed to the
// policy, which matches on normalized hosts, never on raw URL strings. The
// words of the element (its caption, label, name, id) are normalized too
// (Skeleton: compatibility forms, invisible characters and look-alike
// letters of other scripts folded) before the policy matches risk and
// sensitivity words on them; the model's own words may raise risk, never
// lower it, and make no field sensitive.
//
// Secret placeholders ({{secret:NAME}}) anywhere in the action are listed
// for the policy, with the origins each secret of the session is bound to
// (Session.Secrets); the policy lets a secret be typed only into a field
// sensitive by the element's own facts on one of those origins, and denies
// every other use of a placeholder.
//
// A vision escalation (an extract screenshot action with Vision true: show
// the masked screenshot to the model) is decided by the session's data
// classification (Session.Classification) and the policy data, never by
// the model or the page (rule vision_not_allowed); the Go floor refuses
// vision on any other action.
//
// Besides actions, the gate judges their effects (Request.Effect): a
// navigation or state-changing request the browser reported an action
// caused, judged on its kind, method, origin, path and field names, with
// risk that follows the effect whatever the action's words said. An
// approval of an effect is bound to the action and the effect together.
package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/schemas"
)

// DefaultTimeout bounds one policy evaluation when Options.Timeout is zero.
// A decision takes well under a millisecond; the bound is generous so that
// a machine under heavy load (CI with the race detector) never fails closed
// on a healthy policy, while a policy that loops is still cut off and
// denied.
const DefaultTimeout = 2 * time.Second

// Rules the gate itself adds to a decision's reasons, beside the policy's.
const (
	// RuleFailClosed: the policy could not answer; the gate denied.
	RuleFailClosed = "fail_closed"
	// RuleApprovalInvalid: an approval was presented that does not hold
	// (unknown, used, expired, or bound to another action).
	RuleApprovalInvalid = "approval_invalid"
	// RuleTargetInvalid: the target element breaks the contract's bounds.
	RuleTargetInvalid = "target_invalid"
	// RuleURLFloor: the policy allowed a navigation the Go floor refuses (a
	// URL that is not a well-formed http(s) URL without userinfo).
	RuleURLFloor = "url_floor"
	// RuleActionInvalid: the action breaks the contract's bounds (a field
	// over its length, invalid UTF-8, a missing selector), whatever the
	// policy says.
	RuleActionInvalid = "action_invalid"
	// RuleActionUnrecorded: the decision could not record the action or
	// the active URL it judged (an action that breaks its schema, an
	// active URL over 2048 characters), so the evidence could not check
	// that what runs is what was decided: an action the policy would let
	// run (or pause) is denied instead (evidence/FORMAT.md, section 8,
	// rule 15).
	RuleActionUnrecorded = "action_unrecorded"
)

// Options configure a Gate.
type Options struct {
	// PolicyPath is a directory in OPA's bundle layout (.rego files and
	// data.json / data.yaml documents) or an OPA bundle .tar.gz. It replaces
	// the embedded policy entirely. "" means the embedded policy.
	PolicyPath string
	// PolicyFS is a bundle laid out in a file system; it takes precedence
	// over PolicyPath (tests use it).
	PolicyFS fs.FS
	// OPAURL is the base URL of a running OPA server (http://127.0.0.1:8181)
	// to evaluate against instead of the embedded engine, through its data
	// API. Plain http is accepted for loopback hosts only.
	OPAURL string
	// HTTPClient is used for OPAURL; nil means a client without proxies.
	HTTPClient *http.Client
	// Timeout bounds one evaluation; 0 means DefaultTimeout.
	Timeout time.Duration
	// Clock gives the decision time when a Request has none; nil means
	// time.Now.
	Clock func() time.Time
	// Audit receives an event for every fail-closed decision. It is called
	// synchronously and must not block.
	Audit func(Event)
	// Approvals is the store approvals are consumed from; nil means no
	// approval can be presented (high-risk actions pause forever).
	Approvals *Approvals
}

// Event is an audit event: something the evidence writer must record
// besides the decision itself.
type Event struct {
	// Kind is "fail_closed".
	Kind string `json:"kind"`
	// Reason says what failed.
	Reason string `json:"reason"`
	// Time is when it happened (the decision's pinned time).
	Time time.Time `json:"time"`
	// SessionID, DecisionID and ActionHash tie the event to its decision.
	SessionID  string `json:"sessionId,omitempty"`
	DecisionID string `json:"decisionId,omitempty"`
	ActionHash string `json:"actionHash,omitempty"`
	// Err is the underlying error.
	Err error `json:"-"`
}

// EventFailClosed is the Kind of the event a fail-closed decision emits.
const EventFailClosed = "fail_closed"

// Decision is the gate's answer about one action: the decision record, and
// for a fail-closed decision the error behind it. d.Allow is the only thing
// a caller needs to look at before running the action.
type Decision struct {
	contract.DecisionRecord
	// Err is the error behind a fail-closed decision; nil otherwise.
	Err error `json:"-"`
}

// Gate evaluates the policy for every action. It is safe for concurrent use
// by many goroutines; the policy is compiled once, in New.
type Gate struct {
	ev       evaluator
	loadErr  error
	version  string
	source   string
	timeout  time.Duration
	clock    func() time.Time
	audit    func(Event)
	approval *Approvals
	redact   []byte // the redaction key of ActionHash, never written anywhere
}

// New loads and compiles the policy the options name, once. When the policy
// cannot be loaded or compiled (or a remote OPA cannot be reached), New
// returns the error, a *PolicyLoadError, together with a Gate that denies
// every action with that reason: a caller that ignores the error still
// fails closed.
func New(ctx context.Context, opts Options) (*Gate, error) {
	g := &Gate{
		timeout:  opts.Timeout,
		clock:    opts.Clock,
		audit:    opts.Audit,
		approval: opts.Approvals,
		version:  emptyVersion,
		redact:   newRedactKey(),
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.clock == nil {
		g.clock = time.Now
	}
	var err error
	if opts.OPAURL != "" {
		g.source = SourceRemote
		g.ev, g.version, err = newRemote(ctx, opts.OPAURL, opts.HTTPClient, g.timeout)
	} else {
		g.ev, g.version, g.source, err = newLocal(ctx, opts)
	}
	if err != nil {
		g.ev, g.loadErr = nil, err
		if g.version == "" {
			g.version = emptyVersion
		}
		return g, err
	}
	return g, nil
}

// emptyVersion is the version of no policy at all: SHA-256 of nothing.
const emptyVersion = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// PolicyVersion returns the SHA-256 of the policy the gate evaluates.
func (g *Gate) PolicyVersion() string {
	if g == nil {
		return emptyVersion
	}
	return g.version
}

// Err returns the error that keeps the gate from evaluating (it then denies
// everything), or nil.
func (g *Gate) Err() error {
	if g == nil {
		return errors.New("gate: nil Gate")
	}
	return g.loadErr
}

// Decide judges one action. It never returns an allow together with an
// error: any failure becomes a deny decision (FailClosed, with the reason in
// Error and Reasons) and an audit event. Decide is safe for concurrent use;
// a nil Gate denies everything.
func (g *Gate) Decide(ctx context.Context, req Request) (d Decision) {
	start := time.Now()
	now := req.Now
	if now.IsZero() {
		if g != nil {
			now = g.clock()
		} else {
			now = time.Now()
		}
	}
	now = now.UTC()
	var hash string
	defer func() {
		if r := recover(); r != nil {
			d = g.failClosed(&req, now, hash, fmt.Errorf("gate: panic during decision: %v", r))
		}
		d.DurationUs = time.Since(start).Microseconds()
	}()
	action := actionhash.Action(req.Action)
	target := actionhash.Element(req.Target)
	effect := actionhash.Effect(req.Effect)
	hash = g.actionHash(req.SessionID, req.ActiveURL, action, target, effect)
	d = g.skeleton(&req, now, hash, action)
	if g == nil {
		return g.failClosed(&req, now, hash, errors.New("gate: nil Gate"))
	}
	if g.loadErr != nil || g.ev == nil {
		err := g.loadErr
		if err == nil {
			err = errors.New("gate: no policy loaded")
		}
		return g.failClosed(&req, now, hash, err)
	}

	input := buildInput(&req, now, action, target, effect)
	if err := ctx.Err(); err != nil {
		return g.failClosed(&req, now, hash, fmt.Errorf("gate: %w", err))
	}
	ectx, cancel := context.WithTimeout(ctx, g.timeout)
	raw, err := g.ev.eval(ectx, input, now)
	ctxErr := ectx.Err()
	cancel()
	switch {
	case ctxErr != nil:
		// Canceled or past the deadline: whatever the evaluation returned
		// in the meantime, it is not an answer to rely on.
		if err == nil {
			err = errors.New("evaluation finished after the context ended")
		}
		return g.failClosed(&req, now, hash, fmt.Errorf("gate: evaluate: policy evaluation stopped after %v: %w (%v)", time.Since(start).Round(time.Microsecond), ctxErr, err))
	case err != nil:
		return g.failClosed(&req, now, hash, fmt.Errorf("gate: evaluate: %w", err))
	}
	pd, err := parseDecision(raw)
	if err != nil {
		return g.failClosed(&req, now, hash, fmt.Errorf("gate: policy result: %w", err))
	}

	r := &d.DecisionRecord
	r.ActionName = pd.actionName
	r.Risk = pd.risk
	r.RiskReasons = pd.riskReasons
	r.RequiresApproval = pd.requiresApproval
	r.ApprovalReasons = pd.approvalReasons
	r.Waived = pd.waived
	r.Exceptions = pd.exceptions
	if isPermissionLevel(pd.permission) {
		r.Permission = pd.permission
	}
	reasons := pd.deny
	reasons = append(reasons, floor(&req)...)
	if len(reasons) == 0 && !req.Probe && (r.Action == nil || r.ActiveURL == nil) {
		reasons = append(reasons, contract.Reason{Rule: RuleActionUnrecorded, Message: fmt.Sprintf("the decision cannot record the action or the active URL it judged (an action that breaks its schema, or an active URL over %d characters), so what runs could not be checked against it", maxRecordedURL)})
	}
	if len(reasons) > 0 {
		return g.deny(d, reasons)
	}
	if !pd.requiresApproval {
		r.Allow, r.Result = true, contract.ResultAllowed
		return d
	}
	if req.ApprovalID == "" {
		r.Result = contract.ResultPaused
		return d
	}
	if g.approval == nil {
		return g.deny(d, []contract.Reason{{Rule: RuleApprovalInvalid, Message: "an approval was presented but the gate has no approval store"}})
	}
	ap, err := g.approval.Consume(req.ApprovalID, hash, now)
	if ap.ID != "" {
		r.Approval = ap.ref()
	}
	if err != nil {
		return g.deny(d, []contract.Reason{{Rule: RuleApprovalInvalid, Message: err.Error()}})
	}
	r.Allow, r.Result = true, contract.ResultApproved
	return d
}

// maxRecordedURL is the longest active URL a decision records
// (decision-record activeUrl), in characters.
const maxRecordedURL = 2048

// recordedAction returns the action as a decision records it: nil for one
// that breaks the browser-action schema (it is denied, and not recorded,
// as an invalid target is not), the text of a type action with Redact
// true replaced by contract.RedactedText (the record never holds it; the
// action hash covers it keyed, see ActionHash).
//
// m is actionhash.Action(a), which Decide builds once for the hash as well.
func recordedAction(a contract.Action, m map[string]any) *contract.Action {
	if schemas.ValidateValue(schemas.KindAction, m) != nil { // actionhash.Action is the record of a valid action
		return nil
	}
	a = a.Recorded()
	return &a
}

// skeleton fills the fields known before evaluation. action is
// actionhash.Action(req.Action); nil builds it.
func (g *Gate) skeleton(req *Request, now time.Time, hash string, action map[string]any) Decision {
	if action == nil {
		action = actionhash.Action(req.Action)
	}
	var d Decision
	r := &d.DecisionRecord
	r.PolicyVersion = g.PolicyVersion()
	r.PolicySource = SourceEmbedded
	if g != nil && g.source != "" {
		r.PolicySource = g.source
	}
	r.DecisionID = DecisionID(r.PolicyVersion, hash, req.StepIndex, now)
	if contract.IsID(req.SessionID) {
		r.SessionID = req.SessionID
	}
	r.StepIndex = req.StepIndex
	if contract.IsID(req.Action.ID) {
		r.ActionID = req.Action.ID
	}
	r.ActionHash = hash
	if r.Action = recordedAction(req.Action, action); r.Action != nil { // the action judged, which the executed action line must equal (evidence verify)
		if utf8.RuneCountInString(req.ActiveURL) <= maxRecordedURL {
			u := req.ActiveURL
			r.ActiveURL = &u
		}
	}
	if req.Target != nil && req.Target.Validate() == nil { // an invalid one is denied (target_invalid), not recorded
		r.Target = req.Target // the element judged, recorded so that the decision can be judged again
	}
	if req.Effect != nil && checkEffect(req.Effect) == nil { // likewise: an invalid one is denied (effect_invalid), not recorded
		r.Effect = req.Effect
	}
	r.ActionName = "browser.unknown"
	if req.Action.Type.Valid() {
		r.ActionName = req.Action.PolicyName()
	}
	if contract.IsID(req.Session.DecisionLogID) {
		r.DecisionLogID = req.Session.DecisionLogID
	}
	r.Result = contract.ResultDenied
	r.Risk = contract.RiskHigh
	r.EvaluatedAt = now.Format(time.RFC3339Nano)
	return d
}

// deny turns d into a denial for the reasons, sorted.
func (g *Gate) deny(d Decision, reasons []contract.Reason) Decision {
	sortReasons(reasons)
	if len(reasons) > maxReasons {
		reasons = reasons[:maxReasons]
	}
	d.Allow, d.Result, d.Reasons = false, contract.ResultDenied, reasons
	return d
}

// failClosed builds the deny of a policy that could not answer, and emits
// the audit event.
func (g *Gate) failClosed(req *Request, now time.Time, hash string, err error) Decision {
	d := g.skeleton(req, now, hash, nil)
	msg := text.CutRunes(err.Error(), maxErrorLen)
	d.FailClosed, d.Error, d.Err = true, msg, err
	d.Reasons = []contract.Reason{{Rule: RuleFailClosed, Message: text.CutRunes("the policy could not answer, so the action is denied: "+msg, maxMessageLen)}}
	if g != nil && g.audit != nil {
		func() {
			// A panicking audit sink must not turn a deny into a crash.
			defer func() { _ = recover() }()
			g.audit(Event{
				Kind: EventFailClosed, Reason: msg, Time: now, Err: err,
				SessionID: req.SessionID, DecisionID: d.DecisionID, ActionHash: hash,
			})
		}()
	}
	return d
}
