package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/navigator"
)

// Effects: what the page does on the network, judged as part of the action
// that caused it (driver.Effects).
//
// The driver calls Judge and Refused from its own goroutines, several at
// once, while the session's goroutine is inside driver.Act (most of the
// time) or elsewhere (a page's timer fires while the model thinks). An
// effect is attributed to the action being acted on; when none is, to the
// last action handed to the driver. Before the first action (the task's
// first navigation) reaches the driver nothing the task did can have caused
// an effect: such an effect is refused and recorded as an error event of
// the session's start (effect.before_start), with no decision record,
// since there is no action it could belong to.
//
// Judge asks the gate about the effect (gate.Request.Effect, with the
// action's request as it was judged); a paused effect goes to the approver
// like a paused action, one approval at a time with the session's own, and
// the grant is bound to the effect decision's ActionHash. The decisions are
// kept in a mutex-guarded list and written by the session's goroutine
// (drainEffects) after the action's record, at every step and at the end:
// every effect decision follows the action it belongs to in the bundle. The
// approval_required and approval_resolved events of an effect are queued on
// the evidence writer's queue at once instead (the queue is safe for any
// goroutine), because an approver on the live channel answers the
// approval_required event it was sent while the action is still running.
//
// A page that floods (10,000 beacons) does not flood the bundle: at most
// MaxEffectRecords effects are recorded per action; beyond them Refused
// effects are only counted, and Judge refuses without asking the gate (fail
// closed: nothing unrecorded goes through), and one error event
// (effect.limit) says how many.

// MaxEffectRecords bounds the effects recorded per action.
const MaxEffectRecords = 32

// Rules of the decision records the session writes itself about effects.
const (
	// RuleEffectRefused: the driver's boundary refused the effect by
	// itself (an origin outside the allowlist, a download, a peer
	// channel); Effect.Refused says why.
	RuleEffectRefused = "effect_refused"
)

// subject is an action effects are attributed to: its gate request and its
// final decision (allowed or approved). Its counts are guarded by
// effects.mu.
type subject struct {
	req    gate.Request
	dec    gate.Decision
	step   int // the Navigator call that proposed it
	index  int // its position in the action budget
	budget int
	kept   int // effects recorded
	over   int // effects beyond MaxEffectRecords: counted only
	told   int // of them, those an effect.limit event reported
}

// effectNote is one effect waiting to be written: its decisions in order
// (a paused one is followed by the approved or refused one), none yet for
// a refused effect (drainEffects makes it).
type effectNote struct {
	subj   *subject
	effect contract.Effect
	recs   []contract.DecisionRecord
}

// effects is the session's driver.Effects.
type effects struct {
	r      *run
	ctx    context.Context // ends when the session ends: in-flight approvals give up
	cancel context.CancelFunc

	mu      sync.Mutex
	acting  *subject // the action inside driver.Act
	last    *subject // the last action handed to the driver
	notes   []effectNote
	early   []contract.Effect // effects before the first action (bounded)
	earlyN  int               // all of them
	limited []*subject        // subjects whose effects went over the bound
	stamp   time.Time         // the last decision time handed out
	ending  bool              // no more approvals: paused effects are refused
	closed  bool              // nothing more is recorded
	flight  sync.WaitGroup    // Judge calls in progress
}

func newEffects(r *run) *effects {
	ctx, cancel := context.WithCancel(r.ctx)
	return &effects{r: r, ctx: ctx, cancel: cancel}
}

// now returns the decision time of an effect: the session's clock, but
// strictly after the last one handed out, so that two effects of one
// action never share a decision id (gate.DecisionID).
func (e *effects) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nowLocked()
}

func (e *effects) nowLocked() time.Time {
	t := e.r.now().UTC()
	if !t.After(e.stamp) {
		t = e.stamp.Add(time.Nanosecond)
	}
	e.stamp = t
	return t
}

// acts marks the start (s non-nil) and the end (nil) of driver.Act.
func (e *effects) acts(s *subject) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s != nil {
		e.acting, e.last = s, s
	} else {
		e.acting = nil
	}
}

