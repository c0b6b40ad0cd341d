package navigator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
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
// secret values of set are replaced by their placeholders first.
func EncodeObservation(obs contract.Observation, budget int, set *secrets.Set) ([]byte, Trimmed, error) {
	if budget <= 0 {
		budget = DefaultObservationBudget
	}
	o := scrubObservation(obs, set)
	var tr Trimmed
	// The fields that may be cut are strings that are always present: the
	// document is as long as the rest (encoded once, those fields empty)
	// plus each one's encoded length. So the cuts are computed, not
	// tried, and the fields are then written into the rest.
	sk, err := encodeSkeleton(o)
	if err != nil {
		return nil, tr, err
	}
	snapLen, textLen, artsLen := encLen(o.DOMSnapshot), encLen(o.DOMText), 0
	for _, a := range o.ExtractedArtifacts {
		artsLen += encLen(a.Value)
	}
	size := func() int { return len(sk.doc) + snapLen + textLen + artsLen }
	if size() > budget {
		tr.Snapshot = o.DOMSnapshot != ""
		o.DOMSnapshot = shortenLen(o.DOMSnapshot, snapLen, budget-(size()-snapLen), SnapshotTrimmedMarker)
		snapLen = encLen(o.DOMSnapshot)
	}
	if size() > budget {
		tr.Text = o.DOMText != ""
		o.DOMText = shortenLen(o.DOMText, textLen, budget-(size()-textLen), TextTrimmedMarker)
		textLen = encLen(o.DOMText)
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
			artsLen += encLen(arts[i].Value)
		}
	}
	b, err := sk.fill(o, size())
	if err != nil {
		return nil, tr, err
	}
	tr.Bytes = len(b)
	tr.OverBudget = len(b) > budget
	if err := schemas.Validate(schemas.KindObservation, b); err != nil {
		return nil, tr, fmt.Errorf("navigator: the observation is not valid: %w", err)
	}
	return b, tr, nil
}

// skeleton is an observation encoded with its text, snapshot and artifact
// values empty, and where each of those empty strings is.
type skeleton struct {
	doc        []byte
	text, snap int   // the offset of the "" of domText and of domSnapshot
	values     []int // and of each artifact's value, in order
}

// Members whose empty string values encodeSkeleton finds. A JSON string
// cannot hold an unescaped quote, so these bytes appear only as members.
var (
	emptyText     = []byte(`"domText":""`)
	emptySnapshot = []byte(`"domSnapshot":""`)
	emptyValue    = []byte(`"value":""`)
)

// plainObservation is contract.Observation without its MarshalJSON.
type plainObservation contract.Observation

// encodeSkeleton encodes o as encoding/json does, its text, snapshot and
// artifact values empty, and finds them.
func encodeSkeleton(o contract.Observation) (skeleton, error) {
	o.DOMText, o.DOMSnapshot = "", ""
	if o.ExtractedArtifacts != nil {
		arts := make([]contract.Artifact, len(o.ExtractedArtifacts))
		for i, a := range o.ExtractedArtifacts {
			a.Value = ""
			arts[i] = a
		}
		o.ExtractedArtifacts = arts
	}
	if o.Affordances == nil {
		o.Affordances = []contract.Affordance{}
	}
	// As contract.Observation.MarshalJSON writes it, without encoding/json
	// compacting a marshaler's output once more (a test holds the two to
	// the same bytes).
	b, err := json.Marshal((*plainObservation)(&o))
	if err != nil {
		return skeleton{}, fmt.Errorf("navigator: encode observation: %w", err)
	}
	sk := skeleton{doc: b, text: -1, snap: -1}
	if i := bytes.Index(b, emptyText); i >= 0 && bytes.Count(b, emptyText) == 1 {
		sk.text = i + len(emptyText) - 2
	}
	if i := bytes.Index(b, emptySnapshot); i >= 0 && bytes.Count(b, emptySnapshot) == 1 {
		sk.snap = i + len(emptySnapshot) - 2
	}
	for off := 0; ; {
		i := bytes.Index(b[off:], emptyValue)
		if i < 0 {
			break
		}
		off += i + len(emptyValue)
		sk.values = append(sk.values, off-2)
	}
	return sk, nil
}

// fill returns the skeleton with o's text, snapshot and artifact values
// written in, size bytes long. Should the skeleton not hold exactly one
// place for each (a shape this code does not know), o is encoded whole.
func (sk skeleton) fill(o contract.Observation, size int) ([]byte, error) {
	if sk.text < 0 || sk.snap < 0 || len(sk.values) != len(o.ExtractedArtifacts) {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("navigator: encode observation: %w", err)
		}
		return b, nil
	}
	type insert struct {
		at int
		s  string
	}
	ins := []insert{{sk.text, o.DOMText}, {sk.snap, o.DOMSnapshot}}
	for i, a := range o.ExtractedArtifacts {
		ins = append(ins, insert{sk.values[i], a.Value})
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].at < ins[j].at })
	out := make([]byte, 0, size)
	prev := 0
	for _, in := range ins {
		out = append(out, sk.doc[prev:in.at]...)
		q, err := json.Marshal(in.s)
		if err != nil {
			return nil, fmt.Errorf("navigator: encode observation: %w", err)
		}
		out = append(out, q...)
		prev = in.at + 2
	}
	return append(out, sk.doc[prev:]...), nil
}

// shorten returns the longest prefix of s (cut on a rune boundary) that,
// with marker appended, takes at most avail bytes once JSON-encoded
// (quotes excluded); "" when fewer than minKeep bytes would be kept. s
// itself when it fits whole.
func shorten(s string, avail int, marker string) string {
	return shortenLen(s, encLen(s), avail, marker)
}

// shortenLen is shorten of s whose encoded length is sLen.
func shortenLen(s string, sLen, avail int, marker string) string {
	if sLen <= avail {
		return s
	}
	room := avail - encLen(marker)
	if room < minKeep {
		return ""
	}
	n := min(room, len(s))
	for n >= minKeep {
		p := truncRunes(s, n)
		over := encLen(p) - room
		if over <= 0 {
			return p + marker
		}
		n = len(p) - over
	}
	return ""
}

// encLen is the length of s JSON-encoded as encoding/json writes it,
// without the quotes: HTML-safe, '"', '\\' and \b \f \n \r \t escaped in
// two bytes, the other control characters, '<', '>', '&', U+2028, U+2029
// and each byte of invalid UTF-8 (as \ufffd) in six. It is counted, not
// encoded (a test holds it to encoding/json).
func encLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); {
		if x := escapeExtra[s[i]]; x != multiByte {
			n += int(x)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte written as \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3 // three bytes written as \u202x
		}
		i += size
	}
	return n
}

// multiByte marks, in escapeExtra, the bytes that start (or are not) a
// multi-byte character.
const multiByte = 0xff

// escapeExtra is, for each ASCII byte, how many bytes encoding/json writes
// for it beyond the byte itself.
var escapeExtra = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = multiByte
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 1
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 5
		}
	}
	return t
}()

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
