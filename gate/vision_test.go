package gate

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/contract"
)

// screenshotFor makes the request an extract screenshot with vision v,
// under classification c.
func screenshotFor(c contract.Classification, extract contract.ExtractKind, vision bool) func(*Request) {
	return func(r *Request) {
		r.Action = contract.Action{ID: "vision-1", Type: contract.ActExtract, Reason: "look", PolicyTags: []string{}, Extract: extract, Vision: vision}
		r.Target = nil
		r.Session.Classification = c
	}
}

// TestVisionDecisions: the session's classification and the policy data
// decide a vision escalation; vision on anything but an extract screenshot
// is refused by the policy and by the Go floor.
func TestVisionDecisions(t *testing.T) {
	allowed, denied := contract.ResultAllowed, contract.ResultDenied
	runDecideCases(t, []decideCase{
		{"unclassified is restricted: allowed", screenshotFor("", contract.ExtractScreenshot, true), allowed, nil, contract.RiskLow},
		{"public: allowed", screenshotFor(contract.ClassPublic, contract.ExtractScreenshot, true), allowed, nil, contract.RiskLow},
		{"restricted: allowed", screenshotFor(contract.ClassRestricted, contract.ExtractScreenshot, true), allowed, nil, contract.RiskLow},
		{"sensitive: vision_not_allowed", screenshotFor(contract.ClassSensitive, contract.ExtractScreenshot, true), denied, []string{"vision_not_allowed"}, ""},
		{"sensitive without vision: evidence only, allowed", screenshotFor(contract.ClassSensitive, contract.ExtractScreenshot, false), allowed, nil, contract.RiskLow},
		{"unknown classification: session_policy_invalid", screenshotFor("secret", contract.ExtractScreenshot, true), denied, []string{"session_policy_invalid", "vision_not_allowed"}, ""},
		{"unknown classification denies any action", func(r *Request) { r.Session.Classification = "Public" }, denied, []string{"session_policy_invalid"}, ""},
		{"vision on a text extract", screenshotFor(contract.ClassPublic, contract.ExtractText, true), denied, []string{"action_malformed", RuleActionInvalid}, ""},
		{"vision on a click", func(r *Request) { r.Action.Vision = true }, denied, []string{"action_malformed", RuleActionInvalid}, ""},
		{"observe may escalate", func(r *Request) {
			screenshotFor(contract.ClassPublic, contract.ExtractScreenshot, true)(r)
			r.Session.Permission = "observe"
		}, allowed, nil, ""},
		{"disabled may not", func(r *Request) {
			screenshotFor(contract.ClassPublic, contract.ExtractScreenshot, true)(r)
			r.Session.Permission = "disabled"
		}, denied, []string{"permission_denied"}, ""},
	})
}

