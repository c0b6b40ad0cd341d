package audit

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/contract"
)

// Step is one proposed action: every decision about it, and if it ran, the
// action and its result, with what was recorded until the next step.
type Step struct {
	// Index numbers the steps from 1.
	Index int
	// Decisions are the decisions about the action, in order: usually one;
	// a paused decision is followed by the approved (or refused) one; an
	// allowed one may be followed by the session's own denial.
	Decisions []contract.DecisionRecord
	// Action is the executed action (nil when it did not run: the bundle
	// then holds only its id and hash).
	Action *contract.Action
	// Result is the executed action's result; nil when it did not run.
	Result *contract.ToolResult
	// Before is the last observation recorded before the step; nil when
	// none was.
	Before *Observed
	// After are the observations recorded after the action, before the
	// next step.
	After []*Observed
	// Events are the stream events recorded from the step's first
	// decision to the next step.
	Events []contract.StreamEvent
	// Artifacts are the extracted artifacts recorded in the step.
	Artifacts []contract.Artifact
	// Images are the image artifacts (screenshots) recorded in the step.
	Images []contract.ImageArtifact
	// Effects are what the page did on the network while or after the
	// action ran (requests, navigations, downloads, peer channels), each
	// with the decisions about it, in order: the decision records whose
	// Effect is set and whose ActionID is the action's. They follow the
	// action's record in the bundle.
	Effects []*StepEffect
	// ActiveURL is the URL of the active page when the action was judged,
	// as the session tracks it: the last observation's or action result's
	// URL, about:blank at first.
	ActiveURL string
	// FirstEntry is the ledger index of the step's first record.
	FirstEntry int
}

// StepEffect is one effect of a step's action with the decisions about
// it, in order: usually one; a paused decision is followed by the approved
// or refused one.
type StepEffect struct {
	// Effect is the effect as the first decision records it.
	Effect contract.Effect
	// Decisions are the decisions about it.
	Decisions []contract.DecisionRecord
}

// Final returns the effect's last decision: whether it happened.
func (e *StepEffect) Final() contract.DecisionRecord {
	return e.Decisions[len(e.Decisions)-1]
}

// addEffect adds a decision about an effect of the step's action: to the
// last effect when it continues its pause (the same effect and hash),
// else as a new effect.
func (s *Step) addEffect(d contract.DecisionRecord) {
	if n := len(s.Effects); n > 0 {
		last := s.Effects[n-1]
		prev := last.Final()
		if prev.Result == contract.ResultPaused && prev.ActionHash == d.ActionHash && sameEffect(last.Effect, *d.Effect) {
			last.Decisions = append(last.Decisions, d)
			return
		}
	}
	s.Effects = append(s.Effects, &StepEffect{Effect: *d.Effect, Decisions: []contract.DecisionRecord{d}})
}

func sameEffect(a, b contract.Effect) bool {
	return a.Kind == b.Kind && a.Method == b.Method && a.Origin == b.Origin && a.Path == b.Path &&
		slices.Equal(a.Fields, b.Fields) && a.ResourceType == b.ResourceType && a.Refused == b.Refused
}

// Final returns the step's last decision: the one the session acted on.
func (s *Step) Final() contract.DecisionRecord {
	if len(s.Decisions) == 0 {
		return contract.DecisionRecord{}
	}
	return s.Decisions[len(s.Decisions)-1]
}

// Executed reports whether the step's action ran.
func (s *Step) Executed() bool { return s.Action != nil }

// Observed is one recorded observation.
type Observed struct {
	// Seq is the {step} of its files, dom/{Seq}.json and .html.
	Seq int
	// Observation is the observation, its DOMSnapshot filled from the .html.
	Observation contract.Observation
	// Entry is the ledger index of its observation record.
	Entry int
}

// sessionRules are the rules the session adds to decisions it writes
// itself (package session): a refused approval, a refused secret.
var sessionRules = map[string]bool{
	"approval_denied": true, "approval_timeout": true, "approval_unavailable": true,
	"secret_target_not_sensitive": true, "secret_unknown": true, "secret_unjudged": true,
}

// IsSessionDenial reports whether d is a denial the session wrote itself
// (an approval refused, a secret refused) rather than the gate's.
func IsSessionDenial(d contract.DecisionRecord) bool {
	if d.Allow || len(d.Reasons) == 0 {
		return false
	}
	for _, r := range d.Reasons {
		if !sessionRules[r.Rule] {
			return false
		}
	}
	return true
}

// reader groups the records into steps as it reads them.
type reader struct {
	b    *Bundle
	cur  string    // the active URL as the session tracks it
	last *Observed // the last observation
	step *Step     // the current step
}

