package session

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"regexp"
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
// approver, or its absence, turned the pause into a denial), and when the
// action budget is used up. Where a secret may be typed is the policy's
// judgement (secret_typed, secret_misdirected, secret_undeclared): the
// session's former rules secret_target_not_sensitive and secret_unknown
// are retired (older bundles may hold them); the session only refuses a
// secret the policy allowed without judging it (RuleSecretUnjudged).
const (
	// RuleApprovalDenied: the approver refused.
	RuleApprovalDenied = "approval_denied"
	// RuleApprovalTimeout: the approver gave no answer in time.
	RuleApprovalTimeout = "approval_timeout"
	// RuleApprovalUnavailable: no approver could be asked (no approval
	// store, or the approver failed).
	RuleApprovalUnavailable = "approval_unavailable"
	// RuleActionBudget: an action past Task.MaxActions that the policy
	// allowed (the embedded policy denies it itself, step_budget_exceeded).
	RuleActionBudget = "session_action_budget"
	// RuleSecretUnjudged: an allowed action carrying a secret placeholder
	// that is not a type action whose whole text is one placeholder, or
	// whose decision lacks the risk reason RuleSecretTyped (a policy
	// without the secrets rules).
	RuleSecretUnjudged = "secret_unjudged"
	// RuleSecretTyped is the policy's risk reason for a secret typed where
	// it is bound (medium risk, no approval); the session resolves a
	// placeholder only under a decision that names it.
	RuleSecretTyped = "secret_typed"
)

// The loop's seams: it drives a driver.Driver (opened by OpenDriver),
// asks a Decider, asks an Approver (approve.go) and grants into Grants,
// and writes through a Recorder (created by an EvidenceOpener).

// DriverOpener opens the browser of a session. The session calls it once,
// after its evidence bundle is created (so a browser that does not open is
// recorded), with Config.Driver completed by the session's settings.
type DriverOpener func(ctx context.Context, cfg driver.Config) (driver.Driver, error)

// Decider judges actions; *gate.Gate is the one aegis uses.
type Decider interface {
	// Decide judges one action. A decision the policy could not make is a
	// denial with FailClosed set.
	Decide(ctx context.Context, req gate.Request) gate.Decision
	// PolicyVersion identifies the policy, for the manifest.
	PolicyVersion() string
	// Err says why the policy did not load (every action is then denied);
	// nil when it did.
	Err() error
}

// Grants is the approval store the Decider consults: when the approver
// says yes, the session grants an approval bound to the action's hash, and
// the Decider consumes it. *gate.Approvals is one.
type Grants interface {
	Grant(actionHash, approver string, approvedAt time.Time, ttl time.Duration) (gate.Approval, error)
}

// Recorder writes the evidence bundle; *evidence.Writer is one. The session
// never calls it concurrently, and calls it in the order of the records.
// Each method writes one record (see evidence.Writer); an error stops the
// session, except one wrapping evidence.ErrQuarantined (a refused artifact
// or image, recorded as an error event instead).
type Recorder interface {
	Event(ev contract.StreamEvent) error
	ModelCall(rec contract.ModelCall) error
	Plan(p contract.Plan) error
	Observation(seq int, obs contract.Observation) error
	Decision(rec contract.DecisionRecord) error
	Action(a contract.Action, res contract.ToolResult) error
	Artifact(a contract.Artifact) error
	Image(id string, data []byte, meta evidence.ImageMeta) (contract.ImageArtifact, error)
	Seal(ctx context.Context, status contract.SessionStatus, endTime time.Time, signer evidence.Signer) (*contract.Manifest, error)
	// Dir is where the bundle is, for the result.
	Dir() string
}

// EvidenceOpener creates the Recorder of a session from its manifest; opts
// carry the secret values to mask, the clock, and OnEvent, through which
// the session publishes every event once it is recorded.
type EvidenceOpener func(m contract.Manifest, opts evidence.Options) (Recorder, error)

// EvidenceDir returns the EvidenceOpener that creates the bundle as
// root/SESSIONID with evidence.Create, creating root if missing.
func EvidenceDir(root string) EvidenceOpener {
	return func(m contract.Manifest, opts evidence.Options) (Recorder, error) {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, &rootError{root: root, err: err}
		}
		w, err := evidence.Create(root, m, opts)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
}

