package audit

import (
	"encoding/json"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestTokensLine: the summary's line on the model calls: how many, the
// tokens they used (as a budget counts them), and the task's token budget
// (hints.maxTokens) when it has one; what they cost when priced, and the
// cost budget (hints.maxCostUsd).
func TestTokensLine(t *testing.T) {
	calls := func(usage ...[3]int) []contract.ModelCall {
		var out []contract.ModelCall
		for _, u := range usage {
			out = append(out, contract.ModelCall{PromptTokens: u[0], CompletionTokens: u[1], TotalTokens: u[2]})
		}
		return out
	}
	priced := func(costs ...float64) []contract.ModelCall {
		out := calls()
		for _, c := range costs {
			out = append(out, contract.ModelCall{PromptTokens: 1000, CompletionTokens: 200, TotalTokens: 1200, CostUSD: &c})
		}
		return out
	}
	tests := []struct {
		name  string
		calls []contract.ModelCall
		hints string
		want  string
	}{
		{"offline agents", nil, `{"steps":["open /"]}`, ""},
		{"no budget", calls([3]int{1000, 200, 1200}, [3]int{11000, 145, 11145}), ``, " 2 model calls: 12,345 tokens."},
		{"budget", calls([3]int{1000, 200, 1200}), `{"maxTokens":50000}`, " 1 model call: 1,200 tokens of a budget of 50,000."},
		{"no total reported", calls([3]int{1000, 200, 0}), `{"maxTokens":900}`, " 1 model call: 1,200 tokens of a budget of 900."},
		{"budget, no call", nil, `{"maxTokens":900}`, " 0 model calls: 0 tokens of a budget of 900."},
		{"priced", priced(0.0021, 0.0021), ``, " 2 model calls: 2,400 tokens, cost $0.0042."},
		{"priced, both budgets", priced(0.0021, 0.0021), `{"maxTokens":50000,"maxCostUsd":0.1}`, " 2 model calls: 2,400 tokens of a budget of 50,000, cost $0.0042 of a budget of $0.10."},
		{"local model", priced(0), `{"maxCostUsd":0.01}`, " 1 model call: 1,200 tokens, cost $0.00 of a budget of $0.01."},
		{"cost budget, no call", nil, `{"maxCostUsd":2}`, " 0 model calls: 0 tokens, cost $0.00 of a budget of $2.00."},
	}
	for _, tc := range tests {
		b := &Bundle{ModelCalls: tc.calls}
		b.Manifest.Task = contract.Input{Goal: "g", URLs: []string{"https://example.com/"}, Hints: json.RawMessage(tc.hints)}
		if got := tokensLine(b); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReaderKeepsModelCalls: the bundle reader keeps the model-call
// records, in order.
func TestReaderKeepsModelCalls(t *testing.T) {
	b := &Bundle{}
	r := &reader{b: b, cur: "about:blank"}
	for _, n := range []int{10, 20} {
		rec, err := json.Marshal(contract.ModelCall{TotalTokens: n})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.add(contract.LedgerEntry{Kind: contract.LedgerModelCall}, rec); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.ModelCalls) != 2 || b.ModelCalls[0].TotalTokens != 10 || b.ModelCalls[1].TotalTokens != 20 {
		t.Errorf("model calls %+v", b.ModelCalls)
	}
}