// attribute returns the action an effect is attributed to, reserving a
// record for it; ok is false when the action is over its bound (the effect
// is counted). nil, true: before the first action.
func (e *effects) attribute() (s *subject, ok bool) {
	s = e.acting
	if s == nil {
		s = e.last
	}
	if s == nil {
		return nil, true
	}
	if s.kept >= MaxEffectRecords {
		if s.over == 0 {
			e.limited = append(e.limited, s)
		}
		s.over++
		return s, false
	}
	s.kept++
	return s, true
}

// errClosed refuses an effect reported after the session stopped recording.
var errClosed = errors.New("session: the session is over: nothing more may happen on its page")

// Judge asks the gate about a state-changing request the page makes; see
// driver.Effects. A non-nil error refuses the request.
func (e *effects) Judge(ctx context.Context, eff contract.Effect) error {
	if !knownKind(eff.Kind) {
		// A driver that reports what it does not know is refused, not
		// guessed at (cleanEffect would record it as a request).
		return fmt.Errorf("session: an effect of unknown kind %q is refused", clip(string(eff.Kind), 32))
	}
	eff = cleanEffect(eff)
	eff.Refused = ""
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errClosed
	}
	s, ok := e.attribute()
	if s == nil {
		e.earlyLocked(eff)
		e.mu.Unlock()
		return fmt.Errorf("session: %s before the task's first page was opened: refused", describeEffect(eff))
	}
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("session: action %s caused more than %d effects: %s refused", s.req.Action.ID, MaxEffectRecords, describeEffect(eff))
	}
	e.flight.Add(1)
	now := e.nowLocked()
	e.mu.Unlock()
	defer e.flight.Done()

	req := s.req
	req.Effect, req.ApprovalID, req.Now = &eff, "", now
	d := e.decide(ctx, req)
	note := effectNote{subj: s, effect: eff, recs: []contract.DecisionRecord{d.DecisionRecord}}
	if d.Result == contract.ResultPaused {
		d = e.approve(ctx, req, d, &note)
	}
	e.mu.Lock()
	e.notes = append(e.notes, note)
	e.mu.Unlock()
	if d.Allow {
		return nil
	}
	return fmt.Errorf("session: %s: %s by the policy", describeEffect(eff), d.Result)
}

