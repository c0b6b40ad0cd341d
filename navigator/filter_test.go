package navigator_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/secrets"
)

// TestFilterObservation: the page's words are masked in place, a value
// split across elements empties the snapshot, and an extracted artifact
// holding a value is dropped.
func TestFilterObservation(t *testing.T) {
	const secret = `Sw0rdf1sh "q\z" &+`
	set, err := secrets.NewSet(map[string]string{"PW": secret})
	if err != nil {
		t.Fatal(err)
	}
	ph := secrets.Placeholder("PW")
	tests := []struct {
		name         string
		obs          contract.Observation
		wantText     string
		wantSnapshot string
		wantArts     int
	}{
		{
			name: "echoed as typed",
			obs: contract.Observation{DOMText: "You typed: " + secret,
				DOMSnapshot: `{"root":["#document",{},["p",{},"You typed: Sw0rdf1sh \"q\\z\" &+"]],"v":1}`},
			wantText: "You typed: " + ph, wantSnapshot: `{"root":["#document",{},["p",{},"You typed: ` + ph + `"]],"v":1}`,
		},
		{
			name: "split across elements",
			obs: contract.Observation{DOMText: "Sw0rd f1sh qz",
				DOMSnapshot: `{"root":["#document",{},["p",{},["b",{},"Sw0rd"],["i",{},"f1sh q"],"z"]],"v":1}`},
			wantText: ph, wantSnapshot: "stub",
		},
		{
			name:     "spaced out",
			obs:      contract.Observation{DOMText: "S w 0 r d f 1 s h q z", DOMSnapshot: `{"root":["#document",{},["p",{},"S w 0 r d f 1 s h q z"]],"v":1}`},
			wantText: ph, wantSnapshot: "stub",
		},
		{
			name: "an artifact holding it",
			obs: contract.Observation{DOMText: "ok", ExtractedArtifacts: []contract.Artifact{
				{ID: "a1", Type: contract.ArtifactText, Value: "sw0rdf1sh-qz"}, {ID: "a2", Type: contract.ArtifactText, Value: "fine"}}},
			wantText: "ok", wantArts: 1,
		},
	}
	for _, tc := range tests {
		tc.obs.State.DOMHash = sha256Hex(tc.obs.DOMSnapshot)
		got := navigator.FilterObservation(tc.obs, set)
		if tc.wantSnapshot == "stub" {
			tc.wantSnapshot = got.DOMSnapshot
			if !strings.Contains(got.DOMSnapshot, navigator.MaskedSnapshotTag) {
				t.Errorf("%s: snapshot %q, want the masked stub", tc.name, got.DOMSnapshot)
			}
		}
		if got.State.DOMHash != sha256Hex(got.DOMSnapshot) {
			t.Errorf("%s: domHash %s is not the filtered snapshot's", tc.name, got.State.DOMHash)
		}
		if got.DOMText != tc.wantText || got.DOMSnapshot != tc.wantSnapshot || len(got.ExtractedArtifacts) != tc.wantArts {
			t.Errorf("%s: got text %q snapshot %q %d artifacts, want %q %q %d", tc.name, got.DOMText, got.DOMSnapshot, len(got.ExtractedArtifacts), tc.wantText, tc.wantSnapshot, tc.wantArts)
		}
		if strings.Contains(got.DOMSnapshot+got.DOMText, "Sw0rd") {
			t.Errorf("%s: a piece of the value is left", tc.name)
		}
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestFilterObservationAcross: a value split across attribute values of
// the snapshot, across the title and the text, or across two affordances
// is found in the page's words joined: what maps to a field is masked
// there, and the snapshot is stubbed.
func TestFilterObservationAcross(t *testing.T) {
	const secret = `Sw0rdf1sh "q\z" &+`
	set, err := secrets.NewSet(map[string]string{"PW": secret})
	if err != nil {
		t.Fatal(err)
	}
	ph := secrets.Placeholder("PW")
	snap := `{"root":["#document",{},["p",{},"hello"]],"v":1}`
	tests := []struct {
		name                string
		obs                 contract.Observation
		wantTitle, wantText string
		wantAffs            []string
		wantStub            bool
	}{
		{
			name: "split across attribute values",
			obs: contract.Observation{DOMText: "hello",
				DOMSnapshot: `{"root":["#document",{},["i",{"title":"Sw0rdf"}],["i",{"title":"1sh q"}],["b",{"class":"z"}]],"v":1}`},
			wantText: "hello", wantStub: true,
		},
		{
			name:      "split across the title and the text",
			obs:       contract.Observation{State: contract.State{Title: "Hi Sw0rd"}, DOMText: "f1sh qz and more", DOMSnapshot: snap},
			wantTitle: "Hi " + ph, wantText: ph + " and more", wantStub: true,
		},
		{
			name: "split across two affordances",
			obs: contract.Observation{DOMText: "hello", DOMSnapshot: snap, Affordances: []contract.Affordance{
				{Selector: "#a", Role: "button", Text: "Sw0rdf1"}, {Selector: "#b", Role: "button", Text: "shqz ok"}}},
			wantText: "hello", wantAffs: []string{ph, ph + " ok"}, wantStub: true,
		},
		{
			name:      "nothing split",
			obs:       contract.Observation{State: contract.State{Title: "Sw0rd"}, DOMText: "fish", DOMSnapshot: snap},
			wantTitle: "Sw0rd", wantText: "fish",
		},
	}
	for _, tc := range tests {
		tc.obs.State.DOMHash = sha256Hex(tc.obs.DOMSnapshot)
		got := navigator.FilterObservation(tc.obs, set)
		if stub := strings.Contains(got.DOMSnapshot, navigator.MaskedSnapshotTag); stub != tc.wantStub {
			t.Errorf("%s: snapshot %q, want stubbed %v", tc.name, got.DOMSnapshot, tc.wantStub)
		}
		if got.State.Title != tc.wantTitle || got.DOMText != tc.wantText {
			t.Errorf("%s: got title %q text %q, want %q %q", tc.name, got.State.Title, got.DOMText, tc.wantTitle, tc.wantText)
		}
		for i, want := range tc.wantAffs {
			if got.Affordances[i].Text != want {
				t.Errorf("%s: affordance %d text %q, want %q", tc.name, i, got.Affordances[i].Text, want)
			}
		}
		if got.State.DOMHash != sha256Hex(got.DOMSnapshot) {
			t.Errorf("%s: domHash is not the filtered snapshot's", tc.name)
		}
	}
}
