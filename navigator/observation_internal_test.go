package navigator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
)

// cutField is one field EncodeObservation may cut: what it held (scrubbed,
// as the encoder saw it) and what the document holds.
type cutField struct {
	name, marker string
	full, got    string
}

// checkTrimmed holds doc, which EncodeObservation returned for o (already
// scrubbed) and budget, to the trimming rules: nothing but the snapshot,
// the text and the artifacts' values changes; each of them is either
// whole, emptied, or a prefix of itself ended by its marker; they are cut
// in that order, each only when what was left over was still over budget;
// a cut keeps the longest prefix that fits (one more character would not)
// and empties the field only when no prefix of minKeep bytes fits; the
// document exceeds the budget only when all three are empty; and tr says
// what was cut and how long the document is.
func checkTrimmed(t testing.TB, o contract.Observation, doc []byte, tr Trimmed, budget int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("budget %d, %d bytes, %+v: %s", budget, len(doc), tr, fmt.Sprintf(format, args...))
	}
	if tr.Bytes != len(doc) || tr.OverBudget != (len(doc) > budget) {
		fail("the report does not match the document")
	}
	var got contract.Observation
	if err := json.Unmarshal(doc, &got); err != nil {
		fail("%v", err)
	}
	// What is never cut: the document holds it as encoding/json writes it.
	want := roundTrip(t, o)
	if !reflect.DeepEqual(got.State, want.State) || !reflect.DeepEqual(got.Affordances, want.Affordances) {
		fail("the state or the affordances changed")
	}
	if len(got.ExtractedArtifacts) != len(want.ExtractedArtifacts) {
		fail("%d artifacts, want %d", len(got.ExtractedArtifacts), len(want.ExtractedArtifacts))
	}
	snap := cutField{"snapshot", SnapshotTrimmedMarker, o.DOMSnapshot, got.DOMSnapshot}
	text := cutField{"text", TextTrimmedMarker, o.DOMText, got.DOMText}
	var arts []cutField
	for i, a := range got.ExtractedArtifacts {
		w := want.ExtractedArtifacts[i]
		w.Value = a.Value
		if a != w {
			fail("artifact %d changed beyond its value", i)
		}
		arts = append(arts, cutField{fmt.Sprintf("artifact %d", i), ArtifactTrimmedMarker, o.ExtractedArtifacts[i].Value, a.Value})
	}
	// kept returns the part of f.full the document keeps, and whether f is
	// cut.
	kept := func(f cutField) (string, bool) {
		if f.got == normalized(f.full) {
			return f.full, false
		}
		if f.got == "" {
			return "", true
		}
		p, ok := strings.CutSuffix(f.got, f.marker)
		raw, isPrefix := rawPrefix(f.full, p)
		if !ok || !isPrefix {
			fail("%s: %.80q is neither whole, empty, nor a prefix of %.80q with the marker", f.name, f.got, f.full)
		}
		return raw, true
	}
	// checkCut holds a cut field to avail, the bytes it had once the rest
	// of the document was measured.
	checkCut := func(f cutField, avail int) {
		k, cut := kept(f)
		if !cut {
			if encLen(f.full) > avail {
				fail("%s: kept whole, %d bytes encoded, over the %d bytes left", f.name, encLen(f.full), avail)
			}
			return
		}
		if encLen(f.full) <= avail {
			fail("%s: cut, but its %d bytes fit in the %d left", f.name, encLen(f.full), avail)
		}
		room := avail - encLen(f.marker)
		if k != "" {
			if encLen(k) > room {
				fail("%s: keeps %d bytes encoded, over the %d left", f.name, encLen(k), room)
			}
			// The next place a cut may fall, on a character boundary.
			j := len(k) + 1
			for j < len(f.full) && !utf8.RuneStart(f.full[j]) {
				j++
			}
			if longer := f.full[:j]; encLen(longer) <= room {
				fail("%s: keeps %d bytes where %d fit", f.name, len(k), len(longer))
			}
			return
		}
		// Emptied: no prefix of minKeep bytes (or more) fits.
		n := minKeep
		for n < len(f.full) && !utf8.RuneStart(f.full[n]) {
			n++
		}
		if n <= len(f.full) && encLen(f.full[:n]) <= room {
			fail("%s: emptied, but %d bytes fit in the %d left", f.name, n, room)
		}
	}
	// The encoded length of the document is the rest plus each cut
	// field's encoded length: the rest at each step is recomputed from it.
	gotLen := func(fs ...cutField) (n int) {
		for _, f := range fs {
			n += encLen(normalizedRaw(f))
		}
		return n
	}
	fullLen := func(fs ...cutField) (n int) {
		for _, f := range fs {
			n += encLen(f.full)
		}
		return n
	}
	rest := len(doc) - gotLen(snap, text) - gotLen(arts...)
	_, snapCut := kept(snap)
	_, textCut := kept(text)
	artsCut := false
	for _, a := range arts {
		_, c := kept(a)
		artsCut = artsCut || c
	}
	if tr.Snapshot != (snapCut && snap.full != "") || tr.Text != (textCut && text.full != "") || (artsCut && !tr.Artifacts) {
		fail("the report says other fields were cut: snapshot %v, text %v, artifacts %v", snapCut, textCut, artsCut)
	}
	if (textCut || tr.Artifacts) && snap.got != "" {
		fail("the text or the artifacts were cut before the snapshot was emptied")
	}
	if tr.Artifacts && text.got != "" {
		fail("the artifacts were cut before the text was emptied")
	}
	if tr.Snapshot {
		checkCut(snap, budget-rest-fullLen(text)-fullLen(arts...))
	}
	if tr.Text {
		checkCut(text, budget-rest-fullLen(arts...))
	}
	if tr.Artifacts {
		share := (budget - rest) / len(arts)
		for _, a := range arts {
			if share < minKeep {
				if a.got != "" {
					fail("%s: kept with a share of %d bytes", a.name, share)
				}
				continue
			}
			checkCut(a, share)
		}
	}
	if len(doc) > budget && (snap.got != "" || text.got != "" || gotLen(arts...) != 0) {
		fail("over budget with something left to cut")
	}
}

