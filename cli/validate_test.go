package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/schemas"
)

const validPlan = `{"goal":"Sign in","steps":[{"id":"s1","description":"Open the sign-in page","successCriteria":"A password field is visible"}]}`

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := write("valid.json", validPlan)
	invalid := write("invalid.json", `{"goal":"","steps":[{"id":"s1","description":"x"}],"extra":1}`)
	malformed := write("malformed.json", `{"goal": "x",, }`)
	dup := write("dup.json", `{"goal":"a","goal":"b","steps":[]}`)

	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantOut  string
		wantErr  []string
	}{
		{"valid file", "", []string{"validate", "plan", valid}, ExitOK, "valid plan", nil},
		{"valid stdin", validPlan, []string{"validate", "plan", "-"}, ExitOK, "-: valid plan", nil},
		{"invalid lists every problem with its pointer", "", []string{"validate", "plan", invalid}, ExitFailure, "",
			[]string{"invalid plan", "/steps/0: ", "successCriteria", "/: ", "extra", "/goal: "}},
		{"malformed names the byte offset", "", []string{"validate", "plan", malformed}, ExitUsage, "",
			[]string{"malformed JSON at byte offset 13"}},
		{"duplicate key is malformed", "", []string{"validate", "plan", dup}, ExitUsage, "",
			[]string{`duplicate object key "goal"`}},
		{"empty stdin is malformed", "", []string{"validate", "plan", "-"}, ExitUsage, "",
			[]string{"unexpected end of input"}},
		{"unknown kind lists the kinds", "", []string{"validate", "plans", valid}, ExitUsage, "",
			[]string{`unknown kind "plans"`, "navigator-response"}},
		{"missing file", "", []string{"validate", "plan", filepath.Join(dir, "nope.json")}, ExitUsage, "",
			[]string{"read ", "no such file"}},
		{"too few arguments", "", []string{"validate", "plan"}, ExitUsage, "", []string{"takes KIND and FILE"}},
		{"too many arguments", "", []string{"validate", "plan", valid, valid}, ExitUsage, "", []string{"got 3 arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.stdin, tt.args...)
			if got, want := code, tt.wantCode; got != want {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", got, want, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", out, tt.wantOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr = %q, want it to contain %q", errOut, w)
				}
			}
		})
	}
}

func TestValidateJSONOutput(t *testing.T) {
	code, out, _ := run(t, `{"goal":"x","steps":[{"id":"s1"}]}`, "validate", "--json", "plan", "-")
	if code != ExitFailure {
		t.Fatalf("exit code = %d, want %d", code, ExitFailure)
	}
	var res struct {
		Valid    bool              `json:"valid"`
		Problems []schemas.Problem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if res.Valid || len(res.Problems) == 0 {
		t.Fatalf("got valid=%v problems=%v, want invalid with problems", res.Valid, res.Problems)
	}
	for _, p := range res.Problems {
		if p.Pointer != "/steps/0" || p.Keyword == "" || p.Reason == "" {
			t.Errorf("problem %+v: want pointer /steps/0 with keyword and reason", p)
		}
	}
}

// vectorFile is the shape of schemas/testdata/KIND.json.
type vectorFile struct {
	Valid []struct {
		Name string          `json:"name"`
		Doc  json.RawMessage `json:"doc"`
	} `json:"valid"`
	Invalid []struct {
		Name   string          `json:"name"`
		Breaks json.RawMessage `json:"breaks"`
		Doc    json.RawMessage `json:"doc"`
	} `json:"invalid"`
}

// TestValidateVectors runs the real command over every example of every
// kind: the schema check of `make test`, end to end through the CLI.
func TestValidateVectors(t *testing.T) {
	for _, kind := range schemas.Kinds() {
		path := filepath.Join("..", "schemas", "testdata", string(kind)+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("kind %s: %v", kind, err)
			continue
		}
		var vf vectorFile
		if err := json.Unmarshal(b, &vf); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(vf.Valid) == 0 || len(vf.Invalid) == 0 {
			t.Errorf("%s: want valid and invalid examples, got %d and %d", path, len(vf.Valid), len(vf.Invalid))
		}
		for _, v := range vf.Valid {
			if code, _, errOut := run(t, string(v.Doc), "validate", string(kind), "-"); code != ExitOK {
				t.Errorf("%s valid %q: exit %d, want 0:\n%s", kind, v.Name, code, errOut)
			}
		}
		for _, v := range vf.Invalid {
			if code, _, _ := run(t, string(v.Doc), "validate", string(kind), "-"); code != ExitFailure {
				t.Errorf("%s invalid %q: exit %d, want 1", kind, v.Name, code)
			}
		}
	}
}

// FuzzValidateCommand feeds arbitrary bytes to `aegis validate`: whatever
// the bytes, the command answers 0, 1 or 2 and never panics.
func FuzzValidateCommand(f *testing.F) {
	f.Add(byte(0), []byte(validPlan))
	f.Add(byte(3), []byte(`{"type":"click"}`))
	f.Add(byte(7), []byte("\xff\xfe{"))
	f.Add(byte(9), []byte(strings.Repeat("[", 10000)))
	kinds := schemas.Kinds()
	f.Fuzz(func(t *testing.T, k byte, doc []byte) {
		kind := kinds[int(k)%len(kinds)]
		code, _, _ := run(t, string(doc), "validate", string(kind), "-")
		if code != ExitOK && code != ExitFailure && code != ExitUsage {
			t.Fatalf("exit code %d for %q", code, doc)
		}
	})
}
