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
// policy, which matches on normalized hosts, never on raw URL strings.
package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/aegis-run/aegis/contract"
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

// evaluator answers the policy query for one input.
type evaluator interface {
	eval(ctx context.Context, input *policyInput, now time.Time) (ast.Value, error)
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
	sessions sessionCache
	urls     urlCache
	redact   []byte // the redaction key of ActionHash, never written anywhere
}

// errUndefined is the error of an evaluation that produced no decision.
var errUndefined = errors.New("the policy produced no decision (undefined result)")

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
		g.ev, g.version, g.source, err = newLocal(ctx, opts, Query)
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

// deniedBuiltins are builtins a gate policy may not call: they reach the
// network or are not reproducible, and a decision must be recomputable from
// its record.
var deniedBuiltins = map[string]bool{
	"http.send": true, "net.lookup_ip_addr": true, "rand.intn": true,
	"uuid.rfc4122": true, "opa.runtime": true, "trace": true, "print": true,
}

func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0]
	for _, b := range c.Builtins {
		if !deniedBuiltins[b.Name] {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	return c
}

// PreludeQuery is the rule the gate evaluates once per session and page,
// when the policy defines it: what the decision needs that depends only on
// the session's facts and its active page (see rego/README.md). The gate
// memoizes the result and hands it to every decision of that session and
// page as input.derived.session_prelude; where it is undefined, nothing is
// handed.
const PreludeQuery = "data.aegis.browser.session_prelude"

// preludeTime is the clock the prelude sees: none. A prelude is memoized
// across decisions, so it must not depend on the time; pinning the clock
// keeps one that does deterministic.
var preludeTime = time.Unix(0, 0).UTC()

// localEval evaluates a query prepared once, and the policy's prelude,
// prepared once too and memoized per session and page.
type localEval struct {
	pq      rego.PreparedEvalQuery
	prelude rego.PreparedEvalQuery

	preludes capped[preludeKey, *ast.Term] // a nil term: the prelude is undefined
}

// preludeKey identifies the input of a prelude: the session facts and the
// state (session id, active URL, step budget, decision log id) it is built
// from, and nothing else (see policyInput.preludeValue).
type preludeKey struct {
	session sessionKey
	state   stateKey
}

// maxPreludeCache bounds the memoized preludes of one evaluator; the cache
// is emptied when full.
const maxPreludeCache = 1024

func newLocal(ctx context.Context, opts Options, query string) (evaluator, string, string, error) {
	files, err := readPolicy(opts)
	if err != nil {
		return nil, "", "", err
	}
	version := files.version()
	b, err := files.bundle(false)
	if err != nil {
		return nil, version, files.source, err
	}
	prepare := func(query string) (rego.PreparedEvalQuery, error) {
		return rego.New(
			rego.Query(query),
			rego.ParsedBundle("aegis", b),
			rego.StoreReadAST(true),
			rego.StrictBuiltinErrors(true),
			rego.Capabilities(capabilities()),
			rego.SetRegoVersion(ast.RegoV1),
			// Hand the result over as AST: parseDecision reads it directly.
			rego.GenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }),
		).PrepareForEval(ctx)
	}
	pq, err := prepare(query)
	if err != nil {
		return nil, version, files.source, &PolicyLoadError{Path: files.path, Stage: "compile", Err: err}
	}
	prelude, err := prepare(PreludeQuery)
	if err != nil {
		return nil, version, files.source, &PolicyLoadError{Path: files.path, Stage: "compile", Err: fmt.Errorf("%s: %w", PreludeQuery, err)}
	}
	return &localEval{pq: pq, prelude: prelude}, version, files.source, nil
}

func (l *localEval) eval(ctx context.Context, input *policyInput, now time.Time) (ast.Value, error) {
	pre, err := l.sessionPrelude(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("session prelude: %w", err)
	}
	v, err := input.astValue(pre)
	if err != nil {
		return nil, err
	}
	rs, err := evalQuery(ctx, l.pq, v, now)
	if err != nil {
		return nil, err
	}
	return singleResult(rs)
}

