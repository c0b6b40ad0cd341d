package evidence

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
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
