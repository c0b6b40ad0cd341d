package session

import (
	"fmt"
	"strconv"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
)

// Vision escalation (see the package documentation): the probe at the
// start, the image queued for the next Navigator call, and the session's
// own escalations.

// MaxVisionEscalations bounds the vision escalations the session runs on
// its own in one session: each is an action and an image of some thousand
// tokens, and a Navigator that does not progress after a few looks at
// the page will not after more.
const MaxVisionEscalations = 5

// visionAction is the extract that asks for a screenshot shown to the
// model.
func visionAction(id, reason string) contract.Action {
	return contract.Action{ID: id, Type: contract.ActExtract, Reason: reason, PolicyTags: []string{}, Extract: contract.ExtractScreenshot, Vision: true}
}

// gateSession is the session's policy facts for the gate.
func (r *run) gateSession() gate.Session {
	cfg := r.cfg
	return gate.Session{
		AllowedOrigins: cfg.Task.URLs, Permission: cfg.Permission, Preset: cfg.Preset,
		MaxStepBudget: r.maxActions, DecisionLogID: r.decLog, Classification: cfg.Classification,
		Secrets: secretBindings(cfg.Secrets, cfg.Task.URLs),
	}
}

// visionAllowed asks the gate whether the session may show the model its
// page (see "Vision escalation"): never when the model accepts no images.
// A probe the policy allows, or pauses for approval without a deny reason
// (vision.risk at a level that requires approval), means the session may
// escalate: each escalation is then decided, and approved or refused,
// when it happens. A denied or fail-closed probe means it may not.
func (r *run) visionAllowed() bool {
	if !r.cfg.ModelImages {
		return false
	}
	d := r.cfg.Gate.Decide(r.ctx, gate.Request{
		SessionID: r.id, StepIndex: 0, Action: visionAction("vision-probe", "aegis: may the model see the page?"),
		ActiveURL: r.cfg.Task.URLs[0], Session: r.gateSession(), Policy: r.cfg.Policy, Now: r.now(), Probe: true,
	})
	if d.FailClosed || len(d.Reasons) > 0 {
		return false
	}
	return d.Allow || d.Result == contract.ResultPaused
}

// queueImage queues the screenshot of a vision extract for the next
// Navigator call: uri and mime are its bundle record's, hash its content
// hash, data the bytes stored. Only when the session may escalate (the
// model accepts images and the policy allows it), and only when the bytes
// are the ones the record commits to: other bytes are dropped, with an
// error event (vision.image_mismatch) saying so.
func (r *run) queueImage(uri, mime, hash string, data []byte) error {
	if !r.vision {
		return nil
	}
	im := llm.NewImage(uri, mime, data)
	if got := im.SHA256(); got != hash {
		return r.emitError("vision.image_mismatch", fmt.Sprintf("the screenshot %s was not shown to the model: its bytes hash to %s, its record commits to %s", bound(uri, 256), got, bound(hash, 64)))
	}
	r.image = &im
	return nil
}

// takeImages returns the images to show with the next Navigator call
// (the newest queued, or none) and forgets them.
func (r *run) takeImages() []llm.Image {
	if r.image == nil {
		return nil
	}
	im := *r.image
	r.image = nil
	return []llm.Image{im}
}

// noteEscalation notes why the session should escalate before the
// Navigator is asked again; the first reason since the last call stands.
func (r *run) noteEscalation(why string) {
	if r.escalateWhy == "" {
		r.escalateWhy = why
	}
}

// escalate runs the session's own vision escalation when one is due (see
// "Vision escalation"). The caller then observes the page again.
func (r *run) escalate() *ending {
	why := r.escalateWhy
	r.escalateWhy = ""
	switch {
	case why == "", !r.vision, r.image != nil, r.escalations >= MaxVisionEscalations,
		r.maxActions-r.executed < 2:
		return nil
	}
	r.escalations++
	a := r.uniqueIDs([]contract.Action{visionAction("vision-"+strconv.Itoa(r.escalations), fmt.Sprintf("aegis: vision escalation after %s", why))})[0]
	progress, feedback, denied := len(r.progress), len(r.feedback), r.denied
	r.synthetic = true
	out, end := r.handle(a, &batchPos{})
	r.synthetic = false
	if end != nil {
		return end
	}
	if out.outcome != navigator.OutcomeOK {
		// Recorded (decision, error event); the Navigator asked for
		// nothing, so it hears nothing of it.
		r.progress, r.feedback, r.denied = r.progress[:progress], r.feedback[:feedback], denied
	}
	return nil
}
