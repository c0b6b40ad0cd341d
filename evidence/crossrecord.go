package evidence

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// The rules that tie records of different files together (FORMAT.md,
// section 8, rules 11 to 13 and 17): times that never go backwards, the
// action event of every action line, the embedded copies of extracted
// artifacts equal to their files, and the images a model call showed
// stored before it. The writer applies them before it writes and the
// verifier after it reads, as the rules of check.go.

// ErrNoActionEvent is wrapped by the error of Writer.Action and
// Writer.Seal when an action line has no action event after it: the
// session records one for every action it ran (FORMAT.md, section 8,
// rule 12).
var ErrNoActionEvent = errors.New("evidence: an executed action without its action event")

// parseTime parses a record's or an entry's time (an RFC 3339 date-time,
// checked by the schema) as an instant. RFC 3339 allows a lower-case t
// and z; a leap second (:60) cannot be compared and is refused.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q cannot be compared: %w", s, err)
	}
	return t, nil
}

// notBefore checks that the time what is not before the time floor (both
// RFC 3339), naming them.
func notBefore(what, t, floorWhat, floor string) error {
	a, err := parseTime(t)
	if err != nil {
		return err
	}
	b, err := parseTime(floor)
	if err != nil {
		return err
	}
	if a.Before(b) {
		return fmt.Errorf("time goes backwards: %s %s is before %s %s", what, t, floorWhat, floor)
	}
	return nil
}

// pendingAction is an action line whose action event is not recorded
// yet.
type pendingAction struct {
	id, typ string
	line    int // its line of actions.jsonl
	entry   int // its ledger entry
}

// actionOwed returns the error for an action line without its event,
// found when what came next (the next action line, the seal).
func (p *pendingAction) owed(next string) error {
	return fmt.Errorf("%w: action %q (%s) has no %q event in %s before %s", ErrNoActionEvent, p.id, p.typ, contract.EventAction, FileEvents, next)
}

// checkActionEvent checks an event against the action line waiting for
// its event: an action event is the one of that action (same id and type),
// and no other action event is recorded. It reports whether the event is
// that action's.
func checkActionEvent(r rec, p *pendingAction) (bool, error) {
	if !r.at("type").is(string(contract.EventAction)) {
		return false, nil
	}
	id, typ := r.at("actionId").str(), r.at("actionType").str()
	switch {
	case p == nil:
		return false, fmt.Errorf("an action event for %q, but no action line before it is waiting for its event", id)
	case id != p.id || typ != p.typ:
		return false, fmt.Errorf("an action event for %q (%s), but the action line before it (%s line %d) is %q (%s)", id, typ, FileActions, p.line, p.id, p.typ)
	}
	return true, nil
}

// embeddedArtifacts returns the ids and the digests (SHA-256 of the
// canonical bytes) of the extracted artifacts an observation embeds.
func embeddedArtifacts(r rec) ([]string, []Hash, error) {
	list, _ := r.at("extractedArtifacts").value().([]any)
	ids := make([]string, len(list))
	sums := make([]Hash, len(list))
	for i, a := range list {
		b, err := canonjson.EncodeValue(a)
		if err != nil {
			return nil, nil, err
		}
		ids[i], sums[i] = recOf(a).at("id").str(), sha256.Sum256(b)
	}
	return ids, sums, nil
}

// embeddedArtifact is an artifact an observation embeds whose file is not
// recorded (yet).
type embeddedArtifact struct {
	digest Hash
	obs    string // the observation's file
	index  int    // its place in extractedArtifacts
}

// artifactMismatch is the error for an artifact that differs from its
// embedded copy.
func artifactMismatch(file string, e embeddedArtifact) error {
	return fmt.Errorf("%s differs from the copy %s embeds (extractedArtifacts[%d])", file, e.obs, e.index)
}

// checkModelImages applies rule 17 to a model call: every element of its
// images names an image of the bundle whose image-artifact record was
// recorded before the call (the record's uri equals the element's uri),
// its sha256 is that record's contentHash, so the bundle proves, by hash,
// which pixels the model was shown, and that image was produced by a
// vision escalation that was allowed (the record's actionId names an
// action line, executed under an allowing decision before the record,
// of an extract screenshot action with vision true), so the bundle also
// proves that showing it was allowed. images maps the image files
// recorded so far to their SHA-256 (the contentHash rule 6 holds their
// records to), records the artifact records recorded so far, shown the
// images whose record named such an action (visionImage).
func checkModelImages(r rec, images, records map[string]Hash, shown map[string]bool) error {
	list, _ := r.at("images").value().([]any)
	for i, x := range list {
		img := recOf(x)
		uri, sum := img.at("uri").str(), img.at("sha256").str()
		d, stored := images[uri]
		if id := artifactID(uri); !stored || id == "" || !hasRecord(records, artifactFile(id)) {
			return fmt.Errorf("images[%d] names %q, which is not an image of the bundle recorded (with its image-artifact record) before the call", i, uri)
		}
		if !isHash(img.at("sha256"), d) {
			return fmt.Errorf("images[%d] (%s) has sha256 %s, but that image's contentHash is %s", i, uri, sum, d)
		}
		if !shown[uri] {
			return fmt.Errorf("images[%d] (%s) was not produced by an allowed vision escalation: its image record's actionId does not name an extract screenshot action with vision true executed (under an allowing decision) before the record; an evidence-only screenshot may not be shown to the model", i, uri)
		}
	}
	return nil
}

// isVisionEscalation reports whether an action line's action is a vision
// escalation: an extract screenshot action with vision true (rule 17).
func isVisionEscalation(line rec) bool {
	a := line.at("action")
	return a.at("type").is(string(contract.ActExtract)) && a.at("extract").is(string(contract.ExtractScreenshot)) && a.at("vision").isTrue()
}

// visionImage notes, for an image record (of image file uri), whether the
// action it names (actionId) is, as of now, an executed vision escalation
// (vision: the action ids whose latest action line is one, executed under
// an allowing decision); rule 17 requires it of every image a model call
// shows.
func visionImage(shown, vision map[string]bool, uri string, record rec) {
	id := record.at("actionId")
	shown[uri] = id.present() && vision[id.str()]
}

// hasRecord reports whether the record file is among those recorded.
func hasRecord(records map[string]Hash, file string) bool {
	_, ok := records[file]
	return ok
}
