package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The observation's own encoder (obsfast.go) is held to the general path
// of every other record (canonicalize, prepareRecord), which stays the
// reference: same bytes, same masking, same refusals, same validation.

// obsSecrets are the values of the equivalence tests: ASCII, one that
// canonical JSON escapes, non-ASCII, a PIN of digits.
var obsSecrets = map[string]string{
	"API": "sk-live-0123456789",
	"Q":   `x"y\z<&>`,
	"U":   "pässwörd-日本",
	"PIN": "2026",
}

// pieces are what random strings are made of: plain text, characters
// canonical JSON escapes or encoding/json escapes differently, non-ASCII
// (a surrogate pair in UTF-16 and U+E000..U+FFFF among them), invalid
// UTF-8, placeholders, and the secrets, whole and in part.
var pieces = []string{
	"Buy", "item 42", " ", "https://shop.example/p?q=1&r=2", "#buy > a.link", "\"", "\\", "\n", "\t", "\b", "\f", "\r",
	"\x00", "\x1f", "\x7f", "<", ">", "&", "\u2028", "\u2029", "é", "日本語", "😀", "\uE000", "\uFFFD", "\uFEFF",
	"\xff", "\xed\xa0\x80", "\xe6\x97", "\xc3", "{{secret:API}}", RedactedText, "sk-live-", "0123456789",
	"sk-live-0123456789", `x"y\z<&>`, "pässwörd-日本", "2026", "pässwörd", "12", "-01-23T10:15:00Z",
}

// randText returns a random string of up to five pieces.
func randText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(6); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// randObservation returns an observation whose free text and, when wild,
// structural strings and numbers are random: wild ones are mostly invalid
// or refused, the others mostly valid.
func randObservation(r *rand.Rand, wild bool) contract.Observation {
	text := func() string { return randText(r) }
	structural := func(valid string) string {
		if wild && r.IntN(8) == 0 {
			return randText(r)
		}
		return valid
	}
	o := testObservation(r.IntN(60), "")
	o.DOMSnapshot = ""
	o.DOMText = text()
	o.State.Title = text()
	o.State.ActiveURL = "https://shop.example/" + text()
	if r.IntN(3) == 0 {
		o.State.DOMHash = ""
	}
	o.State.DOMHash = structural(o.State.DOMHash)
	o.State.SessionID = structural(o.State.SessionID)
	o.State.Timestamp = structural(o.State.Timestamp)
	o.State.Mode = contract.DriverMode(structural(string(o.State.Mode)))
	o.State.PolicyContext.DecisionLogID = structural(o.State.PolicyContext.DecisionLogID)
	o.State.PolicyContext.Classification = contract.Classification(structural(string(contract.ClassSensitive)))
	o.State.PolicyContext.AllowVisionEscalation = r.IntN(2) == 0
	o.State.PolicyContext.MaxStepBudget = r.IntN(2026 * 2)
	if r.IntN(2) == 0 {
		tab := r.IntN(1 << 20)
		o.State.TabID = &tab
	}
	o.State.Viewport.DeviceScaleFactor = []float64{1, 1.5, 2.625, 0.1, 1e-7}[r.IntN(5)]
	if wild {
		big := []int{-1, 0, 1 << 53, 1<<53 + 1, math.MaxInt64, math.MinInt64, 123456789012345678}
		o.State.Viewport.Width = big[r.IntN(len(big))]
		o.State.Viewport.DeviceScaleFactor = []float64{1e21, 1e-7, -0.0, 123456.789e300, 5e-324}[r.IntN(5)]
	}
	switch r.IntN(4) {
	case 0:
		o.Affordances = nil
	case 1:
		o.Affordances = []contract.Affordance{}
	default:
		hints := []contract.ActionHint{"", contract.HintClick, contract.HintType, contract.HintSelect, contract.HintScroll}
		for n := 1 + r.IntN(8); n > 0; n-- {
			a := contract.Affordance{Selector: "#a" + text(), ActionHint: hints[r.IntN(len(hints))]}
			if r.IntN(3) > 0 {
				a.Role = text()
			}
			if r.IntN(3) > 0 {
				a.Text = text()
			}
			a.ActionHint = contract.ActionHint(structural(string(a.ActionHint)))
			o.Affordances = append(o.Affordances, a)
		}
	}
	switch r.IntN(3) {
	case 0:
		o.ExtractedArtifacts = []contract.Artifact{}
	case 1:
		types := []contract.ArtifactType{contract.ArtifactText, contract.ArtifactTable, contract.ArtifactLink, contract.ArtifactScreenshot}
		for n := 1 + r.IntN(3); n > 0; n-- {
			a := contract.Artifact{
				ID: structural(fmt.Sprintf("art-%d", r.IntN(100))), Type: contract.ArtifactType(structural(string(types[r.IntN(len(types))]))),
				Value: text(), SourceURL: "https://shop.example/" + text(), Hash: structural(sha(fmt.Sprint(r.IntN(100)))),
			}
			if r.IntN(2) == 0 {
				a.SourceSelector = "#s" + text()
			}
			o.ExtractedArtifacts = append(o.ExtractedArtifacts, a)
		}
	}
	return o
}

