package contract

import "encoding/json"

// DecisionResult is what the gate decided about one action, in the words of
// seed 002.
type DecisionResult string

// The decision results.
const (
	// ResultAllowed: the policy allows the action and it needs no approval.
	ResultAllowed DecisionResult = "allowed"
	// ResultDenied: a deny rule fired, the policy could not answer (fail
	// closed), or an approval was presented that does not hold.
	ResultDenied DecisionResult = "denied"
	// ResultPaused: the policy allows the action but it needs a human
	// approval first (high risk, or a permission level that confirms input).
	ResultPaused DecisionResult = "paused"
	// ResultApproved: the action needed an approval, and a valid one bound
	// to this exact action was consumed.
	ResultApproved DecisionResult = "approved"
)

// ExceptionStatus says what became of one governed exception in a decision.
type ExceptionStatus string

// The exception statuses.
const (
	// ExceptionApplied: the exception waived a deny rule that fired.
	ExceptionApplied ExceptionStatus = "applied"
	// ExceptionExpired: the exception's expiry is not after the decision
	// time; it waives nothing.
	ExceptionExpired ExceptionStatus = "expired"
	// ExceptionMalformed: a field is missing or invalid; it waives nothing.
	ExceptionMalformed ExceptionStatus = "malformed"
	// ExceptionOutOfScope: well formed and live, but the rule it names may
	// not be waived, or did not fire for this action.
	ExceptionOutOfScope ExceptionStatus = "out_of_scope"
)

// RedactedText is what a record holds in place of the text of a type
// action with Redact true: the decision's action (DecisionRecord.Action)
// and the executed action line alike.
const RedactedText = "{{redacted}}"

// RuleEffectRefused is the rule of the denial of an effect the browser's
// boundary refused by itself, before any policy saw it: the session's
// record of it keeps its action's hash (evidence/FORMAT.md, Effects).
const RuleEffectRefused = "effect_refused"

// Recorded returns a as records hold it: the text of a type action with
// Redact true replaced by RedactedText.
func (a Action) Recorded() Action {
	if a.Type == ActType && a.Redact {
		a.Text = RedactedText
	}
	return a
}

