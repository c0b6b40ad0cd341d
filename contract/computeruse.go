package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// The Go side of the computer-use protocol of seed 003 (schema
// computer-use.schema.json, kinds "input", "output", "event" and "control").
//
// Times stay strings (RFC 3339 date-times as sent), so that a decoded value
// re-encodes to the same document: time.Time would rewrite 10:00:00.000Z as
// 10:00:00Z and cannot hold the leap seconds RFC 3339 allows. Free-form
// objects (hints, evidence, unknown output members) stay json.RawMessage:
// opaque, never interpreted by the protocol layer, and after Decode in the
// canonical form (RFC 8785) that Decode decodes from. Integers are Go ints;
// the schema's integers written 5.0 or 5e0 reach them as 5 through that
// canonical form.

// SessionStatus is the state of a computer-use session. Each shape accepts
// a subset: an Output ends completed, aborted, duration_exceeded or
// action_limit_exceeded; a session.ended event may also say failed; a
// Manifest may also say running.
type SessionStatus string

// The session statuses.
const (
	SessionCompleted           SessionStatus = "completed"             // the goal was reached
	SessionAborted             SessionStatus = "aborted"               // an operator aborted the session
	SessionDurationExceeded    SessionStatus = "duration_exceeded"     // the duration budget ran out
	SessionActionLimitExceeded SessionStatus = "action_limit_exceeded" // the action budget ran out
	SessionFailed              SessionStatus = "failed"                // the session failed (events and manifests only)
	SessionRunning             SessionStatus = "running"               // the session is still running (manifests only)
)

// ApprovalDecision is a human's answer to an approval request.
type ApprovalDecision string

// The approval decisions.
const (
	ApprovalApprove ApprovalDecision = "approve" // the action may run, once
	ApprovalDeny    ApprovalDecision = "deny"    // the action is refused
)

// Input is a ComputerUseInput (schema kind "input"): the task handed to a
// session. Every field is untrusted.
type Input struct {
	// Goal says what the session should achieve (1 to 1000 characters).
	Goal string `json:"goal"`
	// URLs is the session's allowlist: 1 to 16 absolute URIs.
	URLs []string `json:"urls"`
	// MaxActions bounds the executed actions (1 to 200); nil when absent.
	MaxActions *int `json:"maxActions,omitempty"`
	// MaxDurationMs bounds the session's wall-clock time in milliseconds
	// (1000 to 1800000); nil when absent.
	MaxDurationMs *int `json:"maxDurationMs,omitempty"`
	// Hints is a free-form JSON object of hints for the planner, such as
	// {"steps": [...]}; empty when absent. It is kept as raw JSON (canonical
	// after Decode): the planner reads it as untrusted data.
	Hints json.RawMessage `json:"hints,omitempty"`
}

// Output is a ComputerUseOutput (schema kind "output"): the result of a
// finished session. The schema allows members beyond the listed ones; they
// are kept in Extra and written back unchanged.
type Output struct {
	// ComputerUseSessionID identifies the session (non-empty).
	ComputerUseSessionID string `json:"computerUseSessionId"`
	// Status says how the session ended: SessionCompleted, SessionAborted,
	// SessionDurationExceeded or SessionActionLimitExceeded.
	Status SessionStatus `json:"status"`
	// Summary says what the session did and found.
	Summary string `json:"summary"`
	// LastURL is the URL of the last page; nil when absent (an empty
	// string is a valid value, distinct from absence).
	LastURL *string `json:"lastUrl,omitempty"`
	// ActionsExecuted counts the executed actions.
	ActionsExecuted int `json:"actionsExecuted"`
	// DurationMs is how long the session ran, in milliseconds.
	DurationMs int `json:"durationMs"`
	// Evidence is a free-form JSON object about the session's evidence;
	// empty when absent.
	Evidence json.RawMessage `json:"evidence,omitempty"`
	// Extra holds the members the schema does not name, by name, as raw
	// JSON; nil when there are none. A name of a listed member is refused
	// when marshaling.
	Extra map[string]json.RawMessage `json:"-"`
}

// outputFields is Output without its methods, for the default encoding of
// the listed members.
type outputFields Output

// outputRequired and outputOptional are the members the schema names.
var (
	outputRequired = []string{"computerUseSessionId", "status", "summary", "actionsExecuted", "durationMs"}
	outputOptional = []string{"lastUrl", "evidence"}
)

// isOutputMember reports whether name is a member the schema names.
func isOutputMember(name string) bool {
	for _, n := range outputRequired {
		if n == name {
			return true
		}
	}
	for _, n := range outputOptional {
		if n == name {
			return true
		}
	}
	return false
}

