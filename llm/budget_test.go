package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
)

// usageAnswer answers validPlan with the given usage.
func usageAnswer(usage map[string]int) llmtest.Reply {
	return func(w http.ResponseWriter, _ *llmtest.Request) {
		llmtest.WriteCompletion(w, "fake-model-1", validPlan, usage)
	}
}

func newBudget(t *testing.T, maxTokens int) *llm.Budget {
	t.Helper()
	b, err := llm.NewBudget(llm.Limits{MaxTokens: maxTokens})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBudgetCharges: every answer's usage is charged, the total when the
// endpoint reports one that is not less than prompt plus completion, else
// their sum; Exceeded reports a budget passed. (20 prompt tokens: the
// calibrated estimate of the second prompt fits in what is left.) An
// answer that reports no usage: TestBudgetNoUsage.
func TestBudgetCharges(t *testing.T) {
	tests := []struct {
		name  string
		usage map[string]int
		want  int
	}{
		{"total", map[string]int{"prompt_tokens": 20, "completion_tokens": 130, "total_tokens": 150}, 150},
		{"no total", map[string]int{"prompt_tokens": 20, "completion_tokens": 130}, 150},
		{"total less than the parts", map[string]int{"prompt_tokens": 20, "completion_tokens": 130, "total_tokens": 10}, 150},
		{"total with reasoning tokens", map[string]int{"prompt_tokens": 20, "completion_tokens": 130, "total_tokens": 400}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, usageAnswer(tc.usage), usageAnswer(tc.usage))
			b := newBudget(t, 250)
			c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
			if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
				t.Fatal(err)
			}
			if got := b.Tokens(); got != tc.want {
				t.Errorf("tokens %d, want %d", got, tc.want)
			}
			_, err := c.Complete(context.Background(), planRequest(t))
			passed := 2*tc.want > 250
			if tc.want > 250 {
				// The first answer passed the budget: the second is not sent.
				if !errors.Is(err, llm.ErrBudgetExceeded) || len(srv.Requests()) != 1 {
					t.Fatalf("err %v after %d requests, want a budget error after 1", err, len(srv.Requests()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var be *llm.BudgetError
			if got := b.Exceeded(); (got != nil) != passed || (passed && (!errors.As(got, &be) || be.Used != 2*tc.want || be.Limit != 250 || be.Budget != "maxTokens")) {
				t.Errorf("Exceeded() = %v after %d tokens", got, b.Tokens())
			}
		})
	}
}

// TestBudgetPredicts: a request whose estimated prompt plus the
// completion bound is more than what is left is refused before it is
// sent; the estimate is four bytes a token until usage calibrates it.
func TestBudgetPredicts(t *testing.T) {
	req := planRequest(t)
	t.Run("bound over the budget", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		b := newBudget(t, 1000)
		c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget, cfg.MaxTokens = b, 1000 })
		resp, err := c.Complete(context.Background(), req)
		var be *llm.BudgetError
		if !errors.As(err, &be) || be.Predicted <= 1000 || be.Used != 0 || len(srv.Requests()) != 0 {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
		if !strings.Contains(err.Error(), "would be passed") || resp.PromptHash == "" {
			t.Errorf("err %q, prompt hash %q", err, resp.PromptHash)
		}
	})
	t.Run("calibrated by usage", func(t *testing.T) {
		// The first answer reports 1 prompt token for the whole prompt:
		// the next prompt of the same size is estimated at 1 token, and
		// fits in the 2 left.
		srv := llmtest.NewServer(t,
			usageAnswer(map[string]int{"prompt_tokens": 1, "completion_tokens": 97, "total_tokens": 98}),
			usageAnswer(map[string]int{"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}))
		b := newBudget(t, 100)
		if got, want := b.EstimatePromptTokens(400, 0), 100; got != want {
			t.Fatalf("uncalibrated estimate %d, want %d", got, want)
		}
		c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
		small := llm.Request{Purpose: llm.PurposePlan, Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("x", 60)}}}
		for i := range 2 {
			if _, err := c.Complete(context.Background(), small); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		if b.Tokens() != 99 || b.Exceeded() != nil {
			t.Errorf("tokens %d, exceeded %v", b.Tokens(), b.Exceeded())
		}
	})
}

// TestBudgetNone: a nil budget, and one without limits, refuse nothing.
func TestBudgetNone(t *testing.T) {
	var nb *llm.Budget
	if nb.Tokens() != 0 || nb.Exceeded() != nil || !reflect.DeepEqual(nb.Limits(), llm.Limits{}) || nb.CostUSD() != 0 || nb.Priced() {
		t.Errorf("nil budget: %d tokens, %v", nb.Tokens(), nb.Exceeded())
	}
	srv := llmtest.NewServer(t)
	srv.Always(usageAnswer(map[string]int{"prompt_tokens": 1000, "completion_tokens": 1000, "total_tokens": 2000}))
	b := newBudget(t, 0)
	c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget, cfg.MaxTokens = b, 1<<20 })
	for range 3 {
		if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
			t.Fatal(err)
		}
	}
	if b.Tokens() != 6000 || b.Exceeded() != nil {
		t.Errorf("tokens %d, exceeded %v", b.Tokens(), b.Exceeded())
	}
}

