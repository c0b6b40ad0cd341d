package session_test

// The model budget: hints.maxTokens and hints.maxCostUsd, counted over the
// Planner's and the Navigator's calls (llm.Budget), end the session
// aborted once passed, or before a call predicted to pass them.

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/session"
)

// usageReply answers content with the given token usage.
func usageReply(content string, prompt, completion int) llmtest.Reply {
	return func(w http.ResponseWriter, _ *llmtest.Request) {
		llmtest.WriteCompletion(w, "fake-model-1", content, map[string]int{
			"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		})
	}
}

// navContent is a Navigator answer's JSON.
func navContent(status string, actions ...string) string {
	return `{"actions":[` + strings.Join(actions, ",") + `],"status":"` + status + `","summary":"` + status + `"}`
}

// budgetRun runs a session on the fake site whose model calls each use
// prompt+completion tokens, under a token budget of maxTokens (0: none),
// with the clients' completion bound maxCompletion, the Navigator
// answering "continue" with one wait until its done-th call (from 0).
func budgetRun(t *testing.T, maxTokens, maxCompletion, prompt, completion, done int) (session.Result, error, *llmtest.Server, *llm.Budget) {
	t.Helper()
	return limitsRun(t, llm.Limits{MaxTokens: maxTokens}, maxCompletion, prompt, completion, done)
}

// limitsRun is budgetRun under any limits: the task's hints name the
// same budgets.
func limitsRun(t *testing.T, limits llm.Limits, maxCompletion, prompt, completion, done int) (session.Result, error, *llmtest.Server, *llm.Budget) {
	t.Helper()
	srv := fakeModel(t, usageReply(planAnswer, prompt, completion), func(n int, _ *llmtest.Request) llmtest.Reply {
		if n >= done {
			return usageReply(navContent("done", aWait(fmt.Sprintf("d%d", n), 1)), prompt, completion)
		}
		return usageReply(navContent("continue", aWait(fmt.Sprintf("w%d", n), 1)), prompt, completion)
	})
	budget, err := llm.NewBudget(limits)
	if err != nil {
		t.Fatal(err)
	}
	pl, nav := llmAgents(t, srv, nil, func(c *llm.Config) { c.Budget, c.MaxTokens = budget, maxCompletion })
	in := task("Wait", []string{fakeOrigin + "/orders"}, "")
	if limits.MaxTokens > 0 {
		if in, err = in.WithMaxTokens(limits.MaxTokens); err != nil {
			t.Fatal(err)
		}
	}
	if limits.MaxCostUSD > 0 {
		if in, err = in.WithMaxCostUSD(limits.MaxCostUSD); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fakeCfg(t, newFakeSite(), in, pl, nav)
	cfg.Budget = budget
	res, err := run(t, cfg)
	return res, err, srv, budget
}

// budgetEvents returns the session.budget_exceeded events of a bundle.
func budgetEvents(t *testing.T, files map[string][]byte) []contract.StreamEvent {
	var out []contract.StreamEvent
	for _, ev := range events(t, files) {
		if ev.Type == contract.EventError && ev.Code == session.CodeBudgetExceeded {
			out = append(out, ev)
		}
	}
	return out
}

// TestTokenBudgetPassed: calls of 700 tokens under a budget of 1,800 (the
// plan and two Navigator calls): the third call passes it, and the session
// ends aborted before running that call's batch, the budget named in the
// summary and in an error event.
func TestTokenBudgetPassed(t *testing.T) {
	// One prompt token per call: the estimate, calibrated by the reported
	// usage, predicts almost nothing, so the third call is sent.
	res, err, srv, _ := budgetRun(t, 1800, 0, 1, 699, 10)
	if err != nil || res.Status != contract.SessionAborted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if got, want := len(srv.Requests()), 3; got != want {
		t.Errorf("%d model requests, want %d", got, want)
	}
	if got, want := ranIDs(t, files), []string{"start", "w0"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ran %v, want %v (nothing of the answer that passed the budget)", got, want)
	}
	if res.Tokens != 2100 || res.MaxTokens != 1800 || res.Budget != llm.BudgetTokens {
		t.Errorf("result tokens %d of %d, ended by budget %q, want 2100 of 1800, %q", res.Tokens, res.MaxTokens, res.Budget, llm.BudgetTokens)
	}
	evs := budgetEvents(t, files)
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "maxTokens 1,800") || !strings.Contains(evs[0].Message, "was passed: 2,100 tokens") {
		t.Fatalf("budget events %+v", evs)
	}
	if s := res.Output.Summary; !strings.Contains(s, "token budget (maxTokens 1,800) was passed") {
		t.Errorf("summary %q does not name the budget", s)
	}
	var calls int
	for range lines[contract.ModelCall](t, files, "model-calls.jsonl") {
		calls++
	}
	if calls != 3 {
		t.Errorf("%d model calls recorded, want 3", calls)
	}
}

// TestTokenBudgetPredicted: with a completion bound of 600, calls of 300
// tokens under a budget of 2,000 stop before the sixth call (1,500 used,
// 500 left, at least 600 needed): it is never sent, the budget never
// passed, and the session ends aborted saying so. A bound larger than the
// budget refuses the very first call.
func TestTokenBudgetPredicted(t *testing.T) {
	t.Run("mid-run", func(t *testing.T) {
		res, err, srv, budget := budgetRun(t, 2000, 600, 1, 299, 100)
		if err != nil || res.Status != contract.SessionAborted {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		files := verify(t, res)
		if got, want := len(srv.Requests()), 5; got != want {
			t.Errorf("%d model requests, want %d (the plan and four Navigator calls)", got, want)
		}
		// Refused before it was sent, the budget never passed, the
		// result still names the budget that ended the session.
		if res.Tokens != 1500 || budget.Exceeded() != nil || res.Budget != llm.BudgetTokens {
			t.Errorf("tokens %d, exceeded %v, ended by budget %q: want 1500, never passed, %q", res.Tokens, budget.Exceeded(), res.Budget, llm.BudgetTokens)
		}
		evs := budgetEvents(t, files)
		if len(evs) != 1 || !strings.Contains(evs[0].Message, "would be passed") || !strings.Contains(evs[0].Message, "500 are left") {
			t.Fatalf("budget events %+v", evs)
		}
		if !strings.Contains(res.Output.Summary, "maxTokens 2,000") {
			t.Errorf("summary %q does not name the budget", res.Output.Summary)
		}
		// The refused call is recorded, with why it was not sent.
		mcs := lines[contract.ModelCall](t, files, "model-calls.jsonl")
		if last := mcs[len(mcs)-1]; len(mcs) != 6 || !strings.Contains(last.Error, "would be passed") || last.TotalTokens != 0 {
			t.Errorf("%d model calls, last %+v", len(mcs), last)
		}
	})
	t.Run("first call", func(t *testing.T) {
		res, err, srv, _ := budgetRun(t, 500, 1000, 1, 10, 0)
		if err != nil || res.Status != contract.SessionAborted {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		files := verify(t, res)
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%d model requests, want none", n)
		}
		if evs := budgetEvents(t, files); len(evs) != 1 {
			t.Errorf("budget events %+v", evs)
		}
	})
}

// TestTokenBudgetNone: without a budget nothing changes: the session
// completes, counting the tokens all the same.
func TestTokenBudgetNone(t *testing.T) {
	res, err, srv, _ := budgetRun(t, 0, 0, 100, 100, 1)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3", n)
	}
	if res.Tokens != 600 || res.MaxTokens != 0 || res.Budget != "" {
		t.Errorf("tokens %d of %d, ended by budget %q, want 600 of none, no budget", res.Tokens, res.MaxTokens, res.Budget)
	}
	if evs := budgetEvents(t, files); len(evs) != 0 {
		t.Errorf("budget events %+v", evs)
	}
}

// TestTokenBudgetConfig: the budget handed in must be the task's, and a
// task's hints.maxTokens must be an integer in range.
func TestTokenBudgetConfig(t *testing.T) {
	site := newFakeSite()
	pl, nav := stepsAgents(t, task("x", []string{fakeOrigin + "/"}, `{"steps":["navigate /orders"]}`), nil)
	other, err := llm.NewBudget(llm.Limits{MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	costly, err := llm.NewBudget(llm.Limits{MaxCostUSD: 0.25, Prices: testPrices})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		hints  string
		budget *llm.Budget
		want   string
	}{
		{"another limit", `{"maxTokens":200}`, other, "is not the task's hints.maxTokens (200"},
		{"a limit the task lacks", ``, other, "is not the task's hints.maxTokens (0"},
		{"no budget", `{"maxTokens":200}`, nil, "no model budget enforces it"},
		{"zero", `{"maxTokens":0}`, nil, "hints.maxTokens is 0"},
		{"fraction", `{"maxTokens":1.5}`, nil, "hints.maxTokens is 1.5"},
		{"string", `{"maxTokens":"many"}`, nil, `hints.maxTokens is "many"`},
		{"too many", `{"maxTokens":1000000001}`, nil, "want an integer from 1 to 1000000000"},
		{"a cost limit the task lacks", ``, costly, "is not the task's hints.maxCostUsd (0"},
		{"another cost limit", `{"maxCostUsd":0.5}`, costly, "the model budget's cost limit (0.25) is not the task's hints.maxCostUsd (0.5"},
		{"no budget for the cost", `{"maxCostUsd":0.5}`, nil, "no model budget enforces it"},
		{"a negative cost", `{"maxCostUsd":-1}`, nil, "hints.maxCostUsd is -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeCfg(t, site, task("x", []string{fakeOrigin + "/"}, tc.hints), pl, nav)
			cfg.Budget = tc.budget
			_, err := session.New(cfg)
			var se *session.Error
			if !errors.As(err, &se) || se.Code != "config" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want a config error with %q", err, tc.want)
			}
		})
	}
}

// testPrices price the sessions' model, "test-model": $1 per million
// prompt tokens, $10 per million completion tokens.
var testPrices = map[string]llm.Price{"test-model": {InputPerMTok: 1, OutputPerMTok: 10}}

// TestCostBudget: calls of 1 prompt and 999 completion tokens cost
// $0.009991 each; under a cost budget of $0.025 the third call passes it,
// and the session ends aborted before running that call's batch, the
// budget named in the summary and in an error event, each call's cost in
// its record. With a completion bound of 600 ($0.006), calls of $0.002991
// under $0.02 stop before the sixth: it is never sent.
func TestCostBudget(t *testing.T) {
	t.Run("passed", func(t *testing.T) {
		res, err, srv, _ := limitsRun(t, llm.Limits{MaxCostUSD: 0.025, Prices: testPrices}, 0, 1, 999, 10)
		if err != nil || res.Status != contract.SessionAborted {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		files := verify(t, res)
		if got, want := len(srv.Requests()), 3; got != want {
			t.Errorf("%d model requests, want %d", got, want)
		}
		if got, want := ranIDs(t, files), []string{"start", "w0"}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("ran %v, want %v (nothing of the answer that passed the budget)", got, want)
		}
		if math.Abs(res.CostUSD-0.029973) > 1e-9 || res.MaxCostUSD != 0.025 || !res.Priced || res.Budget != llm.BudgetCost {
			t.Errorf("result cost %v of %v (priced %v), ended by budget %q, want 0.029973 of 0.025, %q", res.CostUSD, res.MaxCostUSD, res.Priced, res.Budget, llm.BudgetCost)
		}
		const named = "the cost budget (maxCostUsd $0.025) was passed: cost $0.03 of $0.025"
		if evs := budgetEvents(t, files); len(evs) != 1 || !strings.Contains(evs[0].Message, named) {
			t.Fatalf("budget events %+v, want one saying %q", evs, named)
		}
		if s := res.Output.Summary; !strings.Contains(s, named) {
			t.Errorf("summary %q does not name the budget", s)
		}
		mcs := lines[contract.ModelCall](t, files, "model-calls.jsonl")
		if len(mcs) != 3 {
			t.Fatalf("%d model calls recorded, want 3", len(mcs))
		}
		for i, mc := range mcs {
			if mc.CostUSD == nil || math.Abs(*mc.CostUSD-0.009991) > 1e-12 {
				t.Errorf("model call %d: cost %v, want 0.009991", i, mc.CostUSD)
			}
		}
	})
	t.Run("predicted", func(t *testing.T) {
		res, err, srv, budget := limitsRun(t, llm.Limits{MaxCostUSD: 0.02, Prices: testPrices}, 600, 1, 299, 100)
		if err != nil || res.Status != contract.SessionAborted {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		files := verify(t, res)
		if got, want := len(srv.Requests()), 5; got != want {
			t.Errorf("%d model requests, want %d (the plan and four Navigator calls)", got, want)
		}
		if budget.Exceeded() != nil {
			t.Errorf("exceeded %v: want never passed", budget.Exceeded())
		}
		evs := budgetEvents(t, files)
		if len(evs) != 1 || !strings.Contains(evs[0].Message, "the cost budget (maxCostUsd $0.02) would be passed: cost $0.015 of $0.02") {
			t.Fatalf("budget events %+v", evs)
		}
		if !strings.Contains(res.Output.Summary, "maxCostUsd $0.02") {
			t.Errorf("summary %q does not name the budget", res.Output.Summary)
		}
		mcs := lines[contract.ModelCall](t, files, "model-calls.jsonl")
		if last := mcs[len(mcs)-1]; len(mcs) != 6 || !strings.Contains(last.Error, "would be passed") || last.CostUSD != nil {
			t.Errorf("%d model calls, last %+v", len(mcs), last)
		}
	})
	t.Run("unpriced", func(t *testing.T) {
		// A client whose model the budget has no price for: its first
		// call is refused (llm.ErrUnpriced), and the session ends aborted,
		// the cost budget named.
		res, err, srv, _ := limitsRun(t, llm.Limits{MaxCostUSD: 0.02, Prices: map[string]llm.Price{"another-model": {}}}, 0, 1, 1, 10)
		if err != nil || res.Status != contract.SessionAborted {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		files := verify(t, res)
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%d model requests, want none", n)
		}
		const named = "the cost budget (maxCostUsd) cannot be kept"
		if evs := budgetEvents(t, files); len(evs) != 1 || !strings.Contains(evs[0].Message, named) || !strings.Contains(evs[0].Message, "has no price") {
			t.Fatalf("budget events %+v, want one saying %q", evs, named)
		}
		if !strings.Contains(res.Output.Summary, named) {
			t.Errorf("summary %q does not name the budget", res.Output.Summary)
		}
	})
}

// TestCostBudgetUnpricedModel: a session whose model (Config.Model) the
// cost budget has no price for is refused up front, as a config error.
func TestCostBudgetUnpricedModel(t *testing.T) {
	budget, err := llm.NewBudget(llm.Limits{MaxCostUSD: 0.02, Prices: map[string]llm.Price{"another-model": {}}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := task("Wait", []string{fakeOrigin + "/orders"}, "").WithMaxCostUSD(0.02)
	if err != nil {
		t.Fatal(err)
	}
	pl, nav := stepsAgents(t, task("x", []string{fakeOrigin + "/"}, `{"steps":["navigate /orders"]}`), nil)
	cfg := fakeCfg(t, newFakeSite(), in, pl, nav)
	cfg.Budget, cfg.Model = budget, "test-model"
	_, err = session.New(cfg)
	var se *session.Error
	if !errors.As(err, &se) || se.Code != "config" || !strings.Contains(err.Error(), `no price for model "test-model"`) {
		t.Errorf("err %v, want a config error naming the unpriced model", err)
	}
}
