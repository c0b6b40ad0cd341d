package navigator_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/navigator"
)

type stepVectors struct {
	Valid []struct {
		Step string `json:"step"`
		Want string `json:"want"`
	} `json:"valid"`
	Invalid []struct {
		Step     string `json:"step"`
		Column   int    `json:"column"`
		Contains string `json:"contains"`
	} `json:"invalid"`
}

func loadStepVectors(t testing.TB) stepVectors {
	t.Helper()
	b, err := os.ReadFile("testdata/steps.json")
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var v stepVectors
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestParseStepVectors runs the table of testdata/steps.json: valid steps
// parse to the canonical form given (which parses back to the same step),
// invalid ones fail at the column given with the message given.
func TestParseStepVectors(t *testing.T) {
	v := loadStepVectors(t)
	for i, tc := range v.Valid {
		s, err := navigator.ParseStep(i+1, tc.Step)
		if err != nil {
			t.Errorf("ParseStep(%q): %v", tc.Step, err)
			continue
		}
		if got := s.String(); got != tc.Want {
			t.Errorf("ParseStep(%q).String() = %q, want %q", tc.Step, got, tc.Want)
		}
		if s.Line != i+1 || s.Source != tc.Step {
			t.Errorf("ParseStep(%q): line %d, source %q", tc.Step, s.Line, s.Source)
		}
		again, err := navigator.ParseStep(i+1, s.String())
		if err != nil {
			t.Errorf("canonical %q does not parse: %v", s.String(), err)
			continue
		}
		again.Source = s.Source
		if again != s {
			t.Errorf("round trip of %q: %+v, want %+v", tc.Step, again, s)
		}
	}
	for i, tc := range v.Invalid {
		_, err := navigator.ParseStep(i+7, tc.Step)
		var se *navigator.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseStep(%q) = %v, want a *SyntaxError", tc.Step, err)
			continue
		}
		if se.Line != i+7 || se.Column != tc.Column || !strings.Contains(se.Msg, tc.Contains) {
			t.Errorf("ParseStep(%q) = line %d column %d %q; want line %d column %d containing %q", tc.Step, se.Line, se.Column, se.Msg, i+7, tc.Column, tc.Contains)
		}
	}
}

func TestParseStepFields(t *testing.T) {
	tests := []struct {
		src  string
		want navigator.Step
	}{
		{`type "{{secret:PASSWORD}}" into "Password"`, navigator.Step{Op: navigator.OpType, Text: "{{secret:PASSWORD}}", Target: navigator.Target{Name: "Password"}}},
		{`select "Express" in css=#shipping`, navigator.Step{Op: navigator.OpSelect, Text: "Express", Target: navigator.Target{CSS: "#shipping"}}},
		{`scroll down 600`, navigator.Step{Op: navigator.OpScroll, Direction: contract.ScrollDown, Amount: 600}},
		{`wait 2s`, navigator.Step{Op: navigator.OpWait, Amount: 2000}},
		{`extract table "Orders"`, navigator.Step{Op: navigator.OpExtract, Extract: contract.ExtractTable, Target: navigator.Target{Name: "Orders"}}},
		{`navigate /login`, navigator.Step{Op: navigator.OpNavigate, URL: "/login"}},
	}
	for _, tc := range tests {
		got, err := navigator.ParseStep(1, tc.src)
		if err != nil {
			t.Fatalf("ParseStep(%q): %v", tc.src, err)
		}
		got.Line, got.Source = 0, ""
		if got != tc.want {
			t.Errorf("ParseStep(%q) = %+v, want %+v", tc.src, got, tc.want)
		}
	}
}

func TestParseSteps(t *testing.T) {
	steps, err := navigator.ParseSteps([]string{`navigate /login`, `click "Sign in"`})
	if err != nil || len(steps) != 2 || steps[1].Line != 2 {
		t.Fatalf("ParseSteps = %+v, %v", steps, err)
	}
	_, err = navigator.ParseSteps([]string{`navigate /login`, `clik "Sign in"`})
	if err == nil || err.Error() != `step 2, column 1: expected a verb (navigate, click, type, select, scroll, wait, extract, expect), found "clik"` {
		t.Errorf("err = %v", err)
	}
	if _, err := navigator.ParseSteps(nil); err == nil {
		t.Error("no steps accepted")
	}
	if _, err := navigator.ParseSteps(make([]string, navigator.MaxSteps+1)); err == nil {
		t.Error("too many steps accepted")
	}
}

func TestStepsFromHints(t *testing.T) {
	tests := []struct {
		hints   string
		want    []int // lines
		wantErr string
	}{
		{`{"steps":["navigate /login","click \"Sign in\""]}`, []int{1, 2}, ""},
		{`{"steps":"# sign in\nnavigate /login\n\n  click \"Sign in\"\r\n","other":1}`, []int{2, 4}, ""},
		{`{"steps":"navigate /login\nclick Sign"}`, nil, "step 2, column 7"},
		{`{"steps":42}`, nil, "want an array of strings or a string"},
		{`{"script":[]}`, nil, "hints.steps is missing"},
		{``, nil, "no hints"},
		{`[1]`, nil, "not a JSON object"},
		{`{"steps":"# only a comment"}`, nil, "no steps"},
	}
	for _, tc := range tests {
		steps, err := navigator.StepsFromHints(json.RawMessage(tc.hints))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("StepsFromHints(%s) = %v, want %q", tc.hints, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("StepsFromHints(%s): %v", tc.hints, err)
			continue
		}
		var lines []int
		for _, s := range steps {
			lines = append(lines, s.Line)
		}
		if len(lines) != len(tc.want) || (len(lines) > 0 && lines[len(lines)-1] != tc.want[len(tc.want)-1]) || lines[0] != tc.want[0] {
			t.Errorf("StepsFromHints(%s) lines = %v, want %v", tc.hints, lines, tc.want)
		}
	}
	if _, err := navigator.StepsFromHints(json.RawMessage(`{}`)); !errors.Is(err, navigator.ErrNoHints) {
		t.Errorf("missing steps: err = %v, want ErrNoHints", err)
	}
}

// FuzzParseStep: no input makes the parser panic; an error always names a
// column inside the step (or just past it); a parsed step's canonical form
// parses back to the same step.
func FuzzParseStep(f *testing.F) {
	for _, v := range loadStepVectors(f).Valid {
		f.Add(v.Step)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := navigator.ParseStep(1, src)
		if err != nil {
			var se *navigator.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if se.Line != 1 || se.Column < 1 || (utf8.ValidString(src) && se.Column > utf8.RuneCountInString(src)+1) {
				t.Fatalf("ParseStep(%q): bad position line %d column %d", src, se.Line, se.Column)
			}
			return
		}
		again, err := navigator.ParseStep(1, s.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", s.String(), src, err)
		}
		again.Source = s.Source
		if again != s {
			t.Fatalf("round trip of %q: %+v, want %+v", src, again, s)
		}
	})
}