// TestNewBudgetLimits: a limit out of range is refused.
func TestNewBudgetLimits(t *testing.T) {
	for _, n := range []int{-1, llm.MaxTokenBudget + 1} {
		if _, err := llm.NewBudget(llm.Limits{MaxTokens: n}); err == nil {
			t.Errorf("NewBudget(%d) accepted", n)
		}
	}
	for _, n := range []int{0, 1, llm.MaxTokenBudget} {
		if _, err := llm.NewBudget(llm.Limits{MaxTokens: n}); err != nil {
			t.Errorf("NewBudget(%d): %v", n, err)
		}
	}
}

// TestBudgetCompletionBound: under a budget with a limit, a client without
// its own MaxTokens sends a completion bound: DefaultCompletionBound, or
// less when that much is not left after the prompt; its own MaxTokens
// wins; without a budget none is sent.
func TestBudgetCompletionBound(t *testing.T) {
	tests := []struct {
		name      string
		limits    *llm.Limits
		maxTokens int
		lo, hi    int
	}{
		{"no budget", nil, 0, 0, 0},
		{"large token budget", &llm.Limits{MaxTokens: 1_000_000}, 0, llm.DefaultCompletionBound, llm.DefaultCompletionBound},
		{"small token budget", &llm.Limits{MaxTokens: 1_000}, 0, 1, 999},
		{"configured", &llm.Limits{MaxTokens: 1_000}, 200, 200, 200},
		{"cost budget", &llm.Limits{MaxCostUSD: 0.001, Prices: map[string]llm.Price{"test-model": {InputPerMTok: 1, OutputPerMTok: 1}}}, 0, 1, 999},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, usageAnswer(map[string]int{"prompt_tokens": 1, "completion_tokens": 1}))
			var b *llm.Budget
			if tc.limits != nil {
				var err error
				if b, err = llm.NewBudget(*tc.limits); err != nil {
					t.Fatal(err)
				}
			}
			c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget, cfg.MaxTokens, cfg.Model = b, tc.maxTokens, "test-model" })
			if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
				t.Fatal(err)
			}
			var body struct {
				Max int `json:"max_completion_tokens"`
			}
			if err := json.Unmarshal(srv.Requests()[0].Raw, &body); err != nil {
				t.Fatal(err)
			}
			if body.Max < tc.lo || body.Max > tc.hi {
				t.Errorf("max_completion_tokens %d, want %d to %d", body.Max, tc.lo, tc.hi)
			}
		})
	}
}

// TestBudgetNoUsage: an answer that reports no usage is charged the
// prompt's estimate plus the completion bound sent with it (the model may
// have spent all of it): under a budget of 250 tokens, all of it, and the
// next call is refused before it is sent.
func TestBudgetNoUsage(t *testing.T) {
	srv := llmtest.NewServer(t, usageAnswer(nil))
	b := newBudget(t, 250)
	c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
	if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
		t.Fatal(err)
	}
	if got, want := b.Tokens(), 250; got != want {
		t.Errorf("tokens %d, want %d", got, want)
	}
	var be *llm.BudgetError
	if _, err := c.Complete(context.Background(), planRequest(t)); !errors.As(err, &be) || be.Predicted == 0 || len(srv.Requests()) != 1 {
		t.Errorf("second call: %v after %d requests, want a predicted budget error and no request", err, len(srv.Requests()))
	}
}

