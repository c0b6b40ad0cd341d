package session

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/secrets"
)

// handle takes one action through describe, gate, approval, act and
// record. pos says where it stands in its batch (batch); an action whose
// target is no longer the element the batch was planned on is skipped
// (outcome skipped, stopWhy says why) before the gate is asked.
func (r *run) handle(a contract.Action, pos *batchPos) (outcome, *ending) {
	cfg := r.cfg
	report := StepReport{Index: r.executed + 1, Budget: r.maxActions, Step: r.step, Action: a, Plan: r.planItem(pos), Vision: r.synthetic}
	// What the page did since the last action is recorded before this one.
	if why, e := r.effectSkip(pos); e != nil {
		return outcome{}, ptr(r.fail("evidence", "cannot record", e))
	} else if why != "" {
		return outcome{outcome: navigator.OutcomeSkipped, stopWhy: why}, nil
	}
	before := r.curURL
	planned := pos.loopHash()

	// Resolve the target on the page, so the gate judges what the action
	// would really touch.
	var target *contract.Element
	if a.NeedsTarget() {
		t0 := time.Now()
		el, observed, err := r.drv.DescribeObserved(r.ctx, a.Selector)
		r.t.Driver += time.Since(t0)
		if err != nil {
			if e, ok := r.ctxEnding(); ok {
				return outcome{}, &e
			}
		}
		// And what it did while the target was resolved (a timer of the
		// earlier action firing).
		if why, e := r.effectSkip(pos); e != nil {
			return outcome{}, ptr(r.fail("evidence", "cannot record", e))
		} else if why != "" {
			return outcome{outcome: navigator.OutcomeSkipped, stopWhy: why}, nil
		}
		if err == nil {
			// Page words, through the egress filter before anything sees them.
			target = filterTarget(cfg.Secrets, &el)
		}
		if why, end := r.planStands(a, target, observed, err, pos, before); end != nil {
			return outcome{}, end
		} else if why != "" {
			return outcome{outcome: navigator.OutcomeSkipped, stopWhy: why, covered: err == nil && observed == driver.ObservedCovered}, nil
		}
		if err != nil {
			code := driver.CodeOf(err)
			msg := driverMessage(r.cfg.Secrets, err)
			report.Error = string(code) + ": " + msg
			r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeFailed, Detail: report.Error})
			r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackError, Code: string(code), Message: "the target could not be resolved on the page: " + msg})
			if e := r.emitError("action.target_unresolved", fmt.Sprintf("action %s (%s): %s", bound(a.ID, 128), a.Type, report.Error)); e != nil {
				end := r.fail("evidence", "cannot record", e)
				return outcome{}, &end
			}
			r.noteLoop(a, before, planned, false)
			r.report(report)
			return outcome{outcome: navigator.OutcomeFailed, detail: report.Error}, nil
		}
		report.Target = target
	}

	req := gate.Request{
		SessionID: r.id, StepIndex: r.executed + 1, Action: a, Target: target, ActiveURL: activeURL(r.curURL, target),
		Session: r.gateSession(),
		Policy:  cfg.Policy,
		Now:     r.now(),
	}
	d, end := r.decide(req, nil)
	if end != nil {
		return outcome{}, end
	}
	paused := d.Result == contract.ResultPaused
	if paused {
		d, end = r.approve(req, d, target)
		if end != nil {
			return outcome{}, end
		}
	}
	if d.Allow {
		if msg := secretUnjudged(a, d.DecisionRecord); msg != "" {
			if d, end = r.sessionDenial(d, RuleSecretUnjudged, msg); end != nil {
				return outcome{}, end
			}
		}
	}
	report.Decision, report.Risk = d.Result, d.Risk

	overBudget := r.executed >= r.maxActions
	if d.Allow && overBudget {
		// The policy should have denied it (step_budget_exceeded); a
		// custom one did not. The session holds the budget all the same.
		if d, end = r.sessionDenial(d, RuleActionBudget, fmt.Sprintf("the action budget of %d is used up", r.maxActions)); end != nil {
			return outcome{}, end
		}
	}
	if !d.Allow || overBudget {
		if !d.Allow {
			r.denied++
		}
		report.Decision = contract.ResultDenied
		report.Reasons = d.Reasons
		reasons := make([]string, 0, len(d.Reasons))
		rules := make([]string, 0, len(d.Reasons))
		for _, rs := range d.Reasons {
			reasons = append(reasons, rs.Rule+": "+rs.Message)
			rules = append(rules, rs.Rule)
		}
		detail := "denied by the policy: " + strings.Join(rules, ", ")
		tell := "the policy denied this action; do not repeat it, take another way"
		if len(d.Reasons) == 1 && rules[0] == RuleApprovalDenied {
			// Not the policy's word: an approver's, a person's as a rule.
			detail = d.Reasons[0].Message
			tell = d.Reasons[0].Message + "; it will be refused again without asking, so do not propose it again: take another way, or give up if there is none"
		}
		r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeDenied, Detail: detail})
		code := ""
		if len(rules) > 0 {
			code = rules[0]
		}
		r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackDenied, Code: code, Message: tell, Reasons: reasons})
		if e := r.emitError("policy.denied", fmt.Sprintf("action %s (%s) denied: %s", bound(a.ID, 128), a.Type, strings.Join(reasons, "; "))); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return outcome{}, &end
		}
		r.report(report)
		if overBudget {
			return outcome{}, &ending{status: contract.SessionActionLimitExceeded, summary: fmt.Sprintf("stopped: the action budget of %d was used up and the navigator proposed more", r.maxActions)}
		}
		r.noteLoop(a, before, planned, false)
		return outcome{outcome: navigator.OutcomeDenied, detail: detail}, nil
	}

	// Allowed: run it, once everything before it is in the bundle.
	// Placeholders are resolved in the copy handed to the driver only.
	if e := r.flush(); e != nil {
		end := r.fail("evidence", "cannot record the decision", e)
		return outcome{}, &end
	}
	t0 := time.Now()
	subj := &subject{req: req, dec: d, step: r.step, index: report.Index, budget: r.maxActions}
	res, actErr, secretErr := r.act(a, subj)
	dur := time.Since(t0)
	r.t.Driver += dur
	if secretErr != nil {
		return r.secretRefused(a, report, "secret_refused", "action.secret_refused", secretErr, before, planned)
	}
	res.URL = cfg.Secrets.Redact(res.URL)
	res.Note = cfg.Secrets.Redact(res.Note)
	// What an extract produced is taken now: an artifact holding a secret
	// is refused, and its id is not in the recorded result.
	var extracted []driver.Extracted
	var held error
	if a.Type == contract.ActExtract {
		extracted, held = r.takeExtracted(&res)
	}
	res.RiskTag = d.Risk
	r.executed++
	r.fresh = false
	report.Executed, report.OK, report.Duration = true, res.OK, dur
	rec := a
	if rec.Type == contract.ActType && rec.Redact {
		// Redacted here, not by the writer: the writer would mask every
		// later occurrence of the text, a text the model chose. A model
		// typing "allowed" or a word of the goal with redact true would
		// then corrupt later records or make the manifest at the seal
		// differ from the one at the start: a bundle that does not verify.
		// Secret values are masked by name all the same (Options.Secrets).
		rec.Text = evidence.RedactedText
	}
	if e := r.record(func() error { return r.w.Action(rec, res) }); e != nil {
		end := r.fail("evidence", "cannot record the action", e)
		return outcome{}, &end
	}
	if res.URL != "" {
		r.curURL = res.URL
	}
	evURL := r.curURL
	if e := r.emit(contract.StreamEvent{
		Type: contract.EventAction, ActionID: bound(a.ID, 128), ActionType: a.Type, RiskLevel: d.Risk,
		URL: &evURL, Summary: actionSummary(a, target, res),
	}); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return outcome{}, &end
	}
	// What the page did while the action ran, under the action.
	if e := r.drainEffects(); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return outcome{}, &end
	}
	effectStop, effectRefused := r.takeEffectStop()
	if a.Type == contract.ActExtract {
		if e := r.storeArtifacts(extracted, a.Vision); e != nil {
			end := r.fail("evidence", "cannot record an artifact", e)
			return outcome{}, &end
		}
	}
	if held != nil && res.OK {
		// A structured value holding a secret: refused, said and recorded.
		return r.secretRefused(a, report, "secret_in_value", "artifact.secret_refused", held, before, planned)
	}
	if !res.OK {
		if e, ok := r.ctxEnding(); ok {
			r.report(report)
			return outcome{}, &e
		}
		code, msg := contract.CodeInternal, "the driver failed"
		if res.Error != nil {
			code, msg = res.Error.Code, bound(r.cfg.Secrets.Redact(res.Error.Message), 1000)
		} else if actErr != nil {
			code, msg = driver.CodeOf(actErr), driverMessage(r.cfg.Secrets, actErr)
		}
		if code == contract.CodeTargetChanged {
			// Not a policy violation, and nothing was done: the decision
			// was about another page or element than the one there now.
			msg = "the page changed between the decision and the action (" + msg + "), so the action was not run; look at the page again before acting"
		}
		report.Error = string(code) + ": " + msg
		r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeFailed, Detail: report.Error})
		r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackError, Code: string(code), Message: msg})
		if e := r.emitError("action."+string(code), fmt.Sprintf("action %s (%s) failed: %s", bound(a.ID, 128), a.Type, msg)); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return outcome{}, &end
		}
		r.noteLoop(a, before, planned, false)
		r.report(report)
		return outcome{outcome: navigator.OutcomeFailed, detail: report.Error}, nil
	}
	r.report(report)

	out := outcome{outcome: navigator.OutcomeOK, detail: okDetail(a, res, r.curURL), undone: effectRefused}
	switch {
	case a.Type == contract.ActNavigate:
		out.stop, out.stopWhy = true, "a navigation loaded a new page"
	case r.curURL != before:
		out.stop, out.stopWhy = true, "the URL changed"
	case effectStop != "":
		out.stop, out.stopWhy = true, effectStop
	case paused:
		out.stop, out.stopWhy = true, fmt.Sprintf("%s needed approval, so the page is looked at again after it", bound(a.ID, 128))
	}
	r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeOK, Detail: out.detail})
	r.noteLoop(a, before, planned, true)
	if report.Plan.N > r.planRan.N {
		r.planRan = report.Plan
	}
	return out, nil
}

