package evidence

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// Decided = executed (FORMAT.md, section 8, rule 15): a decision records
// the action the gate judged (action) and the page it judged it on
// (activeUrl); its actionHash recomputes from them (package actionhash,
// the one implementation the gate uses too), but for what is keyed or
// masked; and the action line that the decision authorizes holds exactly
// that action. The writer applies the rule before it writes and the
// verifier after it reads, as the rules of check.go.

// ErrNotDecided is wrapped by the error of Writer.Action when the action
// it recorded differs from the action the decision that allowed it
// judged: the action is recorded (the bundle must say what ran) and the
// bundle will not verify.
var ErrNotDecided = errors.New("evidence: the executed action differs from the decided one")

// maskMarks are the texts the writer puts in place of a masked value
// (secretPlaceholder, RedactedText): a hashed member holding one may
// have held a value the gate hashed and the bundle does not keep.
var maskMarks = [][]byte{[]byte(RedactedText), []byte("{{secret:")}

// decided is what the latest decision about an action id says of it:
// whether it allows the action, and the canonical bytes of the action it
// judged (nil when the decision records none: written before decisions
// recorded it).
type decided struct {
	allow  bool
	action []byte
	id     string // the decision's decisionId, for messages
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

// checkActionHash recomputes a decision's actionHash from the members it
// covers (actionhash.Of over action, activeUrl, sessionId, target) when
// the decision records action and activeUrl and the hash is recomputable:
// not for a type action with redact true (its text entered keyed, under a
// key the gate never writes), not for a decision about an effect (the
// session's copy of a refused effect keeps the action's hash), and not
// when a hashed member holds a masked value (maskMarks).
func checkActionHash(r rec, action []byte) error {
	url := r.at("activeUrl")
	if action == nil || !url.present() || r.at("effect").present() || r.at("action").at("redact").isTrue() {
		return nil
	}
	target := r.at("target")
	var targetBytes []byte
	if target.present() {
		b, err := canonjson.EncodeValue(target.value())
		if err != nil {
			return err
		}
		targetBytes = b
	}
	for _, m := range maskMarks {
		if bytes.Contains(action, m) || bytes.Contains(targetBytes, m) || bytes.Contains([]byte(url.str()), m) {
			return nil
		}
	}
	var a contract.Action
	if err := decodeTree(r.at("action").value(), &a); err != nil {
		return fmt.Errorf("action: %w", err)
	}
	var el *contract.Element
	if target.present() {
		el = new(contract.Element)
		if err := decodeTree(target.value(), el); err != nil {
			return fmt.Errorf("target: %w", err)
		}
	}
	want := actionhash.Of(r.at("sessionId").str(), url.str(), a, el, nil)
	if got := r.at("actionHash").str(); got != want {
		return fmt.Errorf("actionHash %s, but the action, activeUrl, sessionId and target it records hash to %s", got, want)
	}
	return nil
}

// checkDecided checks an action line against what the latest decision
// about its id decided: the action it records is the decided one, byte
// for byte (both masked alike). A decision that records no action (an
// older bundle) is not compared.
func checkDecided(line rec, d decided) error {
	if d.action == nil {
		return nil
	}
	got, err := canonjson.EncodeValue(line.at("action").value())
	if err != nil {
		return err
	}
	if !bytes.Equal(got, d.action) {
		return fmt.Errorf("%w: the action line holds %s, decision %s judged %s", ErrNotDecided, got, d.id, d.action)
	}
	return nil
}