// spendBound answers validPlan reporting 1 prompt token and, as its
// completion, the whole completion bound the request sent: the most a
// call may use.
func spendBound(t *testing.T) llmtest.Reply {
	return func(w http.ResponseWriter, r *llmtest.Request) {
		var body struct {
			Max int `json:"max_completion_tokens"`
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil || body.Max <= 0 {
			t.Errorf("request without a completion bound: %s", r.Raw)
		}
		llmtest.WriteCompletion(w, "fake-model-1", validPlan, map[string]int{"prompt_tokens": 1, "completion_tokens": body.Max})
	}
}

// TestBudgetShared: two clients sharing a budget never pass it together.
// A call in flight holds its prompt's estimate and completion bound, so a
// call made meanwhile is sent with what is left (or refused), not with
// what was left before the first was sent; then both clients call until
// the budget refuses them, at once (run with -race).
func TestBudgetShared(t *testing.T) {
	const limit = 6000
	t.Run("a call in flight", func(t *testing.T) {
		arrived, answer := make(chan struct{}), make(chan struct{})
		srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *llmtest.Request) {
			close(arrived)
			<-answer
			spendBound(t)(w, r)
		})
		srv.Always(spendBound(t))
		b := newBudget(t, limit)
		first, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
		second, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
		done := make(chan error, 1)
		go func() {
			_, err := first.Complete(context.Background(), planRequest(t))
			done <- err
		}()
		<-arrived
		_, err := second.Complete(context.Background(), planRequest(t))
		close(answer)
		if err != nil {
			t.Fatalf("second call: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("first call: %v", err)
		}
		var bounds []int
		for _, r := range srv.Requests() {
			var body struct {
				Max int `json:"max_completion_tokens"`
			}
			if err := json.Unmarshal(r.Raw, &body); err != nil {
				t.Fatal(err)
			}
			bounds = append(bounds, body.Max)
		}
		if len(bounds) != 2 || bounds[0] != llm.DefaultCompletionBound || bounds[1] >= limit-llm.DefaultCompletionBound {
			t.Errorf("completion bounds %v: want %d, then less than the %d left", bounds, llm.DefaultCompletionBound, limit-llm.DefaultCompletionBound)
		}
		if got := b.Tokens(); got > limit || b.Exceeded() != nil {
			t.Errorf("tokens %d of %d, exceeded %v", got, limit, b.Exceeded())
		}
	})
	t.Run("calls at once", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		srv.Always(spendBound(t))
		b := newBudget(t, limit)
		errs := make(chan error, 2)
		for range 2 {
			c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
			go func() {
				for {
					if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for range 2 {
			if err := <-errs; !errors.Is(err, llm.ErrBudgetExceeded) {
				t.Errorf("a client stopped by %v, want a budget error", err)
			}
		}
		if got := b.Tokens(); got > limit || b.Exceeded() != nil {
			t.Errorf("tokens %d of %d, exceeded %v", got, limit, b.Exceeded())
		}
	})
}

// TestBudgetFailedAttempts: an attempt that failed after the endpoint
// took it (a 200 whose body is too large, or is not a chat completion, a
// timeout)
// may have been billed: it is charged what it held (the prompt's estimate
// and the bound sent), all of a budget of 250, and the next call is
// refused before it is sent; one the endpoint refused (4xx, 5xx) is
// released, charged nothing.
func TestBudgetFailedAttempts(t *testing.T) {
	clock := llmtest.NewClock(time.Minute)
	tests := []struct {
		name    string
		reply   llmtest.Reply
		charged bool
	}{
		{"a 200 too large", llmtest.Answer(strings.Repeat("x", 4096)), true},
		{"a timeout", llmtest.TimeOut(clock), true},
		{"a 200 not a completion", llmtest.Raw(http.StatusOK, "[1,2"), true},
		{"a 400 refusal", llmtest.Status(http.StatusBadRequest, "bad request"), false},
		{"a 401 refusal", llmtest.Status(http.StatusUnauthorized, "no key"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, tc.reply, usageAnswer(map[string]int{"prompt_tokens": 20, "completion_tokens": 30}))
			b := newBudget(t, 250)
			c, _ := newClient(t, srv, func(cfg *llm.Config) {
				cfg.Budget, cfg.MaxResponseBytes, cfg.MaxRetries = b, 1024, 0
				cfg.Timeout, cfg.Clock = time.Minute, clock
			})
			if _, err := c.Complete(context.Background(), planRequest(t)); err == nil {
				t.Fatal("the first call succeeded")
			}
			want := 0
			if tc.charged {
				want = 250
			}
			if got := b.Tokens(); got != want {
				t.Errorf("tokens %d after the failed call, want %d", got, want)
			}
			_, err := c.Complete(context.Background(), planRequest(t))
			var be *llm.BudgetError
			if got := errors.As(err, &be) && len(srv.Requests()) == 1; got != tc.charged {
				t.Errorf("second call: %v after %d requests; refused unsent %v, want %v", err, len(srv.Requests()), got, tc.charged)
			}
		})
	}
	// An endpoint that is down (the connection refused) reached no
	// provider: nothing is charged, and the error says what happened.
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + ln.Addr().String() + "/v1"
		ln.Close()
		b := newBudget(t, 250)
		c, _ := newClient(t, llmtest.NewServer(t), func(cfg *llm.Config) { cfg.Budget, cfg.MaxRetries, cfg.BaseURL = b, 0, down })
		_, err = c.Complete(context.Background(), planRequest(t))
		var be *llm.BudgetError
		if err == nil || errors.As(err, &be) {
			t.Fatalf("call to a closed endpoint: %v, want a connection error", err)
		}
		if got := b.Tokens(); got != 0 {
			t.Errorf("tokens %d after a refused connection, want 0", got)
		}
	})
}
