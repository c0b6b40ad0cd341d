package navigator

import (
	"encoding/json"
	"fmt"

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
	b, err := json.Marshal(o)
	if err != nil {
		return nil, tr, fmt.Errorf("navigator: encode observation: %w", err)
	}
	if len(b) > budget {
		tr.Snapshot = o.DOMSnapshot != ""
		full := o.DOMSnapshot
		o.DOMSnapshot, b, err = fit(&o, &o.DOMSnapshot, full, budget, SnapshotTrimmedMarker)
		if err != nil {
			return nil, tr, err
		}
	}
	if len(b) > budget {
		tr.Text = o.DOMText != ""
		full := o.DOMText
		o.DOMText, b, err = fit(&o, &o.DOMText, full, budget, TextTrimmedMarker)
		if err != nil {
			return nil, tr, err
		}
	}
	if len(b) > budget && len(o.ExtractedArtifacts) > 0 {
		tr.Artifacts = true
		arts := append([]contract.Artifact(nil), o.ExtractedArtifacts...)
		o.ExtractedArtifacts = arts
		for i := range arts {
			arts[i].Value = ""
		}
		if b, err = json.Marshal(o); err != nil {
			return nil, tr, err
		}
		if share := (budget - len(b)) / len(arts); share >= minKeep {
			for i := range arts {
				arts[i].Value = shorten(scrubbed(obs.ExtractedArtifacts[i].Value, set), share, ArtifactTrimmedMarker)
			}
			if b, err = json.Marshal(o); err != nil {
				return nil, tr, err
			}
		}
	}
	tr.Bytes = len(b)
	tr.OverBudget = len(b) > budget
	if err := schemas.Validate(schemas.KindObservation, b); err != nil {
		return nil, tr, fmt.Errorf("navigator: the observation is not valid: %w", err)
	}
	return b, tr, nil
}

// fit empties *field, measures the rest, and refills *field with as much
// of full as fits in budget.
func fit(o *contract.Observation, field *string, full string, budget int, marker string) (string, []byte, error) {
	*field = ""
	b, err := json.Marshal(*o)
	if err != nil {
		return "", nil, err
	}
	*field = shorten(full, budget-len(b), marker)
	if *field == "" {
		return "", b, nil
	}
	b, err = json.Marshal(*o)
	return *field, b, err
}

// shorten returns the longest prefix of s (cut on a rune boundary) that,
// with marker appended, takes at most avail bytes once JSON-encoded
// (quotes excluded); "" when fewer than minKeep bytes would be kept. s
// itself when it fits whole.
func shorten(s string, avail int, marker string) string {
	if encLen(s) <= avail {
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
// without the quotes.
func encLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
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

func scrubbed(s string, set *secrets.Set) string { return set.Redact(s) }
