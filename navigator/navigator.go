// Package navigator holds the Navigator: the agent that reads an
// observation of the page and answers with the next 1 to 10 browser
// actions. Three implementations share one interface:
//
//   - LLM asks a model (through package llm) and validates its answer,
//     repairing it a bounded number of times; everything from the page
//     reaches the model in data sections whose delimiters the page cannot
//     write (DataSection, Neutralize);
//   - Steps runs the plain-language steps of a task's hints.steps
//     ("click \"Sign in\"", "type \"alice\" into \"Username\""...), resolving
//     each target against the observed affordances, never guessing;
//   - Script replays the raw BrowserActions of a task's hints.script.
//
// Whatever the implementation, every response passes Validate before it
// leaves Next: it is schema-valid, its action ids are unique, and secret
// placeholders ({{secret:NAME}}) appear only in the text of type actions,
// which are then always redacted. The gate still judges every action: a
// Navigator proposes, it never decides.
package navigator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

// Navigator proposes the next actions for a goal. Implementations are not
// safe for concurrent use: a session calls Next once per step.
type Navigator interface {
	// Next returns the next batch of actions for the current observation.
	Next(ctx context.Context, req Request) (Response, error)
}

// The three navigators.
var (
	_ Navigator = (*LLM)(nil)
	_ Navigator = (*Steps)(nil)
	_ Navigator = (*Script)(nil)
)

// Request is what the Navigator is told at one step.
type Request struct {
	// Goal is the user's goal.
	Goal string
	// Plan is the Planner's current plan; nil when there is none.
	Plan *contract.Plan
	// Step numbers the Navigator calls of the session, from 1.
	Step int
	// Progress is what ran so far, oldest first (the LLM Navigator sends
	// the most recent entries only).
	Progress []Progress
	// Feedback holds the denials and errors of the previous batch: actions
	// the gate denied (with the policy's reasons) and actions that failed.
	Feedback []Feedback
	// Observation is the page now. It is page-controlled: hostile.
	Observation contract.Observation
	// Images are screenshots of the page to show the model with the
	// observation (a vision escalation the policy allowed: masked and
	// stored in the bundle, each with its bundle path; llm.NewImage).
	// The LLM navigator sends them as image parts after the observation's
	// data section, only when the observation's policy context allows
	// vision escalation; the offline navigators ignore them. Page-controlled:
	// hostile, like the observation.
	Images []llm.Image
}

// Response is the Navigator's answer.
type Response struct {
	contract.NavigatorResponse
	// Calls records the model calls made for this answer (none for the
	// offline navigators).
	Calls []llm.CallRecord
}

// Outcome says how an action of a previous batch ended.
type Outcome string

// The outcomes of an action.
const (
	OutcomeOK      Outcome = "ok"      // it ran and succeeded
	OutcomeFailed  Outcome = "failed"  // it ran and failed
	OutcomeDenied  Outcome = "denied"  // the gate denied it
	OutcomeSkipped Outcome = "skipped" // it did not run: its batch stopped before it (Progress.Detail says why)
)

// Progress is one action that the session handled.
type Progress struct {
	// Step is the Navigator call (Request.Step) that proposed the action.
	Step int `json:"step"`
	// Action is the action as proposed (placeholders, never secret values).
	Action contract.Action `json:"action"`
	// Outcome says how it ended.
	Outcome Outcome `json:"outcome"`
	// Detail says more: the URL after it, the artifact it extracted, the
	// error code and message.
	Detail string `json:"detail,omitempty"`
}

// PlanItem is one item of an offline navigator's fixed plan: a scripted
// action or a step.
type PlanItem struct {
	// Kind is what an item is: "script" or "steps".
	Kind string
	// N numbers the item, from 1 (0: none); Total is how many there are.
	N, Total int
}

// String renders the item as "script 3/5"; "" for none.
func (p PlanItem) String() string {
	if p.Total == 0 {
		return ""
	}
	return fmt.Sprintf("%s %d/%d", p.Kind, p.N, p.Total)
}

// Planned is implemented by the offline navigators, whose plan is a fixed
// list of items, so that the session can say how much of it ran.
type Planned interface {
	// Item says which item of the plan the i-th action (from 0) of the
	// last answer carries out; N is 0 for an action that carries out none
	// (the wait of an expect step).
	Item(i int) PlanItem
}

// The offline navigators say how much of their plan ran.
var (
	_ Planned = (*Steps)(nil)
	_ Planned = (*Script)(nil)
)

// Skipped counts the actions of the answer to the Navigator call step
// that the session reports as skipped (always the last ones of that
// answer: a batch stops before them).
func Skipped(progress []Progress, step int) int {
	n := 0
	for _, p := range progress {
		if p.Step == step && p.Outcome == OutcomeSkipped {
			n++
		}
	}
	return n
}