// MarshalJSON writes the listed members, then the Extra members sorted by
// name. It refuses an Extra member that shadows a listed one or whose value
// is not JSON.
func (o Output) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(outputFields(o))
	if err != nil || len(o.Extra) == 0 {
		return b, err
	}
	names := make([]string, 0, len(o.Extra))
	for name := range o.Extra {
		if isOutputMember(name) {
			return nil, fmt.Errorf("contract: output: extra member %q shadows a listed member", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1]) // without the closing brace
	for _, name := range names {
		k, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(o.Extra[name])
		if err != nil {
			return nil, fmt.Errorf("contract: output: extra member %q: %w", name, err)
		}
		buf.WriteByte(',')
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes an output strictly: one JSON object without
// duplicate keys, with every required member, no null listed member, and
// the unlisted members kept in Extra.
func (o *Output) UnmarshalJSON(data []byte) error {
	raw, order, err := objectMembers(data, true)
	if err != nil {
		return fmt.Errorf("contract: output: %w", err)
	}
	for _, name := range outputRequired {
		if _, ok := raw[name]; !ok {
			return fmt.Errorf("contract: output: missing field %q", name)
		}
	}
	var out Output
	for _, name := range order {
		v := raw[name]
		if !isOutputMember(name) {
			if out.Extra == nil {
				out.Extra = map[string]json.RawMessage{}
			}
			out.Extra[name] = v
			continue
		}
		if string(v) == "null" {
			return fmt.Errorf("contract: output: field %q is null", name)
		}
		var ptr any
		switch name {
		case "computerUseSessionId":
			ptr = &out.ComputerUseSessionID
		case "status":
			ptr = &out.Status
		case "summary":
			ptr = &out.Summary
		case "lastUrl":
			ptr = &out.LastURL
		case "actionsExecuted":
			ptr = &out.ActionsExecuted
		case "durationMs":
			ptr = &out.DurationMs
		case "evidence":
			ptr = &out.Evidence
		}
		if err := json.Unmarshal(v, ptr); err != nil {
			return fmt.Errorf("contract: output: field %q: %w", name, err)
		}
	}
	*o = out
	return nil
}

// EventType is the type of a StreamEvent.
type EventType string

// The seven event types of the session stream.
const (
	EventSessionStarted   EventType = "session.started"   // the session started
	EventAction           EventType = "action"            // an action was executed
	EventScreenshot       EventType = "screenshot"        // a screenshot was taken
	EventApprovalRequired EventType = "approval_required" // an action awaits a human's approval
	EventApprovalResolved EventType = "approval_resolved" // a pending approval was answered
	EventSessionEnded     EventType = "session.ended"     // the session ended
	EventError            EventType = "error"             // something went wrong
)

// EventTypes returns the seven event types in the order of seed 003.
func EventTypes() []EventType {
	return []EventType{EventSessionStarted, EventAction, EventScreenshot, EventApprovalRequired, EventApprovalResolved, EventSessionEnded, EventError}
}

// StreamEvent is a ComputerUseStreamEvent (schema kind "event"): one event
// of the session's SSE stream. It is one flat struct for the seven shapes;
// Type selects which fields belong to the event, and MarshalJSON and
// UnmarshalJSON write and accept exactly those. Each field's comment names
// the types it belongs to (R: required, O: optional).
//
// Value constraints (enumerations, formats) are the schema's: use Decode
// and Encode, which validate.
type StreamEvent struct {
	// Type is the event type.
	Type EventType
	// ComputerUseSessionID identifies the session (session.started R).
	ComputerUseSessionID string
	// ActionID identifies the action (action R, approval_required R,
	// approval_resolved R).
	ActionID string
	// ActionType is the kind of browser action (action R,
	// approval_required R).
	ActionType ActionType
	// RiskLevel is the action's risk tag (action R).
	RiskLevel RiskTag
	// URL is a page's URL, or for a screenshot where it can be fetched
	// (screenshot R, action O, approval_required O); nil when absent.
	URL *string
	// Summary says what happened, in words (action R, approval_required R,
	// session.ended R).
	Summary string
	// Width is the screenshot's width in pixels (screenshot O); nil when
	// absent.
	Width *int
	// Height is the screenshot's height in pixels (screenshot O); nil when
	// absent.
	Height *int
	// Decision is the human's answer (approval_resolved R).
	Decision ApprovalDecision
	// Status says how the session ended (session.ended R): any
	// SessionStatus but SessionRunning.
	Status SessionStatus
	// Code is a machine-readable error code (error R).
	Code string
	// Message says what went wrong (error R).
	Message string
	// Timestamp is when the event happened, an RFC 3339 date-time (every
	// type R).
	Timestamp string
}

// eventFields lists, per event type, the fields besides type, in the order
// they are written.
var eventFields = map[EventType][]unionField{
	EventSessionStarted:   {{"computerUseSessionId", true}, {"timestamp", true}},
	EventAction:           {{"actionId", true}, {"actionType", true}, {"riskLevel", true}, {"url", false}, {"summary", true}, {"timestamp", true}},
	EventScreenshot:       {{"url", true}, {"width", false}, {"height", false}, {"timestamp", true}},
	EventApprovalRequired: {{"actionId", true}, {"actionType", true}, {"summary", true}, {"url", false}, {"timestamp", true}},
	EventApprovalResolved: {{"actionId", true}, {"decision", true}, {"timestamp", true}},
	EventSessionEnded:     {{"status", true}, {"summary", true}, {"timestamp", true}},
	EventError:            {{"code", true}, {"message", true}, {"timestamp", true}},
}

// eventFieldNames is every field name of StreamEvent but type.
var eventFieldNames = []string{"computerUseSessionId", "actionId", "actionType", "riskLevel", "url", "summary", "width", "height", "decision", "status", "code", "message", "timestamp"}

// field returns a pointer to the field named by its JSON name, and whether
// it holds its zero value.
func (e *StreamEvent) field(name string) (ptr any, zero bool) {
	switch name {
	case "computerUseSessionId":
		return &e.ComputerUseSessionID, e.ComputerUseSessionID == ""
	case "actionId":
		return &e.ActionID, e.ActionID == ""
	case "actionType":
		return &e.ActionType, e.ActionType == ""
	case "riskLevel":
		return &e.RiskLevel, e.RiskLevel == ""
	case "url":
		return &e.URL, e.URL == nil
	case "summary":
		return &e.Summary, e.Summary == ""
	case "width":
		return &e.Width, e.Width == nil
	case "height":
		return &e.Height, e.Height == nil
	case "decision":
		return &e.Decision, e.Decision == ""
	case "status":
		return &e.Status, e.Status == ""
	case "code":
		return &e.Code, e.Code == ""
	case "message":
		return &e.Message, e.Message == ""
	case "timestamp":
		return &e.Timestamp, e.Timestamp == ""
	}
	return nil, true
}

// MarshalJSON writes type and exactly the fields of the event's type:
// required ones always, optional ones when set. It refuses an unknown type,
// a field of another type that is set (so nothing is dropped silently),
// and a required pointer field (a screenshot's URL) that is nil.
func (e StreamEvent) MarshalJSON() ([]byte, error) {
	fields, ok := eventFields[e.Type]
	if !ok {
		return nil, fmt.Errorf("contract: event: unknown type %q", e.Type)
	}
	return marshalUnion("event", "type", e.Type, fields, eventFieldNames, e.field)
}

// UnmarshalJSON decodes one event strictly: data must be one JSON object
// without duplicate keys or null values, whose type is one of the seven,
// that has every field its type requires and no field its type does not
// allow.
func (e *StreamEvent) UnmarshalJSON(data []byte) error {
	var out StreamEvent
	err := unmarshalUnion("event", "type", data, func(tag json.RawMessage) ([]unionField, error) {
		if err := json.Unmarshal(tag, &out.Type); err != nil {
			return nil, err
		}
		fields, ok := eventFields[out.Type]
		if !ok {
			return nil, fmt.Errorf("unknown type %q", out.Type)
		}
		return fields, nil
	}, out.field)
	if err != nil {
		return err
	}
	*e = out
	return nil
}

// ControlAction is what a ControlRequest asks for.
type ControlAction string

// The control actions.
const (
	ControlAbort    ControlAction = "abort"    // stop the session
	ControlDecision ControlAction = "decision" // answer a pending approval
)

// ControlRequest is a ComputerUseControlRequest (schema kind "control"): a
// request on the session's control channel. Like StreamEvent it is one flat
// struct; Action selects the fields that belong to it (R: required, O:
// optional).
type ControlRequest struct {
	// Action is what the request asks for.
	Action ControlAction
	// ComputerUseSessionID identifies the session (abort R, decision R).
	ComputerUseSessionID string
	// Reason says why the session is aborted (abort O); nil when absent.
	Reason *string
	// ActionID identifies the action being decided (decision R).
	ActionID string
	// Decision is the human's answer (decision R).
	Decision ApprovalDecision
}

// controlFields lists, per control action, the fields besides action, in
// the order they are written.
var controlFields = map[ControlAction][]unionField{
	ControlAbort:    {{"computerUseSessionId", true}, {"reason", false}},
	ControlDecision: {{"computerUseSessionId", true}, {"actionId", true}, {"decision", true}},
}

// controlFieldNames is every field name of ControlRequest but action.
var controlFieldNames = []string{"computerUseSessionId", "reason", "actionId", "decision"}

// field returns a pointer to the field named by its JSON name, and whether
// it holds its zero value.
func (c *ControlRequest) field(name string) (ptr any, zero bool) {
	switch name {
	case "computerUseSessionId":
		return &c.ComputerUseSessionID, c.ComputerUseSessionID == ""
	case "reason":
		return &c.Reason, c.Reason == nil
	case "actionId":
		return &c.ActionID, c.ActionID == ""
	case "decision":
		return &c.Decision, c.Decision == ""
	}
	return nil, true
}

// MarshalJSON writes action and exactly the fields of the request's
// action, refusing an unknown action and a set field of the other one.
func (c ControlRequest) MarshalJSON() ([]byte, error) {
	fields, ok := controlFields[c.Action]
	if !ok {
		return nil, fmt.Errorf("contract: control request: unknown action %q", c.Action)
	}
	return marshalUnion("control request", "action", c.Action, fields, controlFieldNames, c.field)
}

// UnmarshalJSON decodes one control request strictly, as
// StreamEvent.UnmarshalJSON does an event.
func (c *ControlRequest) UnmarshalJSON(data []byte) error {
	var out ControlRequest
	err := unmarshalUnion("control request", "action", data, func(tag json.RawMessage) ([]unionField, error) {
		if err := json.Unmarshal(tag, &out.Action); err != nil {
			return nil, err
		}
		fields, ok := controlFields[out.Action]
		if !ok {
			return nil, fmt.Errorf("unknown action %q", out.Action)
		}
		return fields, nil
	}, out.field)
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// unionField is one field of a member of a tagged union.
type unionField struct {
	name     string
	required bool
}

// marshalUnion writes a member of a tagged union: the tag, then the member's
// fields in order, required ones always and optional ones when set. what
// names the union in errors; all lists every field of the flat struct, and
// field returns a pointer to one and whether it is zero.
func marshalUnion(what, tagName string, tag any, fields []unionField, all []string, field func(string) (any, bool)) ([]byte, error) {
	own := make(map[string]bool, len(fields))
	for _, f := range fields {
		own[f.name] = true
	}
	for _, name := range all {
		if _, zero := field(name); !zero && !own[name] {
			return nil, fmt.Errorf("contract: %s %v: field %q does not belong to it", what, tag, name)
		}
	}
	var b bytes.Buffer
	write := func(name string, v any) error {
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("contract: %s %v: field %q: %w", what, tag, name, err)
		}
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		b.Write(enc)
		return nil
	}
	b.WriteByte('{')
	if err := write(tagName, tag); err != nil {
		return nil, err
	}
	for _, f := range fields {
		ptr, zero := field(f.name)
		if zero {
			if !f.required {
				continue
			}
			if isNilPointer(ptr) {
				return nil, fmt.Errorf("contract: %s %v: missing field %q", what, tag, f.name)
			}
		}
		b.WriteByte(',')
		if err := write(f.name, ptr); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// isNilPointer reports whether ptr points to a nil pointer field.
func isNilPointer(ptr any) bool {
	switch p := ptr.(type) {
	case **string:
		return *p == nil
	case **int:
		return *p == nil
	}
	return false
}

// unmarshalUnion decodes a member of a tagged union strictly: data must be
// one JSON object without duplicate keys or null values, whose tag selects
// the member (through member, which also stores the tag), with every field
// the member requires and no other. field returns a pointer to a field of
// the value being decoded.
func unmarshalUnion(what, tagName string, data []byte, member func(json.RawMessage) ([]unionField, error), field func(string) (any, bool)) error {
	raw, order, err := objectMembers(data, true)
	if err != nil {
		return fmt.Errorf("contract: %s: %w", what, err)
	}
	for _, name := range order {
		if string(raw[name]) == "null" {
			return fmt.Errorf("contract: %s: field %q is null", what, name)
		}
	}
	rt, ok := raw[tagName]
	if !ok {
		return fmt.Errorf("contract: %s: missing field %q", what, tagName)
	}
	fields, err := member(rt)
	if err != nil {
		return fmt.Errorf("contract: %s: field %q: %w", what, tagName, err)
	}
	allowed := make(map[string]bool, len(fields))
	for _, f := range fields {
		allowed[f.name] = true
		if _, ok := raw[f.name]; f.required && !ok {
			return fmt.Errorf("contract: %s %s: missing field %q", what, rt, f.name)
		}
	}
	for _, name := range order {
		if name == tagName {
			continue
		}
		if !allowed[name] {
			return fmt.Errorf("contract: %s %s: field %q does not belong to it", what, rt, name)
		}
		ptr, _ := field(name)
		if err := json.Unmarshal(raw[name], ptr); err != nil {
			return fmt.Errorf("contract: %s %s: field %q: %w", what, rt, name, err)
		}
	}
	return nil
}
