package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DriverMode names the driver that runs a browser session.
type DriverMode string

// The driver modes of BrowserState.mode.
const (
	ModeExtension  DriverMode = "extension"  // the Chrome extension
	ModePlaywright DriverMode = "playwright" // Playwright
	ModeSandbox    DriverMode = "sandbox"    // a sandboxed browser
)

// Classification is the data classification of a session.
type Classification string

// The classifications of PolicyContext.classification.
const (
	ClassPublic     Classification = "public"
	ClassRestricted Classification = "restricted"
	ClassSensitive  Classification = "sensitive"
)

// State is a BrowserState (schema kind "state"): the state of one browser
// session at one step, as the driver reports it.
//
// Timestamp stays a string so that a decoded state re-encodes to exactly the
// same value (and so the same hash); it is an RFC 3339 date-time.
type State struct {
	// SessionID identifies the browser session.
	SessionID string `json:"sessionId"`
	// Mode is the driver that runs the session.
	Mode DriverMode `json:"mode"`
	// ActiveURL is the absolute URL of the active page.
	ActiveURL string `json:"activeUrl"`
	// Title is the page's title (page-controlled, may be empty).
	Title string `json:"title"`
	// Viewport is the size of the layout viewport.
	Viewport Viewport `json:"viewport"`
	// TabID is the Chrome tab id of the active tab, nil when the driver has
	// none.
	TabID *int `json:"tabId,omitempty"`
	// Timestamp is when the state was captured (RFC 3339).
	Timestamp string `json:"timestamp"`
	// DOMHash is the SHA-256 of the canonical DOM snapshot, 64 lowercase
	// hex digits.
	DOMHash string `json:"domHash"`
	// PolicyContext holds the policy facts about the session.
	PolicyContext PolicyContext `json:"policyContext"`
}

// Viewport is the size of the layout viewport in CSS pixels and the device
// pixel ratio.
type Viewport struct {
	// Width is the viewport width in CSS pixels.
	Width int `json:"width"`
	// Height is the viewport height in CSS pixels.
	Height int `json:"height"`
	// DeviceScaleFactor is the device pixel ratio.
	DeviceScaleFactor float64 `json:"deviceScaleFactor"`
}

// PolicyContext is the policy facts the gate needs about a session.
type PolicyContext struct {
	// Classification is the data classification of the session.
	Classification Classification `json:"classification"`
	// AllowVisionEscalation says whether the session may use screenshots.
	AllowVisionEscalation bool `json:"allowVisionEscalation"`
	// MaxStepBudget is the most steps the session may take.
	MaxStepBudget int `json:"maxStepBudget"`
	// DecisionLogID identifies the compliance decision log of the session.
	DecisionLogID string `json:"decisionLogId"`
}

// Observation is a BrowserObservation (schema kind "observation"): what the
// driver saw after a step. All of it is page-controlled.
type Observation struct {
	// State is the browser state at the moment of the observation.
	State State `json:"state"`
	// DOMText is the normalized visible text of the page.
	DOMText string `json:"domText"`
	// DOMSnapshot is the serialized DOM of the page.
	DOMSnapshot string `json:"domSnapshot"`
	// Affordances are the elements the Navigator may act on. A nil slice is
	// encoded as [], as the schema requires the field.
	Affordances []Affordance `json:"affordances"`
	// ExtractedArtifacts is what extract actions produced; nil when nothing
	// was extracted.
	ExtractedArtifacts []Artifact `json:"extractedArtifacts,omitempty"`
}

// MarshalJSON encodes the observation, writing a nil Affordances as [].
func (o Observation) MarshalJSON() ([]byte, error) {
	type plain Observation
	p := plain(o)
	if p.Affordances == nil {
		p.Affordances = []Affordance{}
	}
	return json.Marshal(p)
}

// ActionHint says which action fits an affordance.
type ActionHint string

// The action hints of an affordance.
const (
	HintClick  ActionHint = "click"
	HintType   ActionHint = "type"
	HintSelect ActionHint = "select"
	HintScroll ActionHint = "scroll"
)

// Affordance is an element of the page the Navigator may act on.
type Affordance struct {
	// Selector addresses the element.
	Selector string `json:"selector"`
	// Role is the element's ARIA role; "" when absent.
	Role string `json:"role,omitempty"`
	// Text is the element's accessible name or visible text; "" when absent.
	Text string `json:"text,omitempty"`
	// ActionHint says which action fits the element; "" when absent.
	ActionHint ActionHint `json:"actionHint,omitempty"`
	// Generic is set when the element is listed only because of an event
	// handler (a click or drag listener, onclick), a pointer cursor or a
	// tabindex, without a control's tag or role: it may not be a control,
	// and a control inside it is listed before it. Absent when false.
	Generic bool `json:"generic,omitempty"`
}