// evalQuery evaluates a prepared query on a converted input at a pinned
// time. ctx's end cancels the evaluation through context.AfterFunc, which
// starts no goroutine unless it fires (OPA's own cancellation would start
// one per evaluation); OPA's metrics are not collected; the evaluation's
// caches are pooled flat lists (evalcache.go).
func evalQuery(ctx context.Context, pq rego.PreparedEvalQuery, input ast.Value, now time.Time) (rego.ResultSet, error) {
	c := topdown.NewCancel()
	stop := context.AfterFunc(ctx, c.Cancel)
	defer stop()
	caches := getCaches()
	defer putCaches(caches)
	return pq.Eval(ctx, rego.EvalParsedInput(input), rego.EvalTime(now), rego.EvalExternalCancel(c), rego.EvalMetrics(metrics.NoOp()),
		rego.EvalVirtualCache(&caches.virtual), rego.EvalBaseCache(&caches.base))
}

// sessionPrelude returns the policy's prelude for the input's session and
// page, evaluated on its first use and memoized; nil when the policy leaves
// it undefined. An error (a failing builtin, the context ending) is not
// memoized: the decision fails closed and the next one tries again.
func (l *localEval) sessionPrelude(ctx context.Context, in *policyInput) (*ast.Term, error) {
	key := preludeKey{session: in.sf.key, state: in.state}
	if t, ok := l.preludes.get(key); ok {
		return t, nil
	}
	v, err := in.preludeValue()
	if err != nil {
		return nil, err
	}
	rs, err := evalQuery(ctx, l.prelude, v, preludeTime)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pv, err := singleResult(rs)
	var t *ast.Term
	switch {
	case errors.Is(err, errUndefined):
		t = nil
	case err != nil:
		return nil, err
	default:
		t = ast.NewTerm(pv)
	}
	l.preludes.put(key, t, maxPreludeCache)
	return t, nil
}

