package nativehost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
)

// Version is the version of the message protocol this host speaks
// (PROTOCOL.md). Every message carries it in "v".
const Version = 1

// Kind is what a message is.
type Kind string

// The message kinds.
const (
	// KindRequest asks the other side to do something; it has an id and
	// a method, and gets exactly one response with the same id.
	KindRequest Kind = "request"
	// KindResponse answers a request of the other side: a result or an
	// error.
	KindResponse Kind = "response"
	// KindEvent tells the other side something; it gets no answer.
	KindEvent Kind = "event"
)

// Methods the extension calls on the host.
const (
	// MethodHello opens the conversation: HelloParams, answered by
	// HelloResult. Nothing else is accepted before it.
	MethodHello = "hello"
	// MethodStart starts a session on a tab: StartParams, answered by
	// StartResult.
	MethodStart = "session.start"
	// MethodAbort aborts the running session: AbortParams.
	MethodAbort = "session.abort"
	// MethodApprove answers the pending approval request:
	// ApprovalAnswerParams.
	MethodApprove = "approval.answer"
	// MethodPing echoes its data back (both directions): PingParams.
	MethodPing = "ping"
)

// Methods the host calls on the extension (the extension driver's calls).
// Their parameters are documented in PROTOCOL.md; the driver package
// builds them.
const (
	MethodTabOpen     = "tab.open"
	MethodTabClose    = "tab.close"
	MethodTabInfo     = "tab.info"
	MethodTabNavigate = "tab.navigate"
	MethodTabCall     = "tab.call"
	MethodTabCapture  = "tab.capture"
	// MethodBoundarySet installs the network and navigation boundary of
	// a tab (declarativeNetRequest session rules scoped to it): its
	// allowed origins, whether state-changing requests are held, and
	// whether WebRTC is left to the page (allowWebRTC).
	MethodBoundarySet = "boundary.set"
	// MethodBoundaryClear removes the boundary of a tab.
	MethodBoundaryClear = "boundary.clear"
)

// Events the extension sends to the host.
const (
	// EventBoundaryRefused reports one request, navigation or window of a
	// tab under a boundary that the browser refused: BoundaryRefusedEvent.
	// The extension driver of the tab takes it (Conn.Subscribe).
	EventBoundaryRefused = "boundary.refused"
)

// Events the host sends to the extension.
const (
	// EventSession carries one stream event of the session
	// (contract.StreamEvent), in the order the evidence records them.
	EventSession = "session.event"
	// EventStep carries one action the session handled: StepEvent.
	EventStep = "session.step"
	// EventApproval asks the person to approve one action:
	// ApprovalRequestEvent.
	EventApproval = "approval.request"
	// EventEnded says the session ended and where its evidence is:
	// EndedEvent.
	EventEnded = "session.ended"
	// EventError reports a refusal or a failure that is not the answer to
	// a request (a protocol violation, the host shutting down): WireError.
	EventError = "host.error"
)

// Message is one protocol message, the JSON of one frame.
type Message struct {
	// V is the protocol version; always Version.
	V int `json:"v"`
	// Kind is request, response or event.
	Kind Kind `json:"kind"`
	// ID numbers a request among its sender's requests (from 1), and names
	// the request a response answers.
	ID int64 `json:"id,omitempty"`
	// Method is a request's method.
	Method string `json:"method,omitempty"`
	// Event is an event's name.
	Event string `json:"event,omitempty"`
	// Params holds a request's parameters or an event's data.
	Params json.RawMessage `json:"params,omitempty"`
	// Result holds a successful response's result.
	Result json.RawMessage `json:"result,omitempty"`
	// Error holds a failed response's error.
	Error *WireError `json:"error,omitempty"`
}

// Bounds of a message's fields.
const (
	maxMethod  = 64
	maxID      = 1<<53 - 1 // JavaScript's largest safe integer
	maxMessage = 2000      // runes of an error message
)