// ArtifactType says what an extracted artifact is.
type ArtifactType string

// The types of an extracted artifact.
const (
	ArtifactTable      ArtifactType = "table"
	ArtifactText       ArtifactType = "text"
	ArtifactLink       ArtifactType = "link"
	ArtifactScreenshot ArtifactType = "screenshot"
)

// Artifact is a piece of content extracted from the page.
type Artifact struct {
	// ID identifies the artifact within the session.
	ID string `json:"id"`
	// Type says what was extracted.
	Type ArtifactType `json:"type"`
	// Value is the extracted content (for a screenshot, the bundle-relative
	// uri of its image artifact).
	Value string `json:"value"`
	// SourceSelector is the selector of the element the content came from;
	// "" when the whole page was extracted.
	SourceSelector string `json:"sourceSelector,omitempty"`
	// SourceURL is the absolute URL of the page the content came from.
	SourceURL string `json:"sourceUrl"`
	// Hash is the SHA-256 of the content, 64 lowercase hex digits.
	Hash string `json:"hash"`
}

// ActionType is the type of a BrowserAction.
type ActionType string

// The seven action types.
const (
	ActNavigate ActionType = "navigate"
	ActClick    ActionType = "click"
	ActType     ActionType = "type"
	ActSelect   ActionType = "select"
	ActScroll   ActionType = "scroll"
	ActWait     ActionType = "wait"
	ActExtract  ActionType = "extract"
)

// ActionTypes returns the seven action types, in the order of seed 001.
func ActionTypes() []ActionType {
	return []ActionType{ActNavigate, ActClick, ActType, ActSelect, ActScroll, ActWait, ActExtract}
}

// Valid reports whether t is one of the seven action types.
func (t ActionType) Valid() bool {
	_, ok := actionFields[t]
	return ok
}

// ScrollDirection is the direction of a scroll action.
type ScrollDirection string

// The scroll directions.
const (
	ScrollUp   ScrollDirection = "up"
	ScrollDown ScrollDirection = "down"
)

// ExtractKind says what an extract action extracts.
type ExtractKind string

// The kinds of extraction.
const (
	ExtractText       ExtractKind = "text"
	ExtractTable      ExtractKind = "table"
	ExtractLink       ExtractKind = "link"
	ExtractScreenshot ExtractKind = "screenshot"
)

// MaxBatchActions is the most actions one batch (one Navigator response)
// may hold.
const MaxBatchActions = 10

// Action is one BrowserAction (schema kind "action"). It is one flat struct
// for the seven types: which fields apply depends on Type.
//
//	navigate  URL
//	click     Selector, TimeoutMs (optional)
//	type      Selector, Text, Redact
//	select    Selector, Value
//	scroll    Direction, AmountPx (optional)
//	wait      DurationMs
//	extract   Extract, Selector (optional), Vision (optional)
//
// MarshalJSON writes exactly the fields of the action's type (Redact is
// always written for a type action, even when false) and refuses an action
// whose fields of other types are set. UnmarshalJSON is strict: it refuses
// duplicate and unknown keys, nulls, keys of other types and missing
// required keys. Value constraints (lengths, ranges, formats) are the
// schema's: use Decode and Encode, which validate.
type Action struct {
	// ID identifies the action, unique within its batch.
	ID string
	// Type is the action type.
	Type ActionType
	// Reason says why the Navigator proposes the action.
	Reason string
	// PolicyTags classify the action for the policy. A nil slice is encoded
	// as [].
	PolicyTags []string

	// URL is the absolute URL a navigate action loads.
	URL string
	// Selector addresses the element of a click, type or select action, and
	// optionally of an extract action ("" = the whole page).
	Selector string
	// TimeoutMs bounds how long a click waits for its element; 0 means the
	// driver's default.
	TimeoutMs int
	// Text is what a type action types.
	Text string
	// Redact masks a type action's text in logs and evidence.
	Redact bool
	// Value is the option a select action chooses.
	Value string
	// Direction is the direction of a scroll action.
	Direction ScrollDirection
	// AmountPx is how far a scroll action scrolls; 0 means one viewport.
	AmountPx int
	// DurationMs is how long a wait action waits.
	DurationMs int
	// Extract is what an extract action extracts.
	Extract ExtractKind
	// Vision, on an extract screenshot action, asks that the screenshot be
	// shown to the model with the next observation (a vision escalation,
	// which the policy decides: rule vision_not_allowed).
	Vision bool
}

// PolicyName returns the stable policy action name of the action, such as
// "browser.click".
func (a Action) PolicyName() string { return "browser." + string(a.Type) }