// roundTrip returns o as a reader of its JSON sees it (invalid UTF-8
// replaced, a nil list of affordances empty).
func roundTrip(t testing.TB, o contract.Observation) contract.Observation {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var out contract.Observation
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// normalized is s as encoding/json writes it and reads it back: each byte
// of invalid UTF-8 replaced by U+FFFD.
func normalized(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// normalizedRaw returns the raw string whose encoding the document holds
// for f: f.full, a raw prefix of it with the marker, or "".
func normalizedRaw(f cutField) string {
	if f.got == normalized(f.full) {
		return f.full
	}
	if p, ok := strings.CutSuffix(f.got, f.marker); ok {
		if raw, ok := rawPrefix(f.full, p); ok {
			return raw + f.marker
		}
	}
	return f.got
}

// rawPrefix returns the prefix of s, cut on a character boundary, that
// reads as p once normalized, and whether there is one.
func rawPrefix(s, p string) (string, bool) {
	n := 0
	for i, r := range s {
		if n == len(p) {
			return s[:i], strings.HasPrefix(normalized(s), p)
		}
		n += utf8.RuneLen(r)
		if n > len(p) {
			return "", false
		}
	}
	return s, n == len(p) && normalized(s) == p
}

func TestEncodeObservationCuts(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	words := []string{"text", "<b>", "&", `"q"`, "é", "日本語", "\n", "\u2028", "\x01", "x", "\xff"}
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	n := 0
	var cut Trimmed
	for round := range 12 {
		o := contract.Observation{
			State: contract.State{
				SessionID: "s-test", Mode: contract.ModePlaywright, ActiveURL: "http://shop.test/p", Title: "T <&>",
				Viewport:  contract.Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
				Timestamp: "2026-01-23T10:16:02Z", DOMHash: strings.Repeat("ab", 32),
				PolicyContext: contract.PolicyContext{Classification: contract.ClassPublic, MaxStepBudget: 50, DecisionLogID: "dec-test"},
			},
			DOMText:     text(r.IntN(20000)),
			DOMSnapshot: text(r.IntN(40000)),
		}
		for i := range 5 + r.IntN(60) {
			o.Affordances = append(o.Affordances, contract.Affordance{Selector: fmt.Sprintf("#b%d", i), Role: "button", Text: text(r.IntN(40)), ActionHint: contract.HintClick})
		}
		for i := range round % 4 {
			o.ExtractedArtifacts = append(o.ExtractedArtifacts, contract.Artifact{ID: fmt.Sprintf("a%d", i), Type: contract.ArtifactText, Value: text(r.IntN(6000)), SourceURL: "http://shop.test/p", Hash: strings.Repeat("cd", 32)})
		}
		full, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, budget := range []int{len(full) + 1, len(full), len(full) - 1, len(full) / 2, 20000, 9000, 5000, 3000, 1000, 1 + r.IntN(len(full))} {
			doc, tr, err := EncodeObservation(o, budget, nil)
			if err != nil {
				t.Fatalf("round %d budget %d: %v", round, budget, err)
			}
			checkTrimmed(t, o, doc, tr, budget)
			cut.Snapshot, cut.Text, cut.Artifacts = cut.Snapshot || tr.Snapshot, cut.Text || tr.Text, cut.Artifacts || tr.Artifacts
			cut.OverBudget = cut.OverBudget || tr.OverBudget
			n++
		}
	}
	if !cut.Snapshot || !cut.Text || !cut.Artifacts || !cut.OverBudget {
		t.Errorf("the budgets do not cover every cut: %+v", cut)
	}
	t.Logf("%d observations", n)
}
