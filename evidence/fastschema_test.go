package evidence

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
)

// TestFastSchemaCompilesEveryShape: every record shape of a bundle is
// validated by the fast validator (no fallback), or verify is slow.
func TestFastSchemaCompilesEveryShape(t *testing.T) {
	s, err := loadShapes()
	if err != nil {
		t.Fatal(err)
	}
	for name, rs := range s {
		if rs.fast == nil {
			t.Errorf("%s: falls back to the general validator: %v", name, fastCompileErrors[name])
		}
	}
}

type vectorDoc struct {
	Name string          `json:"name"`
	Doc  json.RawMessage `json:"doc"`
}

// schemaVectors returns every document of the schemas' vector file for a
// kind, valid and invalid.
func schemaVectors(t testing.TB, kind string) []vectorDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", kind+".json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var vf struct{ Valid, Invalid []vectorDoc }
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	return append(vf.Valid, vf.Invalid...)
}

// checkAgreement asserts that the fast and the general validator agree on
// doc (canonicalized first: the fast validator only sees canonical
// documents).
func checkAgreement(t testing.TB, shape string, doc []byte) {
	t.Helper()
	c, err := canonjson.Transform(doc)
	if err != nil {
		return
	}
	v, err := parseCanonical(c)
	if err != nil {
		t.Fatalf("%s: canonical form does not parse: %v", shape, err)
	}
	s, err := loadShapes()
	if err != nil {
		t.Fatal(err)
	}
	rs := s[shape]
	fast := rs.fast.validate(v)
	slow := rs.slow(v)
	if (fast == nil) != (slow == nil) {
		t.Errorf("%s: validators disagree on %s:\nfast: %v\ngeneral: %v", shape, c, fast, slow)
	}
}

func TestFastSchemaAgreesOnVectors(t *testing.T) {
	n := 0
	for shape := range shapeRefs {
		for _, v := range schemaVectors(t, shape) {
			checkAgreement(t, shape, v.Doc)
			n++
		}
	}
	if n < 100 {
		t.Errorf("only %d vectors checked", n)
	}
}

// TestFastSchemaAgreesOnMutations mutates every vector document value by
// value (each member removed, each scalar replaced by boundary values of
// every type) and checks the validators agree on each variant.
func TestFastSchemaAgreesOnMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	replacements := []any{nil, false, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("1e+21"),
		json.Number("2147483648"), "", "2026-01-23T10:15:00Z", "https://example.com/",
		"0000000000000000000000000000000000000000000000000000000000000000", []any{}, map[string]any{}}
	for shape := range shapeRefs {
		vecs := schemaVectors(t, shape)
		for i, vec := range vecs {
			if i%2 == 1 { // every other vector keeps the test under a few seconds
				continue
			}
			root, err := schemas.Parse(vec.Doc)
			if err != nil {
				continue
			}
			mutate(root, func() {
				b, err := json.Marshal(root)
				if err != nil {
					t.Fatal(err)
				}
				checkAgreement(t, shape, b)
			}, replacements)
		}
	}
}

// mutate calls visit once for every single-site mutation of v (restoring v
// after each).
func mutate(v any, visit func(), repl []any) {
	switch t := v.(type) {
	case map[string]any:
		for k, old := range t {
			delete(t, k)
			visit()
			for _, r := range repl {
				t[k] = r
				visit()
			}
			t[k] = old
			mutate(old, visit, repl)
		}
		t["unexpected"] = "x"
		visit()
		delete(t, "unexpected")
	case []any:
		for i, old := range t {
			for _, r := range repl {
				t[i] = r
				visit()
			}
			t[i] = old
			mutate(old, visit, repl)
		}
	}
}

func FuzzFastSchemaAgreement(f *testing.F) {
	for shape := range shapeRefs {
		for _, v := range schemaVectors(f, shape) {
			f.Add(shape, []byte(v.Doc))
		}
	}
	f.Fuzz(func(t *testing.T, shape string, doc []byte) {
		if _, ok := shapeRefs[shape]; !ok || len(doc) > 1<<16 || !json.Valid(doc) || bytes.Count(doc, []byte("[")) > 50 {
			return
		}
		checkAgreement(t, shape, doc)
	})
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
	for pat, f := range fastPatterns {
		re := regexp.MustCompile(pat)
		for _, c := range cases {
			if got, want := f(c), re.MatchString(c); got != want {
				t.Errorf("pattern %s on %q: fast %v, regexp %v", pat, c, got, want)
			}
		}
	}
}

// TestSnapshotBoundMatchesSchema: the DOM snapshot, stored outside its
// observation, is held to the observation schema's own bound.
func TestSnapshotBoundMatchesSchema(t *testing.T) {
	b, err := fs.ReadFile(schemas.FS(), "browser-observation.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			DOMSnapshot struct {
				MaxLength int `json:"maxLength"`
			} `json:"domSnapshot"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Properties.DOMSnapshot.MaxLength != maxDOMSnapshotChars {
		t.Errorf("schema maxLength %d, maxDOMSnapshotChars %d", s.Properties.DOMSnapshot.MaxLength, maxDOMSnapshotChars)
	}
}

// BenchmarkValidate compares the fast validator with the general one on
// the first valid vector of each shape.
func BenchmarkValidate(b *testing.B) {
	s, err := loadShapes()
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 0, len(shapeRefs))
	for name := range shapeRefs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		vecs := schemaVectors(b, name)
		if len(vecs) == 0 {
			continue
		}
		c, err := canonjson.Transform(vecs[0].Doc)
		if err != nil {
			b.Fatal(err)
		}
		v, _ := parseCanonical(c)
		rs := s[name]
		b.Run(name+"/fast", func(b *testing.B) {
			for range b.N {
				if rs.fast.validate(v) != nil {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(name+"/general", func(b *testing.B) {
			for range b.N {
				if rs.slow(v) != nil {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// TestFastSchemaAgreesOnBundles: both validators accept every record the
// writer wrote in the example bundle, the secrets test's masked records and
// the benchmark bundle.
func TestFastSchemaAgreesOnBundles(t *testing.T) {
	shapeOf := map[string]string{
		"manifest-start": "manifest", "manifest-end": "manifest", "plan": "plan", "decision": "decision",
		"event": "event", "observation": "observation", "artifact": shapeArtifact, "image-artifact": "image-artifact",
		"model-call": "model-call",
	}
	dirs := []string{filepath.Join(exampleDir, testSession), buildRealistic(t, t.TempDir())}
	n := 0
	for _, dir := range dirs {
		ledger, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(FileLedger)))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(ledger, []byte("\n")), []byte("\n")) {
			checkAgreement(t, "ledger-entry", line)
			var e struct {
				Kind, File string
				Line       int
			}
			json.Unmarshal(line, &e)
			b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
			if e.Line > 0 {
				b = bytes.Split(b, []byte("\n"))[e.Line-1]
			}
			switch {
			case e.Kind == "action":
				var a struct{ Action, Result json.RawMessage }
				json.Unmarshal(b, &a)
				checkAgreement(t, "action", a.Action)
				checkAgreement(t, "tool-result", a.Result)
			case shapeOf[e.Kind] != "":
				checkAgreement(t, shapeOf[e.Kind], b)
			}
			n++
		}
	}
	t.Logf("%d records", n)
}