// NeedsTarget reports whether the action works on one element of the page,
// which the driver resolves (Describe) and the gate judges: a click, type
// or select, and an extract with a selector.
func (a Action) NeedsTarget() bool {
	switch a.Type {
	case ActClick, ActType, ActSelect:
		return true
	case ActExtract:
		return a.Selector != ""
	}
	return false
}

// actionField is one type-specific field of an Action.
type actionField struct {
	name     string
	required bool
}

// actionFields lists, per type, the fields besides id, type, reason and
// policyTags, in the order they are written.
var actionFields = map[ActionType][]actionField{
	ActNavigate: {{"url", true}},
	ActClick:    {{"selector", true}, {"timeoutMs", false}},
	ActType:     {{"selector", true}, {"text", true}, {"redact", true}},
	ActSelect:   {{"selector", true}, {"value", true}},
	ActScroll:   {{"direction", true}, {"amountPx", false}},
	ActWait:     {{"durationMs", true}},
	ActExtract:  {{"selector", false}, {"extract", true}, {"vision", false}},
}

// baseFields are the fields every action has.
var baseFields = []string{"id", "type", "reason", "policyTags"}

// field returns a pointer to the Action field named by its JSON name, and
// whether it holds its zero value.
func (a *Action) field(name string) (ptr any, zero bool) {
	switch name {
	case "id":
		return &a.ID, a.ID == ""
	case "type":
		return &a.Type, a.Type == ""
	case "reason":
		return &a.Reason, a.Reason == ""
	case "policyTags":
		return &a.PolicyTags, a.PolicyTags == nil
	case "url":
		return &a.URL, a.URL == ""
	case "selector":
		return &a.Selector, a.Selector == ""
	case "timeoutMs":
		return &a.TimeoutMs, a.TimeoutMs == 0
	case "text":
		return &a.Text, a.Text == ""
	case "redact":
		return &a.Redact, !a.Redact
	case "value":
		return &a.Value, a.Value == ""
	case "direction":
		return &a.Direction, a.Direction == ""
	case "amountPx":
		return &a.AmountPx, a.AmountPx == 0
	case "durationMs":
		return &a.DurationMs, a.DurationMs == 0
	case "extract":
		return &a.Extract, a.Extract == ""
	case "vision":
		return &a.Vision, !a.Vision
	}
	return nil, true
}

// allTypedFields is every type-specific field name, in a fixed order.
var allTypedFields = []string{"url", "selector", "timeoutMs", "text", "redact", "value", "direction", "amountPx", "durationMs", "extract", "vision"}