// DecodeMessage parses one frame's body strictly: one JSON object with no
// unknown member, the right version, and the members its kind requires
// (and no others). A message of another version is an *Error with
// CodeUnsupportedVersion; anything else wrong is CodeBadMessage.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if !utf8.Valid(b) {
		return m, &Error{Code: CodeBadMessage, Message: "the message is not UTF-8"}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return Message{}, &Error{Code: CodeBadMessage, Message: "the message is not a protocol message: " + bound(err.Error(), 200)}
	}
	if d.More() {
		return Message{}, &Error{Code: CodeBadMessage, Message: "the message has data after its JSON object"}
	}
	if m.V != Version {
		return m, &Error{Code: CodeUnsupportedVersion, Message: fmt.Sprintf("protocol version %d is not supported (this host speaks %d)", m.V, Version)}
	}
	bad := func(msg string) (Message, error) { return m, &Error{Code: CodeBadMessage, Message: msg} }
	if m.ID < 0 || m.ID > maxID {
		return bad("the id is out of range")
	}
	switch m.Kind {
	case KindRequest:
		if m.ID == 0 || m.Method == "" || len(m.Method) > maxMethod || m.Event != "" || m.Result != nil || m.Error != nil {
			return bad("a request has an id, a method and optional params, nothing else")
		}
	case KindResponse:
		if m.ID == 0 || m.Method != "" || m.Event != "" || m.Params != nil || (m.Result == nil) == (m.Error == nil) {
			return bad("a response has an id and either a result or an error, nothing else")
		}
	case KindEvent:
		if m.ID != 0 || m.Event == "" || len(m.Event) > maxMethod || m.Method != "" || m.Result != nil || m.Error != nil {
			return bad("an event has a name and optional params, nothing else")
		}
	default:
		return bad(fmt.Sprintf("unknown message kind %q", bound(string(m.Kind), 32)))
	}
	return m, nil
}

// Encode returns the JSON of m with V set.
func (m Message) Encode() ([]byte, error) {
	m.V = Version
	return json.Marshal(m)
}

// DecodeParams decodes a request's params (or an event's data) strictly
// into v: unknown members are refused, and missing params decode as {}.
// A failure is an *Error with CodeBadParams.
func DecodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &Error{Code: CodeBadParams, Message: "bad parameters: " + bound(err.Error(), 300)}
	}
	if d.More() {
		return &Error{Code: CodeBadParams, Message: "bad parameters: data after the object"}
	}
	return nil
}

// Code is a protocol error code. The list is append-only: a code's number
// and name never change and are never reused (PROTOCOL.md has the table).
type Code int

// The protocol error codes.
const (
	// CodeBadMessage: a frame that is not a valid protocol message.
	CodeBadMessage Code = 1
	// CodeFrameTooLarge: a frame over the size cap.
	CodeFrameTooLarge Code = 2
	// CodeUnsupportedVersion: a message of a protocol version the
	// receiver does not speak.
	CodeUnsupportedVersion Code = 3
	// CodeHandshakeRequired: a request before hello.
	CodeHandshakeRequired Code = 4
	// CodeUnknownMethod: a request of an unknown method.
	CodeUnknownMethod Code = 5
	// CodeBadParams: parameters of the wrong shape or out of bounds.
	CodeBadParams Code = 6
	// CodeSessionRunning: session.start while a session runs.
	CodeSessionRunning Code = 7
	// CodeNoSession: a session command with no session running.
	CodeNoSession Code = 8
	// CodeUnexpectedResponse: a response to no request in flight (an
	// action result for an action never sent).
	CodeUnexpectedResponse Code = 9
	// CodeApprovalMismatch: an approval for another action or another
	// action hash than the one pending.
	CodeApprovalMismatch Code = 10
	// CodeNoPendingApproval: an approval answer with no approval pending.
	CodeNoPendingApproval Code = 11
	// CodeOriginRefused: the caller's origin is not allowed by the
	// installed host manifest.
	CodeOriginRefused Code = 12
	// CodeConfig: the host's configuration cannot run the session (no
	// model configured, an unreadable config file).
	CodeConfig Code = 13
	// CodeInternal: the receiver failed.
	CodeInternal Code = 14
	// CodeTimeout: the request did not complete in time.
	CodeTimeout Code = 15
	// CodeTabClosed: the tab is gone.
	CodeTabClosed Code = 16
	// CodeNavigationFailed: the browser did not load the page.
	CodeNavigationFailed Code = 17
	// CodeOriginNotAllowed: the tab shows a page outside the session's
	// allowed origins, so the extension refused to touch it.
	CodeOriginNotAllowed Code = 18
	// CodeScriptFailed: the content script could not be injected or run.
	CodeScriptFailed Code = 19
	// CodeUnsupported: the receiver cannot do this.
	CodeUnsupported Code = 20
	// CodeShuttingDown: the sender is ending the conversation.
	CodeShuttingDown Code = 21
	// CodeTargetChanged: the element or the page an action was judged on
	// changed before it ran (checked in the page, in the same turn as the
	// action): nothing was done.
	CodeTargetChanged Code = 22
	// CodeConfigRejected: config.set's settings do not validate, or the
	// configuration file cannot be read or written: nothing was changed.
	CodeConfigRejected Code = 23
)