// planItem says which item of an offline navigator's plan the action at
// pos carries out (navigator.Planned); none for the first URL and the
// LLM navigator.
func (r *run) planItem(pos *batchPos) navigator.PlanItem {
	p, ok := r.cfg.Navigator.(navigator.Planned)
	if !ok || r.step == 0 {
		return navigator.PlanItem{}
	}
	return p.Item(pos.index)
}

func ptr[T any](v T) *T { return &v }

// act runs an allowed action. The text of a type action has its secret
// placeholders resolved in the copy handed to the driver, which lives only
// in this call (the policy has judged every placeholder against the
// session's bindings: secretBindings). A placeholder that does not resolve
// is secretErr, the session's last check, and nothing runs.
//
// While the driver acts, what the page does is attributed to subj (see
// effects), and to it as the last action afterwards.
func (r *run) act(a contract.Action, subj *subject) (res contract.ToolResult, actErr, secretErr error) {
	run := a
	if a.Type == contract.ActType && strings.Contains(a.Text, secrets.Prefix) {
		text, err := r.cfg.Secrets.Resolve(a.Text)
		if err != nil {
			return contract.ToolResult{}, nil, err
		}
		run.Text = text
		// The driver remembers the element it types a secret into
		// (Redact) and masks it from then on, whatever becomes of it.
		run.Redact = true
	}
	r.eff.acts(subj)
	res, actErr = r.drv.Act(r.ctx, run)
	r.eff.acts(nil)
	return res, actErr, nil
}

