package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// vectorFile is the shape of testdata/KIND.json: documents that must pass
// the kind's schema, and documents that must fail it in a stated way.
type vectorFile struct {
	Valid   []validVector   `json:"valid"`
	Invalid []invalidVector `json:"invalid"`
}

type validVector struct {
	Name string          `json:"name"`
	Doc  json.RawMessage `json:"doc"`
}

type invalidVector struct {
	Name   string          `json:"name"`
	Breaks breaks          `json:"breaks"`
	Doc    json.RawMessage `json:"doc"`
}

// breaks says how an invalid vector fails: at least one problem must have
// this instance pointer and a keyword location ending in "/"+Keyword.
type breaks struct {
	Pointer string `json:"pointer"`
	Keyword string `json:"keyword"`
}

// loadVectors reads testdata/KIND.json strictly (unknown fields refused),
// keeping each doc's bytes as written.
func loadVectors(t *testing.T, kind Kind) vectorFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", string(kind)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var vf vectorFile
	if err := d.Decode(&vf); err != nil {
		t.Fatalf("testdata/%s.json: %v", kind, err)
	}
	return vf
}

// vectorKinds returns the kinds that have a vector file. Files and
// directories of testdata whose name is not a kind (seed/, fuzz/, ...) are
// not vector files and are ignored.
func vectorKinds(t *testing.T) []Kind {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if e.IsDir() || !ok {
			continue
		}
		if k, err := ParseKind(name); err == nil {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// TestVectorFileForEveryKind requires a vector file for every kind of the
// registry, with no exception: a kind without vectors is a schema nobody
// has exercised, so the test fails until every schema and its vectors
// have landed together.
func TestVectorFileForEveryKind(t *testing.T) {
	have := map[Kind]bool{}
	for _, k := range vectorKinds(t) {
		have[k] = true
	}
	var missing []string
	for _, k := range Kinds() {
		if !have[k] {
			missing = append(missing, "testdata/"+string(k)+".json")
		}
	}
	if got, want := strings.Join(missing, ", "), ""; got != want {
		t.Errorf("missing vector files: %s", got)
	}
}

// TestVectors checks every vector of every vector file: valid documents
// pass their schema, and each invalid one fails with a problem at the
// pointer and keyword its "breaks" names.
func TestVectors(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range vectorKinds(t) {
		t.Run(string(kind), func(t *testing.T) {
			vf := loadVectors(t, kind)
			if len(vf.Valid) == 0 || len(vf.Invalid) == 0 {
				t.Errorf("got %d valid and %d invalid vectors, want some of each", len(vf.Valid), len(vf.Invalid))
			}
			names := map[string]bool{}
			for _, n := range vectorNames(vf) {
				if n == "" || names[n] {
					t.Errorf("vector name %q is empty or not unique", n)
				}
				names[n] = true
			}
			for _, v := range vf.Valid {
				t.Run("valid/"+v.Name, func(t *testing.T) {
					if err := Validate(kind, v.Doc); err != nil {
						t.Errorf("got %v, want valid", err)
					}
				})
			}
			for _, v := range vf.Invalid {
				t.Run("invalid/"+v.Name, func(t *testing.T) {
					if v.Breaks.Keyword == "" {
						t.Fatal("breaks.keyword is empty")
					}
					err := Validate(kind, v.Doc)
					var ve *ValidationError
					if !errors.As(err, &ve) {
						t.Fatalf("got %v, want a *ValidationError", err)
					}
					if got, want := matchProblem(ve.Problems, v.Breaks), true; got != want {
						t.Errorf("no problem at pointer %q with keyword %q; got:\n%s",
							v.Breaks.Pointer, v.Breaks.Keyword, describeProblems(ve.Problems))
					}
				})
			}
		})
	}
}

func vectorNames(vf vectorFile) []string {
	var ns []string
	for _, v := range vf.Valid {
		ns = append(ns, v.Name)
	}
	for _, v := range vf.Invalid {
		ns = append(ns, v.Name)
	}
	return ns
}

func matchProblem(ps []Problem, b breaks) bool {
	for _, p := range ps {
		if p.Pointer == b.Pointer && strings.HasSuffix(p.Keyword, "/"+b.Keyword) {
			return true
		}
	}
	return false
}

func describeProblems(ps []Problem) string {
	lines := make([]string, 0, len(ps))
	for _, p := range ps {
		lines = append(lines, "  "+strings.TrimSpace(p.String())+"   ["+p.Keyword+"]")
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