var codeNames = map[Code]string{
	CodeBadMessage:         "bad_message",
	CodeFrameTooLarge:      "frame_too_large",
	CodeUnsupportedVersion: "unsupported_version",
	CodeHandshakeRequired:  "handshake_required",
	CodeUnknownMethod:      "unknown_method",
	CodeBadParams:          "bad_params",
	CodeSessionRunning:     "session_running",
	CodeNoSession:          "no_session",
	CodeUnexpectedResponse: "unexpected_response",
	CodeApprovalMismatch:   "approval_mismatch",
	CodeNoPendingApproval:  "no_pending_approval",
	CodeOriginRefused:      "origin_refused",
	CodeConfig:             "config",
	CodeInternal:           "internal",
	CodeTimeout:            "timeout",
	CodeTabClosed:          "tab_closed",
	CodeNavigationFailed:   "navigation_failed",
	CodeOriginNotAllowed:   "origin_not_allowed",
	CodeScriptFailed:       "script_failed",
	CodeUnsupported:        "unsupported",
	CodeShuttingDown:       "shutting_down",
	CodeTargetChanged:      "target_changed",
	CodeConfigRejected:     "config_rejected",
}

// Codes returns every code, in order.
func Codes() []Code {
	out := make([]Code, 0, len(codeNames))
	for c := Code(1); ; c++ {
		if _, ok := codeNames[c]; !ok {
			return out
		}
		out = append(out, c)
	}
}

// String returns the code's name ("code_N" for an unknown code).
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code_%d", int(c))
}

// DriverCode maps a code to the driver error code an action that met it
// fails with.
func (c Code) DriverCode() contract.ErrorCode {
	switch c {
	case CodeTimeout:
		return contract.CodeTimeout
	case CodeTabClosed, CodeShuttingDown:
		return contract.CodePageClosed
	case CodeNavigationFailed, CodeOriginNotAllowed:
		return contract.CodeNavigationBlocked
	case CodeUnsupported, CodeUnknownMethod:
		return contract.CodeUnsupported
	case CodeTargetChanged:
		return contract.CodeTargetChanged
	}
	return contract.CodeInternal
}

// Error is a protocol error: the error of a failed response, an error
// event, or a refusal of the host.
type Error struct {
	// Code classifies it.
	Code Code
	// Message says what happened, in words.
	Message string
}

