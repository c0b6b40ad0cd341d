package gate

import (
	"fmt"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// floor is the Go-side check that holds whatever the policy says: it can
// only add deny reasons.
func floor(req *Request) []contract.Reason {
	var out []contract.Reason
	if err := checkAction(&req.Action); err != nil {
		out = append(out, contract.Reason{Rule: RuleActionInvalid, Message: text.CutRunes(err.Error(), maxMessageLen)})
	}
	if req.Target != nil {
		if err := req.Target.Validate(); err != nil {
			out = append(out, contract.Reason{Rule: RuleTargetInvalid, Message: text.CutRunes(err.Error(), maxMessageLen)})
		}
	}
	if req.Effect != nil {
		if err := checkEffect(req.Effect); err != nil {
			out = append(out, contract.Reason{Rule: RuleEffectInvalid, Message: text.CutRunes(err.Error(), maxMessageLen)})
		}
		if req.Effect.Refused != "" {
			out = append(out, contract.Reason{Rule: RuleEffectRefused, Message: text.CutRunes("the browser's boundary refused this effect by itself: "+req.Effect.Refused, maxMessageLen)})
		}
	}
	if req.Action.Type == contract.ActNavigate {
		f := NormalizeURL(req.Action.URL)
		if !f.Valid || (f.Scheme != "http" && f.Scheme != "https") || f.Userinfo || f.Host == "" {
			out = append(out, contract.Reason{Rule: RuleURLFloor, Message: text.CutRunes(fmt.Sprintf("navigation target %q is not a well-formed http(s) URL without user name or password", req.Action.URL), maxMessageLen)})
		}
	}
	return out
}

// Bounds of the action contract (browser-action.schema.json), in
// characters.
const (
	maxSelector  = 2048
	maxText      = 10000
	maxValue     = 2048
	maxReason    = 2000
	maxPolicyTag = 64
	maxTags      = 16
)

// checkAction enforces the action contract's bounds that the policy does
// not look at, so that no oversized or malformed string reaches the driver
// or the evidence even under a permissive policy, and the form of what the
// policy does look at but a custom policy might not: a click, type or
// select needs a selector, and vision (a screenshot shown to the model) is
// only for an extract screenshot action.
func checkAction(a *contract.Action) error {
	for _, f := range []struct {
		name  string
		value string
		max   int
	}{
		{"id", a.ID, 128}, {"reason", a.Reason, maxReason}, {"url", a.URL, MaxURLLength},
		{"selector", a.Selector, maxSelector}, {"text", a.Text, maxText}, {"value", a.Value, maxValue},
	} {
		if !utf8.ValidString(f.value) {
			return fmt.Errorf("action field %s is not valid UTF-8", f.name)
		}
		if n := utf8.RuneCountInString(f.value); n > f.max {
			return fmt.Errorf("action field %s has %d characters, more than %d", f.name, n, f.max)
		}
	}
	if len(a.PolicyTags) > maxTags {
		return fmt.Errorf("action has %d policy tags, more than %d", len(a.PolicyTags), maxTags)
	}
	for _, t := range a.PolicyTags {
		if !utf8.ValidString(t) || utf8.RuneCountInString(t) > maxPolicyTag {
			return fmt.Errorf("action policy tag %q is not valid text of at most %d characters", text.CutRunes(t, 80), maxPolicyTag)
		}
	}
	switch a.Type {
	case contract.ActClick, contract.ActType, contract.ActSelect:
		if a.Selector == "" {
			return fmt.Errorf("a %s action needs a selector", a.Type)
		}
	}
	if a.Vision && (a.Type != contract.ActExtract || a.Extract != contract.ExtractScreenshot) {
		return fmt.Errorf("vision is only for an extract screenshot action, not a %s %s action", a.Type, text.CutRunes(string(a.Extract), 32))
	}
	return nil
}

func isPermissionLevel(p string) bool {
	switch p {
	case "disabled", "observe", "control", "full":
		return true
	}
	return false
}
