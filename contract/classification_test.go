package contract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestInputClassification: hints.classification is the task's data
// classification, public, restricted or sensitive; absent hints or member
// mean none ("").
func TestInputClassification(t *testing.T) {
	tests := []struct {
		hints   string
		want    contract.Classification
		wantErr string
	}{
		{``, "", ""},
		{`{}`, "", ""},
		{`{"maxTokens":9}`, "", ""},
		{`{"classification":"public"}`, contract.ClassPublic, ""},
		{`{"classification":"restricted"}`, contract.ClassRestricted, ""},
		{`{"classification":"sensitive"}`, contract.ClassSensitive, ""},
		{`{"classification":"Sensitive"}`, "", `hints.classification is "Sensitive": want one of public, restricted, sensitive`},
		{`{"classification":""}`, "", `hints.classification is ""`},
		{`{"classification":1}`, "", "hints.classification is 1"},
		{`{"classification":null}`, "", "hints.classification is null"},
		{`[1]`, "", "task hints"},
	}
	for _, tc := range tests {
		in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tc.hints)}
		got, err := in.Classification()
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("hints %s: got %q, %v; want %q, %q", tc.hints, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestInputWithClassification: setting the classification keeps the other
// hints, "" removes it, and an unknown one is refused.
func TestInputWithClassification(t *testing.T) {
	in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(`{"steps":["open /"]}`)}
	out, err := in.WithClassification(contract.ClassSensitive)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out.Hints), `{"classification":"sensitive","steps":["open /"]}`; got != want {
		t.Errorf("hints %s, want %s", got, want)
	}
	if c, err := out.Classification(); c != contract.ClassSensitive || err != nil {
		t.Errorf("Classification %q, %v", c, err)
	}
	out, err = out.WithClassification("")
	if err != nil || string(out.Hints) != `{"steps":["open /"]}` {
		t.Errorf("hints %s, %v", out.Hints, err)
	}
	if _, err := in.WithClassification("secret"); err == nil {
		t.Error("an unknown classification was set")
	}
	bare := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(`null`)}
	out, err = bare.WithClassification(contract.ClassPublic)
	if err != nil || string(out.Hints) != `{"classification":"public"}` {
		t.Errorf("hints %s, %v", out.Hints, err)
	}
	if out, err = out.WithClassification(""); err != nil || out.Hints != nil {
		t.Errorf("hints %s, %v; want none", out.Hints, err)
	}
}

// TestStricter: the stricter of two classifications, "" meaning none; an
// unknown one is never lost.
func TestStricter(t *testing.T) {
	p, r, s := contract.ClassPublic, contract.ClassRestricted, contract.ClassSensitive
	for _, tt := range []struct{ a, b, want contract.Classification }{
		{"", "", ""},
		{"", p, p},
		{r, "", r},
		{p, r, r},
		{s, r, s},
		{p, s, s},
		{r, r, r},
		{"x", s, "x"},
		{s, "x", "x"},
	} {
		if got := contract.Stricter(tt.a, tt.b); got != tt.want {
			t.Errorf("Stricter(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestParseClassification: the three names, nothing else.
func TestParseClassification(t *testing.T) {
	for _, s := range []string{"public", "restricted", "sensitive"} {
		if c, err := contract.ParseClassification(s); err != nil || string(c) != s || !c.Valid() {
			t.Errorf("%s: %q, %v", s, c, err)
		}
	}
	for _, s := range []string{"", "PUBLIC", "secret"} {
		if _, err := contract.ParseClassification(s); err == nil || !strings.Contains(err.Error(), "want one of public, restricted, sensitive") {
			t.Errorf("%q: %v", s, err)
		}
	}
	if contract.DefaultClassification != contract.ClassRestricted {
		t.Errorf("default %q", contract.DefaultClassification)
	}
}
