package evidence

import (
	"math"
	"strings"
	"sync"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The small records of a step (the decision, the action line, the events,
// the model calls) are written as the observation is (obsfast.go): their
// canonical bytes straight from the Go value, in the members and the
// spellings the general path (canonicalize: encoding/json, a tree of maps,
// maskRecord, canonjson.EncodeValue) produces, masking their free text
// (freeText) and refusing a secret value in any other string or in a
// member name as maskRecord does. The bytes are then checked, parsed and
// validated as every record's are (prepareRecord), so the safety net is
// the same. A value the general path would refuse before masking (an
// action or event that encoding/json refuses through its MarshalJSON, a
// number with no JSON form, a record too large to parse) is handed to the
// general path, which then says why with its own words. Tests hold the
// bytes, the masking and the refusals to the general path on random
// records (recfast_test.go).

// Above these sizes (the bytes of a record's strings, the items of its
// arrays) a record takes the general path: encoding/json's spelling of it
// could exceed schemas.MaxDocumentBytes, which the general path refuses
// before masking. The schemas admit records far smaller than this.
const (
	maxFastStringBytes = 1 << 20
	maxFastItems       = 1 << 12
)

// maxPooledScratch bounds the buffer a pooled scratch keeps (a record
// larger than this is rare: its buffer is left to the collector).
const maxPooledScratch = 64 << 10

// recScratchPool holds the scratch (buffer and tape) the Writer methods
// of the small records lend to the fast path: a record's bytes and parsed
// record are used only until the method returns.
var recScratchPool = sync.Pool{New: func() any { return new(obsScratch) }}

// getRecScratch returns a scratch for one small record.
func getRecScratch() *obsScratch { return recScratchPool.Get().(*obsScratch) }

// putRecScratch gives back a scratch once the record's bytes and parsed
// record are no longer used.
func putRecScratch(sc *obsScratch) {
	if cap(sc.buf) > maxPooledScratch {
		return
	}
	recScratchPool.Put(sc)
}

// fieldKey names a member by the path of its object (as freeText writes
// paths, "" for the record itself) and its name ("*" for the items of an
// array, whose path is then the array's).
type fieldKey struct{ obj, name string }

// freeIndex is freeText of one record shape, for looking members up
// without building their paths.
type freeIndex struct {
	exact map[fieldKey]bool
	deep  map[string]bool // paths ending in "/**", as freeText has them
}

// newFreeIndex indexes the free-text paths of a shape.
func newFreeIndex(shape string) *freeIndex {
	x := &freeIndex{exact: map[fieldKey]bool{}, deep: map[string]bool{}}
	for _, p := range freeText[shape] {
		if strings.HasSuffix(p, "/**") {
			x.deep[p] = true
			continue
		}
		obj, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			obj, name = p[:i], p[i+1:]
		}
		x.exact[fieldKey{obj, name}] = true
	}
	return x
}

// has reports whether the member name of the object at obj is free text,
// as maskRecord decides it for its path.
func (x *freeIndex) has(obj, name string) bool {
	if x.exact[fieldKey{obj, name}] {
		return true
	}
	return len(x.deep) > 0 && isBelowFree(x.deep, join(obj, name))
}

// The free text of the records written here.
var (
	freeDecision   = newFreeIndex(string(schemas.KindDecision))
	freeActionLine = newFreeIndex(shapeActionLine)
	freeEvent      = newFreeIndex(string(schemas.KindEvent))
	freeModelCall  = newFreeIndex(string(schemas.KindModelCall))
)

// recEncoder writes the canonical JSON (RFC 8785) of a record of a fixed
// shape: the callers write members in canonical order (their names are
// ASCII letters, whose byte order is their UTF-16 order). It borrows the
// number writers of obsEncoder; strings and member names are its own, so
// that paths are built only for an error.
type recEncoder struct {
	obsEncoder
	free  *freeIndex
	first bool // the next member is the first of its object
}

// newRecEncoder returns an encoder of a record whose free text is free,
// writing over buf, or a new buffer when buf has not room for hint bytes.
func newRecEncoder(free *freeIndex, m *masker, buf []byte, hint int) recEncoder {
	if n := hint + hint/16; cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	return recEncoder{obsEncoder: newObsEncoder(m, buf[:0]), free: free}
}

// finish checks the record's bytes as canonicalize does and returns them.
func (e *recEncoder) finish() ([]byte, bool, error) {
	if e.m != nil {
		if err := e.m.check("the record", e.b); err != nil {
			return nil, false, err
		}
	}
	return e.b, e.masked, nil
}

// open starts an object.
func (e *recEncoder) open() {
	e.b = append(e.b, '{')
	e.first = true
}

// close ends an object.
func (e *recEncoder) close() {
	e.b = append(e.b, '}')
	e.first = false
}

// key writes a member name (ASCII letters only) and its colon, after a
// comma unless it is the first of its object. A name that holds a known
// value is refused, naming the object at obj as maskRecord does.
func (e *recEncoder) key(obj, name string) error {
	first := e.first
	e.first = false
	return e.name(first, name, obj)
}

// text writes the string value of member name of the object at obj as
// the general path stores it: invalid UTF-8 replaced as encoding/json
// replaces it, then masked when it is free text, or refused when it holds
// a known value and is not.
func (e *recEncoder) text(obj, name, s string) error {
	if !e.put(s, e.active && e.free.has(obj, name)) {
		return notFreeText(join(obj, name))
	}
	return nil
}

// str writes a string member.
func (e *recEncoder) str(obj, name, s string) error {
	if err := e.key(obj, name); err != nil {
		return err
	}
	return e.text(obj, name, s)
}

// optStr writes a string member unless it is empty (omitempty).
func (e *recEncoder) optStr(obj, name, s string) error {
	if s == "" {
		return nil
	}
	return e.str(obj, name, s)
}

// boolMember writes a boolean member.
func (e *recEncoder) boolMember(obj, name string, v bool) error {
	if err := e.key(obj, name); err != nil {
		return err
	}
	e.boolean(v)
	return nil
}

// intMember writes an integer member.
func (e *recEncoder) intMember(obj, name string, n int64) error {
	if err := e.key(obj, name); err != nil {
		return err
	}
	return e.integer(n)
}

// floatMember writes a number member; the caller has made sure that it
// is finite (fastFloat).
func (e *recEncoder) floatMember(obj, name string, f float64) error {
	if err := e.key(obj, name); err != nil {
		return err
	}
	return e.float(f)
}

// strArray writes an array of strings, the items of the array at path.
func (e *recEncoder) strArray(path string, items []string) error {
	e.b = append(e.b, '[')
	for i, s := range items {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if err := e.text(path, "*", s); err != nil {
			return err
		}
	}
	e.b = append(e.b, ']')
	return nil
}

// fastFloat reports whether f has a JSON form (encoding/json refuses NaN
// and the infinities).
func fastFloat(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// fastFloatPtr is fastFloat for an optional number.
func fastFloatPtr(f *float64) bool { return f == nil || fastFloat(*f) }

// prepareFast ends prepareRecord for bytes a fast encoder wrote: it
// parses them as the verifier will, on the tape of sc, and validates them
// as the shape (none when shape is "", a line of actions.jsonl).
func prepareFast(shape string, sc *obsScratch, canon []byte, masked bool, err error) ([]byte, rec, bool, error) {
	if err != nil {
		return nil, rec{}, false, err
	}
	if cap(canon) <= maxPooledScratch {
		sc.buf = canon // the buffer it was written in, for the next record
	}
	r, err := parseRec(canon, &sc.tape)
	if err != nil {
		return nil, rec{}, false, err
	}
	if shape != "" {
		if err := validateRec(shape, r); err != nil {
			return nil, rec{}, false, err
		}
	}
	return canon, r, masked, nil
}

// ---- Decision records ----

// prepareDecision is prepareRecord for a decision record: the same
// canonical bytes, parsed record, masking report and errors.
// sc, when not nil, lends the buffer and the tape: the bytes and the
// record are valid until sc is used again.
func prepareDecision(d *contract.DecisionRecord, m *masker, sc *obsScratch) (canon []byte, r rec, masked bool, err error) {
	if sc == nil {
		sc = &obsScratch{}
	}
	canon, masked, err = canonicalDecision(d, m, sc.buf)
	return prepareFast(string(schemas.KindDecision), sc, canon, masked, err)
}

// canonicalDecision is canonicalize for a decision record, written over buf
// when it has room.
func canonicalDecision(d *contract.DecisionRecord, m *masker, buf []byte) ([]byte, bool, error) {
	hint, ok := decisionSize(d)
	if !ok || d.Target != nil { // the target is written by the general path only
		return canonicalize(string(schemas.KindDecision), *d, m)
	}
	e := newRecEncoder(freeDecision, m, buf, hint)
	if err := e.decision(d); err != nil {
		return nil, false, err
	}
	return e.finish()
}

// decisionSize estimates the canonical size of a decision record, and
// reports whether it is small enough for the fast path.
func decisionSize(d *contract.DecisionRecord) (int, bool) {
	n := len(d.DecisionID) + len(d.SessionID) + len(d.ActionID) + len(d.ActionHash) + len(d.ActionName) +
		len(d.PolicyVersion) + len(d.PolicySource) + len(d.Result) + len(d.Risk) + len(d.Permission) +
		len(d.DecisionLogID) + len(d.Error) + len(d.EvaluatedAt)
	items := len(d.Reasons) + len(d.Waived) + len(d.RiskReasons) + len(d.ApprovalReasons) + len(d.Exceptions)
	for _, rs := range [][]contract.Reason{d.Reasons, d.Waived, d.RiskReasons, d.ApprovalReasons} {
		for i := range rs {
			n += len(rs[i].Rule) + len(rs[i].Message) + len(rs[i].ExceptionID)
		}
	}
	for i := range d.Exceptions {
		x := &d.Exceptions[i]
		n += len(x.ID) + len(x.Rule) + len(x.Reason) + len(x.ExpiresAt) + len(x.DecisionLogID) + len(x.Status) + len(x.Why)
	}
	if a := d.Approval; a != nil {
		n += 80 + len(a.ID) + len(a.Approver) + len(a.ApprovedAt) + len(a.ExpiresAt) + len(a.ActionHash)
	}
	ok := n <= maxFastStringBytes && items <= maxFastItems
	return n + 400 + 80*items, ok
}

// decision writes a decision record: its members in canonical order,
// reasons always (nil as []), the other omitempty members when set, as
// DecisionRecord.MarshalJSON writes them.
func (e *recEncoder) decision(d *contract.DecisionRecord) error {
	const obj = ""
	e.open()
	if err := e.str(obj, "actionHash", d.ActionHash); err != nil {
		return err
	}
	if err := e.optStr(obj, "actionId", d.ActionID); err != nil {
		return err
	}
	if err := e.str(obj, "actionName", d.ActionName); err != nil {
		return err
	}
	if err := e.boolMember(obj, "allow", d.Allow); err != nil {
		return err
	}
	if d.Approval != nil {
		if err := e.key(obj, "approval"); err != nil {
			return err
		}
		if err := e.approvalRef(d.Approval); err != nil {
			return err
		}
	}
	if err := e.optReasons(obj, "approvalReasons", "approvalReasons/*", d.ApprovalReasons); err != nil {
		return err
	}
	if err := e.str(obj, "decisionId", d.DecisionID); err != nil {
		return err
	}
	if err := e.optStr(obj, "decisionLogId", d.DecisionLogID); err != nil {
		return err
	}
	if err := e.intMember(obj, "durationUs", d.DurationUs); err != nil {
		return err
	}
	if err := e.optStr(obj, "error", d.Error); err != nil {
		return err
	}
	if err := e.str(obj, "evaluatedAt", d.EvaluatedAt); err != nil {
		return err
	}
	if len(d.Exceptions) > 0 {
		if err := e.key(obj, "exceptions"); err != nil {
			return err
		}
		e.b = append(e.b, '[')
		for i := range d.Exceptions {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.exceptionUse(&d.Exceptions[i]); err != nil {
				return err
			}
		}
		e.b = append(e.b, ']')
	}
	if err := e.boolMember(obj, "failClosed", d.FailClosed); err != nil {
		return err
	}
	if err := e.optStr(obj, "permission", d.Permission); err != nil {
		return err
	}
	if err := e.str(obj, "policySource", d.PolicySource); err != nil {
		return err
	}
	if err := e.str(obj, "policyVersion", d.PolicyVersion); err != nil {
		return err
	}
	if err := e.key(obj, "reasons"); err != nil {
		return err
	}
	if err := e.reasons("reasons/*", d.Reasons); err != nil {
		return err
	}
	if err := e.boolMember(obj, "requiresApproval", d.RequiresApproval); err != nil {
		return err
	}
	if err := e.str(obj, "result", string(d.Result)); err != nil {
		return err
	}
	if err := e.str(obj, "risk", string(d.Risk)); err != nil {
		return err
	}
	if err := e.optReasons(obj, "riskReasons", "riskReasons/*", d.RiskReasons); err != nil {
		return err
	}
	if err := e.optStr(obj, "sessionId", d.SessionID); err != nil {
		return err
	}
	if err := e.intMember(obj, "stepIndex", int64(d.StepIndex)); err != nil {
		return err
	}
	if err := e.optReasons(obj, "waived", "waived/*", d.Waived); err != nil {
		return err
	}
	e.close()
	return nil
}

// optReasons writes a member of reasons unless it has none (omitempty);
// item is the path of its items.
func (e *recEncoder) optReasons(obj, name, item string, rs []contract.Reason) error {
	if len(rs) == 0 {
		return nil
	}
	if err := e.key(obj, name); err != nil {
		return err
	}
	return e.reasons(item, rs)
}

// reasons writes an array of reasons (exceptionId when set, message,
// rule), the items of the array at path obj.
func (e *recEncoder) reasons(obj string, rs []contract.Reason) error {
	e.b = append(e.b, '[')
	for i := range rs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		r := &rs[i]
		e.open()
		if err := e.optStr(obj, "exceptionId", r.ExceptionID); err != nil {
			return err
		}
		if err := e.str(obj, "message", r.Message); err != nil {
			return err
		}
		if err := e.str(obj, "rule", r.Rule); err != nil {
			return err
		}
		e.close()
	}
	e.b = append(e.b, ']')
	return nil
}

// exceptionUse writes an exception as a decision considered it: the
// members that are set, status and why.
func (e *recEncoder) exceptionUse(x *contract.ExceptionUse) error {
	const obj = "exceptions/*"
	e.open()
	if err := e.optStr(obj, "decisionLogId", x.DecisionLogID); err != nil {
		return err
	}
	if err := e.optStr(obj, "expiresAt", x.ExpiresAt); err != nil {
		return err
	}
	if err := e.optStr(obj, "id", x.ID); err != nil {
		return err
	}
	if err := e.optStr(obj, "reason", x.Reason); err != nil {
		return err
	}
	if err := e.optStr(obj, "rule", x.Rule); err != nil {
		return err
	}
	if err := e.str(obj, "status", string(x.Status)); err != nil {
		return err
	}
	if err := e.str(obj, "why", x.Why); err != nil {
		return err
	}
	e.close()
	return nil
}

// approvalRef writes a decision's approval: actionHash, approvedAt,
// approver, expiresAt, id.
func (e *recEncoder) approvalRef(a *contract.ApprovalRef) error {
	const obj = "approval"
	e.open()
	if err := e.str(obj, "actionHash", a.ActionHash); err != nil {
		return err
	}
	if err := e.str(obj, "approvedAt", a.ApprovedAt); err != nil {
		return err
	}
	if err := e.str(obj, "approver", a.Approver); err != nil {
		return err
	}
	if err := e.str(obj, "expiresAt", a.ExpiresAt); err != nil {
		return err
	}
	if err := e.str(obj, "id", a.ID); err != nil {
		return err
	}
	e.close()
	return nil
}

// ---- Action lines ----

// The type-specific members of an action, as bits.
const (
	actURL uint16 = 1 << iota
	actSelector
	actTimeoutMs
	actText
	actRedact
	actValue
	actDirection
	actAmountPx
	actDurationMs
	actExtract
)

// actionMembers is, per action type, the members Action.MarshalJSON
// allows besides id, type, reason and policyTags, and those it writes
// even when zero (contract's table of action fields; a test holds the two
// together).
var actionMembers = map[contract.ActionType]struct{ allowed, required uint16 }{
	contract.ActNavigate: {actURL, actURL},
	contract.ActClick:    {actSelector | actTimeoutMs, actSelector},
	contract.ActType:     {actSelector | actText | actRedact, actSelector | actText | actRedact},
	contract.ActSelect:   {actSelector | actValue, actSelector | actValue},
	contract.ActScroll:   {actDirection | actAmountPx, actDirection},
	contract.ActWait:     {actDurationMs, actDurationMs},
	contract.ActExtract:  {actSelector | actExtract, actExtract},
}

// actionSet returns the type-specific members of an action that hold a
// value other than their zero.
func actionSet(a *contract.Action) uint16 {
	var set uint16
	for _, f := range [...]struct {
		bit uint16
		on  bool
	}{
		{actURL, a.URL != ""}, {actSelector, a.Selector != ""}, {actTimeoutMs, a.TimeoutMs != 0},
		{actText, a.Text != ""}, {actRedact, a.Redact}, {actValue, a.Value != ""},
		{actDirection, a.Direction != ""}, {actAmountPx, a.AmountPx != 0},
		{actDurationMs, a.DurationMs != 0}, {actExtract, a.Extract != ""},
	} {
		if f.on {
			set |= f.bit
		}
	}
	return set
}

// prepareActionLine is prepareRecord("", actionLine{*a, *res}): the same
// canonical bytes, parsed line, masking report and errors. Like it, it
// does not validate the line: validateActionLine does.
// sc, when not nil, lends the buffer and the tape: the bytes and the
// record are valid until sc is used again.
func prepareActionLine(a *contract.Action, res *contract.ToolResult, m *masker, sc *obsScratch) (canon []byte, r rec, masked bool, err error) {
	if sc == nil {
		sc = &obsScratch{}
	}
	canon, masked, err = canonicalActionLine(a, res, m, sc.buf)
	return prepareFast("", sc, canon, masked, err)
}

// canonicalActionLine is canonicalize for a line of actions.jsonl, written over buf
// when it has room.
func canonicalActionLine(a *contract.Action, res *contract.ToolResult, m *masker, buf []byte) ([]byte, bool, error) {
	members, known := actionMembers[a.Type]
	set := actionSet(a)
	hint, small := actionLineSize(a, res)
	// encoding/json refuses an unknown type, a member of another type
	// and a number without a JSON form: the general path says which.
	if !known || set&^members.allowed != 0 || !small ||
		!fastFloatPtr(res.CaptureLatencyMs) || !fastFloatPtr(res.InputLatencyMs) {
		return canonicalize(shapeActionLine, actionLine{Action: *a, Result: *res}, m)
	}
	e := newRecEncoder(freeActionLine, m, buf, hint)
	e.open()
	if err := e.key("", "action"); err != nil {
		return nil, false, err
	}
	if err := e.action(a, members.allowed&(members.required|set)); err != nil {
		return nil, false, err
	}
	if err := e.key("", "result"); err != nil {
		return nil, false, err
	}
	if err := e.toolResult(res); err != nil {
		return nil, false, err
	}
	e.close()
	return e.finish()
}

// actionLineSize estimates the canonical size of an action line, and
// reports whether it is small enough for the fast path.
func actionLineSize(a *contract.Action, r *contract.ToolResult) (int, bool) {
	n := len(a.ID) + len(a.Type) + len(a.Reason) + len(a.URL) + len(a.Selector) + len(a.Text) +
		len(a.Value) + len(a.Direction) + len(a.Extract) +
		len(r.ActionID) + len(r.Action) + len(r.RiskTag) + len(r.SessionID) + len(r.FrameID) +
		len(r.URL) + len(r.StartedAt) + len(r.EndedAt)
	for _, t := range a.PolicyTags {
		n += len(t)
	}
	for _, id := range r.ArtifactIDs {
		n += len(id)
	}
	if r.Error != nil {
		n += 32 + len(r.Error.Code) + len(r.Error.Message)
	}
	items := len(a.PolicyTags) + len(r.ArtifactIDs)
	ok := n <= maxFastStringBytes && items <= maxFastItems
	return n + 400 + 4*items, ok
}

// action writes an action as Action.MarshalJSON does: id, type, reason,
// policyTags (nil as []) and the type-specific members in write, in
// canonical order.
func (e *recEncoder) action(a *contract.Action, write uint16) error {
	const obj = "action"
	e.open()
	if write&actAmountPx != 0 {
		if err := e.intMember(obj, "amountPx", int64(a.AmountPx)); err != nil {
			return err
		}
	}
	if write&actDirection != 0 {
		if err := e.str(obj, "direction", string(a.Direction)); err != nil {
			return err
		}
	}
	if write&actDurationMs != 0 {
		if err := e.intMember(obj, "durationMs", int64(a.DurationMs)); err != nil {
			return err
		}
	}
	if write&actExtract != 0 {
		if err := e.str(obj, "extract", string(a.Extract)); err != nil {
			return err
		}
	}
	if err := e.str(obj, "id", a.ID); err != nil {
		return err
	}
	if err := e.key(obj, "policyTags"); err != nil {
		return err
	}
	if err := e.strArray("action/policyTags", a.PolicyTags); err != nil {
		return err
	}
	if err := e.str(obj, "reason", a.Reason); err != nil {
		return err
	}
	if write&actRedact != 0 {
		if err := e.boolMember(obj, "redact", a.Redact); err != nil {
			return err
		}
	}
	if write&actSelector != 0 {
		if err := e.str(obj, "selector", a.Selector); err != nil {
			return err
		}
	}
	if write&actText != 0 {
		if err := e.str(obj, "text", a.Text); err != nil {
			return err
		}
	}
	if write&actTimeoutMs != 0 {
		if err := e.intMember(obj, "timeoutMs", int64(a.TimeoutMs)); err != nil {
			return err
		}
	}
	if err := e.str(obj, "type", string(a.Type)); err != nil {
		return err
	}
	if write&actURL != 0 {
		if err := e.str(obj, "url", a.URL); err != nil {
			return err
		}
	}
	if write&actValue != 0 {
		if err := e.str(obj, "value", a.Value); err != nil {
			return err
		}
	}
	e.close()
	return nil
}

// toolResult writes a tool result, its omitempty members when set, in
// canonical order.
func (e *recEncoder) toolResult(r *contract.ToolResult) error {
	const obj = "result"
	e.open()
	if err := e.str(obj, "action", r.Action); err != nil {
		return err
	}
	if err := e.str(obj, "actionId", r.ActionID); err != nil {
		return err
	}
	if len(r.ArtifactIDs) > 0 {
		if err := e.key(obj, "artifactIds"); err != nil {
			return err
		}
		if err := e.strArray("result/artifactIds", r.ArtifactIDs); err != nil {
			return err
		}
	}
	if r.CaptureLatencyMs != nil {
		if err := e.floatMember(obj, "captureLatencyMs", *r.CaptureLatencyMs); err != nil {
			return err
		}
	}
	if err := e.str(obj, "endedAt", r.EndedAt); err != nil {
		return err
	}
	if r.Error != nil {
		const eobj = "result/error"
		if err := e.key(obj, "error"); err != nil {
			return err
		}
		e.open()
		if err := e.str(eobj, "code", string(r.Error.Code)); err != nil {
			return err
		}
		if err := e.str(eobj, "message", r.Error.Message); err != nil {
			return err
		}
		e.close()
	}
	if err := e.optStr(obj, "frameId", r.FrameID); err != nil {
		return err
	}
	if r.InputLatencyMs != nil {
		if err := e.floatMember(obj, "inputLatencyMs", *r.InputLatencyMs); err != nil {
			return err
		}
	}
	if err := e.boolMember(obj, "ok", r.OK); err != nil {
		return err
	}
	if err := e.str(obj, "riskTag", string(r.RiskTag)); err != nil {
		return err
	}
	if err := e.str(obj, "sessionId", r.SessionID); err != nil {
		return err
	}
	if err := e.str(obj, "startedAt", r.StartedAt); err != nil {
		return err
	}
	if r.TabID != nil {
		if err := e.intMember(obj, "tabId", int64(*r.TabID)); err != nil {
			return err
		}
	}
	if err := e.optStr(obj, "url", r.URL); err != nil {
		return err
	}
	if r.WindowID != nil {
		if err := e.intMember(obj, "windowId", int64(*r.WindowID)); err != nil {
			return err
		}
	}
	e.close()
	return nil
}

// ---- Events ----

// The members of an event besides type, as bits.
const (
	evComputerUseSessionID uint16 = 1 << iota
	evActionID
	evActionType
	evRiskLevel
	evURL
	evSummary
	evWidth
	evHeight
	evDecision
	evStatus
	evCode
	evMessage
	evTimestamp
)

// eventMembers is, per event type, the members StreamEvent.MarshalJSON
// allows besides type, and those it requires (contract's table of event
// fields; a test holds the two together).
var eventMembers = map[contract.EventType]struct{ allowed, required uint16 }{
	contract.EventSessionStarted: {evComputerUseSessionID | evTimestamp, evComputerUseSessionID | evTimestamp},
	contract.EventAction: {evActionID | evActionType | evRiskLevel | evURL | evSummary | evTimestamp,
		evActionID | evActionType | evRiskLevel | evSummary | evTimestamp},
	contract.EventScreenshot:       {evURL | evWidth | evHeight | evTimestamp, evURL | evTimestamp},
	contract.EventApprovalRequired: {evActionID | evActionType | evSummary | evURL | evTimestamp, evActionID | evActionType | evSummary | evTimestamp},
	contract.EventApprovalResolved: {evActionID | evDecision | evTimestamp, evActionID | evDecision | evTimestamp},
	contract.EventSessionEnded:     {evStatus | evSummary | evTimestamp, evStatus | evSummary | evTimestamp},
	contract.EventError:            {evCode | evMessage | evTimestamp, evCode | evMessage | evTimestamp},
}

// eventSet returns the members of an event that hold a value other than
// their zero (a pointer that is not nil).
func eventSet(ev *contract.StreamEvent) uint16 {
	var set uint16
	for _, f := range [...]struct {
		bit uint16
		on  bool
	}{
		{evComputerUseSessionID, ev.ComputerUseSessionID != ""}, {evActionID, ev.ActionID != ""},
		{evActionType, ev.ActionType != ""}, {evRiskLevel, ev.RiskLevel != ""}, {evURL, ev.URL != nil},
		{evSummary, ev.Summary != ""}, {evWidth, ev.Width != nil}, {evHeight, ev.Height != nil},
		{evDecision, ev.Decision != ""}, {evStatus, ev.Status != ""}, {evCode, ev.Code != ""},
		{evMessage, ev.Message != ""}, {evTimestamp, ev.Timestamp != ""},
	} {
		if f.on {
			set |= f.bit
		}
	}
	return set
}

// evPointers are the members of an event held by a pointer: one that is
// required cannot be written when nil.
const evPointers = evURL | evWidth | evHeight

// prepareEvent is prepareRecord for an event: the same canonical bytes,
// parsed record, masking report and errors.
// sc, when not nil, lends the buffer and the tape: the bytes and the
// record are valid until sc is used again.
func prepareEvent(ev *contract.StreamEvent, m *masker, sc *obsScratch) (canon []byte, r rec, masked bool, err error) {
	if sc == nil {
		sc = &obsScratch{}
	}
	canon, masked, err = canonicalEvent(ev, m, sc.buf)
	return prepareFast(string(schemas.KindEvent), sc, canon, masked, err)
}

// canonicalEvent is canonicalize for an event, written over buf
// when it has room.
func canonicalEvent(ev *contract.StreamEvent, m *masker, buf []byte) ([]byte, bool, error) {
	members, known := eventMembers[ev.Type]
	set := eventSet(ev)
	n := len(ev.Type) + len(ev.ComputerUseSessionID) + len(ev.ActionID) + len(ev.ActionType) + len(ev.RiskLevel) +
		len(ev.Summary) + len(ev.Decision) + len(ev.Status) + len(ev.Code) + len(ev.Message) + len(ev.Timestamp)
	if ev.URL != nil {
		n += len(*ev.URL)
	}
	// encoding/json refuses an unknown type, a member of another type and
	// a required pointer that is nil: the general path says which.
	if !known || set&^members.allowed != 0 || members.required&evPointers&^set != 0 || n > maxFastStringBytes {
		return canonicalize(string(schemas.KindEvent), *ev, m)
	}
	e := newRecEncoder(freeEvent, m, buf, n+200)
	if err := e.event(ev, members.allowed&(members.required|set)); err != nil {
		return nil, false, err
	}
	return e.finish()
}

// event writes an event as StreamEvent.MarshalJSON does: type and the
// members in write, in canonical order.
func (e *recEncoder) event(ev *contract.StreamEvent, write uint16) error {
	const obj = ""
	e.open()
	for _, f := range [...]struct {
		bit  uint16
		name string
		s    string
	}{
		{evActionID, "actionId", ev.ActionID}, {evActionType, "actionType", string(ev.ActionType)},
		{evCode, "code", ev.Code}, {evComputerUseSessionID, "computerUseSessionId", ev.ComputerUseSessionID},
		{evDecision, "decision", string(ev.Decision)},
	} {
		if write&f.bit != 0 {
			if err := e.str(obj, f.name, f.s); err != nil {
				return err
			}
		}
	}
	if write&evHeight != 0 {
		if err := e.intMember(obj, "height", int64(*ev.Height)); err != nil {
			return err
		}
	}
	for _, f := range [...]struct {
		bit  uint16
		name string
		s    string
	}{
		{evMessage, "message", ev.Message}, {evRiskLevel, "riskLevel", string(ev.RiskLevel)},
		{evStatus, "status", string(ev.Status)}, {evSummary, "summary", ev.Summary},
		{evTimestamp, "timestamp", ev.Timestamp},
	} {
		if write&f.bit != 0 {
			if err := e.str(obj, f.name, f.s); err != nil {
				return err
			}
		}
	}
	if err := e.str(obj, "type", string(ev.Type)); err != nil {
		return err
	}
	if write&evURL != 0 {
		if err := e.str(obj, "url", *ev.URL); err != nil {
			return err
		}
	}
	if write&evWidth != 0 {
		if err := e.intMember(obj, "width", int64(*ev.Width)); err != nil {
			return err
		}
	}
	e.close()
	return nil
}

// ---- Model calls ----

// prepareModelCall is prepareRecord for a model-call record: the same
// canonical bytes, parsed record, masking report and errors.
// sc, when not nil, lends the buffer and the tape: the bytes and the
// record are valid until sc is used again.
func prepareModelCall(mc *contract.ModelCall, m *masker, sc *obsScratch) (canon []byte, r rec, masked bool, err error) {
	if sc == nil {
		sc = &obsScratch{}
	}
	canon, masked, err = canonicalModelCall(mc, m, sc.buf)
	return prepareFast(string(schemas.KindModelCall), sc, canon, masked, err)
}

// canonicalModelCall is canonicalize for a model-call record, written over buf
// when it has room.
func canonicalModelCall(mc *contract.ModelCall, m *masker, buf []byte) ([]byte, bool, error) {
	n := len(mc.SessionID) + len(mc.Purpose) + len(mc.Model) + len(mc.PromptHash) + len(mc.Mode) + len(mc.Error) + len(mc.Time)
	if !fastFloat(mc.LatencyMs) || n > maxFastStringBytes {
		return canonicalize(string(schemas.KindModelCall), *mc, m)
	}
	e := newRecEncoder(freeModelCall, m, buf, n+260)
	if err := e.modelCall(mc); err != nil {
		return nil, false, err
	}
	return e.finish()
}

// modelCall writes a model-call record, error when set, in canonical
// order.
func (e *recEncoder) modelCall(mc *contract.ModelCall) error {
	const obj = ""
	e.open()
	if err := e.intMember(obj, "attempts", int64(mc.Attempts)); err != nil {
		return err
	}
	if err := e.intMember(obj, "completionTokens", int64(mc.CompletionTokens)); err != nil {
		return err
	}
	if err := e.optStr(obj, "error", mc.Error); err != nil {
		return err
	}
	if err := e.floatMember(obj, "latencyMs", mc.LatencyMs); err != nil {
		return err
	}
	if err := e.str(obj, "mode", string(mc.Mode)); err != nil {
		return err
	}
	if err := e.str(obj, "model", mc.Model); err != nil {
		return err
	}
	if err := e.str(obj, "promptHash", mc.PromptHash); err != nil {
		return err
	}
	if err := e.intMember(obj, "promptTokens", int64(mc.PromptTokens)); err != nil {
		return err
	}
	if err := e.str(obj, "purpose", string(mc.Purpose)); err != nil {
		return err
	}
	if err := e.str(obj, "sessionId", mc.SessionID); err != nil {
		return err
	}
	if err := e.intMember(obj, "step", int64(mc.Step)); err != nil {
		return err
	}
	if err := e.str(obj, "time", mc.Time); err != nil {
		return err
	}
	if err := e.intMember(obj, "totalTokens", int64(mc.TotalTokens)); err != nil {
		return err
	}
	e.close()
	return nil
}
