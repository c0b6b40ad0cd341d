package navigator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

// DefaultObservationBudget is the byte budget of the observation document
// the LLM Navigator sends (about 16k tokens).
const DefaultObservationBudget = 64 << 10

// Markers that end a field EncodeObservation shortened.
const (
	SnapshotTrimmedMarker = "\n[aegis: snapshot trimmed]"
	TextTrimmedMarker     = "\n[aegis: text trimmed]"
	ArtifactTrimmedMarker = "\n[aegis: artifact trimmed]"
)

// minKeep is the least of a field worth keeping: below it the field is
// emptied instead of shortened.
const minKeep = 256

// Trimmed reports what EncodeObservation cut to fit the budget.
type Trimmed struct {
	// Snapshot, Text and Artifacts say which fields were shortened or
	// emptied.
	Snapshot, Text, Artifacts bool
	// Bytes is the size of the document.
	Bytes int
	// OverBudget is set when the document is larger than the budget even
	// with the snapshot, the text and the artifacts emptied: the
	// affordances are never cut.
	OverBudget bool
}

// EncodeObservation returns obs as a JSON document valid under the
// observation schema, at most budget bytes long (<= 0: the default)
// whenever the affordances allow it. To fit, it shortens, in this order,
// the DOM snapshot (emptied if need be), then the visible text, then the
// extracted artifacts' values, each cut at its end with a marker; it never
// drops or shortens an affordance, which is what the model acts on. The
// secret values of set are replaced by their placeholders first. An
// observation that is not valid once scrubbed and trimmed is an error
// (wrapping the schema's *schemas.ValidationError, or schemas.ErrTooLarge).
//
// The document is written by construction, once, in the bytes
// encoding/json writes, and checked against the schema's rules on the way
// (see obsEncoder): it is not parsed again.
func EncodeObservation(obs contract.Observation, budget int, set *secrets.Set) ([]byte, Trimmed, error) {
	var e obsEncoder
	return e.encode(obs, budget, set)
}

// Limits of the observation schema that obsEncoder checks itself (a test
// holds each to the schema files, and fails should those fields gain a
// rule this code does not check). Lengths are in characters (code points),
// as JSON Schema counts them: a byte of invalid UTF-8, written as U+FFFD,
// is one.
const (
	maxTextChars          = 1 << 20 // domText
	maxSnapshotChars      = 4 << 20 // domSnapshot
	maxAffordances        = 5000
	minSelectorChars      = 1 // an affordance's selector
	maxSelectorChars      = 2048
	maxRoleChars          = 128  // an affordance's role (at least 1: absent when empty)
	maxAffordanceText     = 2000 // an affordance's text (likewise)
	maxArtifacts          = 256  // extractedArtifacts (at least 1: absent when empty)
	maxArtifactValueChars = 1 << 20
)

// actionHints are the values of an affordance's actionHint.
var actionHints = []contract.ActionHint{contract.HintClick, contract.HintType, contract.HintSelect, contract.HintScroll}

// The validators of the parts of an observation whose rules (identifiers,
// URLs, times, hashes) obsEncoder leaves to the schema: the state, and
// each artifact written with its value empty. Both are a few hundred
// bytes.
var (
	stateValidator = sync.OnceValues(func() (*schemas.Validator, error) {
		return schemas.ValidatorFor(schemas.KindState)
	})
	artifactValidator = sync.OnceValues(func() (*schemas.Validator, error) {
		return schemas.ValidatorForRef("browser-observation.schema.json#/$defs/artifact")
	})
)

// obsEncoder writes an observation document in two passes. The first
// measures and checks what is never cut: the state (encoded, and checked
// with the state's schema: it is small), the affordances (counted, see
// contract.JSONStringLen, and checked with the schema's few rules for
// them: lengths and an enum), and the artifacts (encoded with their values empty, and
// checked with the artifact's schema). That length, with the encoded
// lengths of the text, the snapshot and the artifacts' values, says how
// much of each fits; the cut strings are checked for length and the
// document is then written once into a buffer of its exact size, each
// string escaped as encoding/json escapes it, HTML-safe, so that page text
// can never end a string early. Should a check fail, the document is
// validated with the schema for a full account of its problems.
type obsEncoder struct {
	arts    []byte // the artifacts, their values empty
	values  []int  // the offset in arts of each artifact's empty value
	problem *schemas.Problem
}

