package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/navigator"
)

// What the session does with an action the gate paused: ask the approver
// (run.approve), grant the approval or record the pause as a denial, and
// remember what was refused so that it is not asked again.

// approve asks the approver about a paused action. On a yes it grants an
// approval bound to the action's hash and asks the gate again; on a no, a
// timeout or a failure it records the pause as a denial.
func (r *run) approve(req gate.Request, paused gate.Decision, target *contract.Element) (gate.Decision, *ending) {
	// One approval at a time: an effect judged meanwhile waits (effects).
	r.approveMu.Lock()
	defer r.approveMu.Unlock()
	a := req.Action
	evURL := req.ActiveURL
	key := intentKey(a, target, req.ActiveURL, nil)
	if f := r.refused[key]; f != nil {
		// Asked and refused already: the answer stands for the session,
		// and nobody is shown a question that will not be asked.
		return r.refusedAgain(f, paused)
	}
	reasons := append(append([]contract.Reason(nil), paused.ApprovalReasons...), paused.RiskReasons...)
	var why []string
	for _, rs := range reasons {
		why = append(why, rs.Rule)
	}
	if e := r.emit(contract.StreamEvent{
		Type: contract.EventApprovalRequired, ActionID: bound(a.ID, 128), ActionType: a.Type, URL: &evURL,
		Summary: bound(fmt.Sprintf("%s (risk %s: %s)", DescribeAction(a, target), paused.Risk, strings.Join(why, ", ")), 2000),
	}); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return paused, &end
	}
	rule, msg := RuleApprovalUnavailable, "no approval store: nothing can be approved"
	var ans ApprovalAnswer
	if r.cfg.Approvals != nil {
		actx, cancel := context.WithTimeout(r.ctx, r.cfg.ApprovalTimeout)
		t0 := time.Now()
		var err error
		ans, err = r.cfg.Approver.Approve(actx, filterRequest(r.cfg.Secrets, ApprovalRequest{
			SessionID: r.id, Action: a, Target: target, URL: req.ActiveURL, Risk: paused.Risk,
			Reasons: reasons, ActionHash: paused.ActionHash,
		}))
		r.t.Approval += time.Since(t0)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if e, ok := r.ctxEnding(); ok {
			return paused, &e
		}
		if rl, m := r.refusal(ans, err, timedOut, "action"); rl != "" {
			rule, msg, ans.Approved = rl, m, false
			if rl == RuleApprovalDenied {
				r.refuse(key, ans, DescribeAction(a, target))
			}
		}
	}
	if ans.Approved {
		id, rl, m := r.grantFor(paused, ans)
		if rl != "" {
			rule, msg = rl, m
		} else {
			req.ApprovalID = id
			req.Now = r.now()
			d, end := r.decide(req, &ans)
			if end != nil {
				return d, end
			}
			decision := contract.ApprovalDeny
			if d.Allow {
				decision = contract.ApprovalApprove
				r.approved++
			}
			if e := r.emit(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: decision}); e != nil {
				end := r.fail("evidence", "cannot record", e)
				return d, &end
			}
			return d, nil
		}
	}
	// The pause becomes a denial, recorded as a decision of its own so that
	// decisions.jsonl ends every proposed action with its final result.
	d, end := r.sessionDenial(paused, rule, msg)
	if end != nil {
		return d, end
	}
	if e := r.emit(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: bound(a.ID, 128), Decision: contract.ApprovalDeny}); e != nil {
		end := r.fail("evidence", "cannot record", e)
		return d, &end
	}
	return d, nil
}

// refusal says why an approver's answer about an action or an effect
// (what) does not approve it; rule is "" when it does.
func (r *run) refusal(ans ApprovalAnswer, err error, timedOut bool, what string) (rule, msg string) {
	switch {
	case timedOut && !ans.Approved:
		return RuleApprovalTimeout, fmt.Sprintf("no approval within %v: denied", r.cfg.ApprovalTimeout)
	case err != nil:
		return RuleApprovalUnavailable, "the approver failed: " + err.Error()
	case !ans.Approved:
		return RuleApprovalDenied, "denied by " + ans.who() + " (the " + what + " was refused)"
	}
	return "", ""
}

