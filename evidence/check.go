package evidence

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The semantic rules of the records, beyond their schemas. The writer
// applies them before it writes a record and the verifier after it reads
// one, so that what the writer writes always verifies.

// maxDOMSnapshotChars is the observation schema's maxLength of domSnapshot
// (checked against the schema by a test): the snapshot lives in its own
// file, so its length is checked there.
const maxDOMSnapshotChars = 4194304

// decodeTree decodes a parsed value into a Go value through its canonical
// bytes.
func decodeTree(tree any, v any) error {
	b, err := canonjson.EncodeValue(tree)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// rec is a value of a parsed record (as canonjson.ParseCanonical returns
// it: maps, slices, strings, bools, nil and json.Number), with whether it
// is there at all. The rules below read records through it, the
// verifier's as it parsed them and the writer's as it parsed the
// canonical bytes it is about to write.
type rec struct {
	v  any
	ok bool // false: absent
}

// recOf returns a parsed document.
func recOf(v any) rec { return rec{v, true} }

// at returns the member key of an object (absent when r is not an object).
func (r rec) at(key string) rec {
	m, _ := r.v.(map[string]any)
	v, ok := m[key]
	return rec{v, ok}
}

// present reports whether the value is there, and not null.
func (r rec) present() bool { return r.ok && r.v != nil }

// str returns the value as a string, "" when it is not one.
func (r rec) str() string {
	s, _ := r.v.(string)
	return s
}

// is reports whether the value is the string s.
func (r rec) is(s string) bool {
	x, ok := r.v.(string)
	return ok && x == s
}

// num returns the value as an integer, -1 when it is not one.
func (r rec) num() int64 {
	n, ok := r.v.(json.Number)
	if !ok {
		return -1
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return -1
	}
	return i
}

// isTrue reports whether the value is true.
func (r rec) isTrue() bool {
	b, _ := r.v.(bool)
	return b
}

// value returns the value, nil when absent.
func (r rec) value() any { return r.v }

// parseRec parses canonical bytes into a record.
func parseRec(b []byte) (rec, error) {
	v, err := canonjson.ParseCanonical(b)
	if err != nil {
		return rec{}, err
	}
	return recOf(v), nil
}

// shapeArtifact names the record shape of an extracted artifact, which has
// no kind of its own: browser-observation.schema.json#/$defs/artifact.
const shapeArtifact = "artifact"

// artifactRef is the schema ref of shapeArtifact.
const artifactRef = "browser-observation.schema.json#/$defs/artifact"

// validateRec validates a parsed record (or a value of one) as the named
// record shape: a schemas kind, or shapeArtifact.
func validateRec(shape string, r rec) error {
	if shape == shapeArtifact {
		return schemas.ValidateRef(artifactRef, r.v)
	}
	return schemas.ValidateValue(schemas.Kind(shape), r.v)
}

func member(tree any, key string) any {
	m, _ := tree.(map[string]any)
	return m[key]
}

func strMember(tree any, key string) string {
	s, _ := member(tree, key).(string)
	return s
}

func intMember(tree any, key string) int64 {
	n, _ := member(tree, key).(json.Number)
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return -1
	}
	return i
}

// checkStartManifest checks the manifest as first written: running,
// without end, signer or seal, counts zero, goal equal to task.goal.
func checkStartManifest(r rec) error {
	if s := r.at("status").str(); s != string(contract.SessionRunning) {
		return fmt.Errorf("status %q, want running", s)
	}
	for _, k := range []string{"endedAt", "signer", "seal", "approvalKey"} {
		if r.at(k).present() {
			return fmt.Errorf("%s present in the manifest of a running session", k)
		}
	}
	counts := r.at("counts")
	for _, k := range []string{"actions", "decisions", "events", "observations", "artifacts"} {
		if counts.at(k).num() != 0 {
			return fmt.Errorf("counts.%s is not zero", k)
		}
	}
	if counts.at("modelCalls").present() {
		return errors.New("counts.modelCalls present in the manifest of a running session")
	}
	if r.at("goal").str() != r.at("task").at("goal").str() {
		return errors.New("goal differs from task.goal")
	}
	return nil
}

// decisionFacts is what the chain rules need from a decision record.
type decisionFacts struct {
	SessionID        string
	ActionID         string
	ActionHash       string
	Allow            bool
	Result           string
	RequiresApproval bool
	Approval         *contract.ApprovalRef
	Effect           bool   // a decision about an effect of the action
	DecisionID       string // its decisionId
	Action           []byte // the canonical bytes of the action it judged, nil when it records none
}

