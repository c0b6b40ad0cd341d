package navigator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// marshaledLen is what encLen must equal: the length of encoding/json's
// encoding of s, without the quotes.
func marshaledLen(t testing.TB, s string) int {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) - 2
}

func TestEncLen(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{`"`, 2},
		{`\`, 2},
		{"\b\f\n\r\t", 10},
		{"\x00", 6},
		{"\x1f", 6},
		{"\x7f", 1},
		{"<a href='x'>&amp;</a>", 21 + 5*5}, // < > & < >
		{"é", 2},
		{"日本", 6},
		{"😀", 4},
		{"\u2028\u2029", 12},
		{"\xff", 6},                // invalid UTF-8: \ufffd
		{"\xc3", 6},                // a truncated sequence
		{"\xed\xa0\x80", 18},       // an encoded surrogate: three invalid bytes
		{"a\xf4\x90\x80\x80b", 26}, // beyond U+10FFFF: four invalid bytes
		{"\xef\xbf\xbd", 3},        // U+FFFD itself is valid
		{"x\u2027y\u202a", 1 + 3 + 1 + 3},
	}
	for _, tt := range tests {
		if got := encLen(tt.s); got != tt.want {
			t.Errorf("encLen(%q) = %d, want %d", tt.s, got, tt.want)
		}
		if got, want := encLen(tt.s), marshaledLen(t, tt.s); got != want {
			t.Errorf("encLen(%q) = %d, encoding/json writes %d", tt.s, got, want)
		}
	}
	// Random strings over an alphabet of every class of byte.
	alphabet := []string{"a", " ", `"`, `\`, "\n", "\x01", "<", ">", "&", "\x7f", "é", "日", "\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "😀"}
	r := rand.New(rand.NewPCG(11, 12))
	for range 5000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := encLen(s), marshaledLen(t, s); got != want {
			t.Fatalf("encLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
	}
}

// FuzzEncLen holds encLen to encoding/json on any page text.
func FuzzEncLen(f *testing.F) {
	for _, s := range []string{"", "plain", "<b>&</b>", "\"\\\n\x00", "é\u2028\xff", "\xed\xa0\x80😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := encLen(s), marshaledLen(t, s); got != want {
			t.Fatalf("encLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
	})
}

// trimByTrial is EncodeObservation's trimming done the slow way, as the
// definition: each field cut to what is left of the budget once the
// document is encoded with that field emptied. EncodeObservation computes
// the same cuts from encoded lengths and must return the same bytes.
func trimByTrial(t *testing.T, o contract.Observation, budget int) ([]byte, Trimmed) {
	t.Helper()
	var tr Trimmed
	enc := func() []byte {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fit := func(field *string, marker string) []byte {
		full := *field
		*field = ""
		*field = shorten(full, budget-len(enc()), marker)
		return enc()
	}
	b := enc()
	if len(b) > budget {
		tr.Snapshot = o.DOMSnapshot != ""
		b = fit(&o.DOMSnapshot, SnapshotTrimmedMarker)
	}
	if len(b) > budget {
		tr.Text = o.DOMText != ""
		b = fit(&o.DOMText, TextTrimmedMarker)
	}
	if len(b) > budget && len(o.ExtractedArtifacts) > 0 {
		tr.Artifacts = true
		full := o.ExtractedArtifacts
		o.ExtractedArtifacts = append([]contract.Artifact(nil), full...)
		for i := range o.ExtractedArtifacts {
			o.ExtractedArtifacts[i].Value = ""
		}
		b = enc()
		if share := (budget - len(b)) / len(full); share >= minKeep {
			for i := range o.ExtractedArtifacts {
				o.ExtractedArtifacts[i].Value = shorten(full[i].Value, share, ArtifactTrimmedMarker)
			}
			b = enc()
		}
	}
	tr.Bytes = len(b)
	tr.OverBudget = len(b) > budget
	return b, tr
}

func TestEncodeObservationCutsAsByTrial(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	words := []string{"text", "<b>", "&", `"q"`, "é", "日本語", "\n", "\u2028", "\x01", "x"}
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	n := 0
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
			want, wantTr := trimByTrial(t, o, budget)
			got, gotTr, err := EncodeObservation(o, budget, nil)
			if err != nil {
				t.Fatalf("round %d budget %d: %v", round, budget, err)
			}
			if !bytes.Equal(got, want) || gotTr != wantTr {
				t.Fatalf("round %d budget %d: got %d bytes %+v, by trial %d bytes %+v", round, budget, len(got), gotTr, len(want), wantTr)
			}
			n++
		}
	}
	t.Logf("%d observations", n)
}
