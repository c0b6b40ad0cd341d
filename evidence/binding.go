package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
)

// Decided = executed (FORMAT.md, section 8, rule 15): a decision records
// the action the gate judged (action) and the page it judged it on
// (activeUrl); its actionHash recomputes from them (package actionhash,
// the one implementation the gate uses too), but for what is keyed or
// masked; and the action line that the decision authorizes holds exactly
// that action. In an aegis-evidence/2 bundle every decision that lets an
// action run records them (fail closed: a decision stripped of its action
// is refused, not skipped); an aegis-evidence/1 bundle is checked where
// its decisions record them, and the report says what was not. The writer
// applies the rule before it writes and the verifier after it reads, as
// the rules of check.go.

// ErrNotDecided is wrapped by the error of Writer.Action when the action
// it recorded differs from the action the decision that allowed it
// judged: the action is recorded (the bundle must say what ran) and the
// bundle will not verify.
var ErrNotDecided = errors.New("evidence: the executed action differs from the decided one")

// memberMasked is the member in which a decision lists where the writer
// masked it (JSON Pointers): contract.DecisionRecord.Masked.
const memberMasked = "masked"

// maskMarks are the texts the writer puts in place of a masked value
// (secretPlaceholder, RedactedText). A string the writer masked holds
// one; a page may write them too, so in an aegis-evidence/2 bundle only
// memberMasked says what was masked.
var maskMarks = [][]byte{[]byte(RedactedText), []byte(secrets.Prefix)}

// hashedMembers are the members of a decision the action hash covers.
var hashedMembers = []string{"action", "activeUrl", "target", "effect"}

// requiresAction reports whether a bundle of the format version requires
// every decision that lets an action run to record it (rule 15).
func requiresAction(formatVersion string) bool {
	return formatVersion != contract.ManifestFormatVersion1
}

// decided is what the latest decision about an action id says of it:
// whether it allows the action, the canonical bytes of the action it
// judged (nil when the decision records none: an aegis-evidence/1 bundle),
// and how many decisions approved the action since its last action line.
type decided struct {
	allow    bool
	approved bool // the latest decision's result is approved
	action   []byte
	id       string // the decision's decisionId, for messages
	// approvals counts the decisions with result approved about the
	// action id since its last action line or the last decision about it
	// that allowed nothing, whichever came later (rule 2).
	approvals int
}

// decidedAction returns the canonical bytes of a decision's action, nil
// when it records none.
func decidedAction(r rec) ([]byte, error) {
	a := r.at("action")
	if !a.present() {
		return nil, nil
	}
	return canonjson.EncodeValue(a.value())
}

// checkBinding applies rule 15 to a decision record: its masked list
// names strings that hold a placeholder; the action it records is the
// one actionId names; in a bundle that requires it (strict), a decision
// that allows records action and activeUrl; and its actionHash
// recomputes from what it records when the hash is recomputable.
func checkBinding(r rec, action []byte, strict bool) error {
	masked, err := maskedPointers(r)
	if err != nil {
		return err
	}
	if a := r.at("action"); a.present() && !r.at("actionId").is(a.at("id").str()) {
		return fmt.Errorf("actionId %q, but the action it records has id %q", r.at("actionId").str(), a.at("id").str())
	}
	url := r.at("activeUrl")
	if strict && r.at("allow").isTrue() && (action == nil || !url.present()) {
		return fmt.Errorf("a decision that allows an action must record the action and activeUrl (format %s)", contract.ManifestFormatVersion)
	}
	if action == nil || !url.present() || r.at("action").at("redact").isTrue() {
		return nil // nothing to recompute, or keyed
	}
	if strict {
		if hashedMasked(masked) {
			return nil
		}
	} else if holdsMark(r) {
		return nil // aegis-evidence/1: the writer did not say where it masked
	}
	return checkActionHash(r)
}

// maskedPointers returns a decision's masked list, having checked that
// each pointer names a string of the record that holds a placeholder.
func maskedPointers(r rec) ([]string, error) {
	list, _ := r.at(memberMasked).value().([]any)
	out := make([]string, 0, len(list))
	for _, p := range list {
		ptr, _ := p.(string)
		v, ok := resolvePointer(r, ptr)
		if !ok || !hasMark([]byte(v)) {
			return nil, fmt.Errorf("masked lists %q, which is not a string of the record holding %s or {{secret:NAME}}", ptr, RedactedText)
		}
		out = append(out, ptr)
	}
	return out, nil
}

