package session

import (
	"fmt"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/navigator"
)

// Batches: the actions of one Navigator answer, run while the page is
// still the one they were planned on.

// batch runs the actions of one Navigator answer. complete says every
// action ran and succeeded.
//
// The Navigator planned the batch on the current observation. The batch
// runs on while no navigation happened and each next target is still the
// element the Navigator saw there, as it saw it (driver.Observed, checked
// when handle describes it, at no extra cost); it stops at a target that
// is not (replaced, removed, hidden, disabled, renamed or given another
// role, or, for a click, type or select, covered by another element: that
// action and the rest are skipped, and the Navigator is told why), after
// an action that needed approval (any approval, a person's or a rule's:
// its consequences deserve a fresh look), after an action something of
// whose effects (a request or navigation it caused: effects.go) was
// denied or needed approval, and at a denial or a failure. A target the
// observation did not list (a selector the model wrote) falls back to
// looking at the page again after a click: the batch stops when anything
// changed.
//
// The same action repeated within one batch (a spinner's "+" clicked three
// times) is not counted for loop detection, since the page the batch was
// planned on says nothing about the page each repetition met: a batch
// repeating an action to no effect is bounded by the action budget, not
// by loop detection.
func (r *run) batch(actions []contract.Action) (complete bool, end *ending) {
	pos := batchPos{planned: r.obs.State.DOMHash, listed: listedAffordances(r.obs)}
	seen := make(map[string]bool, len(actions))
	for i, a := range actions {
		sig := signature(a)
		pos.repeat = seen[sig]
		pos.index = i
		seen[sig] = true
		out, end := r.handle(a, &pos)
		if end != nil {
			return false, end
		}
		if out.outcome == navigator.OutcomeSkipped {
			if out.covered {
				r.noteEscalation("a covered target")
			}
			r.skip(actions[i:], out.stopWhy)
			return false, nil
		}
		if out.outcome == navigator.OutcomeFailed {
			r.noteEscalation("a failed " + string(a.Type))
		}
		if out.outcome != navigator.OutcomeOK || out.stop || r.loopHit != "" {
			r.skip(actions[i+1:], out.why())
			return out.outcome == navigator.OutcomeOK && !out.undone && i == len(actions)-1, nil
		}
		pos.follows = true
		if a.Type == contract.ActClick {
			pos.clicked = true
		}
	}
	return true, nil
}

// skip tells the Navigator that actions did not run, and why.
func (r *run) skip(actions []contract.Action, why string) {
	for _, a := range actions {
		r.progress = append(r.progress, navigator.Progress{Step: r.step, Action: a, Outcome: navigator.OutcomeSkipped, Detail: "not run: " + why})
	}
}

// batchPos is where an action stands in its batch.
type batchPos struct {
	planned string                         // the DOM hash of the observation the batch was planned on ("" for the task's first URL)
	listed  map[string]contract.Affordance // that observation's affordances, by selector
	follows bool                           // an earlier action of the batch ran
	clicked bool                           // a click ran since the page was last observed
	repeat  bool                           // the same action ran earlier in the batch
	index   int                            // the action's place in its batch, from 0
}

// loopHash is the DOM hash loop detection notes the action under: none
// for an action repeated within its batch.
func (p *batchPos) loopHash() string {
	if p.repeat {
		return ""
	}
	return p.planned
}

// listedAffordances are the affordances of obs, by selector.
func listedAffordances(obs contract.Observation) map[string]contract.Affordance {
	m := make(map[string]contract.Affordance, len(obs.Affordances))
	for _, a := range obs.Affordances {
		m[a.Selector] = a
	}
	return m
}

// outcome is how one action ended.
type outcome struct {
	outcome navigator.Outcome
	detail  string
	stop    bool   // stop the batch after this action (stopWhy says why)
	stopWhy string // why (and why an action was skipped)
	// undone: the action ran, but what it caused was refused, so it did
	// not do what it was meant to: a batch it ends is not complete.
	undone bool
	// covered: skipped because another element covers its target.
	covered bool
}

func (o outcome) why() string {
	switch {
	case o.outcome == navigator.OutcomeDenied:
		return "an earlier action of the batch was denied"
	case o.outcome != navigator.OutcomeOK:
		return "an earlier action of the batch failed"
	case o.stopWhy != "":
		return o.stopWhy
	}
	return "the batch was stopped"
}

// effectSkip records what the page did since it was last asked (effects)
// and says why a, following an action that ran in its batch, must not run
// ("" when it may): an effect of an earlier action, heard of only now, was
// refused or needed approval (noteEffectStop), so the page is not the one
// the batch was planned on.
func (r *run) effectSkip(pos *batchPos) (why string, err error) {
	if err := r.drainEffects(); err != nil {
		return "", err
	}
	why, _ = r.takeEffectStop()
	if !pos.follows {
		return "", nil // the batch starts here: none of its actions ran yet
	}
	return why, nil
}

