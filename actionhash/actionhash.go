// Package actionhash is the one implementation of the action hash: what a
// decision record's actionHash commits to and an approval is bound to
// (evidence/FORMAT.md, section 8, rule 15). The gate computes it when it
// judges an action (gate.Gate.ActionHash, which also keys a redacted
// text); the evidence verifier recomputes it from a decision record to
// check that what ran is what was decided.
//
// The hashed document is the canonical JSON (RFC 8785) of
//
//	{"action": Action(a), "activeUrl": URL, "sessionId": ID, "target": Element(t) or null[, "effect": Effect(e)]}
//
// and the hash its SHA-256 in lowercase hex.
package actionhash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// Action is the action as the policy sees it and as its hash covers it:
// the common fields (id, type, reason, policyTags), every field the action
// sets, and the fields its type requires even when zero (so a type action
// always carries redact). For a valid action it is the action's JSON
// encoding (contract.Action.MarshalJSON), member for member. It is built
// field by field, so that an action of an unknown type is still judged
// (and denied) rather than refused by MarshalJSON.
func Action(a contract.Action) map[string]any {
	tags := make([]any, len(a.PolicyTags))
	for i, t := range a.PolicyTags {
		tags[i] = t
	}
	m := map[string]any{"id": a.ID, "type": string(a.Type), "reason": a.Reason, "policyTags": tags}
	req := map[string]bool{}
	switch a.Type {
	case contract.ActNavigate:
		req["url"] = true
	case contract.ActClick:
		req["selector"] = true
	case contract.ActType:
		req["selector"], req["text"], req["redact"] = true, true, true
	case contract.ActSelect:
		req["selector"], req["value"] = true, true
	case contract.ActScroll:
		req["direction"] = true
	case contract.ActWait:
		req["durationMs"] = true
	case contract.ActExtract:
		req["extract"] = true
	}
	str := func(k, v string) {
		if v != "" || req[k] {
			m[k] = v
		}
	}
	num := func(k string, v int) {
		if v != 0 || req[k] {
			m[k] = json.Number(strconv.Itoa(v))
		}
	}
	str("url", a.URL)
	str("selector", a.Selector)
	num("timeoutMs", a.TimeoutMs)
	str("text", a.Text)
	if a.Redact || req["redact"] {
		m["redact"] = a.Redact
	}
	str("value", a.Value)
	str("direction", string(a.Direction))
	num("amountPx", a.AmountPx)
	num("durationMs", a.DurationMs)
	str("extract", string(a.Extract))
	if a.Vision {
		m["vision"] = true
	}
	return m
}

// Element is the target as the policy sees it and as the action hash
// covers it: every page-controlled field (tag, type, name, id,
// autocomplete, role, label, text), even empty, and sensitiveSelector and
// origin only when the browser reported them (so the hash of an element
// that matches no sensitive selector, described by a driver that reports
// no origin, is what it always was). nil for no element.
func Element(e *contract.Element) map[string]any {
	if e == nil {
		return nil
	}
	m := map[string]any{
		"tag": e.Tag, "type": e.Type, "name": e.Name, "id": e.ID,
		"autocomplete": e.Autocomplete, "role": e.Role, "label": e.Label, "text": e.Text,
	}
	if e.SensitiveSelector != "" {
		m["sensitiveSelector"] = e.SensitiveSelector
	}
	if e.Origin != "" {
		m["origin"] = e.Origin
	}
	return m
}

// Effect is the effect as the policy sees it (input.effect) and as the
// action hash covers it: its members as contract.Effect encodes them, the
// empty ones left out. nil for no effect.
func Effect(e *contract.Effect) map[string]any {
	if e == nil {
		return nil
	}
	m := map[string]any{"kind": string(e.Kind)}
	str := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	str("method", e.Method)
	str("origin", e.Origin)
	str("path", e.Path)
	if len(e.Fields) > 0 {
		fields := make([]any, len(e.Fields))
		for i, f := range e.Fields {
			fields[i] = f
		}
		m["fields"] = fields
	}
	str("resourceType", e.ResourceType)
	str("refused", e.Refused)
	return m
}

// Document is the hashed document: action, activeUrl, sessionId, target
// (null without one) and, for a decision about an effect, effect.
func Document(sessionID, activeURL string, action, target, effect map[string]any) map[string]any {
	doc := map[string]any{"action": action, "activeUrl": activeURL, "sessionId": sessionID, "target": nil}
	if target != nil {
		doc["target"] = target
	}
	if effect != nil {
		doc["effect"] = effect
	}
	return doc
}

// Sum is the SHA-256, in lowercase hex, of the canonical JSON of the
// document (Document) of the given members.
func Sum(sessionID, activeURL string, action, target, effect map[string]any) string {
	doc := Document(sessionID, activeURL, action, target, effect)
	b, err := canonjson.EncodeValue(doc)
	if err != nil {
		// Only invalid UTF-8 can fail here; hash the Go encoding instead,
		// which replaced it, prefixed so the two never collide.
		b = []byte(fmt.Sprintf("aegis-noncanonical:%#v", doc))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Of is the plain action hash of an action (one without a redacted text:
// that of a redacted one is keyed, see gate.Gate.ActionHash) on target,
// on the page at activeURL of the session, and of its effect when not nil.
func Of(sessionID, activeURL string, a contract.Action, target *contract.Element, effect *contract.Effect) string {
	return Sum(sessionID, activeURL, Action(a), Element(target), Effect(effect))
}
