package audit

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
)

// The verdicts a decision is compared on.
const (
	// VerdictAllow: the action may run without a person.
	VerdictAllow = "allow"
	// VerdictApproval: the action may run once a person approves it.
	VerdictApproval = "approval"
	// VerdictDeny: the action may not run.
	VerdictDeny = "deny"
)

// The kinds of a Change.
const (
	// ChangeVerdict: the verdict changes (allow, approval, deny).
	ChangeVerdict = "verdict"
	// ChangeReasons: denied under both policies, for other rules.
	ChangeReasons = "reasons"
)

// DiffOptions configure DiffPolicy.
type DiffOptions struct {
	// PolicyPath is the policy to judge by (a directory or an OPA bundle
	// .tar.gz); "" means the embedded policy.
	PolicyPath string
	// Preset and Permission, when set, replace the permission level the
	// recorded decisions applied.
	Preset, Permission string
	// AllowUnsealed reads an unsealed bundle (its intact entries).
	AllowUnsealed bool
	// PubKey, when set, is the key the bundle's seal must be signed with.
	PubKey ed25519.PublicKey
}

// Verdict is what a policy decided about an action, as compared.
type Verdict struct {
	// Verdict is allow, approval or deny.
	Verdict string `json:"verdict"`
	// Result is the decision's result (allowed, paused, approved, denied).
	Result contract.DecisionResult `json:"result"`
	// Risk is the risk tag.
	Risk contract.RiskTag `json:"risk"`
	// Reasons say why: the deny rules for a denial, the approval and risk
	// reasons for an approval.
	Reasons []contract.Reason `json:"reasons,omitempty"`
}

// Change is one recorded decision the other policy would decide otherwise.
type Change struct {
	// Step is the step (from 1) of the decision.
	Step int `json:"step"`
	// DecisionID, ActionID and ActionName name the recorded decision and
	// its action.
	DecisionID string `json:"decisionId"`
	ActionID   string `json:"actionId"`
	ActionName string `json:"actionName"`
	// Kind is verdict or reasons.
	Kind string `json:"kind"`
	// Recorded is the recorded verdict; Now the other policy's.
	Recorded Verdict `json:"recorded"`
	Now      Verdict `json:"now"`
	// Exact is true when the gate's inputs were reconstructed exactly
	// (the action hash recomputes); Gaps says what was not.
	Exact bool     `json:"exact"`
	Gaps  []string `json:"gaps,omitempty"`
	// Effect, when set, makes the change one about an effect of the
	// action (a request the page made that the gate judged), not the
	// action itself.
	Effect *contract.Effect `json:"effect,omitempty"`
}

// Unevaluated is a recorded decision that could not be re-evaluated.
type Unevaluated struct {
	// Step, DecisionID and ActionID name it.
	Step       int    `json:"step"`
	DecisionID string `json:"decisionId"`
	ActionID   string `json:"actionId"`
	ActionName string `json:"actionName"`
	// Recorded is the recorded verdict.
	Recorded Verdict `json:"recorded"`
	// Why says why it could not be re-evaluated.
	Why string `json:"why"`
}

// DiffReport is the outcome of DiffPolicy.
type DiffReport struct {
	// Bundle is the bundle; SessionID its session.
	Bundle    string `json:"bundle"`
	SessionID string `json:"sessionId"`
	// RecordedPolicy is the version of the policy that judged the session;
	// Policy that of the policy it was judged again by.
	RecordedPolicy string `json:"recordedPolicy"`
	Policy         string `json:"policy"`
	// Evaluated counts the decisions judged again; Exact those whose
	// inputs were reconstructed exactly.
	Evaluated int `json:"evaluated"`
	Exact     int `json:"exact"`
	// Changes are the decisions that would change, in order.
	Changes []Change `json:"changes"`
	// Unevaluated are the decisions that could not be judged again.
	Unevaluated []Unevaluated `json:"unevaluated,omitempty"`
}

// PolicyDiff re-evaluates every recorded decision of the bundle at
// bundlePath under the policy at policyPath ("" for the embedded one) and
// returns those that would change, with both verdicts and their reasons.
// See DiffPolicy for the details and for what cannot be re-evaluated.
func PolicyDiff(ctx context.Context, bundlePath, policyPath string) ([]Change, error) {
	r, err := DiffPolicy(ctx, bundlePath, DiffOptions{PolicyPath: policyPath})
	if err != nil {
		return nil, err
	}
	return r.Changes, nil
}

