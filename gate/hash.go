package gate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/aegis-run/aegis/actionhash"
)

// ActionHash returns what an approval of req's action is bound to: the
// SHA-256, as 64 lowercase hex digits, of the canonical JSON (RFC 8785) of
//
//	{"action": ACTION, "activeUrl": URL, "sessionId": ID, "target": ELEMENT or null}
//
// where ACTION is the action as the policy sees it, except that the text of
// an action with redact true is replaced by "hmac-sha256:" and the
// HMAC-SHA-256, in lowercase hex, of the text under the gate's redaction key.
// For a request about an effect of the action (Request.Effect), the
// document also holds "effect": EFFECT, the effect as the policy sees it
// (its members as contract.Effect encodes them): an approval of "click
// #continue causing POST /pay" approves neither another effect of that
// click nor the click itself. Without an effect the document, and so the
// hash, is what it always was. ELEMENT holds the element's origin only when
// the driver reported one, for the same reason. The step index, the time
// and the approval are not part of it: re-proposing the same action on the
// same page of the same session after a pause yields the same hash.
//
// The decision record, and so the evidence bundle, stores the hash while it
// masks a redacted text everywhere else; a plain SHA-256 over a short text
// (a PIN the model types) could be brute-forced from it offline. The
// redaction key is 32 random bytes the gate draws in New and never writes
// anywhere, so the hash still binds an approval to the exact text (another
// text gives another hash) but cannot be inverted, nor recomputed by anyone,
// the auditor included, once the process is gone. That costs nothing:
// approvals are granted and consumed in the process that holds the gate
// (Approvals lives in memory), and a decision id is derived from the hash
// as recorded (DecisionID), not from the action. The hash of an action
// without redact true is the plain one, recomputable from the record's
// action, target, page and session. Two gates hash a redacted action
// differently: an approval binds within the gate that paused the action.
func (g *Gate) ActionHash(req Request) string {
	return g.actionHash(req.SessionID, req.ActiveURL, actionhash.Action(req.Action), actionhash.Element(req.Target), actionhash.Effect(req.Effect))
}

// redactKeySize is the size of a gate's redaction key, in bytes: the
// strength of SHA-256 itself.
const redactKeySize = 32

// newRedactKey draws a redaction key from crypto/rand (which does not fail
// on supported platforms; it crashes the program rather than return
// predictable bytes).
func newRedactKey() []byte {
	k := make([]byte, redactKeySize)
	rand.Read(k)
	return k
}

// fallbackRedactKey is the redaction key of a nil Gate, or of one not made
// by New: random per process, never a known key.
var fallbackRedactKey = newRedactKey()

func (g *Gate) redactKey() []byte {
	if g == nil || len(g.redact) != redactKeySize {
		return fallbackRedactKey
	}
	return g.redact
}

// redactedTextPrefix starts what the hashed document holds in place of a
// redacted text.
const redactedTextPrefix = "hmac-sha256:"

func (g *Gate) actionHash(sessionID, activeURL string, action, target, effect map[string]any) string {
	if action["redact"] == true {
		if text, ok := action["text"].(string); ok {
			m := make(map[string]any, len(action))
			for k, v := range action {
				m[k] = v
			}
			mac := hmac.New(sha256.New, g.redactKey())
			mac.Write([]byte(text))
			m["text"] = redactedTextPrefix + hex.EncodeToString(mac.Sum(nil))
			action = m
		}
	}
	return actionhash.Sum(sessionID, activeURL, action, target, effect)
}

// DecisionID derives a decision id from the record's own fields, so that an
// auditor can recompute it: "dec-" and the first 32 hex digits of SHA-256
// over "aegis-decision-v1", the policy version, the action hash (as the
// record states it: that of a redacted action is keyed, see
// Gate.ActionHash, and taken as given), the step index and the evaluation
// time (RFC 3339 with nanoseconds, UTC), joined by newlines.
func DecisionID(policyVersion, actionHash string, stepIndex int, evaluatedAt time.Time) string {
	s := "aegis-decision-v1\n" + policyVersion + "\n" + actionHash + "\n" + strconv.Itoa(stepIndex) + "\n" + evaluatedAt.UTC().Format(time.RFC3339Nano)
	sum := sha256.Sum256([]byte(s))
	return "dec-" + hex.EncodeToString(sum[:16])
}