// decisionOf reads what the chain rules need from a decision record,
// having applied rule 15 to it (checkBinding); strict says the bundle's
// format requires a decision that allows to record its action.
func decisionOf(r rec, strict bool) (decisionFacts, error) {
	action, err := decidedAction(r)
	if err != nil {
		return decisionFacts{}, err
	}
	d := decisionFacts{
		DecisionID:       r.at("decisionId").str(),
		Action:           action,
		SessionID:        r.at("sessionId").str(),
		ActionID:         r.at("actionId").str(),
		ActionHash:       r.at("actionHash").str(),
		Result:           r.at("result").str(),
		Allow:            r.at("allow").isTrue(),
		RequiresApproval: r.at("requiresApproval").isTrue(),
		Effect:           r.at("effect").present(),
	}
	if a := r.at("approval"); a.present() {
		d.Approval = &contract.ApprovalRef{ID: a.at("id").str(), ActionHash: a.at("actionHash").str()}
	}
	if err := checkBinding(r, action, strict); err != nil {
		return decisionFacts{}, err
	}
	return d, nil
}

// check applies the rules of a decision: the bundle's session, an
// approval bound to the decided action and used once, no action that
// needs an approval allowed without one, and for a decision about an
// effect, an action of that id executed before it (ran).
func (d decisionFacts) check(sid string, consumed, ran map[string]bool) error {
	if d.SessionID != "" && d.SessionID != sid {
		return fmt.Errorf("sessionId %q, want %q", d.SessionID, sid)
	}
	if d.Effect && !ran[d.ActionID] {
		return fmt.Errorf("a decision about an effect of action %q, which no action line before it records", d.ActionID)
	}
	if d.Result == string(contract.ResultAllowed) && d.RequiresApproval {
		return errors.New("result allowed for an action that requires an approval: only an approved decision, with its approval, lets it run")
	}
	if d.Result == string(contract.ResultApproved) {
		if d.Approval == nil {
			return errors.New("result approved without an approval")
		}
		if d.Approval.ActionHash != d.ActionHash {
			return fmt.Errorf("approval %s is bound to action hash %s, not to the decided action %s", d.Approval.ID, d.Approval.ActionHash, d.ActionHash)
		}
		if consumed[d.Approval.ID] {
			return fmt.Errorf("approval %s used a second time", d.Approval.ID)
		}
	}
	return nil
}

// apply records the decision: the action it decides is allowed to run
// once or not (a decision about an effect of an action that ran decides
// no action), an approval of it is counted until it runs or a decision
// about it allows nothing (rule 2), and a presented approval is used up.
func (d decisionFacts) apply(allow map[string]decided, consumed map[string]bool) {
	if d.ActionID != "" && !d.Effect {
		approved := d.Result == string(contract.ResultApproved)
		n := 0
		if d.Allow {
			// A decision that allows nothing (a denial, a pause, the
			// session's own refusal) ends what the approvals before it
			// allowed: the next approval of the id starts the count again.
			n = allow[d.ActionID].approvals
		}
		if approved {
			n++
		}
		allow[d.ActionID] = decided{allow: d.Allow, approved: approved, action: d.Action, id: d.DecisionID, approvals: n}
	}
	if d.Approval != nil {
		consumed[d.Approval.ID] = true
	}
}

// actionLine is one line of actions.jsonl.
type actionLine struct {
	Action contract.Action     `json:"action"`
	Result contract.ToolResult `json:"result"`
}

type actionFacts struct{ id string }

// validateActionLine validates the form of a line of actions.jsonl: an
// object of exactly action and result, each valid.
func validateActionLine(r rec) error {
	a, res := r.at("action"), r.at("result")
	if m, ok := r.v.(map[string]any); !ok || len(m) != 2 || !a.present() || !res.present() {
		return errors.New(`want an object of exactly "action" and "result"`)
	}
	if err := validateRec(string(schemas.KindAction), a); err != nil {
		return fmt.Errorf("action: %w", err)
	}
	if err := validateRec(string(schemas.KindToolResult), res); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}

// checkActionLine checks a valid line of actions.jsonl: the result is the
// action's, in the bundle's session, and the text of a redacted type
// action is masked.
func checkActionLine(line rec, sid string) (actionFacts, error) {
	a, r := line.at("action"), line.at("result")
	id, typ := a.at("id").str(), a.at("type").str()
	switch {
	case r.at("actionId").str() != id:
		return actionFacts{}, fmt.Errorf("result.actionId %q, want the action's id %q", r.at("actionId").str(), id)
	case r.at("action").str() != "browser."+typ:
		return actionFacts{}, fmt.Errorf("result.action %q, want %q", r.at("action").str(), "browser."+typ)
	case !r.at("sessionId").is(sid):
		return actionFacts{}, fmt.Errorf("result.sessionId %q, want %q", r.at("sessionId").str(), sid)
	}
	if typ == string(contract.ActType) && a.at("redact").isTrue() && !a.at("text").is(RedactedText) {
		return actionFacts{}, fmt.Errorf("the text of a redacted type action is stored, want %q", RedactedText)
	}
	return actionFacts{id: id}, nil
}

