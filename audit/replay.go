package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
)

// The statuses of a replayed step.
const (
	// StepSame: the replay saw what the record says.
	StepSame = "same"
	// StepDiverged: the replay saw something else (Differences says what).
	StepDiverged = "diverged"
	// StepBlocked: the action was not executed: the record denied it (a
	// recorded denial stays denied), or the gate denies it now, or an
	// approval it needs now was refused.
	StepBlocked = "blocked"
)

// The fields a replayed step is compared on.
const (
	FieldURL     = "url"     // the page's URL (an observation's, or the action result's)
	FieldTitle   = "title"   // the page's title
	FieldDOMHash = "domHash" // the hash of the DOM snapshot
	FieldTarget  = "target"  // the element the action targets
	FieldOutcome = "outcome" // whether the driver carried the action out
)

// Code of the events a replay records in its own bundle.
const (
	// CodeReplayDiverged: a step diverged from the record.
	CodeReplayDiverged = "replay.diverged"
	// CodeReplayBlocked: a step was not executed.
	CodeReplayBlocked = "replay.blocked"
)

// ApprovalTTL is how long an approval granted during a replay stays
// valid: the gate consumes it at once.
const ApprovalTTL = 2 * time.Minute

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Driver is the driver mode: playwright or sandbox; "" means the
	// bundle's (playwright for an extension bundle).
	Driver contract.DriverMode
	// Browser is a running browser to open the replay's session in; nil
	// takes one from Browsers, else launches one (and closes it after).
	Browser *driver.Browser
	// Browsers, when set (and Browser is nil), shares browsers among
	// replays (driver.Config.Browsers): the replay opens a fresh context
	// in the one its driver mode needs, launched by the first replay that
	// needed it, and leaves it running.
	Browsers *driver.Browsers
	// BrowserEndpoint, when set (and Browser is nil), connects to a
	// Playwright server instead of launching Chromium.
	BrowserEndpoint string
	// Headed shows the browser window of a browser Replay launches.
	Headed bool
	// PolicyPath is the policy the actions are judged by again (a
	// directory or an OPA bundle .tar.gz); "" means the embedded policy.
	PolicyPath string
	// PolicyFromBundle requires the policy that judged the recording: the
	// policy loaded (PolicyPath, or the embedded one) must have the
	// version the bundle's manifest names, else Replay refuses.
	PolicyFromBundle bool
	// Preset and Permission, when set, replace the permission level the
	// recorded decisions applied (the preset's name is not recorded).
	Preset, Permission string
	// Origins maps the recorded origins to those the replay runs against.
	Origins OriginMap
	// Approver is asked when the gate pauses an action; nil refuses every
	// approval (--approve deny). A recorded approval is never re-granted
	// without asking.
	Approver Approver
	// AllowUnsealed replays an unsealed bundle (its intact entries).
	AllowUnsealed bool
	// PubKey, when set, is the key the bundle's seal must be signed with.
	PubKey ed25519.PublicKey
	// EvidenceRoot is the directory the replay's own bundle is created in
	// (as EvidenceRoot/SESSIONID); created if missing. Required.
	EvidenceRoot string
	// SessionID is the replay's session id; "" means "replay-" and random
	// hex digits.
	SessionID string
	// Signer, when set, signs the seal of the replay's bundle.
	Signer evidence.Signer
	// Version is the aegis version for the replay's manifest; "" means
	// "(devel)".
	Version string
	// ActionTimeout bounds how long click, type and select wait for their
	// element; 0 means the driver's default.
	ActionTimeout time.Duration
	// OnStep, when set, is called after each step.
	OnStep func(StepResult)
	// Clock gives the time; nil means time.Now.
	Clock func() time.Time
}

// Approver answers an approval request during a replay.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	return f(ctx, req)
}

// ApprovalRequest is what an approver is asked during a replay.
type ApprovalRequest struct {
	// Step is the step being replayed.
	Step int
	// Action is the action, as the replay runs it (origins mapped).
	Action contract.Action
	// Target is the element it targets on the replayed page; nil when none.
	Target *contract.Element
	// URL is the active page.
	URL string
	// Risk and Reasons are the gate's: why an approval is needed.
	Risk    contract.RiskTag
	Reasons []contract.Reason
	// Recorded is the approval the recording used, with who gave it; nil
	// when the recording needed none.
	Recorded *contract.ApprovalRef
}