// Members of the document as encoding/json writes them.
const (
	memberState       = `{"state":`
	memberText        = `,"domText":`
	memberSnapshot    = `,"domSnapshot":`
	memberAffordances = `,"affordances":`
	memberArtifacts   = `,"extractedArtifacts":`
	memberSelector    = `{"selector":`
	memberRole        = `,"role":`
	memberAffText     = `,"text":`
	memberHint        = `,"actionHint":`
)

// encode is EncodeObservation.
func (e *obsEncoder) encode(obs contract.Observation, budget int, set *secrets.Set) ([]byte, Trimmed, error) {
	if budget <= 0 {
		budget = DefaultObservationBudget
	}
	o := scrubObservation(obs, set)
	var tr Trimmed
	state, err := json.Marshal(o.State)
	if err != nil {
		return nil, tr, fmt.Errorf("navigator: encode observation: %w", err)
	}
	if err := e.checkPart(stateValidator, state, "/state"); err != nil {
		return nil, tr, err
	}
	affsLen := e.affordancesLen(o.Affordances)
	if err := e.encodeArtifacts(o.ExtractedArtifacts); err != nil {
		return nil, tr, err
	}
	// The fields that may be cut are strings: the document is as long as
	// the rest (those fields empty) plus each one's encoded length, so the
	// cuts are computed, not tried.
	fixed := len(memberState) + len(state) + len(memberText) + 2 + len(memberSnapshot) + 2 +
		len(memberAffordances) + affsLen + len(e.arts) + 1
	// A field longer than the room the rest leaves is cut whatever its
	// exact length: its length is counted only up to that room (see
	// encLenUpTo), and counted exactly once cut.
	room := max(budget-fixed, 0)
	snapLen, textLen, artsLen := encLenUpTo(o.DOMSnapshot, room), encLenUpTo(o.DOMText, room), 0
	for _, a := range o.ExtractedArtifacts {
		artsLen += encLenUpTo(a.Value, room)
	}
	size := func() int { return fixed + snapLen + textLen + artsLen }
	if size() > budget {
		tr.Snapshot = o.DOMSnapshot != ""
		o.DOMSnapshot = shortenLen(o.DOMSnapshot, snapLen, budget-(size()-snapLen), SnapshotTrimmedMarker)
		snapLen = contract.JSONStringLen(o.DOMSnapshot)
	}
	if size() > budget {
		tr.Text = o.DOMText != ""
		o.DOMText = shortenLen(o.DOMText, textLen, budget-(size()-textLen), TextTrimmedMarker)
		textLen = contract.JSONStringLen(o.DOMText)
	}
	if size() > budget && len(o.ExtractedArtifacts) > 0 {
		tr.Artifacts = true
		arts := append([]contract.Artifact(nil), o.ExtractedArtifacts...)
		o.ExtractedArtifacts = arts
		artsLen = 0
		share := (budget - size()) / len(arts)
		for i := range arts {
			if share >= minKeep {
				arts[i].Value = shorten(arts[i].Value, share, ArtifactTrimmedMarker)
			} else {
				arts[i].Value = ""
			}
			artsLen += contract.JSONStringLen(arts[i].Value)
		}
	}
	tr.Bytes = size()
	tr.OverBudget = tr.Bytes > budget
	if tr.Bytes > schemas.MaxDocumentBytes {
		return nil, tr, fmt.Errorf("navigator: the observation is not valid: %w", schemas.ErrTooLarge)
	}
	e.checkLen(o.DOMText, maxTextChars, "/domText")
	e.checkLen(o.DOMSnapshot, maxSnapshotChars, "/domSnapshot")
	for i, a := range o.ExtractedArtifacts {
		e.checkLen(a.Value, maxArtifactValueChars, "/extractedArtifacts/"+strconv.Itoa(i)+"/value")
	}

	b := make([]byte, 0, tr.Bytes)
	b = append(b, memberState...)
	b = append(b, state...)
	b = append(b, memberText...)
	b = contract.AppendJSONString(b, o.DOMText)
	b = append(b, memberSnapshot...)
	b = contract.AppendJSONString(b, o.DOMSnapshot)
	b = append(b, memberAffordances...)
	b = appendAffordances(b, o.Affordances)
	prev := 0
	for i, at := range e.values {
		b = append(b, e.arts[prev:at]...)
		b = contract.AppendJSONString(b, o.ExtractedArtifacts[i].Value)
		prev = at + 2
	}
	b = append(b, e.arts[prev:]...)
	b = append(b, '}')
	if len(b) != tr.Bytes {
		// Not reached: the computed length is the written one (tests hold
		// both to encoding/json).
		return nil, tr, fmt.Errorf("navigator: encode observation: wrote %d bytes, computed %d", len(b), tr.Bytes)
	}
	if e.problem != nil {
		err := schemas.Validate(schemas.KindObservation, b)
		if err == nil {
			// The schema accepts what a check refused: the check stands.
			err = &schemas.ValidationError{Kind: schemas.KindObservation, Problems: []schemas.Problem{*e.problem}}
		}
		return nil, tr, fmt.Errorf("navigator: the observation is not valid: %w", err)
	}
	return b, tr, nil
}

