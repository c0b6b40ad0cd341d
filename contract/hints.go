package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The members aegis reads from a task's free-form hints (seed 003's input
// has no member for them): maxTokens and maxCostUsd (budget.go) and
// classification (classification.go), each read and set through these two.

// hint returns the raw value of the hints' member name, and whether it is
// there (an error for hints that are not a JSON object).
func (in Input) hint(name string) (json.RawMessage, bool, error) {
	if len(bytes.TrimSpace(in.Hints)) == 0 {
		return nil, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in.Hints, &m); err != nil {
		return nil, false, fmt.Errorf("contract: task hints: %w", err)
	}
	raw, ok := m[name]
	return raw, ok, nil
}

// withHint returns the task with the hints' member name set to v (removed
// when v is nil), the other hints kept.
func (in Input) withHint(name string, v json.RawMessage) (Input, error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(in.Hints)) > 0 {
		if err := json.Unmarshal(in.Hints, &m); err != nil {
			return in, fmt.Errorf("contract: task hints: %w", err)
		}
		if m == nil { // hints: null
			m = map[string]json.RawMessage{}
		}
	}
	if v == nil {
		delete(m, name)
	} else {
		m[name] = v
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