// MarshalJSON writes the common fields and exactly the fields of the
// action's type, in the order of actionFields, each encoded by
// encoding/json: required ones always (so a type action always carries
// redact), optional ones when non-zero. It refuses an unknown type and an
// action that sets a field of another type, so that no field is dropped
// silently.
func (a Action) MarshalJSON() ([]byte, error) {
	fields, ok := actionFields[a.Type]
	if !ok {
		return nil, fmt.Errorf("contract: action %q: unknown type %q", a.ID, a.Type)
	}
	for _, name := range allTypedFields {
		if !a.isZero(name) && !hasField(fields, name) {
			return nil, fmt.Errorf("contract: action %q: field %q does not belong to a %s action", a.ID, name, a.Type)
		}
	}
	var b bytes.Buffer
	write := func(name string, v any) error {
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("contract: action %q: field %q: %w", a.ID, name, err)
		}
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		b.Write(enc)
		return nil
	}
	tags := a.PolicyTags
	if tags == nil {
		tags = []string{}
	}
	for _, m := range []struct {
		name string
		v    any
	}{{"id", a.ID}, {"type", a.Type}, {"reason", a.Reason}, {"policyTags", tags}} {
		if err := write(m.name, m.v); err != nil {
			return nil, err
		}
	}
	for _, f := range fields {
		ptr, zero := a.field(f.name)
		if zero && !f.required {
			continue
		}
		if err := write(f.name, ptr); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// isZero reports whether the field with this JSON name holds its zero
// value.
func (a *Action) isZero(name string) bool {
	_, zero := a.field(name)
	return zero
}

// hasField reports whether fields holds the named one.
func hasField(fields []actionField, name string) bool {
	for _, f := range fields {
		if f.name == name {
			return true
		}
	}
	return false
}

// UnmarshalJSON decodes one action strictly: data must be one JSON object
// without duplicate keys or null values, whose type is one of the seven,
// that has every field its type requires and no field its type does not
// allow.
func (a *Action) UnmarshalJSON(data []byte) error {
	raw, order, err := objectMembers(data, false)
	if err != nil {
		return fmt.Errorf("contract: action: %w", err)
	}
	rt, ok := raw["type"]
	if !ok {
		return errors.New(`contract: action: missing field "type"`)
	}
	var typ ActionType
	if err := json.Unmarshal(rt, &typ); err != nil {
		return fmt.Errorf(`contract: action: field "type": %w`, err)
	}
	fields, ok := actionFields[typ]
	if !ok {
		return fmt.Errorf("contract: action: unknown type %q", typ)
	}
	allowed := map[string]bool{}
	var required []string
	for _, n := range baseFields {
		allowed[n] = true
		required = append(required, n)
	}
	for _, f := range fields {
		allowed[f.name] = true
		if f.required {
			required = append(required, f.name)
		}
	}
	for _, k := range order {
		if !allowed[k] {
			return fmt.Errorf("contract: action: field %q does not belong to a %s action", k, typ)
		}
	}
	for _, k := range required {
		if _, ok := raw[k]; !ok {
			return fmt.Errorf("contract: %s action: missing field %q", typ, k)
		}
	}
	var out Action
	for _, k := range order {
		ptr, _ := out.field(k)
		d := json.NewDecoder(bytes.NewReader(raw[k]))
		if err := d.Decode(ptr); err != nil {
			return fmt.Errorf("contract: %s action: field %q: %w", typ, k, err)
		}
	}
	*a = out
	return nil
}

// objectMembers splits data, which must be exactly one JSON object, into
// its members as raw JSON, refusing duplicate keys, trailing data and,
// unless allowNull, null values. It returns the members and their keys in
// document order.
func objectMembers(data []byte, allowNull bool) (map[string]json.RawMessage, []string, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	tok, err := d.Token()
	if err != nil {
		return nil, nil, err
	}
	if tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("want a JSON object, got %v", tok)
	}
	raw := map[string]json.RawMessage{}
	var order []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("object key %v is not a string", tok)
		}
		if _, dup := raw[key]; dup {
			return nil, nil, fmt.Errorf("duplicate field %q", key)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("field %q: %w", key, err)
		}
		if !allowNull && string(v) == "null" {
			return nil, nil, fmt.Errorf("field %q is null", key)
		}
		raw[key] = v
		order = append(order, key)
	}
	if _, err := d.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, nil, errors.New("data after the JSON object")
	}
	return raw, order, nil
}

// ErrDuplicateActionID is wrapped by the error ValidateBatch returns when
// two actions of a batch share an id.
var ErrDuplicateActionID = errors.New("duplicate action id in batch")

// ValidateBatch checks what the schema of a batch cannot express: that it
// holds 1 to MaxBatchActions actions whose ids are pairwise distinct. The
// gate calls it before it gates any action of the batch, since evidence
// records refer to actions by id.
func ValidateBatch(actions []Action) error {
	if len(actions) == 0 {
		return errors.New("contract: empty action batch")
	}
	if len(actions) > MaxBatchActions {
		return fmt.Errorf("contract: action batch of %d actions (at most %d)", len(actions), MaxBatchActions)
	}
	seen := make(map[string]int, len(actions))
	for i, a := range actions {
		if j, dup := seen[a.ID]; dup {
			return fmt.Errorf("contract: %w: %q at indexes %d and %d", ErrDuplicateActionID, a.ID, j, i)
		}
		seen[a.ID] = i
	}
	return nil
}

// Status is the Navigator's verdict on the goal.
type Status string

// The statuses of a NavigatorResponse.
const (
	StatusContinue Status = "continue" // more steps follow
	StatusDone     Status = "done"     // the goal is reached after these actions
	StatusFailed   Status = "failed"   // the Navigator gives up
)

// NavigatorResponse is the Navigator's answer to one observation (schema
// kind "navigator-response").
type NavigatorResponse struct {
	// Actions are the next actions, 1 to MaxBatchActions, in order.
	Actions []Action `json:"actions"`
	// Status says whether more steps follow.
	Status Status `json:"status"`
	// Summary says what the Navigator did and why.
	Summary string `json:"summary"`
}

// Plan is a BrowserPlan (schema kind "plan"): the Planner's ordered steps
// for a goal.
type Plan struct {
	// Goal is the user's goal the plan serves.
	Goal string `json:"goal"`
	// Steps are the steps, in order.
	Steps []PlanStep `json:"steps"`
	// Revision numbers the plan's revisions; nil (absent) for a plan that
	// does not carry one.
	Revision *int `json:"revision,omitempty"`
}

// PlanStep is one step of a Plan.
type PlanStep struct {
	// ID identifies the step within the plan.
	ID string `json:"id"`
	// Description says what the step does.
	Description string `json:"description"`
	// SuccessCriteria says how to tell that the step succeeded.
	SuccessCriteria string `json:"successCriteria"`
}