// noteEffectStop notes that the batch stops after the action of n (see
// run.batch) when its effect needed approval (approved or not) or was
// denied and is one the Navigator hears of: the page the rest of the batch
// was planned on assumed what the action caused. The first such effect
// names the reason.
func (r *run) noteEffectStop(n effectNote, final contract.DecisionRecord) {
	if r.effectStop != "" {
		return
	}
	what := fmt.Sprintf("the page's %s, caused by %s,", describeEffect(n.effect), bound(n.subj.req.Action.ID, 128))
	switch {
	case !final.Allow && tellNavigator(n.effect):
		r.effectStop = what + " was refused (it did not happen), so the page is looked at again"
		r.effectRefused = true
	case n.recs[0].Result == contract.ResultPaused:
		r.effectStop = what + " needed approval, so the page is looked at again after it"
	}
}

// takeEffectStop returns and forgets the reason noteEffectStop noted, and
// whether the effect was refused.
func (r *run) takeEffectStop() (why string, refused bool) {
	why, refused = r.effectStop, r.effectRefused
	r.effectStop, r.effectRefused = "", false
	return why, refused
}

// maxNameWords bounds the page words a skip reason quotes (an element's
// name or role): they are the page's, and go to the model.
const maxNameWords = 80

// planStands says why a, which follows an action that ran in its batch,
// must not run ("" when it may): its target, as Describe found it (el,
// filtered, and observed; err when it found none), is not the element the
// Navigator saw when it planned the batch, as it saw it. A target the
// observation listed is judged by identity, at no cost; one it did not
// list (a selector the model wrote) by looking at the page again after a
// click: any change stops the batch.
func (r *run) planStands(a contract.Action, el *contract.Element, observed driver.Observed, err error, pos *batchPos, before string) (why string, end *ending) {
	if !pos.follows || a.Type == contract.ActExtract && err == nil {
		// An extract changes nothing and reads what is there now, which is
		// what a batch that reads after its clicks was planned for.
		return "", nil
	}
	target := fmt.Sprintf("the target of %s (%s)", bound(a.ID, 128), bound(a.Selector, 200))
	// Taken now: looking at the page again below replaces pos.listed.
	seen, listed := pos.listed[a.Selector]
	if err != nil && listed {
		switch driver.CodeOf(err) {
		case contract.CodeElementNotFound:
			return target + " is no longer on the page (it was removed)", nil
		case contract.CodeAmbiguousSelector:
			return target + " no longer addresses one element", nil
		}
	}
	if err == nil {
		switch observed {
		case driver.ObservedSame:
			return "", nil
		case driver.ObservedReplaced:
			return target + " is no longer the element you saw (it was replaced)", nil
		case driver.ObservedHidden:
			return target + " is the element you saw, but it is hidden now", nil
		case driver.ObservedDisabled:
			return target + " is the element you saw, but it is disabled now", nil
		case driver.ObservedChanged:
			return target + " is the element you saw, but " + changedWhy(seen, el), nil
		case driver.ObservedCovered:
			switch a.Type {
			case contract.ActClick, contract.ActType, contract.ActSelect:
				return target + " is the element you saw, but another element covers it now (the page put something over it)", nil
			}
			return "", nil
		}
	}
	if !pos.clicked {
		return "", nil
	}
	if e := r.observe(); e != nil {
		return "", ptr(r.errorEnding("observe", "cannot observe the page", e))
	}
	pos.clicked, pos.listed = false, listedAffordances(r.obs)
	if r.obs.State.DOMHash == pos.planned && r.obs.State.ActiveURL == before {
		return "", nil
	}
	switch {
	case listed && err != nil:
		return fmt.Sprintf("the page changed after an earlier action of the batch, and %s cannot be found as you saw it (%s)", target, driver.CodeOf(err)), nil
	case listed:
		return "the page changed and aegis cannot tell whether " + target + " is the element you saw (the page was reloaded or replaced)", nil
	}
	return "the page changed after an earlier action of the batch, and " + target + " is not one of the observation's affordances, so it cannot be told to be the element you meant", nil
}

// changedWhy says how the element listed as seen differs now (el): its
// role, else its name, each quoted from the page and bounded.
func changedWhy(seen contract.Affordance, el *contract.Element) string {
	if el == nil {
		return "its name or role changed"
	}
	was, now := Sanitize(seen.Role, maxNameWords), Sanitize(el.Role, maxNameWords)
	if was != now {
		return fmt.Sprintf("its role changed from %q to %q", was, now)
	}
	was, now = Sanitize(seen.Text, maxNameWords), Sanitize(el.Label, maxNameWords)
	if was != now {
		return fmt.Sprintf("its name changed from %q to %q", was, now)
	}
	return "its name or role changed"
}
