package contract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestInputMaxTokens: hints.maxTokens is the task's token budget, an
// integer from 1 to MaxTaskTokens; absent hints or member mean none.
func TestInputMaxTokens(t *testing.T) {
	tests := []struct {
		hints   string
		want    int
		wantErr string
	}{
		{``, 0, ""},
		{`{}`, 0, ""},
		{`{"steps":["open /"]}`, 0, ""},
		{`{"maxTokens":50000}`, 50000, ""},
		{`{"maxTokens":5e4}`, 50000, ""},
		{`{"maxTokens":1000000000}`, 1000000000, ""},
		{`{"maxTokens":0}`, 0, "hints.maxTokens is 0"},
		{`{"maxTokens":-3}`, 0, "hints.maxTokens is -3"},
		{`{"maxTokens":2.5}`, 0, "hints.maxTokens is 2.5"},
		{`{"maxTokens":1000000001}`, 0, "want an integer from 1 to 1000000000"},
		{`{"maxTokens":"50000"}`, 0, `hints.maxTokens is "50000"`},
		{`{"maxTokens":null}`, 0, "hints.maxTokens is null"},
		{`[1]`, 0, "task hints"},
	}
	for _, tc := range tests {
		in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tc.hints)}
		got, err := in.MaxTokens()
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("hints %s: got %d, %v; want %d, %q", tc.hints, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestInputWithMaxTokens: setting the budget keeps the other hints, and 0
// removes it.
func TestInputWithMaxTokens(t *testing.T) {
	in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(`{"steps":["open /"],"maxTokens":9}`)}
	out, err := in.WithMaxTokens(1234)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out.Hints), `{"maxTokens":1234,"steps":["open /"]}`; got != want {
		t.Errorf("hints %s, want %s", got, want)
	}
	if n, err := out.MaxTokens(); n != 1234 || err != nil {
		t.Errorf("MaxTokens %d, %v", n, err)
	}
	out, err = out.WithMaxTokens(0)
	if err != nil || string(out.Hints) != `{"steps":["open /"]}` {
		t.Errorf("hints %s, %v", out.Hints, err)
	}
	bare := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}}
	if out, err := bare.WithMaxTokens(0); err != nil || out.Hints != nil {
		t.Errorf("hints %s, %v", out.Hints, err)
	}
	if _, err := bare.WithMaxTokens(-1); err == nil {
		t.Errorf("a negative budget was accepted")
	}
}
