package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
)

// Static is a Planner that always returns the same plan, with the
// revision counted up when asked to revise. It makes no model call.
type Static struct {
	plan contract.Plan
}

// NewStatic returns a Static planner for plan, which must be valid.
func NewStatic(plan contract.Plan) (*Static, error) {
	if err := Validate(plan, nil); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	return &Static{plan: plan}, nil
}

// Plan returns the plan, revision 0, or the previous revision plus one.
func (s *Static) Plan(ctx context.Context, req Request) (contract.Plan, []llm.CallRecord, error) {
	if err := ctx.Err(); err != nil {
		return contract.Plan{}, nil, err
	}
	p := s.plan
	p.Steps = append([]contract.PlanStep(nil), s.plan.Steps...)
	rev := nextRevision(req.Previous)
	p.Revision = &rev
	return p, nil, nil
}

// maxPlanSteps is the plan schema's bound on steps.
const maxPlanSteps = 50

// FromSteps makes the plan of the offline steps navigator: one plan step
// per step ("step3": click "Sign in"), or, past 50 steps, one per group of
// consecutive steps.
func FromSteps(goal string, steps []navigator.Step) (contract.Plan, error) {
	lines := make([]string, len(steps))
	ids := make([]int, len(steps))
	for i, s := range steps {
		lines[i] = s.String()
		ids[i] = s.Line
	}
	return group(goal, lines, ids, "step")
}

// FromScript makes the plan of the offline script navigator: one plan step
// per action, or, past 50 actions, one per group.
func FromScript(goal string, actions []contract.Action) (contract.Plan, error) {
	lines := make([]string, len(actions))
	ids := make([]int, len(actions))
	for i, a := range actions {
		lines[i] = fmt.Sprintf("%s %s: %s", a.Type, a.ID, a.Reason)
		ids[i] = i + 1
	}
	return group(goal, lines, ids, "action")
}

// FromHints makes the offline plan from a task's hints: hints.steps if
// present, else hints.script.
func FromHints(goal string, hints json.RawMessage) (contract.Plan, error) {
	steps, err := navigator.StepsFromHints(hints)
	if err == nil {
		return FromSteps(goal, steps)
	}
	if !errors.Is(err, navigator.ErrNoHints) {
		return contract.Plan{}, err
	}
	actions, err := navigator.ScriptFromHints(hints)
	if err != nil {
		return contract.Plan{}, err
	}
	return FromScript(goal, actions)
}

func group(goal string, lines []string, ids []int, noun string) (contract.Plan, error) {
	if len(lines) == 0 {
		return contract.Plan{}, errors.New("planner: nothing to plan")
	}
	per := (len(lines) + maxPlanSteps - 1) / maxPlanSteps
	zero := 0
	plan := contract.Plan{Goal: text.Ellipsize(goal, 3990), Revision: &zero}
	for i := 0; i < len(lines); i += per {
		j := min(i+per, len(lines))
		desc := ""
		for k := i; k < j; k++ {
			if k > i {
				desc += "; "
			}
			desc += lines[k]
		}
		id := fmt.Sprintf("%s%d", noun, ids[i])
		if j-i > 1 {
			id = fmt.Sprintf("%s%d-%d", noun, ids[i], ids[j-1])
		}
		plan.Steps = append(plan.Steps, contract.PlanStep{
			ID:              id,
			Description:     text.Ellipsize(desc, 1990),
			SuccessCriteria: fmt.Sprintf("the %s ran without error or denial", noun),
		})
	}
	if err := Validate(plan, nil); err != nil {
		return contract.Plan{}, fmt.Errorf("planner: %w", err)
	}
	return plan, nil
}