// Error returns the code's name and the message.
func (e *Error) Error() string { return "nativehost: " + e.Code.String() + ": " + e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Wire returns the error as it goes on the wire.
func (e *Error) Wire() *WireError {
	return &WireError{Code: e.Code, Name: e.Code.String(), Message: bound(e.Message, maxMessage)}
}

// WireError is an error on the wire: {"code": 9, "name":
// "unexpected_response", "message": "..."}. The name is informative; the
// number is what receivers compare.
type WireError struct {
	// Code is the error code (the table in PROTOCOL.md).
	Code Code `json:"code"`
	// Name is the code's name, for people reading logs.
	Name string `json:"name"`
	// Message says what happened.
	Message string `json:"message"`
}

// Err returns w as an *Error.
func (w *WireError) Err() *Error { return &Error{Code: w.Code, Message: bound(w.Message, maxMessage)} }

// errorf returns an *Error.
func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asError returns err as an *Error, CodeInternal for a foreign error.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// bound makes s valid UTF-8 without control characters but tab and
// newline, cut to n runes.
func bound(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == n {
			b.WriteString("…")
			break
		}
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
		i++
	}
	return b.String()
}

// --- Parameters and results of the extension's requests ------------------

// HelloParams opens the conversation.
type HelloParams struct {
	// Protocol lists the protocol versions the extension speaks.
	Protocol []int `json:"protocol"`
	// Extension is the extension's version (manifest "version").
	Extension string `json:"extension"`
}

// HelloResult answers hello.
type HelloResult struct {
	// Protocol is the version both sides speak from now on.
	Protocol int `json:"protocol"`
	// Host is the aegis version.
	Host string `json:"host"`
	// Origin is the caller's origin as Chrome gave it to the host.
	Origin string `json:"origin"`
	// Session is the id of the running session, "" when none.
	Session string `json:"session,omitempty"`
}

// StartParams starts a session on a tab.
type StartParams struct {
	// TabID is the tab the session acts on (the person's tab).
	TabID int `json:"tabId"`
	// Goal is the task's goal, in the person's words.
	Goal string `json:"goal"`
	// Origins are the origins the session may reach; the first is where a
	// tab outside them is sent first. At least one.
	Origins []string `json:"origins"`
	// StartURL is the first page: the tab's URL when its origin is
	// allowed; "" means the first origin.
	StartURL string `json:"startUrl,omitempty"`
	// Preset is the policy preset: safe, balanced, power or developer; ""
	// is the policy's default.
	Preset string `json:"preset,omitempty"`
	// Steps, when present, makes it a steps task (one step a line, the
	// steps grammar of the navigator) run without a model.
	Steps []string `json:"steps,omitempty"`
	// MaxTokens, when not 0, is the session's token budget (the task's
	// hints.maxTokens: 1 to contract.MaxTaskTokens), bounding the tokens
	// of its model calls; without it they are counted, not bounded.
	MaxTokens int `json:"maxTokens,omitempty"`
	// Classification, when set, is the task's classification
	// (hints.classification: public, restricted or sensitive), which the
	// policy's vision escalation reads; "" is the session's default,
	// restricted.
	Classification string `json:"classification,omitempty"`
}

// StartResult answers session.start.
type StartResult struct {
	// Session is the session's id.
	Session string `json:"session"`
	// Evidence is the directory the evidence bundle is written to.
	Evidence string `json:"evidence"`
}

// AbortParams aborts the session.
type AbortParams struct {
	// Reason says why, for the record.
	Reason string `json:"reason,omitempty"`
}

// ApprovalAnswerParams answers the pending approval request. ActionID and
// ActionHash must be those of the request: the approval is bound to the
// hash, and one for any other hash is refused.
type ApprovalAnswerParams struct {
	// ActionID is the pending action's id.
	ActionID string `json:"actionId"`
	// ActionHash is the pending action's hash, as the request gave it.
	ActionHash string `json:"actionHash"`
	// Decision is approve or deny.
	Decision contract.ApprovalDecision `json:"decision"`
}

// PingParams is echoed back by ping.
type PingParams struct {
	// Data is any text.
	Data string `json:"data"`
}

// --- Events of the extension ---------------------------------------------