// secretKind says whether err is nil, a refusal for a secret, or another
// error, for comparing the outcomes of two paths.
func secretKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrSecret):
		return "secret"
	}
	return "error"
}

// TestCanonicalObservationMatchesGeneralPath holds the observation's
// encoder to canonicalize on random observations, with and without known
// values, valid or not: the same bytes and masking report, and a refusal
// (ErrSecret) or other error exactly when the general path has one.
func TestCanonicalObservationMatchesGeneralPath(t *testing.T) {
	maskers := testMaskers(t)[:3] // none, secrets, secrets and a redacted text
	r := rand.New(rand.NewPCG(11, 12))
	counts := map[string]int{}
	for i := 0; i < 6000; i++ {
		m := maskers[i%3]
		o := randObservation(r, i%2 == 1)
		want, wantMasked, wantErr := canonicalize(string(schemas.KindObservation), o, m)
		got, gotMasked, gotErr := canonicalObservation(&o, m, nil)
		counts[secretKind(wantErr)]++
		if masked := wantMasked; masked {
			counts["masked"]++
		}
		if g, w := secretKind(gotErr), secretKind(wantErr); g != w {
			t.Fatalf("case %d: got error %v (%s), want %v (%s)\n%#v", i, gotErr, g, wantErr, w, o)
		}
		if wantErr != nil {
			continue
		}
		if !bytes.Equal(got, want) || gotMasked != wantMasked {
			t.Fatalf("case %d: got masked=%v\n%s\nwant masked=%v\n%s", i, gotMasked, got, wantMasked, want)
		}
	}
	// The random cases must reach every outcome, or the test proves little.
	// (Errors other than refusals, NaN and infinities, are cases below.)
	for _, k := range []string{"ok", "secret", "masked"} {
		if counts[k] < 50 {
			t.Errorf("only %d cases of outcome %q: %v", counts[k], k, counts)
		}
	}
}

// TestPrepareObservationMatchesGeneralPath holds prepareObservation to
// prepareRecord on mostly valid random observations: the same bytes, the
// same validation errors, the same record read by checkObservation, with
// the scratch buffer and tape reused from case to case.
func TestPrepareObservationMatchesGeneralPath(t *testing.T) {
	m, err := newMasker(obsSecrets)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(13, 14))
	valid := 0
	var sc obsScratch // reused, as the writer does
	for i := 0; i < 3000; i++ {
		o := randObservation(r, i%4 == 0)
		want, wantRec, wantMasked, wantErr := prepareRecord(string(schemas.KindObservation), o, m)
		got, gotRec, gotMasked, gotErr := prepareObservation(o, m, &sc)
		if g, w := secretKind(gotErr), secretKind(wantErr); g != w {
			t.Fatalf("case %d: got error %v, want %v", i, gotErr, wantErr)
		}
		if wantErr != nil {
			if secretKind(wantErr) == "error" && gotErr.Error() != wantErr.Error() {
				t.Fatalf("case %d: got error %q, want %q", i, gotErr, wantErr)
			}
			continue
		}
		valid++
		if !bytes.Equal(got, want) || gotMasked != wantMasked {
			t.Fatalf("case %d: got\n%s\nwant\n%s", i, got, want)
		}
		digest, _ := ParseHash(o.State.DOMHash)
		gotCheck := fmt.Sprint(checkObservation(gotRec, testSession, digest, nil, false))
		wantCheck := fmt.Sprint(checkObservation(wantRec, testSession, digest, nil, false))
		if gotCheck != wantCheck {
			t.Fatalf("case %d: checkObservation got %s, want %s", i, gotCheck, wantCheck)
		}
	}
	if valid < 500 {
		t.Errorf("only %d valid cases of 3000", valid)
	}
}

