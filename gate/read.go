package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/schemas"
)

// MaxInputBytes bounds a policy input document read by ReadInput.
const MaxInputBytes = 1 << 20

// InputError reports a policy input document that ReadInput cannot use.
type InputError struct {
	// Field is the JSON path of the offending member ("" for the document).
	Field string
	// Err says what is wrong.
	Err error
}

// Error describes the problem with the member it concerns.
func (e *InputError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("policy input: %v", e.Err)
	}
	return fmt.Sprintf("policy input: %s: %v", e.Field, e.Err)
}

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

// ReadInput reads a policy input document, the JSON form of a Request that
// "aegis policy eval" takes: seed 001's policy input (state, action,
// step_index, policy) plus the session fields the seed leaves out.
//
//	{
//	  "state": {"sessionId": "s-1", "activeUrl": "https://example.com",
//	            "policyContext": {"maxStepBudget": 25, "decisionLogId": "dec-1",
//	                              "classification": "restricted"}},
//	  "action": {"id": "a1", "type": "click", "selector": "#submit", ...},
//	  "step_index": 3,
//	  "policy": {"blocked_domains": [...], "sensitive_selectors": [...],
//	             "governed_exception": {...}, "governed_exceptions": [{...}]},
//	  "session": {"id": "s-1", "allowed_origins": ["https://example.com"],
//	              "permission": "full", "preset": "power", "approval_id": "",
//	              "classification": "restricted",
//	              "secrets": {"SHOP_PASSWORD": ["https://example.com"]}},
//	  "target": {"tag": "input", "type": "password", ...},
//	  "effect": {"kind": "request", "method": "POST", "origin": "https://example.com",
//	             "path": "/pay", "fields": ["amount"]},
//	  "now": "2026-01-23T10:00:00Z"
//	}
//
// "state" may be a whole BrowserState: members other than sessionId,
// activeUrl and policyContext.{maxStepBudget, decisionLogId,
// classification} are ignored. The classification (Session.Classification)
// is state.policyContext.classification or session.classification; both
// may be given only if equal, and neither means restricted.
// Every other object is read strictly: unknown members, duplicate keys,
// wrong types and non-integral numbers are errors (*InputError). The seed's
// single "governed_exception" (whose rule is written "rule") joins the
// "governed_exceptions" list.
//
// When the document has no session.allowed_origins (the seed's bare shape),
// the allowlist is the origin of state.activeUrl: the session may stay where
// it is. "session.secrets" are the secrets the session holds and the
// origins each is bound to (Session.Secrets); without it the session holds
// none. A missing "now" leaves Request.Now zero (the gate's clock). An
// "effect" (contract.Effect) makes the document a question about that
// effect of the action (Request.Effect). The request is a Probe: nothing
// runs on its answer.
func ReadInput(doc []byte) (Request, error) {
	var req Request
	if len(doc) > MaxInputBytes {
		return req, &InputError{Err: fmt.Errorf("larger than %d bytes", MaxInputBytes)}
	}
	// Parse first for what encoding/json lets through: duplicate keys,
	// trailing data, excessive depth.
	if _, err := schemas.Parse(doc); err != nil {
		return req, &InputError{Err: err}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return req, &InputError{Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	known := map[string]bool{"state": true, "action": true, "step_index": true, "policy": true, "session": true, "target": true, "effect": true, "now": true}
	var unknown []string
	for k := range top {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return req, &InputError{Field: unknown[0], Err: errors.New("unknown member")}
	}

	var state struct {
		SessionID     string `json:"sessionId"`
		ActiveURL     string `json:"activeUrl"`
		PolicyContext struct {
			MaxStepBudget  number `json:"maxStepBudget"`
			DecisionLogID  string `json:"decisionLogId"`
			Classification string `json:"classification"`
		} `json:"policyContext"`
	}
	if raw, ok := top["state"]; ok {
		if err := decodeLenient(raw, &state); err != nil {
			return req, &InputError{Field: "state", Err: err}
		}
	} else {
		return req, &InputError{Field: "state", Err: errors.New("missing")}
	}
	req.SessionID = state.SessionID
	req.ActiveURL = state.ActiveURL
	req.Session.DecisionLogID = state.PolicyContext.DecisionLogID
	req.Session.Classification = contract.Classification(state.PolicyContext.Classification)
	if state.PolicyContext.MaxStepBudget != "" {
		n, err := intNumber(json.Number(state.PolicyContext.MaxStepBudget))
		if err != nil {
			return req, &InputError{Field: "state.policyContext.maxStepBudget", Err: err}
		}
		req.Session.MaxStepBudget = n
	}

	raw, ok := top["action"]
	if !ok {
		return req, &InputError{Field: "action", Err: errors.New("missing")}
	}
	a, err := readAction(raw)
	if err != nil {
		return req, &InputError{Field: "action", Err: err}
	}
	req.Action = a

	if raw, ok := top["step_index"]; ok {
		var n number
		if err := decodeStrict(raw, &n); err != nil {
			return req, &InputError{Field: "step_index", Err: err}
		}
		if req.StepIndex, err = intNumber(json.Number(n)); err != nil {
			return req, &InputError{Field: "step_index", Err: err}
		}
	} else {
		return req, &InputError{Field: "step_index", Err: errors.New("missing")}
	}

	if raw, ok := top["policy"]; ok {
		var p struct {
			BlockedDomains     []string    `json:"blocked_domains"`
			SensitiveSelectors []string    `json:"sensitive_selectors"`
			GovernedException  *Exception  `json:"governed_exception"`
			GovernedExceptions []Exception `json:"governed_exceptions"`
		}
		if err := decodeStrict(raw, &p); err != nil {
			return req, &InputError{Field: "policy", Err: err}
		}
		req.Policy.BlockedDomains = p.BlockedDomains
		req.Policy.SensitiveSelectors = p.SensitiveSelectors
		if p.GovernedException != nil {
			req.Policy.GovernedExceptions = append(req.Policy.GovernedExceptions, *p.GovernedException)
		}
		req.Policy.GovernedExceptions = append(req.Policy.GovernedExceptions, p.GovernedExceptions...)
	}

	var sess struct {
		ID             string              `json:"id"`
		AllowedOrigins *[]string           `json:"allowed_origins"`
		Permission     string              `json:"permission"`
		Preset         string              `json:"preset"`
		ApprovalID     string              `json:"approval_id"`
		Secrets        map[string][]string `json:"secrets"`
		Classification string              `json:"classification"`
	}
	if raw, ok := top["session"]; ok {
		if err := decodeStrict(raw, &sess); err != nil {
			return req, &InputError{Field: "session", Err: err}
		}
	}
	if sess.ID != "" {
		if req.SessionID != "" && req.SessionID != sess.ID {
			return req, &InputError{Field: "session.id", Err: fmt.Errorf("%q differs from state.sessionId %q", sess.ID, req.SessionID)}
		}
		req.SessionID = sess.ID
	}
	if c := contract.Classification(sess.Classification); c != "" {
		if req.Session.Classification != "" && req.Session.Classification != c {
			return req, &InputError{Field: "session.classification", Err: fmt.Errorf("%q differs from state.policyContext.classification %q", c, req.Session.Classification)}
		}
		req.Session.Classification = c
	}
	req.Session.Permission = sess.Permission
	req.Session.Preset = sess.Preset
	req.ApprovalID = sess.ApprovalID
	req.Session.Secrets = sess.Secrets
	if sess.AllowedOrigins != nil {
		req.Session.AllowedOrigins = *sess.AllowedOrigins
	} else if f := NormalizeURL(req.ActiveURL); f.Valid && f.Origin != "" {
		req.Session.AllowedOrigins = []string{f.Origin}
	}

	if raw, ok := top["target"]; ok {
		var e contract.Element
		if err := decodeStrict(raw, &e); err != nil {
			return req, &InputError{Field: "target", Err: err}
		}
		req.Target = &e
	}
	if raw, ok := top["effect"]; ok {
		var e contract.Effect
		if err := decodeStrict(raw, &e); err != nil {
			return req, &InputError{Field: "effect", Err: err}
		}
		req.Effect = &e
	}
	if raw, ok := top["now"]; ok {
		var s string
		if err := decodeStrict(raw, &s); err != nil {
			return req, &InputError{Field: "now", Err: err}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return req, &InputError{Field: "now", Err: errors.New("not an RFC 3339 time")}
		}
		req.Now = t
	}
	req.Probe = true // a policy input document is a question: nothing runs on its answer
	return req, nil
}

// readAction decodes an action leniently about which fields belong to its
// type (the seed's example click carries "redact"), strictly about
// everything else: the gate judges what the contract decoder would refuse,
// and denies it.
func readAction(raw json.RawMessage) (contract.Action, error) {
	var w struct {
		ID         string   `json:"id"`
		Type       string   `json:"type"`
		Reason     string   `json:"reason"`
		PolicyTags []string `json:"policyTags"`
		URL        string   `json:"url"`
		Selector   string   `json:"selector"`
		TimeoutMs  *number  `json:"timeoutMs"`
		Text       string   `json:"text"`
		Redact     bool     `json:"redact"`
		Value      string   `json:"value"`
		Direction  string   `json:"direction"`
		AmountPx   *number  `json:"amountPx"`
		DurationMs *number  `json:"durationMs"`
		Extract    string   `json:"extract"`
		Vision     bool     `json:"vision"`
	}
	if err := decodeStrict(raw, &w); err != nil {
		return contract.Action{}, err
	}
	a := contract.Action{
		ID: w.ID, Type: contract.ActionType(w.Type), Reason: w.Reason, PolicyTags: w.PolicyTags,
		URL: w.URL, Selector: w.Selector, Text: w.Text, Redact: w.Redact, Value: w.Value,
		Direction: contract.ScrollDirection(w.Direction), Extract: contract.ExtractKind(w.Extract),
		Vision: w.Vision,
	}
	for _, f := range []struct {
		name string
		n    *number
		dst  *int
	}{{"timeoutMs", w.TimeoutMs, &a.TimeoutMs}, {"amountPx", w.AmountPx, &a.AmountPx}, {"durationMs", w.DurationMs, &a.DurationMs}} {
		if f.n == nil {
			continue
		}
		v, err := intNumber(json.Number(*f.n))
		if err != nil {
			return contract.Action{}, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = v
	}
	return a, nil
}

// number is a JSON number kept as written. Unlike json.Number it refuses a
// JSON string holding digits ("1").
type number string

// UnmarshalJSON accepts a JSON number only.
func (n *number) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || !(b[0] == '-' || b[0] >= '0' && b[0] <= '9') {
		return fmt.Errorf("%s is not a number", text.CutBytes(string(b), 32))
	}
	*n = number(b)
	return nil
}

func decodeStrict(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	d.UseNumber()
	return d.Decode(v)
}

func decodeLenient(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// intNumber accepts integral numbers in the 32-bit range.
func intNumber(n json.Number) (int, error) {
	s := n.String()
	if strings.ContainsAny(s, ".eE") {
		f, err := n.Float64()
		if err != nil || f != math.Trunc(f) {
			return 0, fmt.Errorf("%s is not an integer", s)
		}
		if f < math.MinInt32 || f > math.MaxInt32 {
			return 0, fmt.Errorf("%s is out of range", s)
		}
		return int(f), nil
	}
	i, err := n.Int64()
	if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not a 32-bit integer", s)
	}
	return int(i), nil
}
