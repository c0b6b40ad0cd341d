package evidence

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
)

// TestShapesCompiled: every record shape of a bundle is validated by the
// compiled validator (no fallback to the general one), or verify is slow.
func TestShapesCompiled(t *testing.T) {
	s, err := loadShapes()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(s), len(shapeRefs); got != want {
		t.Fatalf("%d shapes loaded, want %d", got, want)
	}
	for name, v := range s {
		if err := v.Compiled(); err != nil {
			t.Errorf("%s: falls back to the general validator: %v", name, err)
		}
	}
}

func TestValidateShapeUnknown(t *testing.T) {
	if err := validateShape("no-such-shape", map[string]any{}); err == nil {
		t.Error("an unknown shape validated")
	}
}

// checkAgreement asserts that the compiled and the general validator agree
// on doc, as verify parses it (canonical form first).
func checkAgreement(t testing.TB, shape string, doc []byte) {
	t.Helper()
	c, err := canonjson.Transform(doc)
	if err != nil {
		return
	}
	v, err := canonjson.ParseCanonical(c)
	if err != nil {
		t.Fatalf("%s: canonical form does not parse: %v", shape, err)
	}
	s, err := loadShapes()
	if err != nil {
		t.Fatal(err)
	}
	fast := s[shape].ValidateCompiled(v)
	general := s[shape].ValidateGeneral(v)
	if (fast == nil) != (general == nil) {
		t.Errorf("%s: validators disagree on %s:\ncompiled: %v\ngeneral: %v", shape, c, fast, general)
	}
	// And the walk over the tape verify parses the bytes onto.
	var tape schemas.Tape
	if err := canonjson.ParseTape(c, &tape); err != nil {
		t.Fatalf("%s: canonical form does not parse onto a tape: %v", shape, err)
	}
	if got := s[shape].ValidateTapeCompiled(&tape, 0); (got == nil) != (general == nil) {
		t.Errorf("%s: the tape walk disagrees on %s:\ntape: %v\ngeneral: %v", shape, c, got, general)
	}
}

// shapeVectors returns the documents of the schema vectors of every record
// shape, by shape.
func shapeVectors(t testing.TB) map[string][]json.RawMessage {
	t.Helper()
	out := map[string][]json.RawMessage{}
	for shape := range shapeRefs {
		file := shape
		if shape == shapeArtifact {
			file = "observation" // its artifacts are in the observation vectors
		}
		b, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", file+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var vf struct {
			Valid, Invalid []struct{ Doc json.RawMessage }
		}
		if err := json.Unmarshal(b, &vf); err != nil {
			t.Fatal(err)
		}
		for _, v := range append(vf.Valid, vf.Invalid...) {
			out[shape] = append(out[shape], v.Doc)
		}
	}
	return out
}

// TestShapesAgreeOnMutations: the compiled validator, over parsed values
// and over the tape verify parses canonical bytes onto, agrees with the
// general validator on every record shape's vectors and on each
// single-member mutation of them, two levels deep (a member removed, or
// its value replaced by a value of each type), in canonical form.
func TestShapesAgreeOnMutations(t *testing.T) {
	replacements := []any{nil, json.Number("-1"), json.Number("2.5"), "", strings.Repeat("0", 64), []any{"x", "x"}, map[string]any{}}
	n := 0
	for shape, docs := range shapeVectors(t) {
		for i, doc := range docs {
			if testing.Short() && i%4 != 0 {
				continue
			}
			checkAgreement(t, shape, doc)
			n++
			root, err := schemas.Parse(doc)
			if err != nil {
				continue
			}
			var visit func(v any, depth int)
			visit = func(v any, depth int) {
				if depth > 2 {
					return
				}
				m, ok := v.(map[string]any)
				if !ok {
					if a, ok := v.([]any); ok {
						for _, x := range a {
							visit(x, depth+1)
						}
					}
					return
				}
				for k, old := range m {
					delete(m, k)
					b, _ := json.Marshal(root)
					checkAgreement(t, shape, b)
					for _, r := range replacements {
						m[k] = r
						b, _ := json.Marshal(root)
						checkAgreement(t, shape, b)
					}
					m[k] = old
					visit(old, depth+1)
					n += 1 + len(replacements)
				}
			}
			visit(root, 0)
		}
	}
	t.Logf("%d documents", n)
}

// FuzzShapesAgreement: on any bytes in canonical form, for any record
// shape (the first byte picks it), the tape walk gives the general
// validator's verdict.
func FuzzShapesAgreement(f *testing.F) {
	names := make([]string, 0, len(shapeRefs))
	for shape := range shapeRefs {
		names = append(names, shape)
	}
	sort.Strings(names)
	for i, shape := range names {
		for _, doc := range shapeVectors(f)[shape] {
			if c, err := canonjson.Transform(doc); err == nil {
				f.Add(append([]byte{byte(i)}, c...))
			}
		}
	}
	s, err := loadShapes()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 1<<16 {
			return
		}
		shape, doc := names[int(data[0])%len(names)], data[1:]
		var tape schemas.Tape
		if canonjson.ParseTape(doc, &tape) != nil {
			return
		}
		v, err := canonjson.ParseCanonical(doc)
		if err != nil {
			t.Fatalf("ParseTape accepts what ParseCanonical refuses (%v): %q", err, doc)
		}
		got, want := s[shape].ValidateTape(&tape, 0), s[shape].ValidateGeneral(v)
		if (got == nil) != (want == nil) {
			t.Fatalf("%s: ValidateTape %v, general %v on %s", shape, got, want, doc)
		}
	})
}

// TestShapesAgreeOnBundles: both validators accept every record the
// writer wrote in the example bundle and in the benchmark bundle.
func TestShapesAgreeOnBundles(t *testing.T) {
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
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
			if err != nil {
				t.Fatal(err)
			}
			if e.Line > 0 {
				b = bytes.Split(b, []byte("\n"))[e.Line-1]
			}
			switch {
			case e.Kind == "action":
				var a struct{ Action, Result json.RawMessage }
				if err := json.Unmarshal(b, &a); err != nil {
					t.Fatal(err)
				}
				checkAgreement(t, "action", a.Action)
				checkAgreement(t, "tool-result", a.Result)
			case shapeOf[e.Kind] != "":
				checkAgreement(t, shapeOf[e.Kind], b)
			}
			n++
		}
	}
	if n < 100 {
		t.Errorf("only %d records checked", n)
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