// Refused records an effect the driver's boundary refused by itself.
func (e *effects) Refused(eff contract.Effect) {
	eff = cleanEffect(eff)
	if eff.Refused == "" {
		eff.Refused = "refused by the browser boundary"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	s, ok := e.attribute()
	switch {
	case s == nil:
		e.earlyLocked(eff)
	case ok:
		e.notes = append(e.notes, effectNote{subj: s, effect: eff})
	}
}

func (e *effects) earlyLocked(eff contract.Effect) {
	e.earlyN++
	if len(e.early) < MaxEffectRecords {
		e.early = append(e.early, eff)
	}
}

// decide asks the gate about an effect; the record names the effect even
// when the gate does not (a policy without effect rules).
func (e *effects) decide(ctx context.Context, req gate.Request) gate.Decision {
	d := e.r.cfg.Gate.Decide(ctx, req)
	if d.Effect == nil {
		eff := *req.Effect
		d.Effect = &eff
	}
	return d
}

// approve asks the approver about a paused effect, one approval at a time
// with the session's own; see run.approve. The decisions go into note.
func (e *effects) approve(ctx context.Context, req gate.Request, paused gate.Decision, note *effectNote) gate.Decision {
	r := e.r
	r.approveMu.Lock()
	defer r.approveMu.Unlock()
	a := req.Action
	eff := *req.Effect
	rule, msg := RuleApprovalUnavailable, "no approval store: nothing can be approved"
	e.mu.Lock()
	ending := e.ending
	e.mu.Unlock()
	var ans ApprovalAnswer
	asked := false
	key := intentKey(a, req.Target, req.ActiveURL, &eff)
	f := r.refused[key]
	switch {
	case ending:
		msg = "the session is ending: nothing more can be approved"
	case f != nil:
		// Refused already: not asked again (see run.approve).
		f.again++
		rule, msg = RuleApprovalDenied, "denied by "+f.who+" earlier in this session: the same effect is not asked again"
	case r.cfg.Approvals != nil:
		reasons := append(append([]contract.Reason(nil), paused.ApprovalReasons...), paused.RiskReasons...)
		evURL := req.ActiveURL
		if !e.queue(contract.StreamEvent{
			Type: contract.EventApprovalRequired, ActionID: bound(a.ID, 128), ActionType: a.Type, URL: &evURL,
			Summary: bound(fmt.Sprintf("%s (risk %s: %s)", DescribeEffect(a, req.Target, eff), paused.Risk, ruleList(reasons)), 2000),
		}) {
			msg = "the session is ending: nothing more can be approved"
			break
		}
		asked = true
		actx, cancel := context.WithTimeout(e.ctx, r.cfg.ApprovalTimeout)
		stop := context.AfterFunc(ctx, cancel)
		var err error
		ans, err = r.cfg.Approver.Approve(actx, filterRequest(r.cfg.Secrets, ApprovalRequest{
			SessionID: r.id, Action: a, Target: req.Target, URL: req.ActiveURL, Risk: paused.Risk,
			Reasons: reasons, ActionHash: paused.ActionHash, Effect: &eff,
		}))
		timedOut := actx.Err() != nil && e.ctx.Err() == nil && ctx.Err() == nil
		stop()
		cancel()
		if e.ctx.Err() != nil || ctx.Err() != nil {
			rule, msg, ans.Approved = RuleApprovalUnavailable, "the session or the request ended before an answer", false
		} else if rl, m := r.refusal(ans, err, timedOut, "effect"); rl != "" {
			rule, msg, ans.Approved = rl, m, false
			if rl == RuleApprovalDenied {
				r.refuse(key, ans, DescribeEffect(a, req.Target, eff))
			}
		}
	}
	if ans.Approved {
		id, rl, m := r.grantFor(paused, ans)
		if rl != "" {
			rule, msg = rl, m
		} else {
			req.ApprovalID, req.Now = id, e.now()
			d := e.decide(ctx, req)
			if err := r.stampApproval(&d.DecisionRecord, id, ans); err != nil {
				// The key is the session's own: this cannot happen; the
				// effect is refused all the same.
				rule, msg = RuleApprovalUnavailable, "the approval could not be recorded: "+err.Error()
				d = deniedCopy(paused, rule, msg, e.now())
				note.recs = append(note.recs, d.DecisionRecord)
				e.queue(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: contract.ApprovalDeny})
				return d
			}
			note.recs = append(note.recs, d.DecisionRecord)
			decision := contract.ApprovalDeny
			if d.Allow {
				decision = contract.ApprovalApprove
			}
			e.queue(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: decision})
			return d
		}
	}
	d := deniedCopy(paused, rule, msg, e.now())
	note.recs = append(note.recs, d.DecisionRecord)
	if asked {
		e.queue(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: contract.ApprovalDeny})
	}
	return d
}

// queue writes an event from a goroutine other than the session's, through
// the evidence writer's queue (safe for any goroutine); false once the
// session stopped recording.
func (e *effects) queue(ev contract.StreamEvent) bool {
	r := e.r
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || r.rec == nil {
		return false
	}
	ev.Timestamp = stamp(r.now())
	ev = filterEvent(r.cfg.Secrets, ev)
	// A failed write is sticky in the queue: it fails the session at its
	// next record or flush.
	_ = r.rec.add(func() error { return r.w.Event(ev) })
	return true
}

// end stops approvals (paused effects are refused from now on) and ends
// those in progress; the session calls it when it starts to end.
func (e *effects) end() {
	e.mu.Lock()
	e.ending = true
	e.mu.Unlock()
	e.cancel()
}

// close stops recording effects (later ones are refused unrecorded) and
// waits for the Judge calls in progress; the session calls it after the
// driver is closed, then drains what is left.
func (e *effects) close() {
	e.end()
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.flight.Wait()
}

// overflow is a count of effects an action caused beyond its bound, not
// yet reported.
type overflow struct {
	action contract.Action
	n      int
}

// take returns the notes and early effects waiting, and the effects
// counted beyond their action's bound since the last call.
func (e *effects) take() (notes []effectNote, early []contract.Effect, earlyN int, over []overflow) {
	e.mu.Lock()
	defer e.mu.Unlock()
	notes, e.notes = e.notes, nil
	early, e.early = e.early, nil
	earlyN, e.earlyN = e.earlyN, 0
	for _, s := range e.limited {
		if s.over > s.told {
			over = append(over, overflow{s.req.Action, s.over - s.told})
			s.told = s.over
		}
	}
	return notes, early, earlyN, over
}

