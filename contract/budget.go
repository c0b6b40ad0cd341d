package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The model budgets of a task. Seed 003's input has no member for them and
// its hints are free-form, so they live in the hints, where the protocol
// allows extra members: hints.maxTokens bounds the tokens (prompt and
// completion) of all the session's model calls, the Planner's and the
// Navigator's, and hints.maxCostUsd bounds what they cost in US dollars
// (priced from the model registry). The task is recorded in the manifest,
// so the bundle says which budgets a session ran under.

// HintMaxTokens is the hint member that holds a task's token budget.
const HintMaxTokens = "maxTokens"

// MaxTaskTokens is the largest token budget a task may set.
const MaxTaskTokens = 1_000_000_000

// MaxTokens returns the task's token budget, hints.maxTokens: 0 when the
// hints do not name one, else an integer from 1 to MaxTaskTokens (an error
// for any other value, or for hints that are not a JSON object).
func (in Input) MaxTokens() (int, error) {
	raw, ok, err := in.hint(HintMaxTokens)
	if err != nil || !ok {
		return 0, err
	}
	v, isNum := number(raw)
	if !isNum || v != float64(int64(v)) || v < 1 || v > MaxTaskTokens {
		return 0, fmt.Errorf("contract: hints.%s is %s: want an integer from 1 to %d", HintMaxTokens, clip(raw), MaxTaskTokens)
	}
	return int(v), nil
}

// number reads a hint's raw value as a JSON number.
func number(raw json.RawMessage) (float64, bool) {
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	_ = d.Decode(&x) // raw is one JSON value: json.Unmarshal checked it
	n, ok := x.(json.Number)
	v, err := n.Float64()
	return v, ok && err == nil
}

// HintMaxCostUSD is the hint member that holds a task's cost budget.
const HintMaxCostUSD = "maxCostUsd"

// MaxTaskCostUSD is the largest cost budget a task may set, in US dollars.
const MaxTaskCostUSD = 1_000_000

// MaxCostUSD returns the task's cost budget in US dollars,
// hints.maxCostUsd: 0 when the hints do not name one, else a number
// greater than 0 and at most MaxTaskCostUSD (an error for any other
// value, or for hints that are not a JSON object).
func (in Input) MaxCostUSD() (float64, error) {
	raw, ok, err := in.hint(HintMaxCostUSD)
	if err != nil || !ok {
		return 0, err
	}
	v, isNum := number(raw)
	if !isNum || !(v > 0) || v > MaxTaskCostUSD {
		return 0, fmt.Errorf("contract: hints.%s is %s: want a number greater than 0 and at most %d (US dollars)", HintMaxCostUSD, clip(raw), MaxTaskCostUSD)
	}
	return v, nil
}

// ModelPrices are a model's prices in US dollars per million tokens, as
// the model registry lists them (0 for a local model) and the manifest
// records them (versions.modelPrices).
type ModelPrices struct {
	// InputPerMTok is USD per 1,000,000 prompt tokens, 0 to
	// MaxPricePerMTokUSD.
	InputPerMTok float64 `json:"inputPerMTokUsd"`
	// OutputPerMTok is USD per 1,000,000 completion tokens, 0 to
	// MaxPricePerMTokUSD.
	OutputPerMTok float64 `json:"outputPerMTokUsd"`
}

// MaxPricePerMTokUSD bounds a price per million tokens (the schemas'
// maximum).
const MaxPricePerMTokUSD = 100_000

// Cost is what a call of prompt and completion tokens costs at p, in US
// dollars (negative counts count nothing).
func (p ModelPrices) Cost(prompt, completion int) float64 {
	return (float64(max(prompt, 0))*p.InputPerMTok + float64(max(completion, 0))*p.OutputPerMTok) / 1e6
}

// WithMaxCostUSD returns the task with hints.maxCostUsd set to usd
// (removed when usd is 0), the other hints kept. usd must be 0 to
// MaxTaskCostUSD.
func (in Input) WithMaxCostUSD(usd float64) (Input, error) {
	if !(usd >= 0) || usd > MaxTaskCostUSD {
		return in, fmt.Errorf("contract: cost budget %v: want a number greater than 0 and at most %d (US dollars)", usd, MaxTaskCostUSD)
	}
	var v json.RawMessage
	if usd > 0 {
		v = json.RawMessage(strconv.FormatFloat(usd, 'f', -1, 64))
	}
	return in.withHint(HintMaxCostUSD, v)
}

// WithMaxTokens returns the task with hints.maxTokens set to n (removed
// when n is 0), the other hints kept. n must be 0 to MaxTaskTokens.
func (in Input) WithMaxTokens(n int) (Input, error) {
	if n < 0 || n > MaxTaskTokens {
		return in, fmt.Errorf("contract: token budget %d: want 1 to %d", n, MaxTaskTokens)
	}
	var v json.RawMessage
	if n > 0 {
		v = json.RawMessage(strconv.Itoa(n))
	}
	return in.withHint(HintMaxTokens, v)
}

// CallTokens is what one model call counts against a token budget: the
// total the endpoint reported, or the prompt and completion tokens
// together when that is more (an endpoint that reports no total, or a
// wrong one). llm.Budget charges it, and reports add it up from the
// model-call records (ModelCall.Tokens). A negative field counts as 0 (it
// cannot lower the count), and the sum saturates at math.MaxInt.
func CallTokens(prompt, completion, total int) int {
	prompt, completion = max(prompt, 0), max(completion, 0)
	sum := math.MaxInt
	if prompt <= math.MaxInt-completion {
		sum = prompt + completion
	}
	return max(total, sum, 0)
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
