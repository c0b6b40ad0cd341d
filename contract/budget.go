package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The model budgets of a task. Seed 003's input has no member for them and
// its hints are free-form, so they live in the hints, where the protocol
// allows extra members: hints.maxTokens bounds the tokens (prompt and
// completion) of all the session's model calls, the Planner's and the
// Navigator's. The task is recorded in the manifest, so the bundle says
// which budget a session ran under.

// HintMaxTokens is the hint member that holds a task's token budget.
const HintMaxTokens = "maxTokens"

// MaxTaskTokens is the largest token budget a task may set.
const MaxTaskTokens = 1_000_000_000

// MaxTokens returns the task's token budget, hints.maxTokens: 0 when the
// hints do not name one, else an integer from 1 to MaxTaskTokens (an error
// for any other value, or for hints that are not a JSON object).
func (in Input) MaxTokens() (int, error) {
	if len(bytes.TrimSpace(in.Hints)) == 0 {
		return 0, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in.Hints, &m); err != nil {
		return 0, fmt.Errorf("contract: task hints: %w", err)
	}
	raw, ok := m[HintMaxTokens]
	if !ok {
		return 0, nil
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	_ = d.Decode(&x) // raw is one JSON value: json.Unmarshal checked it
	n, ok := x.(json.Number)
	v, err := n.Float64()
	if !ok || err != nil || v != float64(int64(v)) || v < 1 || v > MaxTaskTokens {
		return 0, fmt.Errorf("contract: hints.%s is %s: want an integer from 1 to %d", HintMaxTokens, clip(raw), MaxTaskTokens)
	}
	return int(v), nil
}

// WithMaxTokens returns the task with hints.maxTokens set to n (removed
// when n is 0), the other hints kept. n must be 0 to MaxTaskTokens.
func (in Input) WithMaxTokens(n int) (Input, error) {
	if n < 0 || n > MaxTaskTokens {
		return in, fmt.Errorf("contract: token budget %d: want 1 to %d", n, MaxTaskTokens)
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(in.Hints)) > 0 {
		if err := json.Unmarshal(in.Hints, &m); err != nil {
			return in, fmt.Errorf("contract: task hints: %w", err)
		}
		if m == nil { // hints: null
			m = map[string]json.RawMessage{}
		}
	}
	if n == 0 {
		delete(m, HintMaxTokens)
	} else {
		m[HintMaxTokens] = json.RawMessage(fmt.Sprint(n))
	}
	out := in
	out.Hints = nil
	if len(m) > 0 {
		b, err := json.Marshal(m)
		if err != nil {
			return in, fmt.Errorf("contract: task hints: %w", err)
		}
		out.Hints = b
	}
	return out, nil
}

// CallTokens is what one model call counts against a token budget: the
// total the endpoint reported, or the prompt and completion tokens
// together when that is more (an endpoint that reports no total, or a
// wrong one). llm.Budget charges it, and reports add it up from the
// model-call records (ModelCall.Tokens).
func CallTokens(prompt, completion, total int) int {
	return max(total, prompt+completion, 0)
}

// Tokens is what the call counts against a token budget (CallTokens).
func (mc ModelCall) Tokens() int {
	return CallTokens(mc.PromptTokens, mc.CompletionTokens, mc.TotalTokens)
}

// clip bounds a hint's raw value for an error message.
func clip(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
}