// DiffPolicy judges every step of the bundle again under another policy,
// as the gate judged it then: the gate request is rebuilt from the record
// (Bundle.Reconstruct: the action, the target element the gate judged, the
// session facts), the evaluation time is the recorded one, and no approval
// is presented. The verdicts compared are the gate's first answer about
// each proposal: allow, approval (the gate paused it; the recording then
// asked a person) or deny; two denials for different rules are a change
// too. A step whose action never ran cannot be judged again (the bundle
// keeps only its hash), nor one on an element in a bundle that predates
// target recording, nor a secret typed (ErrSecretText): they are listed in
// Unevaluated, saying why. The
// effects the gate judged (requests the page made, see Step.Effects) are
// judged again too, after the steps, each as the action's request with the
// effect; a change about one names it (Change.Effect). A bundle that does
// not verify is refused.
func DiffPolicy(ctx context.Context, bundlePath string, opts DiffOptions) (*DiffReport, error) {
	b, err := Open(ctx, bundlePath, OpenOptions{AllowUnsealed: opts.AllowUnsealed, PubKey: opts.PubKey})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	g, err := gate.New(ctx, gate.Options{PolicyPath: opts.PolicyPath})
	if err != nil {
		return nil, fmt.Errorf("audit: policy diff: %w", err)
	}
	r := &DiffReport{
		Bundle: bundlePath, SessionID: b.Manifest.SessionID,
		RecordedPolicy: b.Manifest.Versions.Policy, Policy: g.PolicyVersion(), Changes: []Change{},
	}
	for _, s := range b.Steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("audit: policy diff: %w", err)
		}
		if len(s.Decisions) == 0 {
			continue
		}
		first := s.Decisions[0]
		recorded := recordedVerdict(s)
		rec, err := b.Reconstruct(s, 0)
		if err != nil {
			var why string
			switch {
			case errors.Is(err, ErrNotRecorded):
				why = ErrNotRecorded.Error() + " (action hash " + first.ActionHash + ")"
			case errors.Is(err, ErrNoTarget):
				why = ErrNoTarget.Error()
			case errors.Is(err, ErrSecretText):
				why = ErrSecretText.Error()
			default:
				return nil, err
			}
			r.Unevaluated = append(r.Unevaluated, Unevaluated{
				Step: s.Index, DecisionID: first.DecisionID, ActionID: first.ActionID, ActionName: first.ActionName,
				Recorded: recorded, Why: why,
			})
			continue
		}
		if opts.Preset != "" || opts.Permission != "" {
			rec.Request.Session.Permission, rec.Request.Session.Preset = opts.Permission, opts.Preset
		}
		d := g.Decide(ctx, rec.Request)
		now := verdictOf(d.DecisionRecord)
		r.Evaluated++
		if rec.Exact {
			r.Exact++
		}
		kind := changeKind(recorded, now)
		if kind == "" {
			continue
		}
		r.Changes = append(r.Changes, Change{
			Step: s.Index, DecisionID: first.DecisionID, ActionID: first.ActionID, ActionName: first.ActionName,
			Kind: kind, Recorded: recorded, Now: now, Exact: rec.Exact, Gaps: rec.Gaps,
		})
	}
	if err := diffEffects(ctx, b, g, opts, r); err != nil {
		return nil, err
	}
	return r, nil
}

// diffEffects judges again the effects the gate judged (not those the
// browser boundary refused before any policy saw them), each as the gate
// was asked: the action's reconstructed request with the effect, at the
// effect's recorded time. The action's reconstruction says how exact it is.
func diffEffects(ctx context.Context, b *Bundle, g *gate.Gate, opts DiffOptions, r *DiffReport) error {
	for _, s := range b.Steps {
		if len(s.Effects) == 0 || len(s.Decisions) == 0 {
			continue
		}
		rec, err := b.Reconstruct(s, 0)
		for _, e := range s.Effects {
			first := e.Decisions[0]
			if e.Effect.Refused != "" {
				continue
			}
			recorded := verdictOf(first)
			if first.Result == contract.ResultApproved {
				recorded.Verdict = VerdictApproval
			}
			if err != nil {
				r.Unevaluated = append(r.Unevaluated, Unevaluated{
					Step: s.Index, DecisionID: first.DecisionID, ActionID: first.ActionID, ActionName: first.ActionName,
					Recorded: recorded, Why: "an effect of an action that cannot be judged again: " + err.Error(),
				})
				continue
			}
			req := rec.Request
			eff := e.Effect
			req.Effect = &eff
			if now, perr := time.Parse(time.RFC3339Nano, first.EvaluatedAt); perr == nil {
				req.Now = now
			}
			if opts.Preset != "" || opts.Permission != "" {
				req.Session.Permission, req.Session.Preset = opts.Permission, opts.Preset
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("audit: policy diff: %w", err)
			}
			now := verdictOf(g.Decide(ctx, req).DecisionRecord)
			r.Evaluated++
			if rec.Exact {
				r.Exact++
			}
			if kind := changeKind(recorded, now); kind != "" {
				r.Changes = append(r.Changes, Change{
					Step: s.Index, DecisionID: first.DecisionID, ActionID: first.ActionID, ActionName: first.ActionName,
					Kind: kind, Recorded: recorded, Now: now, Exact: rec.Exact, Gaps: rec.Gaps, Effect: &eff,
				})
			}
		}
	}
	return nil
}

// changeKind says how the verdict now differs from the recorded one: ""
// when it does not, ChangeVerdict, or ChangeReasons for a denial by other
// rules.
func changeKind(recorded, now Verdict) string {
	switch {
	case now.Verdict != recorded.Verdict:
		return ChangeVerdict
	case now.Verdict == VerdictDeny && !slices.Equal(rules(now.Reasons), rules(recorded.Reasons)):
		return ChangeReasons
	}
	return ""
}

// recordedVerdict is the gate's first answer about the step's proposal;
// a pause is an approval verdict whatever the person answered.
func recordedVerdict(s *Step) Verdict {
	first := s.Decisions[0]
	v := verdictOf(first)
	if first.Result == contract.ResultApproved {
		// Presented with an approval at once (not by aegis' session, but
		// possible): the policy asked for one.
		v.Verdict = VerdictApproval
	}
	return v
}

func verdictOf(d contract.DecisionRecord) Verdict {
	v := Verdict{Result: d.Result, Risk: d.Risk}
	switch d.Result {
	case contract.ResultAllowed:
		v.Verdict = VerdictAllow
	case contract.ResultPaused, contract.ResultApproved:
		v.Verdict = VerdictApproval
		v.Reasons = append(append([]contract.Reason(nil), d.ApprovalReasons...), d.RiskReasons...)
	default:
		v.Verdict = VerdictDeny
		v.Reasons = d.Reasons
	}
	return v
}

func rules(rs []contract.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Rule)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
