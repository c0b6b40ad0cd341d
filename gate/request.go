package gate

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// Request is everything the gate judges one action on. The Action is the
// model's and is hostile; Target is the driver's reading of the page, which
// is hostile too; everything else comes from the operator and the task.
type Request struct {
	// SessionID identifies the session (BrowserState.sessionId).
	SessionID string
	// StepIndex is the step the action was proposed at; the policy denies
	// every step past Session.MaxStepBudget. Count from 1.
	StepIndex int
	// Action is the action the Navigator proposed.
	Action contract.Action
	// Target is the element the driver resolved for the action's selector;
	// nil when the action has no selector or the driver could not resolve
	// it (a type action without a target is denied).
	Target *contract.Element
	// ActiveURL is the URL of the active page (BrowserState.activeUrl).
	ActiveURL string
	// Session holds the session's policy facts.
	Session Session
	// Policy holds the session's additions to the policy data.
	Policy SessionPolicy
	// Now is the decision time the policy sees; zero means the gate's
	// clock. It is pinned for the evaluation and recorded, so that the
	// decision can be recomputed.
	Now time.Time
	// ApprovalID names an approval (from Approvals.Grant) for this exact
	// action, presented when a previous decision paused it.
	ApprovalID string
	// Effect, when set, asks about an effect of Action rather than the
	// action itself: a state-changing request or a navigation the browser
	// reported while (or after) the action ran. The policy judges the
	// effect's method, origin, path and field names; its risk follows the
	// effect, whatever the action's words said. The decision records it.
	Effect *contract.Effect
	// Probe marks a question whose answer nothing acts on and no evidence
	// bundle records: aegis policy eval of a policy input document (which
	// ReadInput reads), and the one question a session asks at its start,
	// "would a vision escalation be allowed?" (an extract screenshot action
	// with Vision true), whose answer sets its observations'
	// policyContext.allowVisionEscalation (every escalation is still
	// decided, and recorded, when it is asked for). An action the decision
	// cannot record is judged as it is, rather than denied for that
	// (RuleActionUnrecorded). A session never sets it on an action it
	// runs.
	Probe bool
}

// Session is the policy facts of a session.
type Session struct {
	// AllowedOrigins bound where navigate may go and where any action may
	// run: the task's urls (seed 003). See ParseAllowedOrigin for the forms.
	// An empty list allows nothing.
	AllowedOrigins []string
	// Permission is the permission level (seed 004): disabled, observe,
	// control or full. "" means Preset.
	Permission string
	// Preset is the security preset: safe, balanced, power or developer.
	// "" (with no Permission) means the policy's default_preset.
	Preset string
	// MaxStepBudget is the most steps the session may take
	// (policyContext.maxStepBudget); the policy caps it at its own limit.
	MaxStepBudget int
	// DecisionLogID identifies the session's compliance decision log
	// (policyContext.decisionLogId); required.
	DecisionLogID string
	// Classification is the session's data classification
	// (policyContext.classification): public, restricted or sensitive; ""
	// means restricted. With the policy data (vision.classifications) it
	// decides whether a screenshot may be shown to the model (rule
	// vision_not_allowed). Any other value is an unusable entry of the
	// session, which denies every action (session_policy_invalid).
	Classification contract.Classification
	// Secrets are the secrets the session holds, by name, each with the
	// origins (scheme://host[:port]) it is bound to. The policy lets a
	// secret's placeholder be typed only, as the whole text of a type
	// action, into a field sensitive by the element's own facts on one of
	// its origins, and denies any other use of it, and any placeholder of
	// a name not in the map. The session fills it (a secret declared
	// without origins is bound to the task's first origin); nil holds no
	// secret.
	Secrets map[string][]string
}

// SessionPolicy is what a session adds to the policy data (seed 001's
// input.policy).
type SessionPolicy struct {
	// BlockedDomains are denied on top of the policy's own; each also
	// blocks its subdomains.
	BlockedDomains []string
	// SensitiveSelectors mark fields as sensitive when the action's
	// selector contains one (compared lowercased, without spaces or quotes).
	SensitiveSelectors []string
	// GovernedExceptions may each waive one waivable deny rule until they
	// expire.
	GovernedExceptions []Exception
}

// Exception is a governed exception (seed 001): named, scoped to the one
// rule it waives, with a reason, an expiry and a link to the approved
// decision log entry. An exception that lacks any of these, or has expired,
// waives nothing, and the decision record says why.
type Exception struct {
	// ID names the exception.
	ID string `json:"id"`
	// Rule is the deny rule it waives, such as "origin_not_allowed".
	Rule string `json:"rule"`
	// Reason says why it was granted.
	Reason string `json:"reason"`
	// ExpiresAt is when it expires, RFC 3339.
	ExpiresAt string `json:"expires_at"`
	// DecisionLogID links it to its approved decision log entry.
	DecisionLogID string `json:"decision_log_id"`
}

// MaxExceptionReason bounds an exception's reason, in characters.
const MaxExceptionReason = 1024

// exceptionFacts checks an exception's form and parses its expiry for the
// policy, which decides what it waives.
func exceptionFacts(e Exception) map[string]any {
	var problems []any
	if !contract.IsID(e.ID) {
		problems = append(problems, "its id is missing or not an identifier")
	}
	if e.Rule == "" {
		problems = append(problems, "it names no rule to waive")
	} else if !isRuleName(e.Rule) {
		problems = append(problems, "its rule is not a rule name")
	}
	if strings.TrimSpace(e.Reason) == "" {
		problems = append(problems, "it gives no reason")
	} else if utf8.RuneCountInString(e.Reason) > MaxExceptionReason || !utf8.ValidString(e.Reason) {
		problems = append(problems, fmt.Sprintf("its reason is not valid text of at most %d characters", MaxExceptionReason))
	}
	var expires int64
	if e.ExpiresAt == "" {
		problems = append(problems, "it has no expiry")
	} else if t, err := time.Parse(time.RFC3339Nano, e.ExpiresAt); err != nil || len(e.ExpiresAt) > 64 {
		problems = append(problems, "its expiry is not an RFC 3339 time")
	} else {
		expires = t.UnixNano()
	}
	if !contract.IsID(e.DecisionLogID) {
		problems = append(problems, "it links no decision log entry")
	}
	if problems == nil {
		problems = []any{}
	}
	return map[string]any{
		"id":              text.CutRunes(e.ID, 256),
		"rule":            text.CutRunes(e.Rule, 64),
		"reason":          text.CutRunes(e.Reason, MaxExceptionReason),
		"expires_at":      text.CutRunes(e.ExpiresAt, 64),
		"decision_log_id": text.CutRunes(e.DecisionLogID, 256),
		"expires_ns":      expires,
		"problems":        problems,
	}
}