// DecisionRecord is the record of one gate decision (schema kind
// "decision", seed 001 section 5): the action id and hash, the element the
// action targets, the policy version, the result and its reasons, the risk,
// the exceptions considered, the approval consumed, and whether the gate
// failed closed.
//
// Allow is true exactly when the action may run now (result allowed or
// approved). Times stay strings (RFC 3339) so that a decoded record
// re-encodes to the same bytes, and so the same hash.
type DecisionRecord struct {
	// DecisionID identifies the decision: "dec-" and 32 lowercase hex
	// digits, the first half of SHA-256 over the policy version, the action
	// hash, the step index and the evaluation time (see package gate).
	DecisionID string `json:"decisionId"`
	// SessionID is the session the action belongs to; "" when the request
	// named none.
	SessionID string `json:"sessionId,omitempty"`
	// StepIndex is the step of the session the action was proposed at, as
	// the request gave it (a negative one is denied).
	StepIndex int `json:"stepIndex"`
	// ActionID is the id the Navigator gave the action; "" when it gave
	// none or one that is not a valid id.
	ActionID string `json:"actionId,omitempty"`
	// ActionHash is the SHA-256 (64 lowercase hex digits) of the canonical
	// JSON of the action, its resolved target, the active URL and the
	// session id: what an approval is bound to. The text of an action with
	// redact true enters it only as an HMAC under a key the gate never
	// writes (gate.Gate.ActionHash), so the hash of a redacted action
	// cannot be brute-forced, nor recomputed after the process ends.
	ActionHash string `json:"actionHash"`
	// ActionName is the stable policy action name, such as "browser.click"
	// ("browser.unknown" for an unknown type).
	ActionName string `json:"actionName"`
	// Action is the action the gate judged, as actions.jsonl records it
	// when it runs (the writer stores the text of a type action with
	// Redact true as {{redacted}} and masks secret values): the executed
	// action line MUST hold this action (evidence/FORMAT.md, section 8,
	// rule 15). Required, with ActiveURL, when Allow is true in an
	// aegis-evidence/2 bundle (the gate denies an action it cannot record,
	// gate.RuleActionUnrecorded). nil when the action was invalid (the gate
	// denies it and does not record it) and in aegis-evidence/1 bundles
	// written before it was recorded.
	Action *Action `json:"action,omitempty"`
	// ActiveURL is the URL of the active page the gate judged the action
	// on (gate.Request.ActiveURL): with Action, SessionID, Target and
	// Effect, what ActionHash covers. nil when Action is, or when the URL
	// is longer than 2048 characters; "" is recorded as given.
	ActiveURL *string `json:"activeUrl,omitempty"`
	// Masked lists where the evidence writer masked the record: the JSON
	// Pointers (RFC 6901) of the strings in which it replaced a secret
	// value or a redacted text by its placeholder, sorted. The writer sets
	// it (whatever the caller gave); the gate never does. A hashed member
	// listed here is why the action hash cannot be recomputed
	// (evidence/FORMAT.md, section 8, rule 15).
	Masked []string `json:"masked,omitempty"`
	// Target is the element the gate judged the action on, as the driver
	// resolved it (gate.Request.Target): nil when the action has no
	// element (navigate, scroll, wait, a whole-page extract) or the element
	// broke its bounds (the gate denies it). With the action, the active
	// URL and the session facts recorded here, it is what re-judging the
	// decision needs (aegis policy diff). Bundles written before it was
	// recorded lack it.
	Target *Element `json:"target,omitempty"`
	// Effect is the effect this decision judged: a state-changing request
	// or navigation the action (ActionID, ActionHash) caused, judged as
	// part of it, with risk that follows the effect. nil for the decision
	// on the action itself.
	Effect *Effect `json:"effect,omitempty"`
	// PolicyVersion is the SHA-256 of the policy files and data the
	// decision was evaluated against (64 lowercase hex digits).
	PolicyVersion string `json:"policyVersion"`
	// PolicySource says where the policy came from: embedded, dir, bundle
	// or remote.
	PolicySource string `json:"policySource"`
	// Allow is true when the action may run now.
	Allow bool `json:"allow"`
	// Result is allowed, denied, paused or approved.
	Result DecisionResult `json:"result"`
	// Reasons are the deny rules that fired, in words, sorted by rule and
	// message; empty when Allow is true. Encoded as [] when nil.
	Reasons []Reason `json:"reasons"`
	// Waived are the deny rules that fired but were waived by an applied
	// governed exception (ExceptionID says which).
	Waived []Reason `json:"waived,omitempty"`
	// Risk is the risk tag of the action: low, medium or high.
	Risk RiskTag `json:"risk"`
	// RiskReasons say why the risk is above the action type's base risk.
	RiskReasons []Reason `json:"riskReasons,omitempty"`
	// RequiresApproval says whether the action needs a human approval.
	RequiresApproval bool `json:"requiresApproval"`
	// ApprovalReasons say why an approval is required.
	ApprovalReasons []Reason `json:"approvalReasons,omitempty"`
	// Permission is the permission level the decision applied (disabled,
	// observe, control, full); "" when the session named an unknown one.
	Permission string `json:"permission,omitempty"`
	// Exceptions are the governed exceptions the session carried, each with
	// what became of it.
	Exceptions []ExceptionUse `json:"exceptions,omitempty"`
	// Approval is the approval consumed by this decision (result approved),
	// or the one presented and refused.
	Approval *ApprovalRef `json:"approval,omitempty"`
	// DecisionLogID is the session's compliance decision log the record
	// belongs to; "" when the request carried no valid one.
	DecisionLogID string `json:"decisionLogId,omitempty"`
	// FailClosed is true when the policy could not answer (not loaded,
	// evaluation error, timeout, malformed result, remote unreachable) and
	// the gate denied by default.
	FailClosed bool `json:"failClosed"`
	// Error says why the gate failed closed; set exactly when FailClosed is.
	Error string `json:"error,omitempty"`
	// EvaluatedAt is the pinned evaluation time (RFC 3339, UTC), the time
	// the policy saw: recomputing the decision uses it.
	EvaluatedAt string `json:"evaluatedAt"`
	// DurationUs is how long the decision took, in microseconds.
	DurationUs int64 `json:"durationUs"`
}