// TestCanonicalObservationCases checks the edges one by one against the
// general path, and that a refusal names its place.
func TestCanonicalObservationCases(t *testing.T) {
	secrets := map[string]string{"SPAN": `b","selector":"#a`, "NAME": "sourceSelector"}
	for k, v := range obsSecrets {
		secrets[k] = v
	}
	m, err := newMasker(secrets)
	if err != nil {
		t.Fatal(err)
	}
	tab := 7
	base := func(f func(o *contract.Observation)) contract.Observation {
		o := testObservation(3, "")
		o.DOMSnapshot = ""
		f(&o)
		return o
	}
	tests := []struct {
		name    string
		obs     contract.Observation
		wantErr string // a substring of the error; "" for none
		secret  bool
	}{
		{"plain", base(func(o *contract.Observation) {}), "", false},
		{"nil affordances", base(func(o *contract.Observation) { o.Affordances = nil }), "", false},
		{"empty artifacts", base(func(o *contract.Observation) { o.ExtractedArtifacts = []contract.Artifact{} }), "", false},
		{"tab id", base(func(o *contract.Observation) { o.State.TabID = &tab }), "", false},
		{"escapes and non-ASCII", base(func(o *contract.Observation) { o.DOMText = "a\"b\\c\n\x01<>&\u2028é😀\uE000" }), "", false},
		{"invalid UTF-8", base(func(o *contract.Observation) { o.State.Title = "a\xffb\xed\xa0\x80c\xe6\x97" }), "", false},
		{"secret in free text", base(func(o *contract.Observation) {
			o.Affordances[0].Text = "key sk-live-0123456789 here"
			o.State.Title = `x"y\z<&>`
		}), "", false},
		{"secret in session id", base(func(o *contract.Observation) { o.State.SessionID = "sk-live-0123456789" }), "/state/sessionId is not free text", true},
		{"secret in action hint", base(func(o *contract.Observation) { o.Affordances[0].ActionHint = "pässwörd-日本" }), "/affordances/*/actionHint is not free text", true},
		{"secret in artifact id", base(func(o *contract.Observation) {
			o.ExtractedArtifacts = []contract.Artifact{{ID: "sk-live-0123456789", Type: "text", Value: "v", SourceURL: "https://a.example/", Hash: sha("v")}}
		}), "/extractedArtifacts/*/id is not free text", true},
		{"secret in the snapshot member", base(func(o *contract.Observation) { o.DOMSnapshot = "sk-live-0123456789" }), "/domSnapshot is not free text", true},
		{"secret across two strings", base(func(o *contract.Observation) {
			o.Affordances = []contract.Affordance{{Role: "ab", Selector: "#a"}}
		}), "in the bytes of the record", true},
		{"PIN in a time", base(func(o *contract.Observation) { o.State.Timestamp = "2026-01-23T10:15:00Z" }), "", false},
		{"PIN in the budget", base(func(o *contract.Observation) { o.State.PolicyContext.MaxStepBudget = 2026 }), "", false},
		{"NaN", base(func(o *contract.Observation) { o.State.Viewport.DeviceScaleFactor = math.NaN() }), "number", false},
		{"infinity", base(func(o *contract.Observation) { o.State.Viewport.DeviceScaleFactor = math.Inf(1) }), "number", false},
		{"secret as a member name", base(func(o *contract.Observation) {
			o.ExtractedArtifacts = []contract.Artifact{{ID: "a1", Type: "text", Value: "v", SourceURL: "https://a.example/", SourceSelector: "#v", Hash: sha("v")}}
		}), "a member name of /extractedArtifacts/*", true},
		{"member name absent", base(func(o *contract.Observation) {
			o.ExtractedArtifacts = []contract.Artifact{{ID: "a1", Type: "text", Value: "v", SourceURL: "https://a.example/", Hash: sha("v")}}
		}), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, gotMasked, gotErr := canonicalObservation(&tc.obs, m, nil)
			want, wantMasked, wantErr := canonicalize(string(schemas.KindObservation), tc.obs, m)
			if (gotErr != nil) != (wantErr != nil) || errors.Is(gotErr, ErrSecret) != errors.Is(wantErr, ErrSecret) {
				t.Fatalf("got error %v, want %v", gotErr, wantErr)
			}
			if tc.wantErr == "" && gotErr != nil {
				t.Fatalf("got error %v, want none", gotErr)
			}
			if tc.wantErr != "" && (gotErr == nil || !strings.Contains(gotErr.Error(), tc.wantErr)) {
				t.Fatalf("got error %v, want one containing %q", gotErr, tc.wantErr)
			}
			if errors.Is(gotErr, ErrSecret) != tc.secret {
				t.Fatalf("got error %v, ErrSecret %v, want %v", gotErr, !tc.secret, tc.secret)
			}
			if gotErr == nil && (!bytes.Equal(got, want) || gotMasked != wantMasked) {
				t.Fatalf("got masked=%v %s\nwant masked=%v %s", gotMasked, got, wantMasked, want)
			}
		})
	}
}
