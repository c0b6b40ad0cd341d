package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
)

// step replays one step.
func (rp *replayer) step(ctx context.Context, s *Step) (StepResult, error) {
	final := s.Final()
	res := StepResult{Step: s.Index, ActionID: final.ActionID, Recorded: final.Result, Status: StepSame}
	res.ActionType = strings.TrimPrefix(final.ActionName, "browser.")
	if !s.Executed() {
		res.Status, res.RecordedDenial, res.Reasons = StepBlocked, true, final.Reasons
		if len(res.Reasons) == 0 {
			res.Reasons = []contract.Reason{{Rule: "not_executed", Message: "the record has no executed action for this decision"}}
		}
		// Whatever was observed after it is compared all the same.
		for _, o := range s.After {
			d, err := rp.observe(ctx, o)
			if err != nil {
				return res, err
			}
			res.Differences = append(res.Differences, d...)
		}
		return res, nil
	}
	rec := *s.Action
	res.ActionID, res.ActionType = rec.ID, string(rec.Type)
	a := rec
	if a.Type == contract.ActNavigate {
		a.URL = rp.opts.Origins.URL(a.URL)
	}
	if redacted(rec) {
		res.Notes = append(res.Notes, "the typed text is redacted in the bundle: the replay typed the placeholder "+evidence.RedactedText)
	}

	// The target, on the replayed page.
	var target *contract.Element
	if a.NeedsTarget() {
		el, err := rp.drv.Describe(ctx, a.Selector)
		if err != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("audit: replay: %w", ctx.Err())
			}
			res.Status = StepDiverged
			res.Differences = append(res.Differences, Difference{
				Field: FieldTarget, Observation: -1,
				Want: describeRecordedTarget(s), Got: "no element: " + errText(err),
			})
			res.Notes = append(res.Notes, "the action was not executed: its target is not on the replayed page")
			return res, nil
		}
		target = &el
		if d, ok := rp.compareTarget(s, target); !ok {
			res.Differences = append(res.Differences, d)
		}
		if recordedTarget(s) == nil {
			res.Notes = append(res.Notes, "the bundle predates target recording: the target was compared by the recorded action hash, or else by the affordance")
		}
	}

	// The gate, again.
	perm := final.Permission
	if rp.opts.Preset != "" || rp.opts.Permission != "" {
		perm = rp.opts.Permission
	}
	req := gate.Request{
		SessionID: rp.sid, StepIndex: final.StepIndex, Action: a, Target: target, ActiveURL: rp.cur,
		Session: gate.Session{
			AllowedOrigins: rp.mappedURLs(), Permission: perm, Preset: rp.opts.Preset,
			MaxStepBudget: rp.budget, DecisionLogID: final.DecisionLogID, Classification: rp.class,
		},
		Policy: gate.SessionPolicy{GovernedExceptions: exceptions(final)},
		Now:    rp.clock(),
	}
	d := rp.g.Decide(ctx, req)
	if err := rp.w.Decision(d.DecisionRecord); err != nil {
		return res, fmt.Errorf("audit: replay: %w", err)
	}
	if d.Result == contract.ResultPaused {
		var err error
		d, res.Approver, err = rp.approve(ctx, s, req, d)
		if err != nil {
			return res, err
		}
	}
	res.Decision = d.Result
	if !d.Allow {
		res.Status, res.Reasons = StepBlocked, d.Reasons
		return res, nil
	}

	// Run it.
	out, actErr := rp.drv.Act(ctx, a)
	if ctx.Err() != nil {
		return res, fmt.Errorf("audit: replay: %w", ctx.Err())
	}
	out.RiskTag = d.Risk
	if out.ActionID == "" {
		// A driver fills the result in always; be safe for the writer.
		out.ActionID, out.Action = a.ID, a.PolicyName()
	}
	if err := rp.w.Action(a, out); err != nil {
		return res, fmt.Errorf("audit: replay: %w", err)
	}
	if out.URL != "" {
		rp.cur = out.URL
	}
	evURL := rp.cur
	if err := rp.w.Event(contract.StreamEvent{
		Type: contract.EventAction, ActionID: a.ID, ActionType: a.Type, RiskLevel: d.Risk, URL: &evURL,
		Summary: clip(fmt.Sprintf("replayed step %d: %s", s.Index, a.PolicyName()), 2000), Timestamp: stamp(rp.clock()),
	}); err != nil {
		return res, fmt.Errorf("audit: replay: %w", err)
	}
	if a.Type == contract.ActExtract {
		if err := rp.artifacts(); err != nil {
			return res, err
		}
	}
	if s.Result != nil {
		if out.OK != s.Result.OK {
			res.Differences = append(res.Differences, Difference{Field: FieldOutcome, Observation: -1, Want: outcomeText(*s.Result, nil), Got: outcomeText(out, actErr)})
		}
		if got := rp.back.URL(out.URL); got != s.Result.URL {
			res.Differences = append(res.Differences, Difference{Field: FieldURL, Observation: -1, Want: s.Result.URL, Got: got})
		}
	}
	for _, o := range s.After {
		diffs, err := rp.observe(ctx, o)
		if err != nil {
			return res, err
		}
		res.Differences = append(res.Differences, diffs...)
	}
	return res, nil
}