func singleResult(rs rego.ResultSet) (ast.Value, error) {
	switch {
	case len(rs) == 0:
		return nil, errUndefined
	case len(rs) > 1 || len(rs[0].Expressions) != 1:
		return nil, fmt.Errorf("the policy produced %d results, want exactly one", len(rs))
	}
	t, ok := rs[0].Expressions[0].Value.(*ast.Term)
	if !ok {
		return nil, fmt.Errorf("the policy result is a %T, not an AST term", rs[0].Expressions[0].Value)
	}
	return t.Value, nil
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
	action := actionMap(req.Action)
	target := elementMap(req.Target)
	hash = g.actionHash(req.SessionID, req.ActiveURL, action, target)
	d = g.skeleton(&req, now, hash)
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

	input, err := g.buildInput(&req, now, action, target)
	if err != nil {
		return g.failClosed(&req, now, hash, fmt.Errorf("gate: %w", err))
	}
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

// skeleton fills the fields known before evaluation.
func (g *Gate) skeleton(req *Request, now time.Time, hash string) Decision {
	var d Decision
	r := &d.DecisionRecord
	r.PolicyVersion = g.PolicyVersion()
	r.PolicySource = SourceEmbedded
	if g != nil && g.source != "" {
		r.PolicySource = g.source
	}
	r.DecisionID = DecisionID(r.PolicyVersion, hash, req.StepIndex, now)
	if isID(req.SessionID) {
		r.SessionID = req.SessionID
	}
	r.StepIndex = req.StepIndex
	if isID(req.Action.ID) {
		r.ActionID = req.Action.ID
	}
	r.ActionHash = hash
	r.ActionName = "browser.unknown"
	if req.Action.Type.Valid() {
		r.ActionName = req.Action.PolicyName()
	}
	if isID(req.Session.DecisionLogID) {
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
	d := g.skeleton(req, now, hash)
	msg := truncate(err.Error(), maxErrorLen)
	d.FailClosed, d.Error, d.Err = true, msg, err
	d.Reasons = []contract.Reason{{Rule: RuleFailClosed, Message: truncate("the policy could not answer, so the action is denied: "+msg, maxMessageLen)}}
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

// floor is the Go-side check that holds whatever the policy says: it can
// only add deny reasons.
func floor(req *Request) []contract.Reason {
	var out []contract.Reason
	if err := checkAction(&req.Action); err != nil {
		out = append(out, contract.Reason{Rule: RuleActionInvalid, Message: truncate(err.Error(), maxMessageLen)})
	}
	if req.Target != nil {
		if err := req.Target.Validate(); err != nil {
			out = append(out, contract.Reason{Rule: RuleTargetInvalid, Message: truncate(err.Error(), maxMessageLen)})
		}
	}
	if req.Action.Type == contract.ActNavigate {
		f := NormalizeURL(req.Action.URL)
		if !f.Valid || (f.Scheme != "http" && f.Scheme != "https") || f.Userinfo || f.Host == "" {
			out = append(out, contract.Reason{Rule: RuleURLFloor, Message: truncate(fmt.Sprintf("navigation target %q is not a well-formed http(s) URL without user name or password", req.Action.URL), maxMessageLen)})
		}
	}
	return out
}

// Bounds of the action contract (browser-action.schema.json), in
// characters.
const (
	maxSelector  = 2048
	maxText      = 10000
	maxValue     = 2048
	maxReason    = 2000
	maxPolicyTag = 64
	maxTags      = 16
)

// checkAction enforces the action contract's bounds that the policy does
// not look at, so that no oversized or malformed string reaches the driver
// or the evidence even under a permissive policy.
func checkAction(a *contract.Action) error {
	for _, f := range []struct {
		name  string
		value string
		max   int
	}{
		{"id", a.ID, 128}, {"reason", a.Reason, maxReason}, {"url", a.URL, MaxURLLength},
		{"selector", a.Selector, maxSelector}, {"text", a.Text, maxText}, {"value", a.Value, maxValue},
	} {
		if !utf8.ValidString(f.value) {
			return fmt.Errorf("action field %s is not valid UTF-8", f.name)
		}
		if n := utf8.RuneCountInString(f.value); n > f.max {
			return fmt.Errorf("action field %s has %d characters, more than %d", f.name, n, f.max)
		}
	}
	if len(a.PolicyTags) > maxTags {
		return fmt.Errorf("action has %d policy tags, more than %d", len(a.PolicyTags), maxTags)
	}
	for _, t := range a.PolicyTags {
		if !utf8.ValidString(t) || utf8.RuneCountInString(t) > maxPolicyTag {
			return fmt.Errorf("action policy tag %q is not valid text of at most %d characters", truncate(t, 80), maxPolicyTag)
		}
	}
	switch a.Type {
	case contract.ActClick, contract.ActType, contract.ActSelect:
		if a.Selector == "" {
			return fmt.Errorf("a %s action needs a selector", a.Type)
		}
	}
	return nil
}

func isPermissionLevel(p string) bool {
	switch p {
	case "disabled", "observe", "control", "full":
		return true
	}
	return false
}

// Bounds of the record's strings and lists (see the decision schema).
const (
	maxReasons    = 64
	maxMessageLen = 1024
	maxErrorLen   = 2048
	maxExceptions = 32
)

// policyDecision is the policy's decision object, checked field by field.
type policyDecision struct {
	allow            bool
	deny             []contract.Reason
	waived           []contract.Reason
	risk             contract.RiskTag
	riskReasons      []contract.Reason
	requiresApproval bool
	approvalReasons  []contract.Reason
	actionName       string
	permission       string
	exceptions       []contract.ExceptionUse
}

// parseDecision checks that the policy's result is a decision object with
// every required field of the right type, and that allow agrees with the
// deny reasons. Anything else is an error, and the gate fails closed. The
// result is read as OPA's AST: the local engine hands it over without
// converting it, a remote OPA's JSON is converted first.
func parseDecision(v ast.Value) (policyDecision, error) {
	var pd policyDecision
	m, ok := v.(ast.Object)
	if !ok {
		return pd, fmt.Errorf("the decision is a%s, not an object", article(v))
	}
	var err error
	if pd.allow, err = boolField(m, "allow"); err != nil {
		return pd, err
	}
	if pd.requiresApproval, err = boolField(m, "requires_approval"); err != nil {
		return pd, err
	}
	if pd.deny, err = reasonsField(m, "deny", true); err != nil {
		return pd, err
	}
	risk, err := stringField(m, "risk", true)
	if err != nil {
		return pd, err
	}
	switch contract.RiskTag(risk) {
	case contract.RiskLow, contract.RiskMedium, contract.RiskHigh:
		pd.risk = contract.RiskTag(risk)
	default:
		return pd, fmt.Errorf("risk %q is not low, medium or high", truncate(risk, 64))
	}
	if pd.actionName, err = stringField(m, "action_name", true); err != nil {
		return pd, err
	}
	if !isActionName(pd.actionName) {
		return pd, fmt.Errorf("action_name %q is not browser.<type>", truncate(pd.actionName, 64))
	}
	if pd.waived, err = reasonsField(m, "waived", false); err != nil {
		return pd, err
	}
	if pd.riskReasons, err = reasonsField(m, "risk_reasons", false); err != nil {
		return pd, err
	}
	if pd.approvalReasons, err = reasonsField(m, "approval_reasons", false); err != nil {
		return pd, err
	}
	if pd.permission, err = stringField(m, "permission", false); err != nil {
		return pd, err
	}
	if pd.exceptions, err = exceptionsField(m); err != nil {
		return pd, err
	}
	if pd.allow != (len(pd.deny) == 0) {
		return pd, fmt.Errorf("allow is %v with %d deny reasons", pd.allow, len(pd.deny))
	}
	return pd, nil
}

// article names an AST value's JSON type with its article.
func article(v ast.Value) string {
	switch v.(type) {
	case ast.Null:
		return " null"
	case ast.Boolean:
		return " boolean"
	case ast.String:
		return " string"
	case ast.Number:
		return " number"
	case *ast.Array:
		return "n array"
	case ast.Set:
		return " set"
	case ast.Object:
		return "n object"
	}
	return " " + ast.ValueName(v)
}

var keyTerms sync.Map // string -> *ast.Term

func keyTerm(k string) *ast.Term {
	if t, ok := keyTerms.Load(k); ok {
		return t.(*ast.Term)
	}
	t := ast.StringTerm(k)
	keyTerms.Store(k, t)
	return t
}

func field(m ast.Object, k string) (ast.Value, bool) {
	t := m.Get(keyTerm(k))
	if t == nil {
		return nil, false
	}
	return t.Value, true
}

func boolField(m ast.Object, k string) (bool, error) {
	v, ok := field(m, k)
	if !ok {
		return false, fmt.Errorf("the decision has no %q", k)
	}
	b, ok := v.(ast.Boolean)
	if !ok {
		return false, fmt.Errorf("%q is a%s, not a boolean", k, article(v))
	}
	return bool(b), nil
}

func stringField(m ast.Object, k string, required bool) (string, error) {
	v, ok := field(m, k)
	if !ok {
		if required {
			return "", fmt.Errorf("the decision has no %q", k)
		}
		return "", nil
	}
	s, ok := v.(ast.String)
	if !ok {
		return "", fmt.Errorf("%q is a%s, not a string", k, article(v))
	}
	return string(s), nil
}

// elements returns the elements of an array or a set (a Rego set
// serializes as an array).
func elements(v ast.Value) ([]*ast.Term, bool) {
	switch c := v.(type) {
	case *ast.Array:
		out := make([]*ast.Term, 0, c.Len())
		for i := 0; i < c.Len(); i++ {
			out = append(out, c.Elem(i))
		}
		return out, true
	case ast.Set:
		return c.Slice(), true
	}
	return nil, false
}

// reasonsField reads an array or set of {rule, message[, exception]}
// objects, sorted and bounded.
func reasonsField(m ast.Object, k string, required bool) ([]contract.Reason, error) {
	v, ok := field(m, k)
	if !ok {
		if required {
			return nil, fmt.Errorf("the decision has no %q", k)
		}
		return nil, nil
	}
	elems, ok := elements(v)
	if !ok {
		return nil, fmt.Errorf("%q is a%s, not an array", k, article(v))
	}
	if len(elems) == 0 {
		return nil, nil
	}
	out := make([]contract.Reason, 0, len(elems))
	for i, e := range elems {
		o, ok := e.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is a%s, not an object", k, i, article(e.Value))
		}
		rule, err := stringField(o, "rule", true)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		if !isRuleName(rule) {
			return nil, fmt.Errorf("%s[%d]: rule %q is not a rule name", k, i, truncate(rule, 64))
		}
		msg, err := stringField(o, "message", true)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		exc, err := stringField(o, "exception", false)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		out = append(out, contract.Reason{Rule: rule, Message: cleanMessage(msg, rule), ExceptionID: truncate(exc, 256)})
	}
	sortReasons(out)
	if len(out) > maxReasons {
		out = out[:maxReasons]
	}
	return out, nil
}

func cleanMessage(msg, rule string) string {
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "\uFFFD")
	}
	if strings.TrimSpace(msg) == "" {
		msg = rule
	}
	return truncate(msg, maxMessageLen)
}

