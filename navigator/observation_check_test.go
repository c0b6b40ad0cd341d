package navigator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

// The secret of the tests below: a short value whose placeholder is much
// longer, so that scrubbing can push a field over its limit.
const (
	testSecretName  = "A_RATHER_LONG_SECRET_NAME"
	testSecretValue = "s3cr3t!"
)

func testSecrets(t testing.TB) *secrets.Set {
	t.Helper()
	set, err := secrets.NewSet(map[string]string{testSecretName: testSecretValue})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Bounds of the observation schema that the tests below probe on each
// side. Lengths are in characters (code points), as JSON Schema counts
// them.
const (
	maxTextChars          = 1 << 20 // domText
	maxSnapshotChars      = 4 << 20 // domSnapshot
	maxSelectorChars      = 2048    // an affordance's selector
	maxRoleChars          = 128     // an affordance's role
	maxAffordanceText     = 2000    // an affordance's text
	maxArtifactValueChars = 1 << 20 // an artifact's value
)

// holdToSchema encodes o and holds the result to the rules: an error is the
// schema's (*schemas.ValidationError or schemas.ErrTooLarge); a document is
// valid under the schema, holds no secret value, and is o scrubbed and
// trimmed as checkTrimmed says. It returns whether o was encoded.
func holdToSchema(t *testing.T, o contract.Observation, budget int, set *secrets.Set) bool {
	t.Helper()
	got, tr, err := EncodeObservation(o, budget, set)
	if err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) && !errors.Is(err, schemas.ErrTooLarge) {
			t.Fatalf("budget %d: error %v is neither a *schemas.ValidationError nor ErrTooLarge", budget, err)
		}
		return false
	}
	if err := schemas.Validate(schemas.KindObservation, got); err != nil {
		t.Fatalf("budget %d: the document is not valid: %v", budget, err)
	}
	if set != nil && bytes.Contains(got, []byte(testSecretValue)) {
		t.Fatalf("budget %d: the secret value is in the document", budget)
	}
	checkTrimmed(t, FilterObservation(o, set), got, tr, budget)
	return true
}

// validObservation is a valid observation with a few affordances.
func validObservation() contract.Observation {
	return contract.Observation{
		State: contract.State{
			SessionID: "s-test", Mode: contract.ModePlaywright, ActiveURL: "http://shop.test/p", Title: "T <&>",
			Viewport:  contract.Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
			Timestamp: "2026-01-23T10:16:02Z", DOMHash: strings.Repeat("ab", 32),
			PolicyContext: contract.PolicyContext{Classification: contract.ClassPublic, MaxStepBudget: 50, DecisionLogID: "dec-test"},
		},
		DOMText:     "Order <now> & \"save\"",
		DOMSnapshot: `{"root":["#document",{},["html",{},["body",{}]]],"v":1}`,
		Affordances: []contract.Affordance{
			{Selector: "#name", Role: "textbox", Text: "Name", ActionHint: contract.HintType},
			{Selector: `[data-testid="buy"]`, Role: "button", ActionHint: contract.HintClick},
			{Selector: "main > p"},
		},
	}
}

func validArtifact(id string) contract.Artifact {
	return contract.Artifact{ID: id, Type: contract.ArtifactText, Value: "row;row", SourceSelector: "#t", SourceURL: "http://shop.test/p", Hash: strings.Repeat("cd", 32)}
}

