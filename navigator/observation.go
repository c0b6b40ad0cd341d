package navigator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
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
// observation passes the egress filter of set first (FilterObservation), and
// every string of the document passes Neutralize last, so that the page
// cannot forge the delimiters of the data section the document is sent in
// (DataSection). The document is written by encoding/json and validated
// against the schema:
// an observation that is not valid once scrubbed and trimmed is an error
// (wrapping the schema's *schemas.ValidationError, or schemas.ErrTooLarge).
func EncodeObservation(obs contract.Observation, budget int, set *secrets.Set) ([]byte, Trimmed, error) {
	if budget <= 0 {
		budget = DefaultObservationBudget
	}
	o := FilterObservation(obs, set)
	var tr Trimmed
	// The document is as long as the rest (the observation with the fields
	// that may be cut emptied) plus the encoded length of each of those
	// fields. A field longer than the budget is measured by its length
	// only: it is cut whatever its encoded length, which is no shorter.
	rest, err := marshalObservation(withoutCutFields(o))
	if err != nil {
		return nil, tr, err
	}
	fixed := len(rest)
	measure := func(s string) int {
		if len(s) > budget {
			return len(s)
		}
		return encLen(s)
	}
	snap, text, vals := measure(o.DOMSnapshot), measure(o.DOMText), 0
	for _, a := range o.ExtractedArtifacts {
		vals += measure(a.Value)
	}
	if fixed+snap+text+vals > budget {
		tr.Snapshot = o.DOMSnapshot != ""
		o.DOMSnapshot = shorten(o.DOMSnapshot, budget-fixed-text-vals, SnapshotTrimmedMarker)
		snap = encLen(o.DOMSnapshot)
	}
	if fixed+snap+text+vals > budget {
		tr.Text = o.DOMText != ""
		o.DOMText = shorten(o.DOMText, budget-fixed-snap-vals, TextTrimmedMarker)
		text = encLen(o.DOMText)
	}
	if arts := o.ExtractedArtifacts; fixed+snap+text+vals > budget && len(arts) > 0 {
		// Each value gets an equal share of what is left, or all are
		// emptied when a share is under minKeep.
		tr.Artifacts = true
		o.ExtractedArtifacts = make([]contract.Artifact, len(arts))
		share := (budget - fixed - snap - text) / len(arts)
		for i, a := range arts {
			if share >= minKeep {
				a.Value = shorten(a.Value, share, ArtifactTrimmedMarker)
			} else {
				a.Value = ""
			}
			o.ExtractedArtifacts[i] = a
		}
	}
	b, err := marshalObservation(o)
	if err != nil {
		return nil, tr, err
	}
	// Neutralizing only ever shortens a string: the budget still holds.
	if b, err = NeutralizeJSON(b); err != nil {
		return nil, tr, err
	}
	tr.Bytes = len(b)
	tr.OverBudget = len(b) > budget
	if err := validateOwn(b); err != nil {
		return nil, tr, fmt.Errorf("navigator: the observation is not valid: %w", err)
	}
	return b, tr, nil
}

// validateOwn validates a document encoding/json just wrote from an
// observation against the observation schema, read back as
// schemas.DecodeOwn reads what aegis wrote.
func validateOwn(b []byte) error {
	v, err := schemas.DecodeOwn(b)
	if err != nil {
		return err
	}
	return schemas.ValidateValue(schemas.KindObservation, v)
}

// withoutCutFields returns o with the fields EncodeObservation may cut
// emptied: the snapshot, the text and the artifacts' values.
func withoutCutFields(o contract.Observation) contract.Observation {
	o.DOMSnapshot, o.DOMText = "", ""
	if o.ExtractedArtifacts != nil {
		arts := make([]contract.Artifact, len(o.ExtractedArtifacts))
		for i, a := range o.ExtractedArtifacts {
			a.Value = ""
			arts[i] = a
		}
		o.ExtractedArtifacts = arts
	}
	return o
}

