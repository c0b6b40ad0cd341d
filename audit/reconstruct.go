package audit

import (
	"errors"
	"fmt"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
)

// DefaultStepBudget is the step budget assumed for a bundle that records
// none (no observation, no task.maxActions): the session's default action
// budget.
const DefaultStepBudget = 50

// ErrNotRecorded is wrapped by Reconstruct's error for a decision whose
// action never ran: the bundle keeps only its id and hash, so it cannot be
// re-evaluated.
var ErrNotRecorded = errors.New("the action did not run, and the bundle does not keep the content of an action that did not run")

// ErrNoTarget is wrapped by Reconstruct's error for a decision about an
// action on an element (click, type, select, an extract of an element)
// whose record holds no target: the bundle predates target recording, so
// the element the gate judged is not known and the decision cannot be
// judged again.
var ErrNoTarget = errors.New("the bundle predates target recording: the decision does not hold the element the gate judged, so it cannot be judged again")

// ErrSecretText is wrapped by Reconstruct's error for a type action the
// policy judged as typing a secret (a decision with a risk or deny reason
// of the policy's secret rules, secretRules): the bundle keeps neither the
// placeholder it typed (the text is redacted) nor the session's secret
// bindings, so the judgement cannot be recomputed.
var ErrSecretText = errors.New("the action typed a secret: the bundle keeps neither its placeholder nor where the session bound it, so the policy's judgement of where the secret may go cannot be recomputed")

// secretRules are the policy's rules about secret placeholders (issue 16).
var secretRules = map[string]bool{"secret_typed": true, "secret_misdirected": true, "secret_undeclared": true}

// judgedSecret reports whether d names one of secretRules.
func judgedSecret(d contract.DecisionRecord) bool {
	for _, rs := range [][]contract.Reason{d.RiskReasons, d.Reasons} {
		for _, r := range rs {
			if secretRules[r.Rule] {
				return true
			}
		}
	}
	return false
}

// Reconstruction is the gate request of one recorded decision, rebuilt
// from the bundle.
type Reconstruction struct {
	// Request is what the gate is asked again. Its ApprovalID is empty: an
	// approval is never re-granted by a reconstruction.
	Request gate.Request
	// Exact is true when the action hash of Request equals the recorded
	// one: the action, active URL, session id and target are exactly those
	// the gate saw.
	Exact bool
	// Gaps says what could not be reconstructed exactly, in words.
	Gaps []string
}

// Reconstruct rebuilds the gate request of decision i of step s from what
// the record holds: the decision's target, session id, step index,
// evaluation time, permission level, decision log and exceptions, the
// executed action, and the rest from the bundle (see the package
// documentation); what is missing is said in Gaps. A decision whose action
// never ran returns an error wrapping ErrNotRecorded; one that needs a
// target its record does not hold (an older bundle), ErrNoTarget.
func (b *Bundle) Reconstruct(s *Step, i int) (Reconstruction, error) {
	if i < 0 || i >= len(s.Decisions) {
		return Reconstruction{}, fmt.Errorf("audit: step %d has no decision %d", s.Index, i)
	}
	d := s.Decisions[i]
	if s.Action == nil {
		return Reconstruction{}, fmt.Errorf("audit: step %d (action %s): %w", s.Index, d.ActionID, ErrNotRecorded)
	}
	if s.Action.NeedsTarget() && d.Target == nil {
		return Reconstruction{}, fmt.Errorf("audit: step %d (action %s): %w", s.Index, d.ActionID, ErrNoTarget)
	}
	if redacted(*s.Action) && judgedSecret(d) {
		return Reconstruction{}, fmt.Errorf("audit: step %d (action %s): %w", s.Index, d.ActionID, ErrSecretText)
	}
	now, err := time.Parse(time.RFC3339Nano, d.EvaluatedAt)
	if err != nil {
		return Reconstruction{}, fmt.Errorf("audit: step %d: evaluatedAt %q: %w", s.Index, d.EvaluatedAt, err)
	}
	sid := d.SessionID
	if sid == "" {
		sid = b.Manifest.SessionID
	}
	req := gate.Request{
		SessionID: sid,
		StepIndex: d.StepIndex,
		Action:    *s.Action,
		ActiveURL: s.ActiveURL,
		Session: gate.Session{
			AllowedOrigins: append([]string(nil), b.Manifest.Task.URLs...),
			Permission:     d.Permission,
			MaxStepBudget:  b.stepBudget(s),
			DecisionLogID:  d.DecisionLogID,
			Classification: b.classification(),
		},
		Policy: gate.SessionPolicy{GovernedExceptions: exceptions(d)},
		Now:    now,
	}
	if d.Target != nil {
		t := *d.Target
		req.Target = &t
	}
	rec := Reconstruction{Request: req}
	if d.Permission == "" {
		rec.Gaps = append(rec.Gaps, "the decision names no permission level; the policy's default preset applies")
	}
	if s.Action.Type == contract.ActType && s.Action.Redact {
		rec.Gaps = append(rec.Gaps, "the typed text is redacted in the bundle; the action hash cannot be checked")
	}
	rec.Exact = actionHash(rec.Request) == d.ActionHash
	if !rec.Exact && len(rec.Gaps) == 0 {
		rec.Gaps = append(rec.Gaps, "the action hash does not recompute: the active URL differs from the one the gate saw, or a secret value was masked in the recorded action or target")
	}
	return rec, nil
}

