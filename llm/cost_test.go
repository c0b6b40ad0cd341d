package llm_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
)

// TestPriceCost: a call costs prompt × input price + completion × output
// price, prices per million tokens.
func TestPriceCost(t *testing.T) {
	tests := []struct {
		name               string
		price              llm.Price
		prompt, completion int
		want               float64
	}{
		{"gpt-4o-like", llm.Price{InputPerMTok: 2.5, OutputPerMTok: 10}, 1834, 212, 0.006705},
		{"a million each", llm.Price{InputPerMTok: 3, OutputPerMTok: 15}, 1_000_000, 1_000_000, 18},
		{"local model", llm.Price{}, 50_000, 9_000, 0},
		{"input only", llm.Price{InputPerMTok: 1}, 500, 0, 0.0005},
		{"negative counts count nothing", llm.Price{InputPerMTok: 1, OutputPerMTok: 1}, -5, -5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.price.Cost(tc.prompt, tc.completion); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func costBudget(t *testing.T, limits llm.Limits) *llm.Budget {
	t.Helper()
	b, err := llm.NewBudget(limits)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// priced is the price of the tests' model, "test-model": $1 per million
// prompt tokens, $10 per million completion tokens.
var priced = map[string]llm.Price{"test-model": {InputPerMTok: 1, OutputPerMTok: 10}}

// TestCostBudgetCharges: each answer's usage is costed at its model's
// price, recorded on the response, and a budget passed is reported by
// Exceeded, naming the cost budget; the next call is not sent.
func TestCostBudgetCharges(t *testing.T) {
	// 20 prompt tokens, 600 completion tokens: $0.00002 + $0.006 a call.
	usage := map[string]int{"prompt_tokens": 20, "completion_tokens": 600, "total_tokens": 620}
	srv := llmtest.NewServer(t, usageAnswer(usage), usageAnswer(usage))
	b := costBudget(t, llm.Limits{MaxCostUSD: 0.01, Prices: priced})
	c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
	var costs []float64
	for i := range 2 {
		resp, err := c.Complete(context.Background(), planRequest(t))
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if resp.CostUSD == nil {
			t.Fatalf("call %d: no cost", i+1)
		}
		costs = append(costs, *resp.CostUSD)
		if rec := resp.Record(nil); rec.CostUSD == nil || *rec.CostUSD != *resp.CostUSD {
			t.Errorf("record cost %v, want %v", rec.CostUSD, *resp.CostUSD)
		}
	}
	if got, want := costs[0], 0.00602; math.Abs(got-want) > 1e-12 {
		t.Errorf("cost of a call %v, want %v", got, want)
	}
	if got, want := b.CostUSD(), 0.01204; math.Abs(got-want) > 1e-12 {
		t.Errorf("budget cost %v, want %v", got, want)
	}
	var be *llm.BudgetError
	err := b.Exceeded()
	if !errors.As(err, &be) || be.Budget != llm.BudgetCost || be.LimitUSD != 0.01 {
		t.Fatalf("Exceeded() = %v", err)
	}
	if got, want := err.Error(), "the cost budget (maxCostUsd $0.01) was passed: cost $0.012 of $0.01"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if _, err := c.Complete(context.Background(), planRequest(t)); !errors.Is(err, llm.ErrBudgetExceeded) || len(srv.Requests()) != 2 {
		t.Errorf("third call: %v after %d requests, want a budget error and no request", err, len(srv.Requests()))
	}
}

// TestCostBudgetPredicts: a call whose estimated prompt and completion
// bound would cost more than what is left is refused before it is sent;
// a model priced at 0 never passes a cost budget; a model without a price
// is refused under a cost budget.
func TestCostBudgetPredicts(t *testing.T) {
	t.Run("bound over the budget", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		// A completion bound of 2,000 tokens at $10 a million: $0.02, more
		// than the $0.01 budget.
		b := costBudget(t, llm.Limits{MaxCostUSD: 0.01, Prices: priced})
		c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget, cfg.MaxTokens = b, 2000 })
		resp, err := c.Complete(context.Background(), planRequest(t))
		var be *llm.BudgetError
		if !errors.As(err, &be) || be.Budget != llm.BudgetCost || be.PredictedUSD <= 0.02 || len(srv.Requests()) != 0 {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
		if !strings.Contains(err.Error(), "the cost budget (maxCostUsd $0.01) would be passed: cost $0.00 of $0.01, the next model call is estimated at $0.02") || resp.CostUSD != nil {
			t.Errorf("err %q, cost %v", err, resp.CostUSD)
		}
	})
	t.Run("local model", func(t *testing.T) {
		usage := map[string]int{"prompt_tokens": 90_000, "completion_tokens": 90_000}
		srv := llmtest.NewServer(t)
		srv.Always(usageAnswer(usage))
		b := costBudget(t, llm.Limits{MaxCostUSD: 0.0001, Prices: map[string]llm.Price{"test-model": {}}})
		c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget, cfg.MaxTokens = b, 100_000 })
		for i := range 3 {
			resp, err := c.Complete(context.Background(), planRequest(t))
			if err != nil || resp.CostUSD == nil || *resp.CostUSD != 0 {
				t.Fatalf("call %d: %v, cost %v", i+1, err, resp.CostUSD)
			}
		}
		if b.Exceeded() != nil || b.Tokens() != 540_000 {
			t.Errorf("exceeded %v, tokens %d", b.Exceeded(), b.Tokens())
		}
	})
	t.Run("unpriced model", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		b := costBudget(t, llm.Limits{MaxCostUSD: 1, Prices: map[string]llm.Price{"other-model": {InputPerMTok: 1}}})
		c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
		if _, err := c.Complete(context.Background(), planRequest(t)); !errors.Is(err, llm.ErrUnpriced) || len(srv.Requests()) != 0 {
			t.Errorf("err %v after %d requests, want ErrUnpriced before sending", err, len(srv.Requests()))
		}
	})
	t.Run("priced without a limit", func(t *testing.T) {
		srv := llmtest.NewServer(t, usageAnswer(map[string]int{"prompt_tokens": 1000, "completion_tokens": 100}))
		b := costBudget(t, llm.Limits{Prices: priced})
		c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
		resp, err := c.Complete(context.Background(), planRequest(t))
		if err != nil || resp.CostUSD == nil || math.Abs(*resp.CostUSD-0.002) > 1e-12 || !b.Priced() {
			t.Errorf("err %v, cost %v, priced %v", err, resp.CostUSD, b.Priced())
		}
	})
}