// FeedbackKind says what went wrong with an action of the last batch.
type FeedbackKind string

// The kinds of feedback.
const (
	FeedbackDenied FeedbackKind = "denied" // the gate denied the action
	FeedbackError  FeedbackKind = "error"  // the action failed when it ran
	// FeedbackEffect: the action ran, but something the page did while or
	// after it ran (a navigation, a form post, a request) was refused. The
	// offline agents do not stop on it: the action itself did what it
	// was asked; a later step that depended on the effect fails by itself.
	FeedbackEffect FeedbackKind = "effect_denied"
)

// Stops reports whether feedback means an action of the batch did not do
// what was asked (denied or failed), as opposed to an effect refused.
func Stops(fs []Feedback) bool {
	for _, f := range fs {
		if f.Kind != FeedbackEffect {
			return true
		}
	}
	return false
}

// Feedback is one denial or error of the previous batch.
type Feedback struct {
	// ActionID is the id of the action concerned.
	ActionID string `json:"actionId"`
	// Kind says whether it was denied or failed.
	Kind FeedbackKind `json:"kind"`
	// Code is the tool error code or the policy rule that denied it.
	Code string `json:"code,omitempty"`
	// Message says what happened.
	Message string `json:"message,omitempty"`
	// Reasons are the policy's reasons for a denial.
	Reasons []string `json:"reasons,omitempty"`
}

// String renders the feedback in one line.
func (f Feedback) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "action %s %s", f.ActionID, f.Kind)
	if f.Code != "" {
		fmt.Fprintf(&b, " (%s)", f.Code)
	}
	if f.Message != "" {
		b.WriteString(": ")
		b.WriteString(f.Message)
	}
	if len(f.Reasons) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(f.Reasons, "; "))
	}
	return b.String()
}

// Validate checks a Navigator response as the session must before gating
// it, and returns it ready to gate: it must be valid under the
// navigator-response schema, its action ids unique (contract.ValidateBatch),
// its secret placeholders well formed and only in the text of type actions,
// and, when set is not nil, naming known secrets. Every type action whose
// text holds a placeholder comes back with Redact set. The error is a
// *llm.ProblemsError (or a schema error), so that the LLM Navigator can
// feed it back to the model.
func Validate(resp contract.NavigatorResponse, set *secrets.Set) (contract.NavigatorResponse, error) {
	out := resp
	if resp.Actions != nil {
		out.Actions = make([]contract.Action, len(resp.Actions))
		copy(out.Actions, resp.Actions)
	}
	var problems []schemas.Problem
	add := func(ptr, reason string) { problems = append(problems, schemas.Problem{Pointer: ptr, Reason: reason}) }
	seen := map[string]int{}
	for i := range out.Actions {
		a := &out.Actions[i]
		ptr := fmt.Sprintf("/actions/%d", i)
		if j, dup := seen[a.ID]; dup {
			add(ptr+"/id", fmt.Sprintf("duplicate action id %q (also /actions/%d/id): ids must be unique within the batch", a.ID, j))
		} else {
			seen[a.ID] = i
		}
		for _, f := range []struct{ name, v string }{
			{"id", a.ID}, {"reason", a.Reason}, {"url", a.URL}, {"selector", a.Selector}, {"value", a.Value},
		} {
			if strings.Contains(f.v, secrets.Prefix) {
				add(ptr+"/"+f.name, "secret placeholders are allowed only in the text of a type action")
			}
		}
		for k, tag := range a.PolicyTags {
			if strings.Contains(tag, secrets.Prefix) {
				add(fmt.Sprintf("%s/policyTags/%d", ptr, k), "secret placeholders are allowed only in the text of a type action")
			}
		}
		if a.Type != contract.ActType {
			continue
		}
		if err := secrets.Check(a.Text); err != nil {
			add(ptr+"/text", err.Error())
			continue
		}
		names := secrets.Find(a.Text)
		if len(names) == 0 {
			continue
		}
		a.Redact = true
		if set != nil {
			for _, n := range names {
				if !set.Has(n) {
					add(ptr+"/text", fmt.Sprintf("unknown secret %s: the known secrets are %s", n, knownNames(set)))
				}
			}
		}
	}
	if len(out.Actions) > contract.MaxBatchActions {
		add("/actions", fmt.Sprintf("%d actions: at most %d per answer", len(out.Actions), contract.MaxBatchActions))
	}
	if len(problems) > 0 {
		return resp, &llm.ProblemsError{Problems: problems}
	}
	if _, err := contract.Encode(schemas.KindNavigatorResponse, out); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			return resp, ve
		}
		return resp, err
	}
	if err := contract.ValidateBatch(out.Actions); err != nil {
		return resp, err
	}
	return out, nil
}

func knownNames(set *secrets.Set) string {
	n := set.Names()
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}