// exceptions are the governed exceptions a decision considered, as the
// session gave them to the gate.
func exceptions(d contract.DecisionRecord) []gate.Exception {
	var out []gate.Exception
	for _, e := range d.Exceptions {
		out = append(out, gate.Exception{
			ID: e.ID, Rule: e.Rule, Reason: e.Reason, ExpiresAt: e.ExpiresAt, DecisionLogID: e.DecisionLogID,
		})
	}
	return out
}

// stepBudget is the session's step budget: the policyContext of the
// observation before the step (any observation otherwise), else the task's
// maxActions, else DefaultStepBudget.
func (b *Bundle) stepBudget(s *Step) int {
	if s != nil && s.Before != nil && s.Before.Observation.State.PolicyContext.MaxStepBudget > 0 {
		return s.Before.Observation.State.PolicyContext.MaxStepBudget
	}
	if pc, ok := b.firstContext(func(pc contract.PolicyContext) bool { return pc.MaxStepBudget > 0 }); ok {
		return pc.MaxStepBudget
	}
	if m := b.Manifest.Task.MaxActions; m != nil && *m > 0 {
		return *m
	}
	return DefaultStepBudget
}

// classification is the session's data classification as its
// observations recorded it (policyContext.classification: the session
// fixes it at its start), "" when none did (the gate then judges the
// session restricted).
func (b *Bundle) classification() contract.Classification {
	pc, _ := b.firstContext(func(pc contract.PolicyContext) bool { return pc.Classification != "" })
	return pc.Classification
}

// firstContext returns the policyContext of the first recorded
// observation (the initial ones, then each step's, in order) for which
// has holds, and whether there is one.
func (b *Bundle) firstContext(has func(contract.PolicyContext) bool) (contract.PolicyContext, bool) {
	for _, o := range b.Initial {
		if pc := o.Observation.State.PolicyContext; has(pc) {
			return pc, true
		}
	}
	for _, st := range b.Steps {
		for _, o := range st.After {
			if pc := o.Observation.State.PolicyContext; has(pc) {
				return pc, true
			}
		}
	}
	return contract.PolicyContext{}, false
}

// affordance returns the affordance of obs with selector sel, nil when
// none.
func affordance(obs *contract.Observation, sel string) *contract.Affordance {
	if obs == nil || sel == "" {
		return nil
	}
	for i := range obs.Affordances {
		if obs.Affordances[i].Selector == sel {
			return &obs.Affordances[i]
		}
	}
	return nil
}

// redacted reports whether a is a type action whose text the bundle masks.
func redacted(a contract.Action) bool {
	return a.Type == contract.ActType && (a.Redact || a.Text == evidence.RedactedText)
}

// actionHash is the plain action hash of req (gate.Gate.ActionHash): that
// of an action without redact true, which anyone can recompute. A redacted
// action's hash is keyed by the gate that judged it and cannot be
// recomputed; callers never check one.
func actionHash(req gate.Request) string {
	var plain *gate.Gate
	return plain.ActionHash(req)
}