// grantFor grants the approval an approver gave for a paused decision's
// action hash and returns its id; rule and msg say why when it cannot be
// granted. A rule (no person) cannot approve a high-risk action, and an
// approver on any other channel is not named like a rule
// (evidence.RulePrefix). The approver's name is recorded with the secret values in it masked, as
// the evidence writer would mask them, so that the approval's MAC covers
// the approval as recorded.
func (r *run) grantFor(paused gate.Decision, ans ApprovalAnswer) (id, rule, msg string) {
	if ans.via() == contract.ApprovalChannelRule && paused.Risk == contract.RiskHigh {
		return "", RuleApprovalUnavailable, "the approval of " + ans.who() + " was not granted: no rule approves a high-risk action, only a person"
	}
	approver := ans.Approver
	if approver == "" {
		approver = "unnamed approver"
	}
	if r.cfg.Secrets.Len() > 0 {
		approver = r.cfg.Secrets.Redact(approver)
	}
	approver = Sanitize(approver, 256)
	if ch := ans.via(); ch != contract.ApprovalChannelRule && strings.HasPrefix(approver, evidence.RulePrefix) {
		// Only a rule is named "policy:": a person's approval named like
		// one would read as the rule's (the verifier refuses it too).
		return "", RuleApprovalUnavailable, fmt.Sprintf("the approval of %s was not granted: an approval on the %s channel cannot name its approver %q, the name of a rule", ans.who(), ch, approver)
	}
	grant, err := r.cfg.Approvals.Grant(paused.ActionHash, approver, r.now(), ApprovalTTL)
	if err != nil {
		return "", RuleApprovalUnavailable, "the approval could not be granted: " + err.Error()
	}
	return grant.ID, "", ""
}

// stampApproval gives the approval decision d carries, when it is the one
// granted as id from ans, the channel ans came on and its MAC under the
// session's approval key (evidence.ApprovalMAC): what the bundle's
// verifier checks once the seal reveals the key (evidence/FORMAT.md,
// section 8, rule 16).
func (r *run) stampApproval(d *contract.DecisionRecord, id string, ans ApprovalAnswer) error {
	if d.Approval == nil || d.Approval.ID != id {
		return nil
	}
	a := *d.Approval
	a.Channel = ans.via()
	mac, err := evidence.ApprovalMAC(r.approvalKey, d.DecisionID, a)
	if err != nil {
		return err
	}
	a.MAC = mac
	d.Approval = &a
	return nil
}

// sessionDenial records a denial the session adds to a gate decision (an
// approval refused, the action budget used up): a copy of the decision
// with result denied, the session's rule as its reason, its own time and
// its own decision id (gate.DecisionID over the same fields).
func (r *run) sessionDenial(g gate.Decision, rule, msg string) (gate.Decision, *ending) {
	d := deniedCopy(g, rule, msg, r.now())
	if e := r.record(func() error { return r.w.Decision(d.DecisionRecord) }); e != nil {
		end := r.fail("evidence", "cannot record the decision", e)
		return d, &end
	}
	return d, nil
}

// refusal is an action (or an effect of one) an approver refused in this
// session. The session keeps them in memory (run.refused, under
// run.approveMu), by intentKey: the same action proposed again is refused
// without asking again.
type refusal struct {
	who    string // who refused it, for messages (ApprovalAnswer.who)
	what   string // the action or effect, described
	person bool   // a person refused it, not a rule
	again  int    // how many times it was proposed again since
	age    int    // Navigator steps begun since (ageRefusal)
}

// sentence says the refusal, as in `denied by a person in the popup:
// click #pay "Pay"`.
func (f *refusal) sentence() string { return "denied by " + f.who + ": " + f.what }

// maxReproposed is how many times the navigator may propose again an
// action an approver refused (each refused without asking) before the
// session ends by that refusal.
const maxReproposed = 2

// refuse remembers that ans refused what (described) under key; the
// caller holds r.approveMu.
func (r *run) refuse(key string, ans ApprovalAnswer, what string) {
	f := &refusal{who: ans.who(), what: what, person: ans.person()}
	r.refused[key] = f
	r.lastRefusal = f
}

