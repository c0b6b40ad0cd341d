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