// BoundaryRefusedEvent is one refusal of a tab's boundary: the request's
// URL, method and resource type (Chrome's webRequest names: main_frame,
// sub_frame, xmlhttprequest, ping, websocket...), the frame it came from
// (0 for the top frame), and why it was refused.
type BoundaryRefusedEvent struct {
	TabID   int    `json:"tabId"`
	URL     string `json:"url"`
	Method  string `json:"method"`
	Type    string `json:"type"`
	FrameID int    `json:"frameId"`
	Reason  string `json:"reason"`
}

// --- Events of the host --------------------------------------------------

// StepEvent describes one action the session handled (session.StepReport):
// its position in the action budget, the action described in one line
// (never typed text), the gate's decision and risk, the deny reasons, and
// whether the driver ran it and it succeeded.
type StepEvent struct {
	Index    int                     `json:"index"`
	Budget   int                     `json:"budget"`
	ActionID string                  `json:"actionId"`
	Type     contract.ActionType     `json:"type"`
	Action   string                  `json:"action"`
	Decision contract.DecisionResult `json:"decision,omitempty"`
	Risk     contract.RiskTag        `json:"risk,omitempty"`
	Reasons  []string                `json:"reasons,omitempty"`
	Executed bool                    `json:"executed"`
	OK       bool                    `json:"ok"`
	Error    string                  `json:"error,omitempty"`
	Ms       int64                   `json:"ms"`
	// Effect, when set, makes the event one about an effect of the action
	// (a request or navigation the page made): Decision, Risk and Reasons
	// are the effect's, and Executed is false.
	Effect *contract.Effect `json:"effect,omitempty"`
	// Reason is the Navigator's reason for the action (model text, at
	// most MaxReason characters), and Batch the Navigator call that
	// proposed it (0 for the first navigation): the popup shows the
	// reasoning once a batch.
	Reason string `json:"reason,omitempty"`
	Batch  int    `json:"batch"`
}

// ApprovalRequestEvent asks the person about one action: its id and hash
// (which the answer must repeat), type, one-line description, target
// element, page, the gate's risk and reasons, and how long the person has.
// Everything but ActionHash, Risk and TimeoutMs comes from the model or the
// page: the popup shows it as text, never as markup.
type ApprovalRequestEvent struct {
	ActionID   string              `json:"actionId"`
	ActionHash string              `json:"actionHash"`
	Type       contract.ActionType `json:"type"`
	Action     string              `json:"action"`
	Target     *contract.Element   `json:"target,omitempty"`
	Page       string              `json:"page"`
	Risk       contract.RiskTag    `json:"risk"`
	Reasons    []contract.Reason   `json:"reasons"`
	TimeoutMs  int64               `json:"timeoutMs"`
	// Values are what the action would submit (typed text, option, URL,
	// a request's field names), secrets as {{secret:NAME}} placeholders.
	Values []SubmitValue `json:"values"`
}

// EndedEvent says how the session ended: its id, status, summary, the
// evidence bundle, and the error of a failed session.
type EndedEvent struct {
	Session  string                 `json:"session"`
	Status   contract.SessionStatus `json:"status"`
	Summary  string                 `json:"summary"`
	Evidence EvidenceInfo           `json:"evidence"`
	Error    string                 `json:"error,omitempty"`
	// Result is what the session did and extracted, for the popup's
	// result panel.
	Result *ResultView `json:"result,omitempty"`
}

// EvidenceInfo locates the session's evidence bundle: its directory,
// whether it was sealed, and the head hash of its ledger.
type EvidenceInfo struct {
	Dir      string `json:"dir"`
	Sealed   bool   `json:"sealed"`
	HeadHash string `json:"headHash,omitempty"`
}

// DriverCode returns the driver error code of e's code, so that the
// extension driver fails an action with it.
func (e *Error) DriverCode() contract.ErrorCode { return e.Code.DriverCode() }

// Retryable reports whether a new attempt may succeed: the content script
// could not run because the tab's document was being replaced.
func (e *Error) Retryable() bool { return e.Code == CodeScriptFailed }