// activeURL is the page an action on target runs on, for the gate: the
// session's URL (from the last observation or action result), unless the
// browser reported at Describe that the target is in a document of another
// origin (the page moved, or the element is in a foreign frame): then that
// origin, so that the policy and the approver judge where the action would
// really run.
func activeURL(cur string, target *contract.Element) string {
	if target == nil || target.Origin == "" {
		return cur
	}
	o := gate.NormalizeURL(target.Origin)
	if !o.Valid || o.Origin == "" {
		return target.Origin // "null" (an opaque origin): no allowed page
	}
	if f := gate.NormalizeURL(cur); f.Valid && f.Origin == o.Origin {
		return cur
	}
	return o.Origin + "/"
}

// decide asks the gate and records the decision; from is the answer the
// approval req presents was granted from (nil when it presents none).
func (r *run) decide(req gate.Request, from *ApprovalAnswer) (gate.Decision, *ending) {
	t0 := time.Now()
	d := r.cfg.Gate.Decide(r.ctx, req)
	r.t.Gate += time.Since(t0)
	if from != nil {
		if err := r.stampApproval(&d.DecisionRecord, req.ApprovalID, *from); err != nil {
			end := r.fail("evidence", "cannot record the approval", err)
			return d, &end
		}
	}
	if e := r.record(func() error { return r.w.Decision(d.DecisionRecord) }); e != nil {
		end := r.fail("evidence", "cannot record the decision", e)
		return d, &end
	}
	if d.FailClosed {
		if ce, ok := r.ctxEnding(); ok {
			return d, &ce
		}
		if e := r.emitError("gate.fail_closed", "the policy could not answer, so the action was denied: "+d.Error); e != nil {
			end := r.fail("evidence", "cannot record", e)
			return d, &end
		}
	}
	return d, nil
}

