package gate

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestReadInputSeed(t *testing.T) {
	doc, err := os.ReadFile("testdata/seed-001-input.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := ReadInput(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.Session.AllowedOrigins, []string{"https://example.com"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("allowlist = %v, want the active page's origin %v", got, want)
	}
	if got := len(req.Policy.GovernedExceptions); got != 1 {
		t.Fatalf("exceptions = %d, want the seed's one", got)
	}
	if req.Action.Type != "click" || req.Action.Selector != "#submit" || !req.Action.Redact || req.StepIndex != 3 {
		t.Errorf("action %+v step %d", req.Action, req.StepIndex)
	}
	d := sharedGate(t).Decide(context.Background(), req)
	if !d.Allow {
		t.Fatalf("the seed 001 example input must evaluate to allow: %s %v", d.Result, d.Reasons)
	}
	// Its click (with redact, and no id) breaks browser-action: a
	// session's gate would deny it, as it cannot record it; a policy input
	// document is a question (Probe), so the policy's answer stands.
	req.Probe = false
	if d := sharedGate(t).Decide(context.Background(), req); d.Allow || !hasRule(d.Reasons, RuleActionUnrecorded) {
		t.Errorf("the seed's click in a session: %s %v, want denied for %s", d.Result, d.Reasons, RuleActionUnrecorded)
	}
	if len(d.Exceptions) != 1 || d.Exceptions[0].Status != "malformed" {
		t.Errorf("the seed's exception (no rule) must be recorded as malformed: %+v", d.Exceptions)
	}
}

func TestReadInputFull(t *testing.T) {
	doc := `{
	  "state": {"sessionId": "s-1", "mode": "playwright", "title": "ignored", "activeUrl": "https://shop.example/",
	            "policyContext": {"maxStepBudget": 25, "decisionLogId": "dec-1", "classification": "public"}},
	  "action": {"id": "a1", "type": "wait", "reason": "r", "policyTags": ["x"], "durationMs": 1000},
	  "step_index": 2,
	  "policy": {"blocked_domains": ["b.example"], "sensitive_selectors": ["#s"],
	             "governed_exceptions": [{"id": "ge-1", "rule": "origin_not_allowed", "reason": "r",
	                                      "expires_at": "2026-02-01T00:00:00Z", "decision_log_id": "dec-2"}]},
	  "session": {"id": "s-1", "allowed_origins": [], "permission": "observe", "preset": "safe", "approval_id": "apr-1",
	              "secrets": {"PW": ["https://shop.example"]}},
	  "target": {"tag": "div", "text": "hello"},
	  "now": "2026-01-23T10:00:00.5Z"
	}`
	req, err := ReadInput([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Session.Secrets["PW"]; len(got) != 1 || got[0] != "https://shop.example" {
		t.Errorf("secrets %v", req.Session.Secrets)
	}
	if req.SessionID != "s-1" || req.Session.Permission != "observe" || req.Session.Preset != "safe" || req.ApprovalID != "apr-1" {
		t.Errorf("session %+v", req.Session)
	}
	if len(req.Session.AllowedOrigins) != 0 {
		t.Errorf("an explicit empty allowlist must stay empty: %v", req.Session.AllowedOrigins)
	}
	if req.Action.DurationMs != 1000 || req.Target == nil || req.Target.Text != "hello" {
		t.Errorf("action %+v target %+v", req.Action, req.Target)
	}
	if want := time.Date(2026, 1, 23, 10, 0, 0, 5e8, time.UTC); !req.Now.Equal(want) {
		t.Errorf("now = %v", req.Now)
	}
}

// TestReadInputEffect: an input with an effect asks about that effect of
// the action.
func TestReadInputEffect(t *testing.T) {
	doc := `{
	  "state": {"sessionId": "s-1", "activeUrl": "https://shop.example/cart",
	            "policyContext": {"maxStepBudget": 25, "decisionLogId": "dec-1"}},
	  "action": {"id": "a1", "type": "click", "reason": "r", "policyTags": [], "selector": "#continue"},
	  "step_index": 2,
	  "target": {"tag": "button", "text": "Continue"},
	  "effect": {"kind": "request", "method": "POST", "origin": "https://shop.example", "path": "/pay",
	             "fields": ["amount", "card"], "resourceType": "fetch"},
	  "now": "2026-01-23T10:00:00Z"
	}`
	req, err := ReadInput([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if req.Effect == nil || req.Effect.Method != "POST" || req.Effect.Path != "/pay" || len(req.Effect.Fields) != 2 {
		t.Fatalf("effect %+v", req.Effect)
	}
	d := sharedGate(t).Decide(context.Background(), req)
	if d.Result != "paused" || d.Risk != "high" || d.Effect == nil {
		t.Errorf("got %s %s effect %+v, want paused high with the effect", d.Result, d.Risk, d.Effect)
	}
}

func TestReadInputErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, field string }{
		{"not JSON", `{`, ""},
		{"not an object", `[]`, ""},
		{"trailing data", `{"state": {}, "action": {}, "step_index": 1} {}`, ""},
		{"duplicate key", `{"state": {}, "state": {}, "action": {}, "step_index": 1}`, ""},
		{"unknown member", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "derived": {}}`, "derived"},
		{"no state", `{"action": {"type": "wait"}, "step_index": 1}`, "state"},
		{"no action", `{"state": {}, "step_index": 1}`, "action"},
		{"no step", `{"state": {}, "action": {"type": "wait"}}`, "step_index"},
		{"fractional step", `{"state": {}, "action": {"type": "wait"}, "step_index": 1.5}`, "step_index"},
		{"huge step", `{"state": {}, "action": {"type": "wait"}, "step_index": 1e12}`, "step_index"},
		{"string step", `{"state": {}, "action": {"type": "wait"}, "step_index": "1"}`, "step_index"},
		{"budget not an integer", `{"state": {"policyContext": {"maxStepBudget": 2.5}}, "action": {"type": "wait"}, "step_index": 1}`, "state.policyContext.maxStepBudget"},
		{"unknown action field", `{"state": {}, "action": {"type": "wait", "shell": "rm"}, "step_index": 1}`, "action"},
		{"redact not a boolean", `{"state": {}, "action": {"type": "type", "redact": "yes"}, "step_index": 1}`, "action"},
		{"fractional duration", `{"state": {}, "action": {"type": "wait", "durationMs": 0.5}, "step_index": 1}`, "action"},
		{"unknown policy field", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "policy": {"allow_all": true}}`, "policy"},
		{"unknown session field", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "session": {"admin": true}}`, "session"},
		{"session id mismatch", `{"state": {"sessionId": "a"}, "action": {"type": "wait"}, "step_index": 1, "session": {"id": "b"}}`, "session.id"},
		{"unknown target field", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "target": {"value": "x"}}`, "target"},
		{"bad now", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "now": "yesterday"}`, "now"},
		{"unknown effect field", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "effect": {"kind": "request", "body": "x"}}`, "effect"},
		{"effect not an object", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "effect": "POST /pay"}`, "effect"},
		{"too large", `{"state": {"activeUrl": "` + strings.Repeat("a", MaxInputBytes) + `"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadInput([]byte(tc.doc))
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			if ie.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", ie.Field, tc.field, err)
			}
		})
	}
}

