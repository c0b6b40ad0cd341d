package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/navigator"
)

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