// secretBindings are the session's secrets for the gate (name → the
// origins each is bound to): those declared for it, or, for a secret
// declared without origins (an environment secret, a NAME=value line, a
// host configuration string), the task's first origin. This is the one
// place that default is applied; the policy judges every placeholder
// against these bindings (secret_typed, secret_misdirected,
// secret_undeclared).
func secretBindings(set *secrets.Set, urls []string) map[string][]string {
	if set.Len() == 0 {
		return nil
	}
	var first []string
	if all, err := origins(urls); err == nil && len(all) > 0 {
		first = all[:1]
	}
	out := make(map[string][]string, set.Len())
	for _, n := range set.Names() {
		if o := set.Origins(n); o != nil {
			out[n] = o
		} else {
			out[n] = first
		}
	}
	return out
}

// secretRefused ends an action the session failed for a secret (a
// placeholder that did not resolve, an extracted value holding one): the
// Navigator is told why (feedback code), an error event (event) records
// it, and the step report says it.
func (r *run) secretRefused(a contract.Action, report StepReport, code, event string, why error, before, planned string) (outcome, *ending) {
	msg := why.Error()
	report.Error = "secret: " + msg
	r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeFailed, Detail: report.Error})
	r.feedback = append(r.feedback, navigator.Feedback{ActionID: a.ID, Kind: navigator.FeedbackError, Code: code, Message: msg})
	if e := r.emitError(event, fmt.Sprintf("action %s: %s", bound(a.ID, 128), msg)); e != nil {
		return outcome{}, ptr(r.fail("evidence", "cannot record", e))
	}
	r.noteLoop(a, before, planned, false)
	r.report(report)
	return outcome{outcome: navigator.OutcomeFailed, detail: report.Error}, nil
}

// secretUnjudged says why the session refuses an allowed action that
// carries a secret placeholder the policy did not judge: whatever policy
// the session runs under (a custom one, a remote OPA written before
// secrets were bound), a secret is typed only as the whole text of a type
// action whose decision names secret_typed among its risk reasons, the
// policy's statement that it checked the secret's binding and the field's
// own facts. "" when there is nothing to refuse.
func secretUnjudged(a contract.Action, d contract.DecisionRecord) string {
	if a.Type != contract.ActType || !strings.Contains(a.Text, secrets.Prefix) {
		return "" // only a type action's text is ever resolved (act)
	}
	names := secrets.Find(a.Text)
	if len(names) != 1 || a.Text != secrets.Placeholder(names[0]) {
		return "a secret is typed only as the whole text of a type action (exactly one {{secret:NAME}}); the session refuses this text"
	}
	judged := false
	for _, rs := range d.RiskReasons {
		judged = judged || rs.Rule == RuleSecretTyped
	}
	if !judged {
		return "the policy allowed typing a secret without judging where it goes (no " + RuleSecretTyped + " risk reason: the secret's bound origins and the field's own facts); the session refuses it. Use a policy with the secrets rules (aegis policy init)"
	}
	return ""
}

// observe observes the page (retrying once, for a page in the middle of a
// navigation) and records the observation.
func (r *run) observe() error {
	t0 := time.Now()
	obs, err := r.drv.Observe(r.ctx, driver.ObserveOptions{})
	if err != nil && r.ctx.Err() == nil {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.ctx.Done():
		}
		obs, err = r.drv.Observe(r.ctx, driver.ObserveOptions{})
	}
	r.t.Driver += time.Since(t0)
	if err != nil {
		return err
	}
	for i, a := range obs.ExtractedArtifacts {
		if u, ok := r.shotURIs[a.Value]; ok && a.Type == contract.ArtifactScreenshot {
			obs.ExtractedArtifacts[i].Value = u
		}
	}
	// Once, before it is recorded or handed to the Navigator: the page's
	// words through the egress filter.
	obs = navigator.FilterObservation(obs, r.cfg.Secrets)
	seq := r.obsSeq
	if err := r.record(func() error { return r.w.Observation(seq, obs) }); err != nil {
		return err
	}
	r.obsSeq++
	r.obs, r.fresh = obs, true
	if obs.State.ActiveURL != "" {
		r.curURL = obs.State.ActiveURL
	}
	return nil
}