func (r *reader) add(e contract.LedgerEntry, rec []byte) error {
	b := r.b
	switch e.Kind {
	case contract.LedgerManifestStart:
		return json.Unmarshal(rec, &b.Manifest)
	case contract.LedgerManifestEnd:
		var m contract.Manifest
		if err := json.Unmarshal(rec, &m); err != nil {
			return err
		}
		b.End = &m
	case contract.LedgerPlan:
		var p contract.Plan
		if err := json.Unmarshal(rec, &p); err != nil {
			return err
		}
		b.Plans = append(b.Plans, p)
	case contract.LedgerDecision:
		var d contract.DecisionRecord
		if err := json.Unmarshal(rec, &d); err != nil {
			return err
		}
		if d.Effect != nil {
			// About an effect of an action that ran: under that action.
			s := b.executed(d.ActionID)
			if s == nil {
				// The verifier refuses a bundle in which it precedes its
				// action (and Open reads no further); keep it anyway.
				s = r.step
			}
			if s != nil {
				s.addEffect(d)
			}
			return nil
		}
		if s := r.step; s != nil && s.Action == nil && len(s.Decisions) > 0 && continues(s.Final(), d) {
			s.Decisions = append(s.Decisions, d)
			return nil
		}
		r.step = &Step{Index: len(b.Steps) + 1, Decisions: []contract.DecisionRecord{d}, Before: r.last, ActiveURL: r.cur, FirstEntry: e.Index}
		b.Steps = append(b.Steps, r.step)
	case contract.LedgerAction:
		var line struct {
			Action contract.Action     `json:"action"`
			Result contract.ToolResult `json:"result"`
		}
		if err := json.Unmarshal(rec, &line); err != nil {
			return err
		}
		s := r.step
		if s == nil || s.Action != nil || s.Final().ActionID != line.Action.ID {
			// A verified bundle has an allow decision before every action;
			// keep the action anyway, as a step of its own.
			s = &Step{Index: len(b.Steps) + 1, Before: r.last, ActiveURL: r.cur, FirstEntry: e.Index}
			b.Steps = append(b.Steps, s)
			r.step = s
		}
		s.Action, s.Result = &line.Action, &line.Result
		if line.Result.URL != "" {
			r.cur = line.Result.URL
		}
	case contract.LedgerEvent:
		var ev contract.StreamEvent
		if err := json.Unmarshal(rec, &ev); err != nil {
			return err
		}
		b.Events = append(b.Events, ev)
		if r.step != nil {
			r.step.Events = append(r.step.Events, ev)
		}
	case contract.LedgerObservation:
		var o contract.Observation
		if err := json.Unmarshal(rec, &o); err != nil {
			return err
		}
		seq, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.File, "dom/"), ".json"))
		if err != nil {
			return fmt.Errorf("not an observation file")
		}
		html, err := b.file("dom/" + strconv.Itoa(seq) + ".html")
		if err != nil {
			return err
		}
		o.DOMSnapshot = string(html)
		ob := &Observed{Seq: seq, Observation: o, Entry: e.Index}
		if r.step == nil {
			b.Initial = append(b.Initial, ob)
		} else {
			r.step.After = append(r.step.After, ob)
		}
		r.last = ob
		if o.State.ActiveURL != "" {
			r.cur = o.State.ActiveURL
		}
	case contract.LedgerImageArtifact:
		var im contract.ImageArtifact
		if err := json.Unmarshal(rec, &im); err != nil {
			return err
		}
		if validRel(im.URI) {
			b.images[im.URI] = filepath.Join(b.Dir, filepath.FromSlash(im.URI))
		}
		if r.step != nil {
			r.step.Images = append(r.step.Images, im)
		}
	case contract.LedgerArtifact:
		var a contract.Artifact
		if err := json.Unmarshal(rec, &a); err != nil {
			return err
		}
		if r.step != nil {
			r.step.Artifacts = append(r.step.Artifacts, a)
		}
	case contract.LedgerModelCall:
		var mc contract.ModelCall
		if err := json.Unmarshal(rec, &mc); err != nil {
			return err
		}
		b.ModelCalls = append(b.ModelCalls, mc)
	}
	return nil
}

// executed returns the last step whose action, of id id, ran; nil when
// none.
func (b *Bundle) executed(id string) *Step {
	for i := len(b.Steps) - 1; i >= 0; i-- {
		if s := b.Steps[i]; s.Action != nil && s.Action.ID == id {
			return s
		}
	}
	return nil
}

// continues reports whether decision d is about the same proposal as prev,
// the last decision of a step whose action has not run: the approved or
// refused decision after a pause, or the session's own denial after an
// allow. A denied action proposed again is a new step.
func continues(prev, d contract.DecisionRecord) bool {
	if prev.ActionHash != d.ActionHash || prev.StepIndex != d.StepIndex || prev.ActionID != d.ActionID {
		return false
	}
	switch {
	case prev.Result == contract.ResultPaused:
		return true
	case prev.Allow && IsSessionDenial(d):
		return true
	}
	return false
}
