package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/internal/race"
)

// The compiled Validator is held to the general validator: the same
// verdict on every vector, on every single-value mutation of them (the
// values replaced by boundary values of every type, numbers spelled in
// every way), on random documents and under fuzzing.

// refShapes are the shapes validated by ref rather than by kind, by name.
var refShapes = map[string]string{"artifact": "browser-observation.schema.json#/$defs/artifact"}

// allValidators returns the validator of every kind and every ref shape,
// by name.
func allValidators(t testing.TB) map[string]*Validator {
	t.Helper()
	out := map[string]*Validator{}
	for _, k := range Kinds() {
		v, err := ValidatorFor(k)
		if err != nil {
			t.Fatal(err)
		}
		out[string(k)] = v
	}
	for name, ref := range refShapes {
		v, err := ValidatorForRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	return out
}

// TestValidatorCompilesEveryKind: every schema compiles, none falls back
// to the general validator (which is several times slower).
func TestValidatorCompilesEveryKind(t *testing.T) {
	for name, v := range allValidators(t) {
		if err := v.Compiled(); err != nil {
			t.Errorf("%s: falls back to the general validator: %v", name, err)
		}
	}
}

func TestValidatorForUnknown(t *testing.T) {
	if _, err := ValidatorFor("nope"); err == nil || !strings.Contains(err.Error(), `unknown kind "nope"`) {
		t.Errorf("ValidatorFor(nope): got %v, want the unknown kind error", err)
	}
	if _, err := ValidatorForRef("no-such.schema.json"); err == nil {
		t.Error("ValidatorForRef(no-such.schema.json): got no error")
	}
	if _, err := ValidatorForRef("browser-observation.schema.json#/$defs/nothing"); err != nil {
		t.Errorf("a ref whose pointer does not resolve: got %v, want a validator that falls back", err)
	}
	v, _ := ValidatorForRef("browser-observation.schema.json#/$defs/nothing")
	if v.Compiled() == nil {
		t.Error("a ref whose pointer does not resolve compiled")
	}
	if err := v.ValidateValue(map[string]any{}); err == nil {
		t.Error("a ref whose pointer does not resolve accepted a value")
	}
}

// vectorDocs returns every document of the vector file of a kind, valid
// and invalid.
func vectorDocs(t testing.TB, kind string) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", kind+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Valid, Invalid []struct{ Doc json.RawMessage }
	}
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, v := range append(vf.Valid, vf.Invalid...) {
		out = append(out, v.Doc)
	}
	return out
}

// checkAgreement asserts that the compiled and the general validator agree
// on doc, and that ValidateValue accepts what they accept.
func checkAgreement(t testing.TB, name string, v *Validator, doc []byte) {
	t.Helper()
	x, err := Parse(doc)
	if err != nil {
		return
	}
	fast := v.ValidateCompiled(x)
	general := v.ValidateGeneral(x)
	if (fast == nil) != (general == nil) {
		t.Errorf("%s: validators disagree on %s:\ncompiled: %v\ngeneral: %v", name, doc, fast, general)
	}
	tape := tapeOf(x)
	if got := v.ValidateTapeCompiled(tape, 0); (got == nil) != (general == nil) {
		t.Errorf("%s: the tape walk disagrees on %s:\ntape: %v\ngeneral: %v", name, doc, got, general)
	}
	if got, want := v.ValidateTape(tape, 0), v.ValidateValue(x); (got == nil) != (want == nil) {
		t.Errorf("%s: ValidateTape %v, ValidateValue %v on %s", name, got, want, doc)
	}
	// ValidateValue is the compiled verdict (with the general account on
	// a failure, which is never nil by construction).
	if fast == nil {
		if got := v.ValidateValue(x); got != nil {
			t.Errorf("%s: ValidateValue %v, compiled nil on %s", name, got, doc)
		}
	}
}

func TestValidatorAgreesOnVectors(t *testing.T) {
	n := 0
	for name, v := range allValidators(t) {
		for _, doc := range vectorDocs(t, name) {
			checkAgreement(t, name, v, doc)
			n++
		}
	}
	if n < 100 {
		t.Errorf("only %d vectors checked", n)
	}
}

// TestValidatorAgreesOnOddDocuments: documents of every other type, and
// objects missing what the schemas dispatch on, for every shape (the tape
// walk groups the if/then items on one member: a value that is not an
// object holds every if, an object without the member only those that do
// not require it).
func TestValidatorAgreesOnOddDocuments(t *testing.T) {
	docs := []string{`null`, `true`, `0`, `"x"`, `[]`, `{}`, `[{}]`, `{"type":null}`, `{"kind":"plan"}`,
		`{"type":"click"}`, `{"type":"session.started"}`, `{"index":0}`, `{"kind":1}`, `{"type":["click"]}`}
	for name, v := range allValidators(t) {
		for _, doc := range docs {
			checkAgreement(t, name, v, []byte(doc))
		}
	}
}