// storeArtifacts records what an extract action produced (takeExtracted
// let through): images first (under their own id), then the artifact
// records. The screenshot of an extract with vision true is queued for
// the model (queueImage).
func (r *run) storeArtifacts(exs []driver.Extracted, vision bool) error {
	for _, ex := range exs {
		art := ex.Artifact
		if ex.Image != nil {
			// The image's record is needed now: write it in line.
			if err := r.flush(); err != nil {
				return err
			}
			id := art.ID + "-image"
			t0 := time.Now()
			rec, err := r.w.Image(id, ex.Data, evidence.ImageMeta{SourceURL: ex.Image.SourceURL, ActionID: ex.Image.ActionID})
			r.t.EvidenceWait += time.Since(t0)
			if err != nil && !errors.Is(err, evidence.ErrQuarantined) {
				return err
			}
			if rec.URI == "" {
				continue // quarantined: the writer recorded why
			}
			r.shotURIs[art.Value] = rec.URI
			if vision {
				if err := r.queueImage(rec.URI, rec.MIMEType, rec.ContentHash, ex.Data); err != nil {
					return err
				}
			}
			art.Value, art.Hash = rec.URI, ""
			ev := contract.StreamEvent{Type: contract.EventScreenshot, URL: &rec.URI}
			if rec.Width > 0 && rec.Height > 0 {
				w, h := rec.Width, rec.Height
				ev.Width, ev.Height = &w, &h
			}
			if err := r.emit(ev); err != nil {
				return err
			}
		}
		if err := r.record(func() error { return r.w.Artifact(art) }); err != nil {
			return err
		}
		r.artifacts = append(r.artifacts, art)
	}
	return nil
}

func (r *run) report(rep StepReport) {
	if r.cfg.OnStep != nil {
		rep.Tokens, rep.MaxTokens = r.cfg.Budget.Tokens(), r.cfg.Budget.Limits().MaxTokens
		rep.CostUSD, rep.MaxCostUSD, rep.Priced = r.cfg.Budget.CostUSD(), r.cfg.Budget.Limits().MaxCostUSD, r.cfg.Budget.Priced()
		r.cfg.OnStep(redactReport(r.cfg.Secrets, rep))
	}
}

// redactReport is rep with every secret value (in any encoding the set
// knows) replaced by its placeholder in what came from the page or the
// model: the target's words, the action's words, reasons, the error, the
// effect's path. A step report goes to people (progress lines, the popup)
// and is not masked by the evidence writer.
func redactReport(set *secrets.Set, rep StepReport) StepReport {
	if set.Len() == 0 {
		return rep
	}
	a := rep.Action
	a.Reason, a.Selector, a.URL, a.Value = set.Redact(a.Reason), set.Redact(a.Selector), set.Redact(a.URL), set.Redact(a.Value)
	a.Text = set.Redact(a.Text)
	rep.Action = a
	if rep.Target != nil {
		t := *rep.Target
		t.Name, t.ID, t.Label, t.Text = set.Redact(t.Name), set.Redact(t.ID), set.Redact(t.Label), set.Redact(t.Text)
		rep.Target = &t
	}
	if len(rep.Reasons) > 0 {
		rs := make([]contract.Reason, len(rep.Reasons))
		for i, x := range rep.Reasons {
			x.Message = set.Redact(x.Message)
			rs[i] = x
		}
		rep.Reasons = rs
	}
	if rep.Effect != nil {
		e := *rep.Effect
		e.Origin, e.Path = set.Redact(e.Origin), set.Redact(e.Path)
		if len(e.Fields) > 0 {
			fs := make([]string, len(e.Fields))
			for i, f := range e.Fields {
				fs[i] = set.Redact(f)
			}
			e.Fields = fs
		}
		rep.Effect = &e
	}
	rep.Error = set.Redact(rep.Error)
	return rep
}

// noteLoop feeds loop detection with one outcome (none of the session's
// own escalations).
func (r *run) noteLoop(a contract.Action, url, planned string, ok bool) {
	if r.synthetic {
		return
	}
	if why := r.loops.note(a, url, planned, ok); why != "" && r.loopHit == "" {
		r.loopHit = why
	}
}