// marshalObservation encodes o (with encoding/json, through its
// MarshalJSON), its error wrapped.
func marshalObservation(o contract.Observation) ([]byte, error) {
	b, err := o.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("navigator: encode observation: %w", err)
	}
	return b, nil
}

// shorten returns the longest prefix of s (cut on a rune boundary) that,
// with marker appended, takes at most avail bytes once JSON-encoded
// (quotes excluded); "" when fewer than minKeep bytes would be kept. s
// itself when it fits whole.
func shorten(s string, avail int, marker string) string {
	// No byte encodes in fewer than one: a string longer than avail is
	// cut without being encoded whole, and no prefix longer than room
	// fits.
	if len(s) <= avail && encLen(s) <= avail {
		return s
	}
	room := avail - encLen(marker)
	if room < minKeep {
		return ""
	}
	p := text.CutBytes(s, min(room, len(s)))
	over := encLen(p) - room
	if over <= 0 {
		return p + marker
	}
	// Binary search for the longest prefix that fits: text.CutBytes(s, lo)
	// does, since cutting over bytes more takes at least over encoded
	// bytes away, and text.CutBytes(s, hi) does not.
	fits := func(n int) bool { return encLen(text.CutBytes(s, n)) <= room }
	lo, hi := max(len(p)-over, 0), len(p)
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if p = text.CutBytes(s, lo); len(p) < minKeep {
		return ""
	}
	return p + marker
}

// encLen is the length of s JSON-encoded by encoding/json, without the
// quotes.
func encLen(s string) int {
	b, _ := json.Marshal(s) // a string always encodes
	return len(b) - 2
}

// FilterObservation returns obs passed through the egress filter of set
// (secrets.Set.Mask): every string the page controls has every secret
// value, in any encoding the filter knows or spelled out by the
// normalized check, replaced by its placeholder. An extracted artifact
// whose value holds a secret is a structured value and is dropped whole
// (the session refused it when it was extracted). The DOM snapshot is
// emptied when the normalized check found a value the encodings did not
// (the page echoes it spaced out or split), or when the page's words
// joined hold a value (see maskAcross: split across elements or attribute
// values of the snapshot, whose markup the check cannot see through, or
// across the title, the text and the affordances, whose parts of it are
// masked): the visible text and the affordances, masked, remain for the
// model; a stub takes the snapshot's place (MaskedSnapshotTag). When the snapshot changed, state.domHash is set
// to the hash of the filtered one, as the evidence requires. The session filters
// each observation once, right after the driver made it; EncodeObservation
// filters again, for callers that hand it an observation of their own.
func FilterObservation(obs contract.Observation, set *secrets.Set) contract.Observation {
	if set.Len() == 0 {
		return obs
	}
	derived := false
	mask := func(s string) string {
		out, f := set.Mask(s)
		derived = derived || f.Derived
		return out
	}
	o := obs
	o.State.ActiveURL = mask(o.State.ActiveURL)
	o.State.Title = mask(o.State.Title)
	o.DOMText = mask(o.DOMText)
	o.Affordances = make([]contract.Affordance, len(obs.Affordances))
	for i, a := range obs.Affordances {
		a.Selector = mask(a.Selector)
		a.Text = mask(a.Text)
		a.Role = mask(a.Role)
		o.Affordances[i] = a
	}
	if obs.ExtractedArtifacts != nil {
		o.ExtractedArtifacts = make([]contract.Artifact, 0, len(obs.ExtractedArtifacts))
		for _, a := range obs.ExtractedArtifacts {
			if set.Holding(a.Value) != "" {
				continue
			}
			a.SourceSelector = mask(a.SourceSelector)
			a.SourceURL = mask(a.SourceURL)
			o.ExtractedArtifacts = append(o.ExtractedArtifacts, a)
		}
	}
	snap := mask(o.DOMSnapshot)
	split := maskAcross(set, snapshotText(snap), &o)
	switch {
	case derived, split, snap != o.DOMSnapshot && json.Valid([]byte(o.DOMSnapshot)) && !json.Valid([]byte(snap)):
		// A derived echo, a value split across the page's words (text
		// nodes and attribute values of several elements, the title and
		// the text, two affordances), or a mask across the snapshot's
		// structure.
		o.DOMSnapshot = ""
	default:
		o.DOMSnapshot = snap
	}
	if o.DOMSnapshot != obs.DOMSnapshot {
		if o.DOMSnapshot == "" {
			o.DOMSnapshot = maskedSnapshot(o.DOMText)
		}
		if obs.State.DOMHash != "" {
			// The hash is the snapshot's: of the filtered one now.
			o.State.DOMHash = sha256Hex(o.DOMSnapshot)
		}
	}
	return o
}