// TestNewBudgetCostLimits: a cost limit out of range and a price out of
// range are refused; a cost limit without prices is accepted (an offline
// agent's budget: it is its calls of an unpriced model that are refused,
// llm.ErrUnpriced).
func TestNewBudgetCostLimits(t *testing.T) {
	tests := []struct {
		name    string
		limits  llm.Limits
		wantErr string
	}{
		{"none", llm.Limits{}, ""},
		{"limit", llm.Limits{MaxCostUSD: 0.5, Prices: priced}, ""},
		{"largest", llm.Limits{MaxCostUSD: llm.MaxCostBudget, Prices: priced}, ""},
		{"prices only", llm.Limits{Prices: priced}, ""},
		{"negative", llm.Limits{MaxCostUSD: -1, Prices: priced}, "cost budget -1"},
		{"too large", llm.Limits{MaxCostUSD: llm.MaxCostBudget + 1, Prices: priced}, "cost budget 1.000001e+06"},
		{"NaN", llm.Limits{MaxCostUSD: math.NaN(), Prices: priced}, "cost budget NaN"},
		{"no prices (an offline agent's)", llm.Limits{MaxCostUSD: 1}, ""},
		{"negative price", llm.Limits{MaxCostUSD: 1, Prices: map[string]llm.Price{"m": {InputPerMTok: -1}}}, `price of model "m"`},
		{"price too large", llm.Limits{Prices: map[string]llm.Price{"m": {OutputPerMTok: llm.MaxPricePerMTok + 1}}}, `price of model "m"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := llm.NewBudget(tc.limits)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}