// drainEffects writes the effects judged or refused since the last call:
// each one's decision records, an error event for a denied one, a progress
// line (OnStep), and feedback for the Navigator about a denied navigation,
// state-changing request, download or peer channel. Only the session's
// goroutine calls it.
func (r *run) drainEffects() error {
	if r.eff == nil {
		return nil
	}
	notes, early, earlyN, over := r.eff.take()
	for _, eff := range early {
		if err := r.emitError("effect.before_start", describeEffect(eff)+": refused, before the task's first page was opened"+refusedWhy(eff)); err != nil {
			return err
		}
	}
	if earlyN > len(early) {
		if err := r.emitError("effect.before_start", fmt.Sprintf("%d more effects before the task's first page was opened were refused and not recorded one by one", earlyN-len(early))); err != nil {
			return err
		}
	}
	for _, n := range notes {
		if err := r.writeEffect(n); err != nil {
			return err
		}
	}
	for _, o := range over {
		if err := r.emitError("effect.limit", fmt.Sprintf("action %s (%s) caused more than %d effects: %d more were refused and not recorded one by one", bound(o.action.ID, 128), o.action.Type, MaxEffectRecords, o.n)); err != nil {
			return err
		}
	}
	return nil
}

// writeEffect records one effect of an action.
func (r *run) writeEffect(n effectNote) error {
	s, eff := n.subj, n.effect
	a := s.req.Action
	if len(n.recs) == 0 {
		// Refused by the boundary: the session's own denial, a copy of
		// the action's decision that names the effect.
		d := deniedCopy(s.dec, RuleEffectRefused, eff.Refused, r.eff.now())
		d.RiskReasons, d.ApprovalReasons, d.RequiresApproval = nil, nil, false
		d.Effect = &eff
		n.recs = []contract.DecisionRecord{d.DecisionRecord}
	}
	for _, rec := range n.recs {
		if rec.Effect == nil {
			rec.Effect = &eff
		}
		if e := r.record(func() error { return r.w.Decision(rec) }); e != nil {
			return e
		}
	}
	final := n.recs[len(n.recs)-1]
	if final.Result == contract.ResultApproved {
		r.approved++
	}
	r.noteEffectStop(n, final)
	report := StepReport{Index: s.index, Budget: s.budget, Step: s.step, Action: a, Target: s.req.Target, Effect: &eff, Decision: final.Result, Risk: final.Risk}
	if !final.Allow {
		report.Reasons = final.Reasons
		reasons := make([]string, 0, len(final.Reasons))
		for _, rs := range final.Reasons {
			reasons = append(reasons, rs.Rule+": "+rs.Message)
		}
		what := describeEffect(eff)
		if err := r.emitError("effect.denied", fmt.Sprintf("action %s (%s): %s: denied: %s", bound(a.ID, 128), a.Type, what, strings.Join(reasons, "; "))); err != nil {
			return err
		}
		if tellNavigator(eff) {
			code := RuleEffectRefused
			if len(final.Reasons) > 0 {
				code = final.Reasons[0].Rule
			}
			r.feedback = append(r.feedback, navigator.Feedback{
				ActionID: a.ID, Kind: navigator.FeedbackEffect, Code: code, Reasons: reasons,
				Message: bound("after this action the page tried to "+effectVerb(eff)+", which the policy denied; it did not happen. Do not try to make it happen another way", 1000),
			})
		}
	}
	r.report(report)
	return nil
}

// tellNavigator reports whether the Navigator hears of a denied effect:
// navigations, state-changing requests, downloads and peer channels; a
// refused image or script of a foreign origin is in the bundle, but it is
// noise to the model.
func tellNavigator(e contract.Effect) bool {
	switch e.Kind {
	case contract.EffectNavigation, contract.EffectDownload, contract.EffectPeer:
		return true
	}
	return e.ChangesState()
}

// deniedCopy is a copy of decision g with result denied, rule as its
// reason, decided at now, with its own decision id (gate.DecisionID over
// the same fields): a denial the session adds to a gate decision.
func deniedCopy(g gate.Decision, rule, msg string, now time.Time) gate.Decision {
	now = now.UTC()
	d := g
	d.Allow = false
	d.Result = contract.ResultDenied
	d.Reasons = []contract.Reason{{Rule: rule, Message: bound(msg, 1000)}}
	d.EvaluatedAt = now.Format(time.RFC3339Nano)
	d.DecisionID = gate.DecisionID(d.PolicyVersion, d.ActionHash, d.StepIndex, now)
	d.DurationUs = 0
	d.Approval = nil
	d.FailClosed, d.Error, d.Err = false, "", nil
	return d
}