// resolvePointer returns the string a JSON Pointer (RFC 6901) names in a
// record.
func resolvePointer(r rec, ptr string) (string, bool) {
	if !strings.HasPrefix(ptr, "/") {
		return "", false
	}
	cur := r.value()
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = pointerUnescaper.Replace(tok)
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[tok]
			if !ok {
				return "", false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) || strconv.Itoa(i) != tok {
				return "", false
			}
			cur = t[i]
		default:
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}

// hashedMasked reports whether a masked pointer lies in a member the
// action hash covers.
func hashedMasked(masked []string) bool {
	for _, p := range masked {
		for _, m := range hashedMembers {
			if p == "/"+m || strings.HasPrefix(p, "/"+m+"/") {
				return true
			}
		}
	}
	return false
}

// holdsMark reports whether a hashed member of a decision holds a
// placeholder: the aegis-evidence/1 rule, which a page's literal text
// can trigger too.
func holdsMark(r rec) bool {
	for _, m := range hashedMembers {
		if v := r.at(m); v.present() {
			b, err := canonjson.EncodeValue(v.value())
			if err != nil || hasMark(b) {
				return true
			}
		}
	}
	return false
}

func hasMark(b []byte) bool {
	for _, m := range maskMarks {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}

// checkActionHash recomputes a decision's actionHash (actionhash.Of over
// action, activeUrl, sessionId, target, and effect for a decision about
// an effect). The session's own denial of an effect the browser refused
// (refusedCopy) may instead keep the hash of the decision it copies, the
// action's without effect: a denial authorizes nothing and consumes no
// approval, so either binds it to its action.
func checkActionHash(r rec) error {
	var a contract.Action
	if err := decodeTree(r.at("action").value(), &a); err != nil {
		return fmt.Errorf("action: %w", err)
	}
	var el *contract.Element
	if t := r.at("target"); t.present() {
		el = new(contract.Element)
		if err := decodeTree(t.value(), el); err != nil {
			return fmt.Errorf("target: %w", err)
		}
	}
	var eff *contract.Effect
	if e := r.at("effect"); e.present() {
		eff = new(contract.Effect)
		if err := decodeTree(e.value(), eff); err != nil {
			return fmt.Errorf("effect: %w", err)
		}
	}
	sid, url, got := r.at("sessionId").str(), r.at("activeUrl").str(), r.at("actionHash").str()
	want := actionhash.Of(sid, url, a, el, eff)
	if got == want {
		return nil
	}
	if eff != nil && refusedCopy(r) && got == actionhash.Of(sid, url, a, el, nil) {
		return nil
	}
	members := "action, activeUrl, sessionId and target"
	if eff != nil {
		members = "action, activeUrl, sessionId, target and effect"
	}
	return fmt.Errorf("actionHash %s, but the %s it records hash to %s", got, members, want)
}

// refusedCopy reports whether a decision about an effect is the session's
// own denial of an effect the browser's boundary refused by itself: result
// denied, and exactly one reason, of rule effect_refused.
func refusedCopy(r rec) bool {
	reasons, _ := r.at("reasons").value().([]any)
	return r.at("result").is(string(contract.ResultDenied)) && len(reasons) == 1 &&
		recOf(reasons[0]).at("rule").is(contract.RuleEffectRefused)
}

// checkDecided checks an action line against what the latest decision
// about its id decided: the action it records is the decided one, byte
// for byte (both masked alike), and an action let run by an approval was
// approved exactly once since its last action line or the last decision
// about it that allowed nothing. A decision that
// records no action (an aegis-evidence/1 bundle) is not compared: compared
// says whether it was.
func checkDecided(line rec, d decided) (compared bool, err error) {
	if d.approved && d.approvals != 1 {
		return false, fmt.Errorf("action approved by %d decisions since its last run or refusal, want exactly one (decision %s)", d.approvals, d.id)
	}
	if d.action == nil {
		return false, nil
	}
	got, err := canonjson.EncodeValue(line.at("action").value())
	if err != nil {
		return false, err
	}
	if !bytes.Equal(got, d.action) {
		return true, fmt.Errorf("%w: the action line holds %s, decision %s judged %s", ErrNotDecided, got, d.id, d.action)
	}
	return true, nil
}