// maskAcross runs the filter over the page's words of o joined (title,
// visible text, every affordance's text, and snapText: the snapshot's
// text nodes and attribute values), each field already filtered on its
// own, so that a value split across two of them is found too. It masks in
// each field the part of every span the normalized check finds that falls
// in it, and reports whether the joined text held a value: the snapshot,
// whose markup cannot be masked in pieces, must then go.
func maskAcross(set *secrets.Set, snapText string, o *contract.Observation) bool {
	fields := []*string{&o.State.Title, &o.DOMText}
	for i := range o.Affordances {
		fields = append(fields, &o.Affordances[i].Text)
	}
	var b strings.Builder
	starts := make([]int, len(fields))
	for i, f := range fields {
		starts[i] = b.Len()
		b.WriteString(*f)
		b.WriteByte('\n')
	}
	b.WriteString(snapText)
	joined := b.String()
	if set.Holding(joined) == "" {
		return false
	}
	spans := set.NormalizedSpans(joined)
	// Last span first, so that masking a field keeps the offsets of the
	// spans before it.
	for k := len(spans) - 1; k >= 0; k-- {
		sp := spans[k]
		for i := len(fields) - 1; i >= 0; i-- {
			f := fields[i]
			from, to := max(sp.Start, starts[i]), min(sp.End, starts[i]+len(*f))
			if from >= to {
				continue
			}
			from, to = from-starts[i], to-starts[i]
			*f = (*f)[:from] + secrets.Placeholder(sp.Name) + (*f)[to:]
		}
	}
	return true
}

// MaskedSnapshotTag is the one element of the snapshot FilterObservation
// puts in place of one it had to empty.
const MaskedSnapshotTag = "#masked"

// maskedSnapshot is the snapshot that replaces one FilterObservation
// emptied: no content, but the hash of the filtered visible text, so that
// two such pages with different text still have different domHashes and
// the session still sees the page change.
func maskedSnapshot(filteredText string) string {
	return `{"masked":"` + sha256Hex(filteredText) + `","root":["#document",{},["` + MaskedSnapshotTag + `"]],"v":1}`
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// snapshotText returns the attribute values and text nodes of a DOM
// snapshot (the observer's JSON: an element is [tag, {attributes},
// children...], a text node a string child) joined in document order
// without separators, as inline elements render them side by side, an
// element's attribute values (by attribute name) before its children;
// "" for a snapshot that is not JSON.
func snapshotText(snap string) string {
	if snap == "" {
		return ""
	}
	d := json.NewDecoder(strings.NewReader(snap))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, x := range t {
				if _, ok := x.([]any); ok {
					walk(x)
				}
			}
		case []any:
			if len(t) < 2 {
				return
			}
			if _, tag := t[0].(string); !tag {
				return
			}
			attrs, ok := t[1].(map[string]any)
			if !ok {
				return
			}
			names := make([]string, 0, len(attrs))
			for k := range attrs {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				if s, ok := attrs[k].(string); ok {
					b.WriteString(s)
				}
			}
			for _, c := range t[2:] {
				if s, ok := c.(string); ok {
					b.WriteString(s)
				} else {
					walk(c)
				}
			}
		}
	}
	walk(v)
	return b.String()
}