func sortReasons(rs []contract.Reason) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Rule != rs[j].Rule {
			return rs[i].Rule < rs[j].Rule
		}
		if rs[i].Message != rs[j].Message {
			return rs[i].Message < rs[j].Message
		}
		return rs[i].ExceptionID < rs[j].ExceptionID
	})
}

func exceptionsField(m ast.Object) ([]contract.ExceptionUse, error) {
	v, ok := field(m, "exceptions")
	if !ok {
		return nil, nil
	}
	elems, ok := elements(v)
	if !ok {
		return nil, fmt.Errorf(`"exceptions" is a%s, not an array`, article(v))
	}
	var out []contract.ExceptionUse
	for i, e := range elems {
		o, ok := e.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("exceptions[%d] is a%s, not an object", i, article(e.Value))
		}
		var u contract.ExceptionUse
		var err error
		get := func(k string, n int) string {
			if err != nil {
				return ""
			}
			var s string
			s, err = stringField(o, k, false)
			return truncate(s, n)
		}
		u.ID = get("id", 256)
		u.Rule = get("rule", 64)
		u.Reason = get("reason", 1024)
		u.ExpiresAt = get("expires_at", 64)
		u.DecisionLogID = get("decision_log_id", 256)
		status := get("status", 64)
		why := get("why", maxMessageLen)
		if err != nil {
			return nil, fmt.Errorf("exceptions[%d]: %w", i, err)
		}
		switch contract.ExceptionStatus(status) {
		case contract.ExceptionApplied, contract.ExceptionExpired, contract.ExceptionMalformed, contract.ExceptionOutOfScope:
			u.Status = contract.ExceptionStatus(status)
		default:
			return nil, fmt.Errorf("exceptions[%d]: status %q is not applied, expired, malformed or out_of_scope", i, truncate(status, 64))
		}
		u.Why = cleanMessage(why, status)
		out = append(out, u)
		if len(out) == maxExceptions {
			break
		}
	}
	return out, nil
}