// MarshalJSON encodes the record, writing nil Reasons as [].
func (r DecisionRecord) MarshalJSON() ([]byte, error) {
	type plain DecisionRecord
	p := plain(r)
	if p.Reasons == nil {
		p.Reasons = []Reason{}
	}
	return json.Marshal(p)
}

// Reason is one rule of the policy with what it says, in words.
type Reason struct {
	// Rule is the stable name of the rule, such as "origin_not_allowed".
	Rule string `json:"rule"`
	// Message says why the rule fired, in words.
	Message string `json:"message"`
	// ExceptionID names the governed exception that waived the rule (only
	// in DecisionRecord.Waived).
	ExceptionID string `json:"exceptionId,omitempty"`
}

// ExceptionUse is one governed exception as a decision considered it. The
// fields are as the session gave them (a malformed exception may lack
// some); Status and Why say what became of it.
type ExceptionUse struct {
	// ID names the exception.
	ID string `json:"id,omitempty"`
	// Rule is the deny rule the exception waives.
	Rule string `json:"rule,omitempty"`
	// Reason says why the exception was granted.
	Reason string `json:"reason,omitempty"`
	// ExpiresAt is when the exception expires (RFC 3339), as given.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// DecisionLogID links the exception to its approved decision log entry.
	DecisionLogID string `json:"decisionLogId,omitempty"`
	// Status is applied, expired, malformed or out_of_scope.
	Status ExceptionStatus `json:"status"`
	// Why explains the status in words.
	Why string `json:"why"`
}

// ApprovalChannel names the channel an approval was given on, as the
// evidence records it (evidence/FORMAT.md, section 8, rule 16).
type ApprovalChannel string

// The approval channels.
const (
	// ApprovalChannelTerminal: a person at the terminal aegis runs in.
	ApprovalChannelTerminal ApprovalChannel = "terminal"
	// ApprovalChannelPopup: a person in the extension's popup.
	ApprovalChannelPopup ApprovalChannel = "popup"
	// ApprovalChannelLive: a person in the live console.
	ApprovalChannelLive ApprovalChannel = "live"
	// ApprovalChannelRule: no person: the --approve rule answered (its
	// approver is "policy:" and the mode); it approves no high-risk
	// action.
	ApprovalChannelRule ApprovalChannel = "rule"
	// ApprovalChannelProgram: an approver the program embedding aegis
	// supplied (an API caller, a test), which named none of the channels
	// above.
	ApprovalChannelProgram ApprovalChannel = "program"
)

// ApprovalRef is a human approval as a decision used (or refused) it.
type ApprovalRef struct {
	// ID identifies the approval.
	ID string `json:"id"`
	// Approver names who approved.
	Approver string `json:"approver"`
	// ApprovedAt is when the approval was granted (RFC 3339).
	ApprovedAt string `json:"approvedAt"`
	// ExpiresAt is when the approval expires (RFC 3339).
	ExpiresAt string `json:"expiresAt"`
	// ActionHash is the hash of the action the approval is bound to.
	ActionHash string `json:"actionHash"`
	// Channel is the channel the approval was given on; "" (absent) in a
	// bundle whose manifest commits to no approval key (written before
	// channels were recorded, or by a writer without one, such as a
	// replay).
	Channel ApprovalChannel `json:"channel,omitempty"`
	// MAC is the HMAC-SHA-256 (64 lowercase hex digits) of the approval
	// and its decision's id under the session's approval key, which only
	// the session's process holds until the bundle is sealed
	// (evidence.ApprovalMAC); present exactly when Channel is.
	MAC string `json:"mac,omitempty"`
}