func FuzzReadInput(f *testing.F) {
	seed, err := os.ReadFile("testdata/seed-001-input.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"state": {"activeUrl": "javascript:1"}, "action": {"type": "navigate", "url": "https://a@b/"}, "step_index": -1}`))
	f.Add([]byte(`{"state": {}, "action": {"type": "type", "selector": "#pw", "text": "x", "redact": false}, "step_index": 0, "target": {"tag": "input", "type": "password"}}`))
	f.Add([]byte(`{"state": {}, "action": {}, "step_index": 1e400}`))
	f.Add([]byte(`{"state": {"activeUrl": "https://shop.example/"}, "action": {"type": "click", "selector": "#c"}, "step_index": 1, "session": {"allowed_origins": ["https://shop.example"]}, "target": {"tag": "button", "text": "Pаy", "origin": "https://shop.example"}, "effect": {"kind": "request", "method": "POST", "origin": "https://shop.example", "path": "/pay", "fields": ["cvv"]}}`))
	g := sharedGate(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		req, err := ReadInput(doc)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			return
		}
		req.Now = testNow
		d := g.Decide(context.Background(), req)
		if d.Allow && (d.FailClosed || len(d.Reasons) > 0) {
			t.Fatalf("allow with reasons: %+v", d.DecisionRecord)
		}
		if d.Allow && req.Effect != nil && (req.Effect.Refused != "" || req.Effect.Kind == "peer" || req.Effect.Kind == "download") {
			t.Fatalf("allowed effect %+v", req.Effect)
		}
		if d.Allow && req.Action.Type == "navigate" {
			if u := NormalizeURL(req.Action.URL); !u.Valid || u.Userinfo || (u.Scheme != "http" && u.Scheme != "https") {
				t.Fatalf("allowed navigation to %q", req.Action.URL)
			}
		}
	})
}
