package navigator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// ErrNoHints is returned when a task's hints lack the member an offline
// navigator needs.
var ErrNoHints = errors.New("navigator: the task's hints have no such member")

// hintMember returns the raw member name of the hints object.
func hintMember(hints json.RawMessage, name string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(hints)) == 0 {
		return nil, fmt.Errorf("%w: no hints (want hints.%s)", ErrNoHints, name)
	}
	v, err := schemas.Parse(hints)
	if err != nil {
		return nil, fmt.Errorf("navigator: hints: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("navigator: hints: not a JSON object")
	}
	m, ok := obj[name]
	if !ok {
		return nil, fmt.Errorf("%w: hints.%s is missing", ErrNoHints, name)
	}
	return json.Marshal(m)
}

// StepsFromHints parses hints.steps of a task (contract.Input.Hints): an
// array of step strings, or one string of steps, one per line, in which
// blank lines and lines starting with # are skipped (Line then counts the
// string's lines).
func StepsFromHints(hints json.RawMessage) ([]Step, error) {
	raw, err := hintMember(hints, "steps")
	if err != nil {
		return nil, err
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return ParseSteps(list)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, errors.New("navigator: hints.steps: want an array of strings or a string")
	}
	var steps []Step
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if len(steps) == MaxSteps {
			return nil, &SyntaxError{Line: i + 1, Column: 1, Msg: fmt.Sprintf("more than %d steps", MaxSteps)}
		}
		s, err := ParseStep(i+1, strings.TrimRight(l, "\r"))
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return nil, &SyntaxError{Line: 1, Column: 1, Msg: "no steps"}
	}
	return steps, nil
}

// MaxScriptActions bounds a script.
const MaxScriptActions = 1000

// ScriptFromHints parses hints.script of a task: an array of raw
// BrowserActions, each validated against the action schema and decoded
// strictly.
func ScriptFromHints(hints json.RawMessage) ([]contract.Action, error) {
	raw, err := hintMember(hints, "script")
	if err != nil {
		return nil, err
	}
	return ParseScript(raw)
}

// ParseScript parses a JSON array of BrowserActions; an error names the
// index of the offending action.
func ParseScript(raw []byte) ([]contract.Action, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("navigator: script: want a JSON array of actions")
	}
	if len(items) == 0 {
		return nil, errors.New("navigator: script: no actions")
	}
	if len(items) > MaxScriptActions {
		return nil, fmt.Errorf("navigator: script: %d actions (at most %d)", len(items), MaxScriptActions)
	}
	out := make([]contract.Action, len(items))
	for i, it := range items {
		if err := contract.Decode(schemas.KindAction, it, &out[i]); err != nil {
			return nil, fmt.Errorf("navigator: script action %d: %w", i, err)
		}
	}
	return out, nil
}
