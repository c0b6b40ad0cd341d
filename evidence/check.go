package evidence

import (
	"crypto/sha256"
	"encoding/hex"
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
func checkStartManifest(tree any) error {
	if s := strMember(tree, "status"); s != string(contract.SessionRunning) {
		return fmt.Errorf("status %q, want running", s)
	}
	for _, k := range []string{"endedAt", "signer", "seal"} {
		if member(tree, k) != nil {
			return fmt.Errorf("%s present in the manifest of a running session", k)
		}
	}
	counts := member(tree, "counts")
	for _, k := range []string{"actions", "decisions", "events", "observations", "artifacts"} {
		if intMember(counts, k) != 0 {
			return fmt.Errorf("counts.%s is not zero", k)
		}
	}
	if member(counts, "modelCalls") != nil {
		return errors.New("counts.modelCalls present in the manifest of a running session")
	}
	if strMember(tree, "goal") != strMember(member(tree, "task"), "goal") {
		return errors.New("goal differs from task.goal")
	}
	return nil
}

// decisionFacts is what the chain rules need from a decision record.
type decisionFacts struct {
	SessionID  string
	ActionID   string
	ActionHash string
	Allow      bool
	Result     string
	Approval   *contract.ApprovalRef
}

func decisionFromTree(tree any) decisionFacts {
	d := decisionFacts{
		SessionID:  strMember(tree, "sessionId"),
		ActionID:   strMember(tree, "actionId"),
		ActionHash: strMember(tree, "actionHash"),
		Result:     strMember(tree, "result"),
	}
	d.Allow, _ = member(tree, "allow").(bool)
	if a := member(tree, "approval"); a != nil {
		d.Approval = &contract.ApprovalRef{ID: strMember(a, "id"), ActionHash: strMember(a, "actionHash")}
	}
	return d
}

// check applies the rules of a decision: the bundle's session, and an
// approval bound to the decided action and used once.
func (d decisionFacts) check(sid string, consumed map[string]bool) error {
	if d.SessionID != "" && d.SessionID != sid {
		return fmt.Errorf("sessionId %q, want %q", d.SessionID, sid)
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
// once or not, and a presented approval is used up.
func (d decisionFacts) apply(allow, consumed map[string]bool) {
	if d.ActionID != "" {
		allow[d.ActionID] = d.Allow
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
func validateActionLine(tree any) error {
	m, ok := tree.(map[string]any)
	if !ok || len(m) != 2 || m["action"] == nil || m["result"] == nil {
		return errors.New(`want an object of exactly "action" and "result"`)
	}
	if err := validateShape(string(schemas.KindAction), m["action"]); err != nil {
		return fmt.Errorf("action: %w", err)
	}
	if err := validateShape(string(schemas.KindToolResult), m["result"]); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}

// checkActionLine checks a valid line of actions.jsonl: the result is the
// action's, in the bundle's session, and the text of a redacted type
// action is masked.
func checkActionLine(tree any, sid string) (actionFacts, error) {
	m := tree.(map[string]any)
	a, r := m["action"], m["result"]
	id, typ := strMember(a, "id"), strMember(a, "type")
	switch {
	case strMember(r, "actionId") != id:
		return actionFacts{}, fmt.Errorf("result.actionId %q, want the action's id %q", strMember(r, "actionId"), id)
	case strMember(r, "action") != "browser."+typ:
		return actionFacts{}, fmt.Errorf("result.action %q, want %q", strMember(r, "action"), "browser."+typ)
	case strMember(r, "sessionId") != sid:
		return actionFacts{}, fmt.Errorf("result.sessionId %q, want %q", strMember(r, "sessionId"), sid)
	}
	if typ == string(contract.ActType) && member(a, "redact") == true && strMember(a, "text") != RedactedText {
		return actionFacts{}, fmt.Errorf("the text of a redacted type action is stored, want %q", RedactedText)
	}
	return actionFacts{id: id}, nil
}

// checkEvent: a session.started event names the bundle's session.
func checkEvent(tree any, sid string) error {
	if strMember(tree, "type") == string(contract.EventSessionStarted) {
		if got := strMember(tree, "computerUseSessionId"); got != sid {
			return fmt.Errorf("session.started names session %q, want %q", got, sid)
		}
	}
	return nil
}

// checkModelCall: a model-call record names the bundle's session.
func checkModelCall(tree any, sid string) error {
	if got := strMember(tree, "sessionId"); got != sid {
		return fmt.Errorf("sessionId %q, want %q", got, sid)
	}
	return nil
}

// checkObservation: the stored observation's snapshot is empty (it lives
// in the .html beside it, whose digest is given), state.domHash is that
// digest, and the state names the bundle's session. snap is checked for
// length when given (writing); the verifier checks the file itself.
func checkObservation(tree any, sid string, digest Hash, snap string, withSnap bool) error {
	state := member(tree, "state")
	switch {
	case strMember(tree, "domSnapshot") != "":
		return errors.New("domSnapshot must be empty: the snapshot is stored in the .html beside it")
	case strMember(state, "domHash") != digest.String():
		return fmt.Errorf("state.domHash %s, want the SHA-256 of the snapshot file %s", strMember(state, "domHash"), digest)
	case strMember(state, "sessionId") != sid:
		return fmt.Errorf("state.sessionId %q, want %q", strMember(state, "sessionId"), sid)
	}
	if withSnap {
		return checkSnapshot([]byte(snap))
	}
	return nil
}

// checkSnapshot: a DOM snapshot is UTF-8 of at most maxDOMSnapshotChars
// characters (the observation schema's bound on domSnapshot).
func checkSnapshot(b []byte) error {
	if !canonjson.ValidUTF8(b) {
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
func checkArtifact(tree any, images map[string]Hash) error {
	value, hash := strMember(tree, "value"), strMember(tree, "hash")
	if strMember(tree, "type") == string(contract.ArtifactScreenshot) {
		h, ok := images[value]
		if !ok {
			return fmt.Errorf("screenshot value %q is not the uri of an image stored before it", value)
		}
		if hash != h.String() {
			return fmt.Errorf("hash %s, want the image's SHA-256 %s", hash, h)
		}
		return nil
	}
	sum := sha256.Sum256([]byte(value))
	if want := hex.EncodeToString(sum[:]); hash != want {
		return fmt.Errorf("hash %s, want the SHA-256 of the value %s", hash, want)
	}
	return nil
}

// checkImageRecord: an image record describes exactly the image stored
// at file: its uri, the type and dimensions its bytes show, its size and
// SHA-256, and its id is the file's.
func checkImageRecord(tree any, file string, size int, info imageInfo, digest Hash) error {
	switch {
	case strMember(tree, "id") != artifactID(file):
		return fmt.Errorf("id %q, want %q", strMember(tree, "id"), artifactID(file))
	case strMember(tree, "uri") != file:
		return fmt.Errorf("uri %q, want %q", strMember(tree, "uri"), file)
	case strMember(tree, "mimeType") != info.mime:
		return fmt.Errorf("mimeType %q, but the bytes are %s", strMember(tree, "mimeType"), info.mime)
	case intMember(tree, "byteSize") != int64(size):
		return fmt.Errorf("byteSize %d, want %d", intMember(tree, "byteSize"), size)
	case strMember(tree, "contentHash") != digest.String():
		return fmt.Errorf("contentHash %s, want %s", strMember(tree, "contentHash"), digest)
	}
	for _, d := range []struct {
		key  string
		want int
	}{{"width", info.width}, {"height", info.height}} {
		got := int64(0)
		if member(tree, d.key) != nil {
			got = intMember(tree, d.key)
		}
		if got != int64(d.want) {
			return fmt.Errorf("%s %d, but the image header says %d", d.key, got, d.want)
		}
	}
	return nil
}