// TestDispatchPlanned: the shapes that dispatch on a member (a ledger
// entry's kind, an action's type) have their if/then items grouped, so
// the tape walk looks the member up once.
func TestDispatchPlanned(t *testing.T) {
	for _, k := range []Kind{KindLedgerEntry, KindAction} {
		v, err := ValidatorFor(k)
		if err != nil {
			t.Fatal(err)
		}
		n := v.fast
		for n.ref != nil && len(n.allOf) == 0 {
			n = n.ref
		}
		most := 0
		for _, d := range n.dispatch {
			most = max(most, len(d.cases))
		}
		if most < 7 {
			t.Errorf("%s: %d dispatch groups of at most %d cases, want one of at least 7", k, len(n.dispatch), most)
		}
	}
}

// replacements are the values every member and item of a vector is
// replaced with in turn: every type, and the bounds and formats the
// schemas use.
var replacements = []any{nil, false, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("1e+21"),
	json.Number("2147483648"), "", "2026-01-23T10:15:00Z", "https://example.com/", strings.Repeat("é", 70),
	"0000000000000000000000000000000000000000000000000000000000000000", []any{}, []any{"x", "x"}, map[string]any{}}

// numberReplacements replace a number: spellings of it that no canonical
// writer uses, and numbers that differ from the schemas' bounds by less
// than a double can tell (the compiled validator must compare them
// exactly, as the general one does).
func numberReplacements(old any) []any {
	n, ok := old.(json.Number)
	if !ok {
		return nil
	}
	s := string(n)
	out := []any{json.Number(s + "e0"), json.Number("-0"), json.Number("1e-400"), json.Number("9007199254740993"),
		json.Number("60000.00000000000000000001"), json.Number("59999.999999999999999999999"), json.Number("10000.0"),
		json.Number("1E2"), json.Number("2147483647.0000000000000000001")}
	if !strings.ContainsAny(s, ".eE") {
		out = append(out, json.Number(s+".0"), json.Number(s+".0000000000000000000001"), json.Number(s+".0e0"))
	}
	return out
}

// TestValidatorAgreesOnMutations mutates every other vector document value
// by value (each member removed, each value replaced by each replacement,
// each number respelled) and checks the validators agree on each variant.
func TestValidatorAgreesOnMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	if race.Enabled {
		t.Skip("pure computation: make test runs it without -race (the agreement target)")
	}
	n := 0
	for name, v := range allValidators(t) {
		for i, doc := range vectorDocs(t, name) {
			if i%2 == 1 { // every other vector keeps the test to a few seconds
				continue
			}
			root, err := Parse(doc)
			if err != nil {
				continue
			}
			mutate(root, func() {
				b, err := json.Marshal(root)
				if err != nil {
					t.Fatal(err)
				}
				checkAgreement(t, name, v, b)
				n++
			})
		}
	}
	t.Logf("%d documents", n)
}

// mutate calls visit once for every single-site mutation of v (restoring v
// after each).
func mutate(v any, visit func()) {
	switch t := v.(type) {
	case map[string]any:
		for k, old := range t {
			delete(t, k)
			visit()
			for _, r := range append(numberReplacements(old), replacements...) {
				t[k] = r
				visit()
			}
			t[k] = old
			mutate(old, visit)
		}
		t["unexpected"] = "x"
		visit()
		delete(t, "unexpected")
	case []any:
		for i, old := range t {
			for _, r := range append(numberReplacements(old), replacements...) {
				t[i] = r
				visit()
			}
			t[i] = old
			mutate(old, visit)
		}
	}
}

// FuzzValidatorAgreement: the compiled and the general validator agree on
// any document, for any shape (a kind, or "artifact"). The committed
// corpus is testdata/fuzz/FuzzValidatorAgreement; every vector seeds it.
func FuzzValidatorAgreement(f *testing.F) {
	vals := allValidators(f)
	for name := range vals {
		for _, doc := range vectorDocs(f, name) {
			f.Add(name, []byte(doc))
		}
	}
	f.Fuzz(func(t *testing.T, name string, doc []byte) {
		v, ok := vals[name]
		if !ok || len(doc) > 1<<16 || bytes.Count(doc, []byte("[")) > 50 {
			return
		}
		checkAgreement(t, name, v, doc)
	})
}

