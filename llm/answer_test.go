package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/schemas"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"white space and BOM", "\ufeff  {\"a\": 1}\n", `{"a":1}`},
		{"code fence", "```json\n{\"a\": 1}\n```", `{"a":1}`},
		{"bare fence", "```\n{\"a\": 1}\n```", `{"a":1}`},
		{"think block", "<think>the user wants...</think>\n{\"a\":1}", `{"a":1}`},
		{"prose around", "Sure! Here it is: {\"a\":1} Hope it helps.", `{"a":1}`},
		{"nulls dropped", `{"a":null,"b":{"c":null,"d":[null,1]}}`, `{"b":{"d":[null,1]}}`},
		{"malformed kept", `{"a":`, `{"a":`},
		{"duplicate keys kept for the validator", `{"a":1,"a":2}`, `{"a":1,"a":2}`},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		if got := string(llm.Normalize(tc.in)); got != tc.want {
			t.Errorf("%s: Normalize(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// planCheck decodes a plan strictly.
func planCheck(got *contract.Plan) func([]byte) error {
	return func(answer []byte) error {
		return contract.Decode(schemas.KindPlan, answer, got)
	}
}

func TestAskRepairs(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Answer(`{"goal": "sign in", "steps": [`),          // malformed
		llmtest.Answer(`{"goal":"sign in","steps":[],"extra":1}`), // schema-invalid
		llmtest.Answer(validPlan),
	)
	c, _ := newClient(t, srv)
	var got contract.Plan
	calls, err := llm.Ask(context.Background(), c, planRequest(t), "plan", 2, planCheck(&got))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 || got.Steps[0].ID != "s1" {
		t.Fatalf("calls = %d, plan = %+v", len(calls), got)
	}
	reqs := srv.Requests()
	if n := len(reqs[1].Messages); n != 4 {
		t.Fatalf("repair request has %d messages, want system, user, assistant, user", n)
	}
	if reqs[1].Messages[2].Role != "assistant" || reqs[1].Messages[2].Content != `{"goal": "sign in", "steps": [` {
		t.Errorf("the invalid answer is not fed back: %+v", reqs[1].Messages[2])
	}
	if last := reqs[1].Last(); !strings.Contains(last, "malformed JSON") {
		t.Errorf("repair prompt lacks the syntax problem: %q", last)
	}
	last := reqs[2].Last()
	for _, want := range []string{"/steps: minimum 1 items required", "/: additionalProperties 'extra' not allowed"} {
		if !strings.Contains(last, want) {
			t.Errorf("repair prompt lacks %q: %q", want, last)
		}
	}
	// Each repair replaces the previous one: the prompt does not grow.
	if n := len(reqs[2].Messages); n != 4 {
		t.Errorf("second repair has %d messages, want 4", n)
	}
	for i, c := range calls {
		if c.PromptHash == "" || c.Attempts != 1 || c.TotalTokens != 150 || c.Purpose != llm.PurposePlan {
			t.Errorf("call %d record = %+v", i, c)
		}
	}
	if calls[0].PromptHash == calls[1].PromptHash {
		t.Error("the repair call has the same prompt hash")
	}
}

func TestAskGivesUp(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Always(llmtest.Answer(`{"goal":"","steps":[]}`))
	c, _ := newClient(t, srv)
	var got contract.Plan
	calls, err := llm.Ask(context.Background(), c, planRequest(t), "plan", 2, planCheck(&got))
	var ie *llm.InvalidAnswerError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *InvalidAnswerError", err)
	}
	if ie.Attempts != 3 || ie.Kind != "plan" || len(ie.Problems) == 0 || len(calls) != 3 || len(srv.Requests()) != 3 {
		t.Errorf("error = %+v, calls = %d", ie, len(calls))
	}
	if !strings.Contains(err.Error(), "no valid plan in 3 answers") || !strings.Contains(err.Error(), "/goal") {
		t.Errorf("error message %q", err)
	}
}

func TestAskCallError(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(`nope`), llmtest.Status(400, "context length exceeded"))
	c, _ := newClient(t, srv)
	var got contract.Plan
	calls, err := llm.Ask(context.Background(), c, planRequest(t), "plan", 2, planCheck(&got))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 400 {
		t.Fatalf("err = %v, want the APIError", err)
	}
	if len(calls) != 2 || calls[1].Error == "" || calls[0].Error != "" {
		t.Errorf("calls = %+v", calls)
	}
}

func TestAskCutOff(t *testing.T) {
	srv := llmtest.NewServer(t,
		func(w http.ResponseWriter, r *llmtest.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"goal\":\"x\","},"finish_reason":"length"}]}`))
		},
		llmtest.Answer(validPlan),
	)
	c, _ := newClient(t, srv)
	var got contract.Plan
	if _, err := llm.Ask(context.Background(), c, planRequest(t), "plan", 1, planCheck(&got)); err != nil {
		t.Fatal(err)
	}
	if last := srv.Requests()[1].Last(); !strings.Contains(last, "cut off at the token limit") {
		t.Errorf("repair prompt does not mention the cut-off: %q", last)
	}
}

func TestRepairs(t *testing.T) {
	for _, tt := range []struct{ option, want int }{{0, llm.DefaultRepairs}, {-1, 0}, {-7, 0}, {1, 1}, {5, 5}} {
		if got := llm.Repairs(tt.option); got != tt.want {
			t.Errorf("Repairs(%d) = %d, want %d", tt.option, got, tt.want)
		}
	}
}
