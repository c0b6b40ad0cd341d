package llm

import (
	"math"
	"testing"
)

// TestEstimatePromptTokens: the one estimate of a prompt, which reserve
// predicts with and charge charges when usage is missing: four bytes a
// token until reported usage calibrates it, ImageTokens an image, never
// overflowing.
func TestEstimatePromptTokens(t *testing.T) {
	tests := []struct {
		name                string
		seenBytes, seenToks int
		promptBytes, images int
		want                int
	}{
		{"empty", 0, 0, 0, 0, 0},
		{"a byte", 0, 0, 1, 0, 1},
		{"four bytes a token", 0, 0, 400, 0, 100},
		{"rounded up", 0, 0, 401, 0, 101},
		{"an image", 0, 0, 0, 1, ImageTokens},
		{"text and images", 0, 0, 400, 2, 100 + 2*ImageTokens},
		{"calibrated", 1000, 100, 400, 0, 40},
		{"calibrated, rounded up", 3, 1, 4, 0, 2},
		{"calibrated past any budget", 1, MaxTokenBudget, math.MaxInt / 2, 0, MaxTokenBudget + 1},
		{"images past any count", 0, 0, math.MaxInt, math.MaxInt, math.MaxInt},
		{"negative counts nothing", 0, 0, -1, -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBudget(Limits{MaxTokens: MaxTokenBudget})
			if err != nil {
				t.Fatal(err)
			}
			b.bytes, b.tokens = tc.seenBytes, tc.seenToks
			if got := b.EstimatePromptTokens(tc.promptBytes, tc.images); got != tc.want {
				t.Errorf("EstimatePromptTokens: got %d, want %d", got, tc.want)
			}
			r, _ := b.reserve("m", 1, tc.promptBytes, tc.images)
			if got := r.prompt; got != tc.want {
				t.Errorf("reserve's estimate: got %d, want %d", got, tc.want)
			}
			if tc.seenBytes == 0 {
				var nb *Budget
				if got := nb.EstimatePromptTokens(tc.promptBytes, tc.images); got != tc.want {
					t.Errorf("nil budget's estimate: got %d, want %d", got, tc.want)
				}
			}
		})
	}
}

// TestBudgetCharge: what one answer is charged, in tokens and money ($1 a
// million prompt tokens, $10 a million completion tokens), for a call
// whose prompt was estimated at 100 tokens: the reported usage; tokens of
// a total beyond prompt plus completion at the dearer price; without
// usage, the estimate plus the completion bound sent, else the answer's
// bytes at four a token; without prompt tokens, at least the estimate
// plus the completion; a negative field counts as 0. What the call held
// is given back.
func TestBudgetCharge(t *testing.T) {
	tests := []struct {
		name          string
		usage         Usage
		bound, answer int
		wantTokens    int
		wantCost      float64
	}{
		{"prompt and completion", Usage{PromptTokens: 20, CompletionTokens: 600, TotalTokens: 620}, 500, 0, 620, 0.00602},
		{"no total", Usage{PromptTokens: 20, CompletionTokens: 600}, 500, 0, 620, 0.00602},
		{"total less than the parts", Usage{PromptTokens: 20, CompletionTokens: 600, TotalTokens: 10}, 500, 0, 620, 0.00602},
		{"total beyond the parts", Usage{PromptTokens: 20, CompletionTokens: 600, TotalTokens: 1000}, 500, 0, 1000, 0.00982},
		{"prompt and total only", Usage{PromptTokens: 20, TotalTokens: 620}, 500, 0, 620, 0.00602},
		// No prompt tokens reported: at least the prompt's estimate (100)
		// plus the completion, the estimate at the dearer price.
		{"completion and total only", Usage{CompletionTokens: 600, TotalTokens: 620}, 500, 0, 700, 0.007},
		{"completion only", Usage{CompletionTokens: 600}, 500, 0, 700, 0.007},
		{"completion and a total beyond the estimate", Usage{CompletionTokens: 600, TotalTokens: 800}, 500, 0, 800, 0.008},
		{"a negative prompt", Usage{PromptTokens: -500, CompletionTokens: 600}, 500, 0, 700, 0.007},
		{"a negative completion", Usage{PromptTokens: 20, CompletionTokens: -600, TotalTokens: 0}, 500, 0, 20, 0.00002},
		{"total only", Usage{TotalTokens: 620}, 500, 0, 620, 0.0062},
		{"none, with a bound", Usage{}, 500, 40, 600, 0.0051},
		{"none, without a bound", Usage{}, 0, 40, 110, 0.0002},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBudget(Limits{MaxTokens: 10_000, Prices: map[string]Price{"m": {InputPerMTok: 1, OutputPerMTok: 10}}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.reserve("m", tc.bound, 400, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tc.bound == 0 {
				r.bound = 0 // a call sent without one
			}
			cost, _ := b.charge(r, tc.usage, tc.answer)
			if got := b.Tokens(); got != tc.wantTokens {
				t.Errorf("tokens: got %d, want %d", got, tc.wantTokens)
			}
			if math.Abs(cost-tc.wantCost) > 1e-12 || math.Abs(b.CostUSD()-tc.wantCost) > 1e-12 {
				t.Errorf("cost: got %v (budget %v), want %v", cost, b.CostUSD(), tc.wantCost)
			}
			if b.reserved != 0 || b.reservedCost != 0 {
				t.Errorf("still held: %d tokens, $%v", b.reserved, b.reservedCost)
			}
		})
	}
}

// TestBudgetErrorHeld: a call refused while another holds part of the
// budget says what is held, and that only the rest is left.
func TestBudgetErrorHeld(t *testing.T) {
	b, err := NewBudget(Limits{MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	first, err := b.reserve("m", 500, 400, 0) // 100 + 500 held
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.reserve("m", 500, 400, 0)
	be, ok := err.(*BudgetError)
	if !ok || be.Held != first.tokens || be.Used != 0 || be.Predicted != 600 {
		t.Fatalf("second reserve: %#v, want a budget error holding %d", err, first.tokens)
	}
	tests := []struct {
		name string
		err  *BudgetError
		want string
	}{
		{"tokens held", be, "the token budget (maxTokens 1,000) would be passed: 0 tokens used, 600 held by calls in flight, the next model call is estimated at 600, 400 are left"},
		{"tokens, none held", &BudgetError{Budget: BudgetTokens, Limit: 1000, Used: 700, Predicted: 600}, "the token budget (maxTokens 1,000) would be passed: 700 tokens used, the next model call is estimated at 600, 300 are left"},
		{"cost held", &BudgetError{Budget: BudgetCost, LimitUSD: 1, UsedUSD: 0.25, HeldUSD: 0.5, PredictedUSD: 0.5}, "the cost budget (maxCostUsd $1.00) would be passed: cost $0.25 of $1.00, $0.50 held by calls in flight, the next model call is estimated at $0.50, $0.25 is left"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