// cleanEffect bounds what the driver reported (page-controlled paths and
// field names) to what a decision record may hold.
func cleanEffect(e contract.Effect) contract.Effect {
	if !knownKind(e.Kind) {
		e.Kind = contract.EffectRequest
	}
	e.Method = strings.ToUpper(clip(e.Method, contract.MaxEffectMethod))
	e.Origin = clip(e.Origin, contract.MaxEffectOrigin)
	e.Path = clip(e.Path, contract.MaxEffectPath)
	e.ResourceType = clip(e.ResourceType, contract.MaxEffectResourceType)
	e.Refused = clip(e.Refused, contract.MaxEffectReason)
	var fields []string
	seen := map[string]bool{}
	for _, f := range e.Fields {
		if f = clip(f, contract.MaxEffectField); f != "" && !seen[f] {
			seen[f] = true
			fields = append(fields, f)
		}
	}
	sort.Strings(fields)
	if len(fields) > contract.MaxEffectFields {
		fields = fields[:contract.MaxEffectFields]
	}
	e.Fields = fields
	return e
}

// knownKind reports whether k is one of the contract's effect kinds.
func knownKind(k contract.EffectKind) bool {
	switch k {
	case contract.EffectNavigation, contract.EffectFrame, contract.EffectRequest, contract.EffectDownload, contract.EffectPeer:
		return true
	}
	return false
}

// clip makes s valid UTF-8 and cuts it to at most n characters.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) > n {
		s = text.CutRunes(s, n)
	}
	return s
}

// describeEffect renders an effect for a human in one line, such as
// `POST https://shop.example/pay (fields: amount, card)`; page-controlled
// parts are sanitized and bounded.
func describeEffect(e contract.Effect) string {
	var b strings.Builder
	switch e.Kind {
	case contract.EffectPeer:
		b.WriteString("a peer-to-peer (WebRTC) connection")
		if e.Origin != "" {
			b.WriteString(" to " + Sanitize(e.Origin, 120))
		}
	case contract.EffectDownload:
		b.WriteString("a download from " + Sanitize(e.Origin+e.Path, 200))
	default:
		m := e.Method
		if m == "" {
			m = "GET"
		}
		b.WriteString(Sanitize(m, contract.MaxEffectMethod) + " " + Sanitize(e.Origin+e.Path, 200))
		switch e.Kind {
		case contract.EffectNavigation:
			b.WriteString(" (navigation)")
		case contract.EffectFrame:
			b.WriteString(" (frame)")
		}
	}
	if len(e.Fields) > 0 {
		fs := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			fs[i] = Sanitize(f, 40)
		}
		b.WriteString(" (fields: " + Sanitize(strings.Join(fs, ", "), 200) + ")")
	}
	return b.String()
}

// effectVerb says what the page tried, for the Navigator: "POST to
// https://x.example/pay (fields: a, b)", "open a download from ...".
func effectVerb(e contract.Effect) string {
	switch e.Kind {
	case contract.EffectNavigation, contract.EffectFrame:
		return "load " + describeEffect(e)
	case contract.EffectPeer:
		return "open " + describeEffect(e)
	case contract.EffectDownload:
		return "start " + describeEffect(e)
	}
	return "send " + describeEffect(e)
}

func refusedWhy(e contract.Effect) string {
	if e.Refused == "" {
		return ""
	}
	return " (" + Sanitize(e.Refused, 300) + ")"
}

// DescribeEffect renders an effect of an action for a human in one line,
// such as `click #continue "Continue" causes POST
// https://shop.example/pay (fields: amount, card)`: what approvers are
// shown for an effect the policy holds for approval.
func DescribeEffect(a contract.Action, target *contract.Element, e contract.Effect) string {
	return DescribeAction(a, target) + " causes " + describeEffect(cleanEffect(e))
}

func ruleList(rs []contract.Reason) string {
	why := make([]string, 0, len(rs))
	for _, r := range rs {
		why = append(why, r.Rule)
	}
	return strings.Join(why, ", ")
}