// ApprovalAnswer is an approver's answer.
type ApprovalAnswer struct {
	// Approved says yes.
	Approved bool
	// Approver names who answered.
	Approver string
}

// ReplayReport is the outcome of a replay.
type ReplayReport struct {
	// Bundle is the replayed bundle.
	Bundle string `json:"bundle"`
	// SessionID is the recorded session's id.
	SessionID string `json:"sessionId"`
	// ReplaySessionID and ReplayBundle are the replay's own session and
	// bundle directory.
	ReplaySessionID string `json:"replaySessionId"`
	ReplayBundle    string `json:"replayBundle"`
	// PolicyVersion is the version of the policy the replay judged by;
	// RecordedPolicyVersion the recording's.
	PolicyVersion         string `json:"policyVersion"`
	RecordedPolicyVersion string `json:"recordedPolicyVersion"`
	// Origins are the origin mappings applied.
	Origins []OriginPair `json:"origins,omitempty"`
	// Steps are the replayed steps, in order.
	Steps []StepResult `json:"steps"`
	// Same, Diverged and Blocked count the steps by status.
	Same     int `json:"same"`
	Diverged int `json:"diverged"`
	Blocked  int `json:"blocked"`
}

// Reproduced reports whether no step diverged and every step the record
// executed was executed again (a recorded denial staying denied is
// reproduced).
func (r *ReplayReport) Reproduced() bool {
	for _, s := range r.Steps {
		if s.Status == StepDiverged || (s.Status == StepBlocked && !s.RecordedDenial) {
			return false
		}
	}
	return true
}

// StepResult is one replayed step.
type StepResult struct {
	// Step is the step's index (from 1).
	Step int `json:"step"`
	// ActionID and ActionType name the action.
	ActionID   string `json:"actionId"`
	ActionType string `json:"actionType"`
	// Status is same, diverged or blocked.
	Status string `json:"status"`
	// Recorded is the recorded final decision's result.
	Recorded contract.DecisionResult `json:"recorded"`
	// Decision is the replay's final decision's result; "" when the step
	// was not judged again (a recorded denial).
	Decision contract.DecisionResult `json:"decision,omitempty"`
	// RecordedDenial is true when the step is blocked because the record
	// denied it.
	RecordedDenial bool `json:"recordedDenial,omitempty"`
	// Reasons say why a blocked step was not executed.
	Reasons []contract.Reason `json:"reasons,omitempty"`
	// Approver names who approved the action during the replay.
	Approver string `json:"approver,omitempty"`
	// Differences say what diverged.
	Differences []Difference `json:"differences,omitempty"`
	// Notes say what the replay could not reproduce exactly.
	Notes []string `json:"notes,omitempty"`
}

// Difference is one field that differs between the record and the replay.
type Difference struct {
	// Field is url, title, domHash, target or outcome.
	Field string `json:"field"`
	// Observation is the recorded observation compared (dom/{Observation}),
	// -1 when the difference is about the action itself.
	Observation int `json:"observation"`
	// Want is the recorded value; Got the replay's (origins mapped back).
	Want string `json:"want"`
	Got  string `json:"got"`
	// TextDiff is a short line diff of the visible text, for a domHash
	// difference.
	TextDiff string `json:"textDiff,omitempty"`
}