// mappedURLs is the task's allowlist on the replay's origins.
func (rp *replayer) mappedURLs() []string {
	out := make([]string, len(rp.b.Manifest.Task.URLs))
	for i, u := range rp.b.Manifest.Task.URLs {
		out[i] = rp.opts.Origins.URL(u)
	}
	return out
}

// approve asks the approver about an action the gate paused. On a yes it
// grants an approval bound to the action's hash and asks the gate again; on
// a no (or no approver), it records the refusal as a denial.
func (rp *replayer) approve(ctx context.Context, s *Step, req gate.Request, paused gate.Decision) (gate.Decision, string, error) {
	final := s.Final()
	evURL := req.ActiveURL
	if err := rp.w.Event(contract.StreamEvent{
		Type: contract.EventApprovalRequired, ActionID: req.Action.ID, ActionType: req.Action.Type, URL: &evURL,
		Summary: clip(fmt.Sprintf("replayed step %d: %s needs an approval again (risk %s)", s.Index, req.Action.PolicyName(), paused.Risk), 2000), Timestamp: stamp(rp.clock()),
	}); err != nil {
		return paused, "", fmt.Errorf("audit: replay: %w", err)
	}
	var ans ApprovalAnswer
	rule, msg := "approval_denied", "the replay refuses approvals (--approve deny): a recorded approval is not granted again"
	if rp.opts.Approver != nil {
		ar := ApprovalRequest{
			Step: s.Index, Action: req.Action, Target: req.Target, URL: req.ActiveURL, Risk: paused.Risk,
			Reasons: append(append([]contract.Reason(nil), paused.ApprovalReasons...), paused.RiskReasons...),
		}
		if final.Approval != nil {
			ref := *final.Approval
			ar.Recorded = &ref
		}
		var err error
		ans, err = rp.opts.Approver.Approve(ctx, ar)
		switch {
		case err != nil:
			rule, msg, ans.Approved = "approval_unavailable", "the approver failed: "+errText(err), false
		case !ans.Approved:
			who := ans.Approver
			if who == "" {
				who = "the approver"
			}
			rule, msg = "approval_denied", clip(who, 256)+" refused the action"
		}
	}
	decision := contract.ApprovalDeny
	d := paused
	if ans.Approved {
		who := ans.Approver
		if who == "" {
			who = "unnamed approver"
		}
		grant, err := rp.store.Grant(paused.ActionHash, clip(who, 256), rp.clock(), ApprovalTTL)
		if err != nil {
			rule, msg, ans.Approved = "approval_unavailable", "the approval could not be granted: "+errText(err), false
		} else {
			req.ApprovalID, req.Now = grant.ID, rp.clock()
			d = rp.g.Decide(ctx, req)
			if err := rp.w.Decision(d.DecisionRecord); err != nil {
				return d, "", fmt.Errorf("audit: replay: %w", err)
			}
			if d.Allow {
				decision = contract.ApprovalApprove
			}
		}
	}
	if !ans.Approved {
		now := rp.clock().UTC()
		d.Allow, d.Result = false, contract.ResultDenied
		d.Reasons = []contract.Reason{{Rule: rule, Message: clip(msg, 1000)}}
		d.EvaluatedAt = now.Format(time.RFC3339Nano)
		d.DecisionID = gate.DecisionID(d.PolicyVersion, d.ActionHash, d.StepIndex, now)
		d.DurationUs, d.Approval, d.FailClosed, d.Error = 0, nil, false, ""
		if err := rp.w.Decision(d.DecisionRecord); err != nil {
			return d, "", fmt.Errorf("audit: replay: %w", err)
		}
	}
	if err := rp.w.Event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: req.Action.ID, Decision: decision, Timestamp: stamp(rp.clock())}); err != nil {
		return d, "", fmt.Errorf("audit: replay: %w", err)
	}
	who := ""
	if ans.Approved {
		who = ans.Approver
	}
	return d, who, nil
}

// artifacts records what an extract action produced, as the session does.
func (rp *replayer) artifacts() error {
	for _, ex := range rp.drv.TakeArtifacts() {
		art := ex.Artifact
		if ex.Image != nil {
			rec, err := rp.w.Image(art.ID+"-image", ex.Data, evidence.ImageMeta{SourceURL: ex.Image.SourceURL, ActionID: ex.Image.ActionID})
			if err != nil && !errors.Is(err, evidence.ErrQuarantined) {
				return fmt.Errorf("audit: replay: %w", err)
			}
			if rec.URI == "" {
				continue
			}
			rp.shots[art.Value] = rec.URI
			art.Value, art.Hash = rec.URI, ""
		}
		if err := rp.w.Artifact(art); err != nil && !errors.Is(err, evidence.ErrQuarantined) {
			return fmt.Errorf("audit: replay: %w", err)
		}
	}
	return nil
}