// rootError is EvidenceDir's failure to create its root.
type rootError struct {
	root string
	err  error
}

func (e *rootError) Error() string {
	return "cannot create the evidence root " + e.root + ": " + e.err.Error()
}

func (e *rootError) Unwrap() error { return e.err }

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
	// Driver is the caller's part of the browser's configuration: Mode
	// (required; named in the manifest), Browser, BrowserEndpoint, Headed,
	// timeouts, observation limits. The session adds SessionID,
	// AllowedOrigins (the origins of Task.URLs), SensitiveSelectors
	// (Policy's), PolicyContext and Effects (the session itself judges
	// what the page does: see "Effects" in the package documentation)
	// before it hands the configuration to OpenDriver.
	Driver driver.Config
	// OpenDriver opens the browser. Required: driver.Open for the
	// Playwright modes; host mode wraps driver.OpenExtension with its port
	// to the extension; tests hand in fakes.
	OpenDriver DriverOpener
	// Gate judges every action. Required: a *gate.Gate, created once with
	// gate.New(ctx, gate.Options{Approvals: Approvals, ...}) and shared
	// between sessions (the policy is compiled once). A gate whose policy
	// failed to load denies everything, and so fails the session.
	Gate Decider
	// Approvals is the approval store Gate consults (a *gate.Approvals):
	// approvals are granted into it. nil means no approval can be granted:
	// every paused action is denied.
	Approvals Grants
	// Preset is the policy's security preset (safe, balanced, power,
	// developer); "" is the policy's default (power).
	Preset string
	// Permission overrides the preset's permission level (disabled,
	// observe, control, full); "" means the preset's.
	Permission string
	// Classification is the caller's data classification (public,
	// restricted, sensitive), "" for none; the session runs under the
	// stricter of it and the task's (hints.classification), restricted
	// when neither names one (New resolves it; callers pass their value
	// unresolved). It reaches the policy (gate.Session.Classification)
	// and the observations' policyContext, and with the policy data decides
	// whether a screenshot may be shown to the model (vision escalation).
	Classification contract.Classification
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
	// values. nil means none. The caller loads them (secrets.Load). The
	// gate learns where each may be typed (gate.Session.Secrets): the
	// origins declared for it, else the task's first origin.
	Secrets *secrets.Set
	// Evidence creates the session's evidence bundle. Required:
	// EvidenceDir(root) creates it as root/SESSIONID.
	Evidence EvidenceOpener
	// Signer, when set, signs the seal of the bundle.
	Signer evidence.Signer
	// Bus receives the stream events; nil means a new one (Session.Bus).
	Bus *Bus
	// Budget is the session's model budget (llm.NewBudget), the same
	// value the clients of Planner and Navigator charge (llm.Config.Budget):
	// its token limit must be the task's hints.maxTokens and its cost
	// limit the task's hints.maxCostUsd (0 when the task names none). nil
	// means no budget and no count, and is refused for a
	// task that names one (nothing would enforce it); offline agents use
	// no tokens, so any budget holds for them. The session reads it after
	// every Planner and Navigator answer: once it is passed, or once it
	// refused a call it predicted would pass it, the session ends aborted
	// (see "Budgets" in the package documentation).
	Budget *llm.Budget
	// Model names the model, for the manifest; "" when none.
	Model string
	// ModelImages says the Navigator's model accepts images (a registry's
	// "images", or aegis run --vision); never for the offline agents.
	// Without it no screenshot is ever shown to the model; with it, the
	// policy decides (see "Vision escalation" in the package
	// documentation).
	ModelImages bool
	// ModelID and ModelDigest are the identity the model's endpoint
	// reported when a model registry checked it (package modelreg), for
	// the manifest's versions; "" when none was checked or reported.
	ModelID, ModelDigest string
	// ModelPath is the model file a llama.cpp server reported, for the
	// manifest (versions.modelPath); "" when none.
	ModelPath string
	// ModelPrices are the registry's prices of the model, for the
	// manifest (versions.modelPrices); nil when no registry checked it.
	ModelPrices *contract.ModelPrices
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
	// Clock gives the time; nil means time.Now. It is called from several
	// goroutines at once (effects are judged on the driver's goroutines).
	Clock func() time.Time
}