// affordancesLen returns the length of affs encoded as a JSON array (nil
// as []), and checks them.
func (e *obsEncoder) affordancesLen(affs []contract.Affordance) int {
	if len(affs) > maxAffordances {
		e.fail("/affordances", fmt.Sprintf("at most %d affordances, found %d", maxAffordances, len(affs)), "maxItems")
	}
	n := len("[]") + max(len(affs)-1, 0)
	for i, a := range affs {
		n += len(memberSelector) + contract.JSONStringLen(a.Selector) + len(`""}`)
		if a.Role != "" {
			n += len(memberRole) + contract.JSONStringLen(a.Role) + 2
		}
		if a.Text != "" {
			n += len(memberAffText) + contract.JSONStringLen(a.Text) + 2
		}
		if a.ActionHint != "" {
			n += len(memberHint) + contract.JSONStringLen(string(a.ActionHint)) + 2
		}
		if e.problem == nil {
			e.checkAffordance(i, a)
		}
	}
	return n
}

// appendAffordances appends affs encoded as a JSON array (nil as []), in
// affordancesLen's length.
func appendAffordances(b []byte, affs []contract.Affordance) []byte {
	b = append(b, '[')
	for i, a := range affs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, memberSelector...)
		b = contract.AppendJSONString(b, a.Selector)
		if a.Role != "" {
			b = append(b, memberRole...)
			b = contract.AppendJSONString(b, a.Role)
		}
		if a.Text != "" {
			b = append(b, memberAffText...)
			b = contract.AppendJSONString(b, a.Text)
		}
		if a.ActionHint != "" {
			b = append(b, memberHint...)
			b = contract.AppendJSONString(b, string(a.ActionHint))
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// encodeArtifacts writes into e.arts the "extractedArtifacts" member, or
// nothing when there are none, with each artifact's value empty (its
// offset in e.values), and checks each artifact. The error is a validator
// that does not compile.
func (e *obsEncoder) encodeArtifacts(arts []contract.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	if len(arts) > maxArtifacts {
		e.fail("/extractedArtifacts", fmt.Sprintf("at most %d artifacts, found %d", maxArtifacts, len(arts)), "maxItems")
	}
	b := append(e.arts[:0], memberArtifacts...)
	b = append(b, '[')
	for i, a := range arts {
		if i > 0 {
			b = append(b, ',')
		}
		start := len(b)
		b = append(b, `{"id":`...)
		b = contract.AppendJSONString(b, a.ID)
		b = append(b, `,"type":`...)
		b = contract.AppendJSONString(b, string(a.Type))
		b = append(b, `,"value":`...)
		e.values = append(e.values, len(b))
		b = append(b, `""`...)
		if a.SourceSelector != "" {
			b = append(b, `,"sourceSelector":`...)
			b = contract.AppendJSONString(b, a.SourceSelector)
		}
		b = append(b, `,"sourceUrl":`...)
		b = contract.AppendJSONString(b, a.SourceURL)
		b = append(b, `,"hash":`...)
		b = contract.AppendJSONString(b, a.Hash)
		b = append(b, '}')
		if err := e.checkPart(artifactValidator, b[start:], "/extractedArtifacts/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	e.arts = append(b, ']')
	return nil
}

// checkAffordance checks the i-th affordance against the schema's rules.
func (e *obsEncoder) checkAffordance(i int, a contract.Affordance) {
	at := func(field string) string { return "/affordances/" + strconv.Itoa(i) + "/" + field }
	switch {
	case a.Selector == "":
		e.fail(at("selector"), fmt.Sprintf("at least %d character", minSelectorChars), "minLength")
	case overLen(a.Selector, maxSelectorChars):
		e.failLen(a.Selector, maxSelectorChars, at("selector"))
	case overLen(a.Role, maxRoleChars):
		e.failLen(a.Role, maxRoleChars, at("role"))
	case overLen(a.Text, maxAffordanceText):
		e.failLen(a.Text, maxAffordanceText, at("text"))
	case a.ActionHint != "" && !slices.Contains(actionHints, a.ActionHint):
		e.fail(at("actionHint"), fmt.Sprintf("%q is not one of %v", a.ActionHint, actionHints), "enum")
	}
}

// overLen reports whether s has more than limit characters.
func overLen(s string, limit int) bool {
	return len(s) > limit && utf8.RuneCountInString(s) > limit
}

// checkLen records a problem at ptr when s has more than limit characters.
func (e *obsEncoder) checkLen(s string, limit int, ptr string) {
	if overLen(s, limit) {
		e.failLen(s, limit, ptr)
	}
}

// failLen records that s, at ptr, has more than limit characters.
func (e *obsEncoder) failLen(s string, limit int, ptr string) {
	e.fail(ptr, fmt.Sprintf("at most %d characters, found %d", limit, utf8.RuneCountInString(s)), "maxLength")
}

// checkPart validates part, found at ptr in the document, with the
// validator v returns; an invalid part is recorded as a problem. The
// error is v's failure to compile.
func (e *obsEncoder) checkPart(v func() (*schemas.Validator, error), part []byte, ptr string) error {
	val, err := v()
	if err != nil {
		return fmt.Errorf("navigator: the observation's schema: %w", err)
	}
	if err := val.Validate(part); err != nil {
		e.fail(ptr, err.Error(), "$ref")
	}
	return nil
}

// fail records the first problem found.
func (e *obsEncoder) fail(ptr, reason, keyword string) {
	if e.problem == nil {
		e.problem = &schemas.Problem{Pointer: ptr, Reason: reason, Keyword: keyword}
	}
}

// shorten returns the longest prefix of s (cut on a rune boundary) that,
// with marker appended, takes at most avail bytes once JSON-encoded
// (quotes excluded); "" when fewer than minKeep bytes would be kept. s
// itself when it fits whole.
func shorten(s string, avail int, marker string) string {
	return shortenLen(s, encLenUpTo(s, max(avail, 0)), avail, marker)
}

// shortenLen is shorten of s whose encoded length is sLen, or, when that
// is over avail, any number over avail (see encLenUpTo).
func shortenLen(s string, sLen, avail int, marker string) string {
	if sLen <= avail {
		return s
	}
	room := avail - contract.JSONStringLen(marker)
	if room < minKeep {
		return ""
	}
	n := min(room, len(s))
	for n >= minKeep {
		p := truncRunes(s, n)
		over := contract.JSONStringLen(p) - room
		if over <= 0 {
			return p + marker
		}
		n = len(p) - over
	}
	return ""
}

// encLenUpTo is contract.JSONStringLen(s) when that is at most limit, and
// otherwise a number over limit and at most that, found without reading
// s: no character encodes in fewer bytes than it has.
func encLenUpTo(s string, limit int) int {
	if len(s) > limit {
		return len(s)
	}
	return contract.JSONStringLen(s)
}

// scrubObservation returns obs with every secret value of set replaced by
// its placeholder, in every string the page controls.
func scrubObservation(obs contract.Observation, set *secrets.Set) contract.Observation {
	if set.Len() == 0 {
		return obs
	}
	o := obs
	o.State.ActiveURL = set.Redact(o.State.ActiveURL)
	o.State.Title = set.Redact(o.State.Title)
	o.DOMText = set.Redact(o.DOMText)
	o.DOMSnapshot = set.Redact(o.DOMSnapshot)
	o.Affordances = make([]contract.Affordance, len(obs.Affordances))
	for i, a := range obs.Affordances {
		a.Selector = set.Redact(a.Selector)
		a.Text = set.Redact(a.Text)
		a.Role = set.Redact(a.Role)
		o.Affordances[i] = a
	}
	if obs.ExtractedArtifacts != nil {
		o.ExtractedArtifacts = make([]contract.Artifact, len(obs.ExtractedArtifacts))
		for i, a := range obs.ExtractedArtifacts {
			a.Value = set.Redact(a.Value)
			a.SourceSelector = set.Redact(a.SourceSelector)
			a.SourceURL = set.Redact(a.SourceURL)
			o.ExtractedArtifacts[i] = a
		}
	}
	return o
}
