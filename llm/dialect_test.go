package llm_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
)

// dialects are the local servers the client is tested against.
var dialects = []llmtest.Dialect{llmtest.Ollama, llmtest.LlamaCpp, llmtest.VLLM}

// TestDialectUsage: against each local server's dialect, the client reads
// the usage of a completion from OpenAI's three counts (what Ollama's /v1
// maps its native prompt_eval_count and eval_count to; llama.cpp's and
// vLLM's extra members are ignored), charges them to the budget, costs
// them at the model's price (0 for a local model) and records them.
func TestDialectUsage(t *testing.T) {
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			srv := llmtest.NewDialect(t, d, llmtest.Served{ID: "test-model"}, d.Answer(validPlan, 1234, 56))
			b, err := llm.NewBudget(llm.Limits{MaxTokens: 10_000, MaxCostUSD: 0.01, Prices: map[string]llm.Price{"test-model": {}}})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
			resp, err := c.Complete(context.Background(), planRequest(t))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := resp.Usage, (llm.Usage{PromptTokens: 1234, CompletionTokens: 56, TotalTokens: 1290}); got != want {
				t.Errorf("usage %+v, want %+v", got, want)
			}
			if resp.Model != "test-model" || resp.Content != validPlan {
				t.Errorf("model %q, content %q", resp.Model, resp.Content)
			}
			if b.Tokens() != 1290 || resp.CostUSD == nil || *resp.CostUSD != 0 || b.Exceeded() != nil {
				t.Errorf("budget: %d tokens, cost %v, exceeded %v", b.Tokens(), resp.CostUSD, b.Exceeded())
			}
		})
	}
}

// TestDialectNativeCounts: the client reads only OpenAI's usage: a body
// that carries Ollama's native counts (prompt_eval_count, eval_count:
// what /api/chat reports, not /v1) and no usage reads no usage, as an
// endpoint that reports none; the budget fails closed and charges an
// estimate of the call (its prompt and, as the budget has no limit and no
// completion bound was sent, its answer at the estimate's rate), costed
// at the model's prices. A response that reports only a
// total is costed at the dearer price.
func TestDialectNativeCounts(t *testing.T) {
	const model = "test-model"
	price := llm.Price{InputPerMTok: 1, OutputPerMTok: 5}
	answer := strings.Repeat("x", 400) // 100 tokens at 4 bytes a token
	tests := []struct {
		name, usage          string
		minTokens, maxTokens int
		minCost, maxCost     float64
	}{
		{"no usage", `"prompt_eval_count":900,"eval_count":50`, 101, 200, 100 * 5 / 1e6, 200 * 5 / 1e6},
		{"zero usage", `"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`, 101, 200, 100 * 5 / 1e6, 200 * 5 / 1e6},
		{"total only", `"usage":{"total_tokens":1000}`, 1000, 1000, 1000 * 5 / 1e6, 1000 * 5 / 1e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Raw(http.StatusOK, `{"id":"c","object":"chat.completion","created":1,"model":"`+model+`","choices":[{"index":0,"message":{"role":"assistant","content":"`+answer+`"},"finish_reason":"stop"}],`+tc.usage+`}`))
			b, err := llm.NewBudget(llm.Limits{Prices: map[string]llm.Price{model: price}})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
			resp, err := c.Complete(context.Background(), llm.Request{Purpose: llm.PurposePlan, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.PromptTokens != 0 || resp.Usage.CompletionTokens != 0 {
				t.Errorf("usage %+v: want no prompt or completion counts read", resp.Usage)
			}
			if got := b.Tokens(); got < tc.minTokens || got > tc.maxTokens {
				t.Errorf("budget charged %d tokens, want %d to %d", got, tc.minTokens, tc.maxTokens)
			}
			if got := b.CostUSD(); got < tc.minCost-1e-12 || got > tc.maxCost+1e-12 {
				t.Errorf("budget charged $%v, want $%v to $%v", got, tc.minCost, tc.maxCost)
			}
		})
	}
}

// TestDialectErrors: each dialect's error body (without usage: vLLM's
// at the top level, the others' under "error") becomes an *APIError with
// the status and the message; nothing is charged.
func TestDialectErrors(t *testing.T) {
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			srv := llmtest.NewDialect(t, d, llmtest.Served{ID: "test-model"}, d.Error(http.StatusBadRequest, "the prompt is longer than the context"))
			b, err := llm.NewBudget(llm.Limits{MaxTokens: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
			_, err = c.Complete(context.Background(), llm.Request{Purpose: llm.PurposePlan, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "the prompt is longer than the context") {
				t.Fatalf("err %v, want an APIError 400 with the server's message", err)
			}
			if b.Tokens() != 0 || len(srv.Requests()) != 1 {
				t.Errorf("%d tokens charged after %d requests", b.Tokens(), len(srv.Requests()))
			}
		})
	}
}

// TestDialectImageParts: every dialect's fake takes a message of content
// parts, text and image_url (as a request showing an image sends it), and
// records both.
func TestDialectImageParts(t *testing.T) {
	const img = "data:image/png;base64,iVBORw0KGgo="
	body := `{"model":"m","messages":[{"role":"system","content":"look"},{"role":"user","content":[{"type":"text","text":"the page"},{"type":"image_url","image_url":{"url":"` + img + `","detail":"low"}},{"type":"text","text":"what now?"}]}]}`
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			srv := llmtest.NewDialect(t, d, llmtest.Served{ID: "m"}, d.Answer("{}", 1, 1))
			resp, err := http.Post(srv.URL+"/chat/completions", "application/json", bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || len(reqs[0].Messages) != 2 {
				t.Fatalf("requests %+v", reqs)
			}
			m := reqs[0].Messages[1]
			if got, want := m.Content, "the page\nwhat now?"; got != want {
				t.Errorf("content %q, want %q", got, want)
			}
			if got := m.Images; len(got) != 1 || got[0].URL != img || got[0].Detail != "low" {
				t.Errorf("images %+v", got)
			}
			if reqs[0].Messages[0].Content != "look" || reqs[0].Messages[0].Images != nil || reqs[0].Last() != "the page\nwhat now?" {
				t.Errorf("system message %+v", reqs[0].Messages[0])
			}
		})
	}
}

// TestDialectPriced: a priced model's cost over a dialect's usage.
func TestDialectPriced(t *testing.T) {
	srv := llmtest.NewDialect(t, llmtest.VLLM, llmtest.Served{ID: "test-model"}, llmtest.VLLM.Answer(validPlan, 200_000, 10_000))
	b, err := llm.NewBudget(llm.Limits{Prices: map[string]llm.Price{"test-model": {InputPerMTok: 0.5, OutputPerMTok: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
	resp, err := c.Complete(context.Background(), planRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if resp.CostUSD == nil || math.Abs(*resp.CostUSD-0.12) > 1e-12 || math.Abs(b.CostUSD()-0.12) > 1e-12 {
		t.Errorf("cost %v, budget %v, want 0.12", resp.CostUSD, b.CostUSD())
	}
}