func TestBoundCmp(t *testing.T) {
	tests := []struct {
		bound, x string
		want     int
	}{
		{"60000", "60000", 0},
		{"60000", "60000.0", 0},
		{"60000", "6e4", 0},
		{"60000", "60000.00000000000000000001", 1},
		{"60000", "59999.99999999999999999999", -1},
		{"0", "-0", 0},
		{"0", "1e-400", 1},
		{"0", "-1e-400", -1},
		{"2147483647", "2147483648", 1},
		{"9007199254740992", "9007199254740993", 1},
		{"0.1", "0.1", 0},
		{"0.1", "0.1000000000000000000001", 1},
		// Both round to the double nearest 0.1, which is not 0.1: the
		// rationals decide.
		{"0.1", "0.1000000000000000055511151231257827", 1},
		{"0.1", "0.09999999999999999999", -1},
		{"1", "1e999", 1},
		{"1", "-1e999", -1},
	}
	for _, tt := range tests {
		b, ok := newBound(tt.bound)
		if !ok {
			t.Fatalf("newBound(%s) failed", tt.bound)
		}
		got, ok := b.cmp(tt.x)
		if !ok || got != tt.want {
			t.Errorf("%s cmp %s: got %d %v, want %d", tt.x, tt.bound, got, ok, tt.want)
		}
	}
	b, _ := newBound("1")
	if _, ok := b.cmp("x"); ok {
		t.Error("cmp of a non-number: ok")
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{json.Number("1"), json.Number("1.0"), true},
		{json.Number("1"), json.Number("1e0"), true},
		{json.Number("1"), float64(1), true},
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false},
		{json.Number("-0"), json.Number("0"), true},
		{json.Number("0"), json.Number("-0.0"), true},
		{json.Number("-5"), json.Number("5"), false},
		{json.Number("10"), json.Number("1e1"), true},
		{json.Number("10"), json.Number("100"), false},
		{json.Number("-10"), json.Number("-1e1"), true},
		{json.Number("0.1"), json.Number("0.10000000000000001"), false},
		{"1", json.Number("1"), false},
		{nil, nil, true},
		{nil, false, false},
		{true, true, true},
		{map[string]any{"a": json.Number("1"), "b": []any{"x"}}, map[string]any{"b": []any{"x"}, "a": json.Number("1.00")}, true},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{[]any{"x"}, []any{"x", "x"}, false},
		{[]any{}, map[string]any{}, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestIsInteger(t *testing.T) {
	tests := []struct {
		x    string
		want bool
	}{
		{"1", true}, {"-0", true}, {"1.0", true}, {"1e2", true}, {"1.5e1", true}, {"1.25e1", false},
		{"1.5", false}, {"1e-1", false}, {"100e-2", true}, {"1.0000000000000000000001", false},
	}
	for _, tt := range tests {
		if got := isInteger(json.Number(tt.x)); got != tt.want {
			t.Errorf("isInteger(%s) = %v, want %v", tt.x, got, tt.want)
		}
	}
}

// TestFastPatterns cross-checks the hand-written pattern matchers with
// their regexps on edge cases and random strings.
func TestFastPatterns(t *testing.T) {
	alphabet := "aAzZ09_-./:~ \x00é\\jsonl"
	cases := []string{"", "a", "-", ".a", "a/b", "a//b", "/a", "a/", "_x/.y", "x/y/z", ".jsonl", "a.jsonl", "a.jsonl\n",
		strings.Repeat("a", 64), strings.Repeat("A", 64), strings.Repeat("f", 63), strings.Repeat("0", 65), "0" + strings.Repeat("9", 63)}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := r.IntN(70)
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	// Strings that match, or nearly: each seed, and random edits of it
	// (a byte replaced, inserted or removed, from the bytes the patterns
	// name), so that every boundary of every pattern is crossed.
	seeds := []string{"dec-0123456789abcdef0123456789abcdef", "apr-0123456789abcdef0123456789abcdef", "browser.click",
		"browser.x", "browser.navigate", "browser.extract", "browser.type_text", "browser." + strings.Repeat("a", 32),
		"nav", "a:b/c-d.e_f", "rule_1", strings.Repeat("r", 64), "dom/0.html", "dom/1234567890.html", "dom/12345678901.html",
		"dom/01.html", "dom/7.json", "dom/0.json", "plan.json", "plans/2.json", "plans/123456789.json", "plans/0.json",
		"artifacts/shot-1.png", "artifacts/a.jpg", "artifacts/a.b.webp", "artifacts/" + strings.Repeat("x", 128) + ".json",
		"artifacts/" + strings.Repeat("x", 129) + ".json", "artifacts/.json", "artifacts/x.json", "artifacts/x.json.json",
		"events.jsonl", "provenance/manifest-start.json", strings.Repeat("0", 64)}
	edits := "abcdefghijklmnopqrstuvwxyzABZ0123456789.-_/:\x00é"
	for _, seed := range seeds {
		cases = append(cases, seed)
		for range 400 {
			b := []byte(seed)
			for range 1 + r.IntN(2) {
				i := r.IntN(len(b) + 1)
				c := edits[r.IntN(len(edits))]
				switch r.IntN(3) {
				case 0:
					if i < len(b) {
						b[i] = c
					}
				case 1:
					b = append(b[:i], append([]byte{c}, b[i:]...)...)
				default:
					if i < len(b) {
						b = append(b[:i], b[i+1:]...)
					}
				}
			}
			cases = append(cases, string(b))
		}
	}
	for pat, f := range fastPatterns {
		re := regexp.MustCompile(pat)
		matched := 0
		for _, c := range cases {
			want := re.MatchString(c)
			if want {
				matched++
			}
			if got := f.str(c); got != want {
				t.Errorf("pattern %s on %q: fast %v, regexp %v", pat, c, got, want)
			}
			if got := f.bytes([]byte(c)); got != want {
				t.Errorf("pattern %s on bytes %q: fast %v, regexp %v", pat, c, got, want)
			}
		}
		if matched < 5 {
			t.Errorf("pattern %s: only %d cases match, the test says little", pat, matched)
		}
	}
}

// TestLowerHex8 checks the eight-at-a-time hex test against the table:
// every byte value at every place of a word of hex digits, and pairs.
func TestLowerHex8(t *testing.T) {
	base := []byte("0a9f5c1e")
	for pos := range 8 {
		for c := range 256 {
			w := append([]byte(nil), base...)
			w[pos] = byte(c)
			for pos2 := range 8 {
				for _, c2 := range []byte{'0', '9', 'a', 'f', '/', ':', '`', 'g', 0x00, 0x7f, 0x80, 0xb0, 0xff} {
					v := append([]byte(nil), w...)
					v[pos2] = c2
					want := true
					for _, b := range v {
						want = want && lowerHex[b] == 1
					}
					if got := isLowerHex(v); got != want {
						t.Fatalf("isLowerHex(%q) = %v, want %v", v, got, want)
					}
				}
			}
		}
	}
}

// TestFastPatternsUsed: every hand-written matcher is for a pattern that a
// schema uses (a key with a typo would leave the pattern to the regexp).
func TestFastPatternsUsed(t *testing.T) {
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if p, ok := x["pattern"].(string); ok {
				used[p] = true
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	for pat := range fastPatterns {
		if !used[pat] {
			t.Errorf("fast pattern %s: no schema uses it", pat)
		}
	}
}

// TestValidatorFailClosed: when the general validator accepts what the
// compiled one refuses, the compiled verdict stands.
func TestValidatorFailClosed(t *testing.T) {
	v, err := ValidatorFor(KindAction)
	if err != nil {
		t.Fatal(err)
	}
	saved := v.general
	defer func() { v.general = saved }()
	v.general = func() (schemaValidator, error) { return acceptAll{}, nil }
	x, _ := Parse([]byte(`{"id":"a1","type":"click","reason":"r","policyTags":[]}`))
	err = v.ValidateValue(x)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Kind != KindAction {
		t.Fatalf("got %v, want the compiled validator's problem", err)
	}
}

// acceptAll is a general validator that accepts everything.
type acceptAll struct{}

func (acceptAll) Validate(any) error { return nil }

// BenchmarkValidate compares the compiled validator, over the parsed value
// and over its tape, with the general one on the first valid vector of
// each kind.
func BenchmarkValidate(b *testing.B) {
	for _, k := range Kinds() {
		docs := vectorDocs(b, string(k))
		if len(docs) == 0 {
			continue
		}
		x, err := Parse(docs[0])
		if err != nil {
			b.Fatal(err)
		}
		v, _ := ValidatorFor(k)
		b.Run(string(k)+"/compiled", func(b *testing.B) {
			for range b.N {
				if v.ValidateCompiled(x) != nil {
					b.Fatal("invalid")
				}
			}
		})
		tape := tapeOf(x)
		b.Run(string(k)+"/tape", func(b *testing.B) {
			for range b.N {
				if v.ValidateTapeCompiled(tape, 0) != nil {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(string(k)+"/general", func(b *testing.B) {
			for range b.N {
				if v.ValidateGeneral(x) != nil {
					b.Fatal("invalid")
				}
			}
		})
	}
}