// ageRefusal counts a Navigator step begun since the latest refusal.
func (r *run) ageRefusal() {
	r.approveMu.Lock()
	defer r.approveMu.Unlock()
	if r.lastRefusal != nil {
		r.lastRefusal.age++
	}
}

// refusedAgain answers an action proposed again after an approver refused
// it (f): it is denied without asking, and the navigator is told so; once
// it was proposed again maxReproposed times, the session ends by that
// refusal. The caller holds r.approveMu.
func (r *run) refusedAgain(f *refusal, paused gate.Decision) (gate.Decision, *ending) {
	f.again++
	d, end := r.sessionDenial(paused, RuleApprovalDenied, "denied by "+f.who+" earlier in this session: the same action is not asked again")
	if end == nil && f.again >= maxReproposed {
		e := r.refusedEnd(f, "the navigator proposed it again and found no other way")
		end = &e
	}
	return d, end
}

// refusedEnd is how a session ends for want of a way past refusal f
// (why): aborted when a person refused, failed (code "refused") when a
// rule did, such as --approve=deny, whose refusal is the policy's answer
// rather than a person's decision.
func (r *run) refusedEnd(f *refusal, why string) ending {
	summary := bound(f.sentence()+"; "+why, 2000)
	if f.person {
		return ending{status: contract.SessionAborted, summary: summary}
	}
	return r.fail("refused", summary, nil)
}

// refusedEnding is end, unless the session failed for want of a way
// forward right after an approver refused an action, which is then what
// stopped it: a loop, too many denials or the navigator giving up in the
// step of the refusal or the next, or an offline navigator (whose fixed
// steps have no other way) stopping at the batch the refusal is the
// feedback of. Then it ends by that refusal (refusedEnd). A failure that
// comes later, or of another kind, stays what it is.
func (r *run) refusedEnding(end ending) ending {
	r.approveMu.Lock()
	f := r.lastRefusal
	age := 0
	if f != nil {
		age = f.age
	}
	r.approveMu.Unlock()
	if end.status != contract.SessionFailed || end.err == nil || f == nil {
		return end
	}
	var rejected *navigator.RejectedError
	switch {
	case end.err.Code == "loop", end.err.Code == "denials", end.err.Code == "navigator_gave_up":
		if age > 1 {
			return end
		}
	case end.err.Code == "navigator" && errors.As(end.err.Err, &rejected):
		if !slices.ContainsFunc(rejected.Feedback, func(fb navigator.Feedback) bool { return fb.Code == RuleApprovalDenied }) {
			return end
		}
	default:
		return end
	}
	return r.refusedEnd(f, "the navigator found no other way ("+end.summary+")")
}

// intentKey identifies what an action would do, whatever the model or the
// page called it: its type and parameters (not its id, reason or tags),
// the element the driver resolved (then not the selector the model wrote:
// "#pay" and "button#pay" are one element), the origin and path of the page
// it runs on (not its query or fragment, which a page may change at will),
// and for an effect of the action what it sends where (method, origin,
// path). It lives in memory only (the text of a redacted action is part of
// it), to recognise an action a person refused when the model proposes it
// again.
func intentKey(a contract.Action, target *contract.Element, activeURL string, eff *contract.Effect) string {
	var effect []string
	if eff != nil {
		effect = []string{string(eff.Kind), eff.Method, eff.Origin, eff.Path}
	}
	if target != nil {
		a.Selector = ""
	}
	if u, err := url.Parse(activeURL); err == nil {
		u.RawQuery, u.Fragment, u.RawFragment, u.User = "", "", "", nil
		activeURL = u.String()
	}
	b, _ := json.Marshal(struct {
		Type                       contract.ActionType
		Selector, URL, Text, Value string
		Direction, Extract         string
		DurationMs                 int
		Target                     *contract.Element
		ActiveURL                  string
		Effect                     []string
	}{a.Type, a.Selector, a.URL, a.Text, a.Value, string(a.Direction), string(a.Extract), a.DurationMs, target, activeURL, effect})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