// Replay re-executes the recorded actions of the bundle at bundlePath in
// order, without any model: each one is judged again by the gate, run by
// the driver, and what the replay sees (the action's outcome and URL, the
// URL, title and DOM hash of each observation the recording made, the
// element each action targets) is compared with the record. A recorded
// denial stays denied and is not executed; an action the gate pauses is
// executed only if opts.Approver approves it again. The replay writes its
// own evidence bundle, whose task hints link the recorded session
// ({"replayOf": {...}}).
//
// A bundle that does not verify is refused (a *TamperedError naming the
// place); an unsealed one unless opts.AllowUnsealed. The report is
// returned with a nil error however many steps diverged; an error means
// the replay could not run (or stopped: the report then holds the steps
// done).
func Replay(ctx context.Context, bundlePath string, opts ReplayOptions) (*ReplayReport, error) {
	if opts.EvidenceRoot == "" {
		return nil, errors.New("audit: replay: an evidence root for the replay's bundle is required")
	}
	b, err := Open(ctx, bundlePath, OpenOptions{AllowUnsealed: opts.AllowUnsealed, PubKey: opts.PubKey})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	store := gate.NewApprovals()
	g, err := gate.New(ctx, gate.Options{PolicyPath: opts.PolicyPath, Approvals: store, Clock: clock})
	if err != nil {
		return nil, fmt.Errorf("audit: replay: %w", err)
	}
	recorded := b.Manifest.Versions.Policy
	if opts.PolicyFromBundle && g.PolicyVersion() != recorded {
		where := "the embedded policy"
		if opts.PolicyPath != "" {
			where = "the policy " + opts.PolicyPath
		}
		return nil, fmt.Errorf("audit: replay: the bundle was judged by policy %s, but %s is %s: pass --policy with the policy of that version", recorded, where, g.PolicyVersion())
	}
	mode := opts.Driver
	if mode == "" {
		mode = b.Manifest.Driver
		if mode != contract.ModeSandbox {
			mode = contract.ModePlaywright
		}
	}
	if mode != contract.ModePlaywright && mode != contract.ModeSandbox {
		return nil, fmt.Errorf("audit: replay: driver %q: want playwright or sandbox", mode)
	}
	sid := opts.SessionID
	if sid == "" {
		var r [8]byte
		_, _ = rand.Read(r[:])
		sid = "replay-" + hex.EncodeToString(r[:])
	}
	task, err := replayTask(b, opts.Origins)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.EvidenceRoot, 0o755); err != nil {
		return nil, fmt.Errorf("audit: replay: %w", err)
	}
	version := opts.Version
	if version == "" {
		version = "(devel)"
	}
	w, err := evidence.Create(opts.EvidenceRoot, contract.Manifest{
		SessionID: sid, Task: task, Driver: mode,
		Versions: contract.Versions{Aegis: version, Policy: g.PolicyVersion()},
	}, evidence.Options{Clock: clock})
	if err != nil {
		return nil, fmt.Errorf("audit: replay: %w", err)
	}
	rp := &replayer{
		b: b, opts: opts, g: g, store: store, w: w, sid: sid, clock: clock, cur: "about:blank",
		back: opts.Origins.Reverse(), budget: b.stepBudget(nil), class: b.classification(), shots: map[string]string{},
	}
	rep := &ReplayReport{
		Bundle: bundlePath, SessionID: b.Manifest.SessionID, ReplaySessionID: sid, ReplayBundle: w.Dir(),
		PolicyVersion: g.PolicyVersion(), RecordedPolicyVersion: recorded, Origins: opts.Origins,
	}
	runErr := rp.run(ctx, rep, task, mode)
	status := contract.SessionCompleted
	if runErr != nil || !rep.Reproduced() {
		status = contract.SessionFailed
	}
	summary := fmt.Sprintf("replay of %s: %d same, %d diverged, %d blocked", b.Manifest.SessionID, rep.Same, rep.Diverged, rep.Blocked)
	if runErr != nil {
		summary += "; stopped: " + runErr.Error()
	}
	_ = w.Event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: status, Summary: clip(summary, 2000), Timestamp: stamp(clock())})
	if _, err := w.Seal(context.WithoutCancel(ctx), status, clock(), opts.Signer); err != nil && runErr == nil {
		runErr = fmt.Errorf("audit: replay: seal: %w", err)
	}
	return rep, runErr
}