func validate(cfg *Config) error {
	bad := func(format string, args ...any) error {
		return &Error{Code: "config", Msg: fmt.Sprintf(format, args...)}
	}
	// A nil *gate.Gate or *gate.Approvals in the interface is no gate and
	// no approval store.
	if g, ok := cfg.Gate.(*gate.Gate); ok && g == nil {
		cfg.Gate = nil
	}
	if a, ok := cfg.Approvals.(*gate.Approvals); ok && a == nil {
		cfg.Approvals = nil
	}
	if _, err := contract.Encode(schemas.KindInput, cfg.Task); err != nil {
		return &Error{Code: "config", Msg: "invalid task", Err: err}
	}
	switch {
	case cfg.Driver.Mode == "":
		return bad("Driver.Mode is required")
	case cfg.OpenDriver == nil:
		return bad("OpenDriver is required")
	case cfg.Gate == nil:
		return bad("a gate is required")
	case cfg.Planner == nil:
		return bad("a planner is required")
	case cfg.Navigator == nil:
		return bad("a navigator is required")
	case cfg.Evidence == nil:
		return bad("an evidence bundle (Evidence) is required")
	}
	if cfg.SessionID != "" && !idRe.MatchString(cfg.SessionID) {
		return bad("session id %q: want letters, digits, '.', '_' and '-', at most 128, starting with a letter or digit", Sanitize(cfg.SessionID, 140))
	}
	if (cfg.ModelID != "" && cfg.Model == "") || ((cfg.ModelDigest != "" || cfg.ModelPath != "" || cfg.ModelPrices != nil) && cfg.ModelID == "") {
		return bad("a model identity (ModelID, ModelDigest, ModelPath, ModelPrices) needs the model it identifies (Model, ModelID)")
	}
	maxTokens, err := cfg.Task.MaxTokens()
	if err != nil {
		return &Error{Code: "config", Msg: "invalid task", Err: err}
	}
	switch {
	case cfg.Budget == nil && maxTokens > 0:
		// A budget no model client charges would bound nothing.
		return bad("the task sets hints.%s (%d) but no model budget enforces it: make one (llm.NewBudget) for Budget and the model clients' llm.Config.Budget", contract.HintMaxTokens, maxTokens)
	case cfg.Budget != nil && cfg.Budget.Limits().MaxTokens != maxTokens:
		return bad("the model budget's token limit (%d) is not the task's hints.%s (%d; 0 for none)", cfg.Budget.Limits().MaxTokens, contract.HintMaxTokens, maxTokens)
	}
	maxCost, err := cfg.Task.MaxCostUSD()
	if err != nil {
		return &Error{Code: "config", Msg: "invalid task", Err: err}
	}
	switch {
	case cfg.Budget == nil && maxCost > 0:
		return bad("the task sets hints.%s (%v) but no model budget enforces it: make one (llm.NewBudget) with the models' prices for Budget and the model clients' llm.Config.Budget", contract.HintMaxCostUSD, maxCost)
	case cfg.Budget != nil && cfg.Budget.Limits().MaxCostUSD != maxCost:
		return bad("the model budget's cost limit (%v) is not the task's hints.%s (%v; 0 for none)", cfg.Budget.Limits().MaxCostUSD, contract.HintMaxCostUSD, maxCost)
	}
	if _, priced := cfg.Budget.Price(cfg.Model); maxCost > 0 && cfg.Model != "" && !priced {
		return bad("the task sets hints.%s (%v) but the model budget has no price for model %q, so its calls could not be costed: add the model's prices (the model registry's)", contract.HintMaxCostUSD, maxCost, Sanitize(cfg.Model, 256))
	}
	// The session runs under the stricter of the caller's classification
	// and the task's: a task that says sensitive is never shown to a
	// model because its caller said nothing.
	taskClass, err := cfg.Task.Classification()
	if err != nil {
		return &Error{Code: "config", Msg: "invalid task", Err: err}
	}
	if cfg.Classification != "" && !cfg.Classification.Valid() {
		return bad("classification %q: want one of %s", Sanitize(string(cfg.Classification), 40), contract.ClassificationNames())
	}
	cfg.Classification = contract.Stricter(cfg.Classification, taskClass)
	if cfg.Classification == "" {
		cfg.Classification = contract.DefaultClassification
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