// checkEvent: a session.started event names the bundle's session.
func checkEvent(r rec, sid string) error {
	if r.at("type").is(string(contract.EventSessionStarted)) {
		if got := r.at("computerUseSessionId"); !got.is(sid) {
			return fmt.Errorf("session.started names session %q, want %q", got.str(), sid)
		}
	}
	return nil
}

// checkModelCall: a model-call record names the bundle's session.
func checkModelCall(r rec, sid string) error {
	if got := r.at("sessionId"); !got.is(sid) {
		return fmt.Errorf("sessionId %q, want %q", got.str(), sid)
	}
	return nil
}

// checkObservation: the stored observation's snapshot is empty (it lives
// in the .html beside it, whose digest is given), state.domHash is that
// digest, and the state names the bundle's session. snap is checked for
// length when given (writing); the verifier checks the file itself.
func checkObservation(r rec, sid string, digest Hash, snap []byte, withSnap bool) error {
	state := r.at("state")
	switch {
	case r.at("domSnapshot").str() != "":
		return errors.New("domSnapshot must be empty: the snapshot is stored in the .html beside it")
	case !isHash(state.at("domHash"), digest):
		return fmt.Errorf("state.domHash %s, want the SHA-256 of the snapshot file %s", state.at("domHash").str(), digest)
	case !state.at("sessionId").is(sid):
		return fmt.Errorf("state.sessionId %q, want %q", state.at("sessionId").str(), sid)
	}
	if withSnap {
		return checkSnapshot(snap)
	}
	return nil
}

// checkSnapshot: a DOM snapshot is UTF-8 of at most maxDOMSnapshotChars
// characters (the observation schema's bound on domSnapshot).
func checkSnapshot(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("DOM snapshot is not valid UTF-8")
	}
	if len(b) > maxDOMSnapshotChars {
		if n := utf8.RuneCount(b); n > maxDOMSnapshotChars {
			return fmt.Errorf("DOM snapshot of %d characters, at most %d allowed", n, maxDOMSnapshotChars)
		}
	}
	return nil
}

// checkArtifact: the hash of an extracted artifact is the SHA-256 of its
// value, or for a screenshot the SHA-256 of the image its value names
// (stored before it).
func checkArtifact(r rec, images map[string]Hash) error {
	value, hash := r.at("value").str(), r.at("hash")
	if r.at("type").is(string(contract.ArtifactScreenshot)) {
		h, ok := images[value]
		if !ok {
			return fmt.Errorf("screenshot value %q is not the uri of an image stored before it", value)
		}
		if !isHash(hash, h) {
			return fmt.Errorf("hash %s, want the image's SHA-256 %s", hash.str(), h)
		}
		return nil
	}
	if sum := Hash(sha256.Sum256([]byte(value))); !isHash(hash, sum) {
		return fmt.Errorf("hash %s, want the SHA-256 of the value %s", hash.str(), sum)
	}
	return nil
}

// isHash reports whether r is the hash h in lowercase hex.
func isHash(r rec, h Hash) bool { return r.is(h.String()) }

// checkImageRecord: an image record describes exactly the image stored
// at file: its uri, the type and dimensions its bytes show, its size and
// SHA-256, and its id is the file's.
func checkImageRecord(r rec, file string, size int, info imageInfo, digest Hash) error {
	switch {
	case !r.at("id").is(artifactID(file)):
		return fmt.Errorf("id %q, want %q", r.at("id").str(), artifactID(file))
	case !r.at("uri").is(file):
		return fmt.Errorf("uri %q, want %q", r.at("uri").str(), file)
	case !r.at("mimeType").is(info.mime):
		return fmt.Errorf("mimeType %q, but the bytes are %s", r.at("mimeType").str(), info.mime)
	case r.at("byteSize").num() != int64(size):
		return fmt.Errorf("byteSize %d, want %d", r.at("byteSize").num(), size)
	case !isHash(r.at("contentHash"), digest):
		return fmt.Errorf("contentHash %s, want %s", r.at("contentHash").str(), digest)
	}
	for _, d := range []struct {
		key  string
		want int
	}{{"width", info.width}, {"height", info.height}} {
		got := int64(0)
		if v := r.at(d.key); v.present() {
			got = v.num()
		}
		if got != int64(d.want) {
			return fmt.Errorf("%s %d, but the image header says %d", d.key, got, d.want)
		}
	}
	return nil
}