// replayTask is the recorded task with its URLs mapped and hints linking
// the recording.
func replayTask(b *Bundle, m OriginMap) (contract.Input, error) {
	t := b.Manifest.Task
	t.URLs = make([]string, len(b.Manifest.Task.URLs))
	for i, u := range b.Manifest.Task.URLs {
		t.URLs[i] = m.URL(u)
	}
	link := map[string]any{
		"sessionId":     b.Manifest.SessionID,
		"policyVersion": b.Manifest.Versions.Policy,
		"entries":       b.Entries,
	}
	if b.Seal != nil {
		link["merkleRoot"] = b.Seal.MerkleRoot
		link["headHash"] = b.Seal.HeadHash
	}
	if len(m) > 0 {
		link["origins"] = m.String()
	}
	hints := map[string]any{"replayOf": link}
	if len(b.Manifest.Task.Hints) > 0 {
		hints["recordedHints"] = json.RawMessage(b.Manifest.Task.Hints)
	}
	raw, err := json.Marshal(hints)
	if err != nil {
		return t, fmt.Errorf("audit: replay: hints: %w", err)
	}
	t.Hints = raw
	g := "Replay of " + b.Manifest.SessionID + ": " + b.Manifest.Task.Goal
	t.Goal = clip(g, 1000)
	return t, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// replayer holds the state of one replay.
type replayer struct {
	b      *Bundle
	opts   ReplayOptions
	g      *gate.Gate
	store  *gate.Approvals
	w      *evidence.Writer
	drv    driver.Driver
	sid    string
	clock  func() time.Time
	cur    string    // the live active URL, as the session tracks it
	back   OriginMap // replay origins -> recorded ones
	budget int
	// class is the recorded session's classification (Bundle.classification).
	class contract.Classification
	seq   int
	live  *contract.Observation // the last live observation
	shots map[string]string     // driver screenshot value -> bundle uri
}

func (rp *replayer) run(ctx context.Context, rep *ReplayReport, task contract.Input, mode contract.DriverMode) error {
	if err := rp.w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: rp.sid, Timestamp: stamp(rp.clock())}); err != nil {
		return fmt.Errorf("audit: replay: %w", err)
	}
	origins := make([]string, 0, len(task.URLs))
	for _, u := range task.URLs {
		if o, err := originOfURL(u); err == nil {
			origins = append(origins, o)
		}
	}
	decLog := "dec-" + rp.sid
	if len(rp.b.Steps) > 0 && rp.b.Steps[0].Final().DecisionLogID != "" {
		decLog = rp.b.Steps[0].Final().DecisionLogID
	}
	drv, err := driver.Open(ctx, driver.Config{
		Mode: mode, SessionID: rp.sid, AllowedOrigins: origins, Browser: rp.opts.Browser, Browsers: rp.opts.Browsers,
		BrowserEndpoint: rp.opts.BrowserEndpoint, Headed: rp.opts.Headed,
		ActionTimeout: rp.opts.ActionTimeout,
		PolicyContext: contract.PolicyContext{Classification: rp.class, MaxStepBudget: rp.budget, DecisionLogID: decLog},
	})
	if err != nil {
		return fmt.Errorf("audit: replay: open the browser: %w", err)
	}
	rp.drv = drv
	defer drv.Close(context.WithoutCancel(ctx))
	var pending []Difference
	for _, o := range rp.b.Initial {
		d, err := rp.observe(ctx, o)
		if err != nil {
			return err
		}
		pending = append(pending, d...)
	}
	for _, s := range rp.b.Steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("audit: replay: %w", err)
		}
		res, err := rp.step(ctx, s)
		res.Differences = append(pending, res.Differences...)
		pending = nil
		if res.Status == StepSame && len(res.Differences) > 0 {
			res.Status = StepDiverged
		}
		if err == nil {
			err = rp.note(res)
		}
		switch res.Status {
		case StepSame:
			rep.Same++
		case StepDiverged:
			rep.Diverged++
		case StepBlocked:
			rep.Blocked++
		}
		rep.Steps = append(rep.Steps, res)
		if rp.opts.OnStep != nil {
			rp.opts.OnStep(res)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// note records a diverged or blocked step as an event of the replay's
// bundle.
func (rp *replayer) note(res StepResult) error {
	var code, msg string
	switch res.Status {
	case StepDiverged:
		var fields []string
		for _, d := range res.Differences {
			fields = append(fields, d.Field)
		}
		code, msg = CodeReplayDiverged, fmt.Sprintf("step %d (action %s, %s) diverged from the record: %s", res.Step, res.ActionID, res.ActionType, strings.Join(fields, ", "))
	case StepBlocked:
		var rules []string
		for _, r := range res.Reasons {
			rules = append(rules, r.Rule)
		}
		why := "the gate denies it now"
		if res.RecordedDenial {
			why = "the record denied it"
		}
		code, msg = CodeReplayBlocked, fmt.Sprintf("step %d (action %s, %s) not executed: %s (%s)", res.Step, res.ActionID, res.ActionType, why, strings.Join(rules, ", "))
	default:
		return nil
	}
	if err := rp.w.Event(contract.StreamEvent{Type: contract.EventError, Code: code, Message: clip(msg, 2000), Timestamp: stamp(rp.clock())}); err != nil {
		return fmt.Errorf("audit: replay: %w", err)
	}
	return nil
}

// originOfURL returns the http(s) origin of an absolute URL.
func originOfURL(u string) (string, error) {
	i := strings.Index(u, "://")
	if i <= 0 {
		return "", fmt.Errorf("%q is not an absolute URL", u)
	}
	end := len(u)
	if j := strings.IndexAny(u[i+3:], "/?#"); j >= 0 {
		end = i + 3 + j
	}
	return driver.NormalizeOrigin(u[:end])
}
