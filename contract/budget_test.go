package contract_test

import (
	"encoding/json"
	"math"
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

// TestInputMaxCostUSD: hints.maxCostUsd is the task's cost budget in US
// dollars, a number greater than 0 and at most MaxTaskCostUSD; absent
// hints or member mean none.
func TestInputMaxCostUSD(t *testing.T) {
	tests := []struct {
		hints   string
		want    float64
		wantErr string
	}{
		{``, 0, ""},
		{`{"maxTokens":100}`, 0, ""},
		{`{"maxCostUsd":0.25}`, 0.25, ""},
		{`{"maxCostUsd":1e-4}`, 0.0001, ""},
		{`{"maxCostUsd":3}`, 3, ""},
		{`{"maxCostUsd":1000000}`, 1000000, ""},
		{`{"maxCostUsd":0}`, 0, "hints.maxCostUsd is 0: want a number greater than 0 and at most 1000000 (US dollars)"},
		{`{"maxCostUsd":-0.5}`, 0, "hints.maxCostUsd is -0.5"},
		{`{"maxCostUsd":1000000.01}`, 0, "hints.maxCostUsd is 1000000.01"},
		{`{"maxCostUsd":"0.10"}`, 0, `hints.maxCostUsd is "0.10"`},
		{`{"maxCostUsd":null}`, 0, "hints.maxCostUsd is null"},
		{`{"maxCostUsd":1e400}`, 0, "hints.maxCostUsd is 1e400"},
		{`"x"`, 0, "task hints"},
	}
	for _, tc := range tests {
		in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tc.hints)}
		got, err := in.MaxCostUSD()
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("hints %s: got %v, %v; want %v, %q", tc.hints, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestInputWithMaxCostUSD: setting the cost budget keeps the other hints
// (the token budget among them), 0 removes it, and a value out of range is
// refused.
func TestInputWithMaxCostUSD(t *testing.T) {
	in := contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(`{"maxTokens":9}`)}
	out, err := in.WithMaxCostUSD(0.1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out.Hints), `{"maxCostUsd":0.1,"maxTokens":9}`; got != want {
		t.Errorf("hints %s, want %s", got, want)
	}
	if got, err := out.MaxCostUSD(); got != 0.1 || err != nil {
		t.Errorf("MaxCostUSD %v, %v", got, err)
	}
	out, err = out.WithMaxCostUSD(0)
	if err != nil || string(out.Hints) != `{"maxTokens":9}` {
		t.Errorf("hints %s, %v", out.Hints, err)
	}
	for _, bad := range []float64{-1, contract.MaxTaskCostUSD + 1} {
		if _, err := in.WithMaxCostUSD(bad); err == nil {
			t.Errorf("WithMaxCostUSD(%v) accepted", bad)
		}
	}
}

// TestCallTokens: the total, or prompt plus completion when that is more;
// a negative field counts as 0; the sum saturates.
func TestCallTokens(t *testing.T) {
	tests := []struct {
		name                      string
		prompt, completion, total int
		want                      int
	}{
		{"total", 20, 130, 150, 150},
		{"no total", 20, 130, 0, 150},
		{"total less than the parts", 20, 130, 10, 150},
		{"total with reasoning", 20, 130, 400, 400},
		{"negative prompt", -100, 130, 0, 130},
		{"negative completion", 20, -130, 0, 20},
		{"negative total", 20, 130, -1, 150},
		{"all negative", -1, -2, -3, 0},
		{"none", 0, 0, 0, 0},
		{"saturates", math.MaxInt, 5, 0, math.MaxInt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := contract.CallTokens(tc.prompt, tc.completion, tc.total); got != tc.want {
				t.Errorf("CallTokens(%d, %d, %d) = %d, want %d", tc.prompt, tc.completion, tc.total, got, tc.want)
			}
		})
	}
}