// TestVisionDeniedMessage: the denial names the classification and what
// the policy data allows.
func TestVisionDeniedMessage(t *testing.T) {
	req := baseRequest()
	screenshotFor(contract.ClassSensitive, contract.ExtractScreenshot, true)(&req)
	d := sharedGate(t).Decide(context.Background(), req)
	got := d.Reasons
	want := []contract.Reason{{Rule: "vision_not_allowed", Message: "showing the screenshot to the model is not allowed: the session's classification is sensitive; the policy data (vision.classifications) allows vision for public, restricted"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestClassificationInput: the classification reaches the policy as
// input.session.classification and input.state.policyContext.classification,
// "" as restricted; an unknown one is also a config error.
func TestClassificationInput(t *testing.T) {
	for _, tt := range []struct {
		class      contract.Classification
		want       string
		wantErrors int
	}{
		{"", "restricted", 0},
		{contract.ClassPublic, "public", 0},
		{contract.ClassRestricted, "restricted", 0},
		{contract.ClassSensitive, "sensitive", 0},
		{"top-secret", "top-secret", 1},
	} {
		t.Run(string(tt.class), func(t *testing.T) {
			req := baseRequest()
			req.Session.Classification = tt.class
			in := buildInput(&req, testNow, actionhash.Action(req.Action), actionhash.Element(req.Target), nil)
			pc := in["state"].(map[string]any)["policyContext"].(map[string]any)
			if got := pc["classification"]; got != tt.want {
				t.Errorf("state.policyContext.classification = %v, want %q", got, tt.want)
			}
			if got := in["session"].(map[string]any)["classification"]; got != tt.want {
				t.Errorf("session.classification = %v, want %q", got, tt.want)
			}
			errs := in["derived"].(map[string]any)["config_errors"].([]any)
			if got := len(errs); got != tt.wantErrors {
				t.Fatalf("config errors %v, want %d", errs, tt.wantErrors)
			}
			if tt.wantErrors > 0 {
				if got := errs[0].(map[string]any)["field"]; got != "classification" {
					t.Errorf("config error field = %v, want classification", got)
				}
			}
		})
	}
}

// TestReadInputClassification: aegis policy eval reads the classification
// back from state.policyContext.classification (or session.classification,
// which must agree), and the action's vision.
func TestReadInputClassification(t *testing.T) {
	const action = `"action": {"id": "v1", "type": "extract", "reason": "r", "policyTags": [], "extract": "screenshot", "vision": true}, "step_index": 1`
	for _, tt := range []struct {
		name      string
		doc       string
		want      contract.Classification
		wantField string // the InputError's field; "" for none
	}{
		{"state", `{"state": {"policyContext": {"classification": "sensitive"}}, ` + action + `}`, contract.ClassSensitive, ""},
		{"session", `{"state": {}, ` + action + `, "session": {"classification": "public"}}`, contract.ClassPublic, ""},
		{"both agree", `{"state": {"policyContext": {"classification": "public"}}, ` + action + `, "session": {"classification": "public"}}`, contract.ClassPublic, ""},
		{"neither", `{"state": {}, ` + action + `}`, "", ""},
		{"disagree", `{"state": {"policyContext": {"classification": "sensitive"}}, ` + action + `, "session": {"classification": "public"}}`, "", "session.classification"},
		{"not a string", `{"state": {}, ` + action + `, "session": {"classification": 1}}`, "", "session"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ReadInput([]byte(tt.doc))
			var ie *InputError
			switch {
			case tt.wantField != "":
				if !errors.As(err, &ie) || ie.Field != tt.wantField {
					t.Fatalf("got %v, want an *InputError about %s", err, tt.wantField)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got := req.Session.Classification; got != tt.want {
				t.Errorf("classification = %q, want %q", got, tt.want)
			}
			if !req.Action.Vision || req.Action.Extract != contract.ExtractScreenshot {
				t.Errorf("action %+v, want an extract screenshot with vision", req.Action)
			}
		})
	}
}

// TestCheckActionVision: the Go floor refuses vision on anything but an
// extract screenshot, whatever the policy says.
func TestCheckActionVision(t *testing.T) {
	for _, tt := range []struct {
		name    string
		action  contract.Action
		wantErr bool
	}{
		{"extract screenshot", contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot, Vision: true}, false},
		{"extract screenshot without vision", contract.Action{Type: contract.ActExtract, Extract: contract.ExtractScreenshot}, false},
		{"extract text", contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText, Vision: true}, true},
		{"scroll", contract.Action{Type: contract.ActScroll, Direction: "down", Vision: true}, true},
		{"click", contract.Action{Type: contract.ActClick, Selector: "#a", Vision: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkAction(&tt.action) != nil; got != tt.wantErr {
				t.Errorf("error = %v, want an error: %v", checkAction(&tt.action), tt.wantErr)
			}
		})
	}
	allowAll := fstest.MapFS{"p.rego": {Data: []byte(`package aegis.browser

decision := {"allow": true, "deny": [], "risk": "low", "requires_approval": false, "action_name": "browser.extract"}
`)}}
	g, err := New(context.Background(), Options{PolicyFS: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	req := baseRequest()
	screenshotFor(contract.ClassPublic, contract.ExtractText, true)(&req)
	if d := g.Decide(context.Background(), req); d.Allow || !hasRule(d.Reasons, RuleActionInvalid) {
		t.Errorf("allow-all policy, vision on a text extract: got %s %v, want denied by %s", d.Result, ruleNames(d.Reasons), RuleActionInvalid)
	}
}

// TestVisionInActionHash: vision is part of the action the hash covers, so
// an approval or a recorded decision of an extract screenshot without
// vision is not one with it.
func TestVisionInActionHash(t *testing.T) {
	g := sharedGate(t)
	with, without := baseRequest(), baseRequest()
	screenshotFor("", contract.ExtractScreenshot, true)(&with)
	screenshotFor("", contract.ExtractScreenshot, false)(&without)
	if g.ActionHash(with) == g.ActionHash(without) {
		t.Error("vision does not change the action hash")
	}
	d := g.Decide(context.Background(), with)
	if d.Action == nil || !d.Action.Vision {
		t.Errorf("the decision records %+v, want the action with vision", d.Action)
	}
}