// TestEncodeObservationChecks: each rule of the schema, on each side of
// its bound, in every part of the observation, before and after trimming.
func TestEncodeObservationChecks(t *testing.T) {
	affordances := func(n int) []contract.Affordance {
		affs := make([]contract.Affordance, n)
		for i := range affs {
			affs[i] = contract.Affordance{Selector: fmt.Sprintf("#b%d", i)}
		}
		return affs
	}
	artifacts := func(n int) []contract.Artifact {
		arts := make([]contract.Artifact, n)
		for i := range arts {
			arts[i] = validArtifact(fmt.Sprintf("a%d", i))
		}
		return arts
	}
	big := 1 << 30 // a budget that cuts nothing
	tests := []struct {
		name   string
		edit   func(o *contract.Observation)
		budget int
		set    bool
		want   bool // valid
	}{
		{"valid", func(o *contract.Observation) {}, 0, false, true},
		{"no affordances", func(o *contract.Observation) { o.Affordances = nil }, 0, false, true},
		{"hostile text", func(o *contract.Observation) {
			o.DOMText = `","affordances":[{"selector":"#evil"}]}` + "\x00\u2028</script>\xff"
			o.Affordances[0].Text = `"},{"selector":"#evil`
		}, 0, false, true},
		{"empty selector", func(o *contract.Observation) { o.Affordances[1].Selector = "" }, 0, false, false},
		{"selector of 2048 characters", func(o *contract.Observation) { o.Affordances[0].Selector = strings.Repeat("x", 2048) }, 0, false, true},
		{"selector of 2049 characters", func(o *contract.Observation) { o.Affordances[0].Selector = strings.Repeat("x", 2049) }, 0, false, false},
		{"selector of 2048 two-byte characters", func(o *contract.Observation) { o.Affordances[0].Selector = strings.Repeat("é", 2048) }, 0, false, true},
		{"selector of 2049 invalid bytes", func(o *contract.Observation) { o.Affordances[0].Selector = strings.Repeat("\xff", 2049) }, 0, false, false},
		{"role of 128 characters", func(o *contract.Observation) { o.Affordances[0].Role = strings.Repeat("日", 128) }, 0, false, true},
		{"role of 129 characters", func(o *contract.Observation) { o.Affordances[0].Role = strings.Repeat("r", 129) }, 0, false, false},
		{"text of 2000 characters", func(o *contract.Observation) { o.Affordances[2].Text = strings.Repeat("<", 2000) }, 0, false, true},
		{"text of 2001 characters", func(o *contract.Observation) { o.Affordances[2].Text = strings.Repeat("t", 2001) }, 0, false, false},
		{"unknown action hint", func(o *contract.Observation) { o.Affordances[2].ActionHint = "hover" }, 0, false, false},
		{"5000 affordances", func(o *contract.Observation) { o.Affordances = affordances(5000) }, 0, false, true},
		{"5001 affordances", func(o *contract.Observation) { o.Affordances = affordances(5001) }, 0, false, false},
		{"an empty list of artifacts", func(o *contract.Observation) { o.ExtractedArtifacts = []contract.Artifact{} }, 0, false, true},
		{"256 artifacts", func(o *contract.Observation) { o.ExtractedArtifacts = artifacts(256) }, big, false, true},
		{"257 artifacts", func(o *contract.Observation) { o.ExtractedArtifacts = artifacts(257) }, big, false, false},
		{"artifact id with a slash", func(o *contract.Observation) { o.ExtractedArtifacts = []contract.Artifact{validArtifact("a/b")} }, 0, false, false},
		{"artifact of no type", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(2)
			o.ExtractedArtifacts[1].Type = ""
		}, 0, false, false},
		{"artifact hash in capitals", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].Hash = strings.ToUpper(o.ExtractedArtifacts[0].Hash)
		}, 0, false, false},
		{"artifact from a relative URL", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].SourceURL = "/p"
		}, 0, false, false},
		{"artifact source selector of 2049 characters", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].SourceSelector = strings.Repeat("s", 2049)
		}, 0, false, false},
		{"artifact value of 1 Mi characters", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].Value = strings.Repeat("v", maxArtifactValueChars)
		}, big, false, true},
		{"artifact value of 1 Mi + 1 characters", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].Value = strings.Repeat("v", maxArtifactValueChars+1)
		}, big, false, false},
		{"artifact value of 1 Mi + 1 characters, cut", func(o *contract.Observation) {
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].Value = strings.Repeat("v", maxArtifactValueChars+1)
		}, 0, false, true},
		{"text of 1 Mi invalid bytes", func(o *contract.Observation) { o.DOMText = strings.Repeat("\xff", maxTextChars) }, big, false, true},
		{"text of 1 Mi + 1 characters", func(o *contract.Observation) { o.DOMText = strings.Repeat("é", maxTextChars+1) }, big, false, false},
		{"text of 1 Mi + 1 characters, cut", func(o *contract.Observation) { o.DOMText = strings.Repeat("é", maxTextChars+1) }, 0, false, true},
		{"snapshot of 4 Mi + 1 characters", func(o *contract.Observation) { o.DOMSnapshot = strings.Repeat("s", maxSnapshotChars+1) }, big, false, false},
		{"snapshot of 4 Mi + 1 characters, cut", func(o *contract.Observation) { o.DOMSnapshot = strings.Repeat("s", maxSnapshotChars+1) }, 0, false, true},
		{"no session id", func(o *contract.Observation) { o.State.SessionID = "" }, 0, false, false},
		{"a timestamp that is not one", func(o *contract.Observation) { o.State.Timestamp = "yesterday" }, 0, false, false},
		{"title of 4097 characters", func(o *contract.Observation) { o.State.Title = strings.Repeat("t", 4097) }, 0, false, false},
		{"zero viewport", func(o *contract.Observation) { o.State.Viewport.Width = 0 }, 0, false, false},
		{"a secret scrubbed", func(o *contract.Observation) {
			o.DOMText += testSecretValue
			o.Affordances[0].Role = "r" + testSecretValue
			o.ExtractedArtifacts = artifacts(1)
			o.ExtractedArtifacts[0].Value = testSecretValue
		}, 0, true, true},
		{"a placeholder longer than the role allows", func(o *contract.Observation) {
			o.Affordances[0].Role = strings.Repeat("r", 100) + testSecretValue
		}, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validObservation()
			tt.edit(&o)
			var set *secrets.Set
			if tt.set {
				set = testSecrets(t)
			}
			budget := tt.budget
			if budget == 0 {
				budget = DefaultObservationBudget
			}
			if got := holdToSchema(t, o, budget, set); got != tt.want {
				t.Errorf("valid = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEncodeObservationTooLarge: a document over schemas.MaxDocumentBytes
// (affordances are never cut) is refused, as the schema package refuses to
// read it.
func TestEncodeObservationTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 70 MB document")
	}
	o := validObservation()
	o.Affordances = nil
	sel, text := strings.Repeat("<", maxSelectorChars), strings.Repeat("<", maxAffordanceText) // 6 bytes a character
	for range 3000 {
		o.Affordances = append(o.Affordances, contract.Affordance{Selector: sel, Text: text})
	}
	_, tr, err := EncodeObservation(o, 0, nil)
	if !errors.Is(err, schemas.ErrTooLarge) || tr.Bytes <= schemas.MaxDocumentBytes {
		t.Errorf("got %v, %d bytes; want ErrTooLarge over %d bytes", err, tr.Bytes, schemas.MaxDocumentBytes)
	}
}

// TestEncodeObservationUnencodable: a state encoding/json cannot write is
// an error.
func TestEncodeObservationUnencodable(t *testing.T) {
	o := validObservation()
	o.State.Viewport.DeviceScaleFactor = math.NaN()
	if _, _, err := EncodeObservation(o, 0, nil); err == nil {
		t.Error("a NaN device scale factor was encoded")
	}
}

// obsGen generates observations near the schema's bounds, valid or not.
type obsGen struct{ r *rand.Rand }

// str returns a string of about n characters of every class of byte (the
// secret's value among them).
func (g obsGen) str(n int) string {
	alphabet := []string{"a", "Z", " ", `"`, `\`, "\n", "\x01", "<", "&", "é", "日", "😀", "\u2028", "\xff", "\xc3"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if g.r.IntN(200) == 0 {
			b.WriteString(testSecretValue)
			continue
		}
		b.WriteString(alphabet[g.r.IntN(len(alphabet))])
	}
	return b.String()
}

// length returns a length: usually short, sometimes limit-1, limit or
// limit+1, sometimes 0.
func (g obsGen) length(short, limit int) int {
	switch g.r.IntN(20) {
	case 0:
		return 0
	case 1:
		return limit - 1 + g.r.IntN(3)
	}
	return 1 + g.r.IntN(short)
}

// pick returns one of vs, the first one most often.
func pick[T any](g obsGen, vs ...T) T {
	if g.r.IntN(4) > 0 {
		return vs[0]
	}
	return vs[g.r.IntN(len(vs))]
}

func (g obsGen) observation() contract.Observation {
	o := validObservation()
	o.State.Title = g.str(pick(g, g.r.IntN(30), 4096, 4097))
	o.State.ActiveURL = pick(g, "http://shop.test/p", "http://shop.test/?q="+testSecretValue, "relative", "http://shop.test/"+g.str(5))
	o.State.Timestamp = pick(g, o.State.Timestamp, "2026-01-23T10:16:02.123+01:00", "yesterday")
	o.DOMText = g.str(g.r.IntN(3000))
	o.DOMSnapshot = g.str(g.r.IntN(6000))
	o.Affordances = nil
	for range g.r.IntN(9) {
		o.Affordances = append(o.Affordances, contract.Affordance{
			Selector:   g.str(g.length(30, maxSelectorChars)),
			Role:       g.str(pick(g, g.r.IntN(10), 0, g.length(10, maxRoleChars))),
			Text:       g.str(pick(g, g.r.IntN(50), 0, g.length(50, maxAffordanceText))),
			ActionHint: pick(g, contract.HintClick, "", contract.HintType, contract.HintSelect, contract.HintScroll, "hover"),
		})
	}
	switch g.r.IntN(4) {
	case 0:
		o.ExtractedArtifacts = []contract.Artifact{}
	case 1:
		for i := range 1 + g.r.IntN(3) {
			a := validArtifact(pick(g, fmt.Sprintf("a%d", i), "", ".x"))
			a.Type = pick(g, contract.ArtifactText, contract.ArtifactTable, "", "blob")
			a.Value = g.str(g.r.IntN(3000))
			a.SourceSelector = g.str(pick(g, g.r.IntN(20), 0, g.length(20, maxSelectorChars)))
			a.SourceURL = pick(g, a.SourceURL, "http://shop.test/?"+testSecretValue, "rel")
			a.Hash = pick(g, a.Hash, "ABC")
			o.ExtractedArtifacts = append(o.ExtractedArtifacts, a)
		}
	}
	return o
}

// TestEncodeObservationHeldToSchema: on random observations near the
// schema's bounds, with and without secrets, at budgets that cut nothing,
// some fields or all of them, EncodeObservation fails with the schema's
// error or writes a valid document, without secrets, trimmed by the rules.
func TestEncodeObservationHeldToSchema(t *testing.T) {
	g := obsGen{rand.New(rand.NewPCG(31, 32))}
	set := testSecrets(t)
	n := 600
	if testing.Short() {
		n = 150
	}
	var valid, invalid int
	for i := range n {
		o := g.observation()
		var s *secrets.Set
		if i%2 == 0 {
			s = set
		}
		full, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		budget := pick(g, 1+g.r.IntN(len(full)+100), len(full), len(full)-1, 500, 1<<20)
		if holdToSchema(t, o, max(budget, 1), s) {
			valid++
		} else {
			invalid++
		}
	}
	t.Logf("%d valid, %d invalid", valid, invalid)
	if valid < n/10 || invalid < n/10 {
		t.Errorf("%d valid and %d invalid observations: the generator does not cover both", valid, invalid)
	}
}

// FuzzEncodeObservation holds EncodeObservation to the schema and to the
// trimming rules on observations made of any page text.
func FuzzEncodeObservation(f *testing.F) {
	f.Add("Title", "text", "snapshot", "#b", "button", "Buy", "click", "", uint16(0), uint8(3), uint8(0), false)
	f.Add("", "<&>\u2028"+testSecretValue, `"}]`, "", "", "", "", "v", uint16(300), uint8(1), uint8(0), true)
	f.Add("t", "é", "\xff", "x", "r", "twelve chars", "hover", "\x00", uint16(2000), uint8(9), uint8(170), true)
	f.Add("s3c", "r3t! x", `{"root":["#document",{},["i",{"title":"s3c","b":7}],["i",{"title":"r3t!"}]],"v":1}`, "#a", "button", "s3cr", "click", "", uint16(900), uint8(2), uint8(0), true)
	// rep repeats the role and the affordance text, up to past their bounds.
	f.Fuzz(func(t *testing.T, title, text, snap, sel, role, atext, hint, value string, budget uint16, n, rep uint8, withSecrets bool) {
		role, atext = strings.Repeat(role, int(rep)%130+1), strings.Repeat(atext, int(rep)+1)
		o := validObservation()
		o.State.Title = title
		o.DOMText, o.DOMSnapshot = text, snap
		o.Affordances = nil
		for i := range int(n % 8) {
			o.Affordances = append(o.Affordances, contract.Affordance{Selector: sel + strings.Repeat("x", i%2), Role: role, Text: atext, ActionHint: contract.ActionHint(hint)})
		}
		if value != "" {
			a := validArtifact("a1")
			a.Value = value
			o.ExtractedArtifacts = []contract.Artifact{a, validArtifact("a2")}
		}
		var set *secrets.Set
		if withSecrets {
			set = testSecrets(t)
		}
		holdToSchema(t, o, int(budget)+1, set)
	})
}

// catalogueObservation is the observation of a catalogue of 2,000
// elements (the session benchmark's large page): a 400 KB snapshot and
// 60 KB of text, to be cut away, every affordance kept.
func catalogueObservation() contract.Observation {
	o := validObservation()
	o.State.ActiveURL, o.State.Title = "http://shop.test/big?n=2000", "Catalogue"
	o.DOMText = strings.Repeat("Item 1234 — a useful thing, €20\n", 2000)
	o.DOMSnapshot = strings.Repeat(`<li data-id="42"><a href="/item/42">Item 42</a><input name="qty-42"></li>`, 5500)
	o.Affordances = nil
	for i := range 2000 {
		o.Affordances = append(o.Affordances, contract.Affordance{Selector: fmt.Sprintf(`[data-testid="item-link-%d"]`, i), Role: "link", Text: fmt.Sprintf("Item %d", i), ActionHint: contract.HintClick})
	}
	return o
}

// formObservation is the observation of a small order form: a dozen
// affordances, nothing to cut.
func formObservation() contract.Observation {
	o := validObservation()
	o.DOMText = strings.Repeat("Order form: name, shipping, gift wrap. ", 30)
	o.DOMSnapshot = strings.Repeat(`["label",{"for":"name"},"Name",["input",{"id":"name","type":"text"}]],`, 100)
	o.Affordances = nil
	for i := range 12 {
		o.Affordances = append(o.Affordances, contract.Affordance{Selector: fmt.Sprintf("#field-%d", i), Role: "textbox", Text: fmt.Sprintf("Field %d", i), ActionHint: contract.HintType})
	}
	return o
}

// BenchmarkEncodeObservation encodes the session benchmark's two pages.
func BenchmarkEncodeObservation(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    contract.Observation
	}{
		{"catalogue", catalogueObservation()},
		{"form", formObservation()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for range b.N {
				doc, _, err := EncodeObservation(bc.o, 0, nil)
				if err != nil {
					b.Fatal(err)
				}
				n = len(doc)
			}
			b.ReportMetric(float64(n), "doc-bytes")
		})
	}
}

// BenchmarkMessages builds the Navigator's prompt on the order form at
// step 40: the observation and a task document with 30 progress entries.
func BenchmarkMessages(b *testing.B) {
	n, err := NewLLM(nopCompleter{}, LLMOptions{})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Goal: "Fill in and send the order form", Step: 40, Observation: formObservation(),
		Plan: &contract.Plan{Goal: "Fill in and send the order form", Steps: []contract.PlanStep{{ID: "s1", Description: "fill in the form", SuccessCriteria: "the form is sent"}}}}
	for i := range 40 {
		a := contract.Action{ID: fmt.Sprintf("t%d", i), Type: contract.ActType, Reason: "fill in the customer's name", PolicyTags: []string{}, Selector: "#name", Text: fmt.Sprintf("Customer %d", i)}
		req.Progress = append(req.Progress, Progress{Step: i + 1, Action: a, Outcome: OutcomeOK})
	}
	b.ReportAllocs()
	for range b.N {
		if _, err := n.Messages(req); err != nil {
			b.Fatal(err)
		}
	}
}

// nopCompleter is a model that is never asked.
type nopCompleter struct{}

func (nopCompleter) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("not asked")
}
