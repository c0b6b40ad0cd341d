package gate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// TestSecretDecisions: a declared secret typed, as the whole text, into a
// field sensitive by the element's own facts on an origin it is bound to
// is medium risk without approval (secret_typed); every other use of a
// placeholder is denied (secret_misdirected, secret_undeclared); invented
// text into a password field stays high risk.
func TestSecretDecisions(t *testing.T) {
	password := &contract.Element{Tag: "input", Type: "password", ID: "pw", Name: "pw", Origin: "https://shop.example"}
	typeText := func(sel, text string, target *contract.Element) func(*Request) {
		return func(r *Request) {
			reason := "sign in with the secret"
			if text == "blue shoes" {
				reason = "search, then sign in with {{secret:PW}}"
			}
			r.Action = contract.Action{ID: "t1", Type: contract.ActType, Reason: reason, PolicyTags: []string{}, Selector: sel, Text: text, Redact: true}
			r.Target = target
		}
	}
	bind := func(origins ...string) func(*Request) {
		return func(r *Request) { r.Session.Secrets = map[string][]string{"PW": origins} }
	}
	both := func(fs ...func(*Request)) func(*Request) {
		return func(r *Request) {
			for _, f := range fs {
				f(r)
			}
		}
	}
	login := typeText("#pw", "{{secret:PW}}", password)
	shop := bind("https://shop.example")
	denied := contract.ResultDenied
	tests := []struct {
		name      string
		mutate    func(*Request)
		want      contract.DecisionResult
		wantRisk  contract.RiskTag
		wantRules []string // deny rules, or the risk reasons of an allowed decision
	}{
		{"typed into its password field", both(login, shop), contract.ResultAllowed, contract.RiskMedium, []string{"secret_typed"}},
		{"bound origin written otherwise", both(login, bind("HTTPS://Shop.Example:443")), contract.ResultAllowed, contract.RiskMedium, []string{"secret_typed"}},
		{"one of several origins", both(login, bind("http://127.0.0.1:8080", "https://shop.example")), contract.ResultAllowed, contract.RiskMedium, []string{"secret_typed"}},
		{"autocomplete current-password", both(typeText("#pw", "{{secret:PW}}", &contract.Element{Tag: "input", Type: "text", Autocomplete: "username current-password"}), shop), contract.ResultAllowed, contract.RiskMedium, []string{"secret_typed"}},
		{"the browser matched a sensitive selector", both(typeText("#pin", "{{secret:PW}}", &contract.Element{Tag: "input", Type: "text", SensitiveSelector: "input[name=ssn]"}), shop), contract.ResultAllowed, contract.RiskMedium, []string{"secret_typed"}},
		{"invented text into the password field", both(typeText("#pw", "hunter2-hunter2", password), shop), contract.ResultPaused, contract.RiskHigh, []string{"sensitive_field"}},
		{"another allowed origin", both(login, bind("https://docs.example")), denied, "", []string{"secret_misdirected"}},
		{"the page is elsewhere", both(login, shop, func(r *Request) {
			r.ActiveURL = "https://a.docs.example/login"
			t := *password
			t.Origin = ""
			r.Target = &t
		}), denied, "", []string{"secret_misdirected"}},
		{"an element in a frame of another allowed origin", both(login, shop, func(r *Request) {
			t := *password
			t.Origin = "https://a.docs.example"
			r.Target = &t
		}), denied, "", []string{"secret_misdirected"}},
		{"a field named password, of type text", both(typeText("#pw", "{{secret:PW}}", &contract.Element{Tag: "input", Type: "text", Name: "password", Label: "Password"}), shop), denied, "", []string{"secret_misdirected"}},
		{"a plain field", both(typeText("#q", "{{secret:PW}}", &contract.Element{Tag: "input", Type: "search", Name: "q"}), shop), denied, "", []string{"secret_misdirected"}},
		{"mixed with other text", both(typeText("#pw", "{{secret:PW}}!", password), shop), denied, "", []string{"secret_misdirected"}},
		{"twice", both(typeText("#pw", "{{secret:PW}}{{secret:PW}}", password), shop), denied, "", []string{"secret_misdirected"}},
		{"in the selector", both(typeText("#pw, #{{secret:PW}}", "{{secret:PW}}", password), shop), denied, "", []string{"secret_misdirected"}},
		{"in a navigate URL", both(navigateTo("https://shop.example/login?pw={{secret:PW}}"), shop), denied, "", []string{"secret_misdirected"}},
		{"as a select value", both(func(r *Request) {
			r.Action = contract.Action{ID: "s1", Type: contract.ActSelect, Reason: "pick", PolicyTags: []string{}, Selector: "#pw", Value: "{{secret:PW}}"}
			r.Target = password
		}, shop), denied, "", []string{"secret_misdirected"}},
		{"in an extract selector", both(func(r *Request) {
			r.Action = contract.Action{ID: "e1", Type: contract.ActExtract, Reason: "read", PolicyTags: []string{}, Selector: "[value='{{secret:PW}}']", Extract: "text"}
			r.Target = &contract.Element{Tag: "p"}
		}, shop), denied, "", []string{"secret_misdirected"}},
		{"a secret the session does not hold", both(typeText("#pw", "{{secret:OTHER}}", password), shop), denied, "", []string{"secret_undeclared"}},
		{"no secrets at all", login, denied, "", []string{"secret_undeclared"}},
		{"a malformed placeholder", both(typeText("#pw", "{{secret:pw}}", password), shop), denied, "", []string{"secret_undeclared"}},
		{"an unusable bound origin", both(login, bind("https://shop.example/login")), denied, "", []string{"session_policy_invalid", "secret_misdirected"}},
		{"in the reason", both(typeText("#q", "blue shoes", &contract.Element{Tag: "input", Type: "search"}), shop), denied, "", []string{"secret_misdirected"}},
		{"in a policy tag", both(func(r *Request) { r.Action.PolicyTags = []string{"{{secret:PW}}"} }, shop), denied, "", []string{"secret_misdirected"}},
	}
	g := sharedGate(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := baseRequest()
			tt.mutate(&req)
			d := g.Decide(context.Background(), req)
			if d.FailClosed {
				t.Fatalf("failed closed: %v", d.Err)
			}
			if got, want := d.Result, tt.want; got != want {
				t.Fatalf("result = %s, want %s (reasons %v, risk reasons %v)", got, want, d.Reasons, d.RiskReasons)
			}
			if tt.wantRisk != "" && d.Risk != tt.wantRisk {
				t.Errorf("risk = %s, want %s", d.Risk, tt.wantRisk)
			}
			got := ruleNames(d.Reasons)
			if tt.want != denied {
				got = ruleNames(d.RiskReasons)
				if len(got) == 0 {
					got = nil
				}
				if !reflect.DeepEqual(got, tt.wantRules) {
					t.Errorf("risk reasons %v, want %v", got, tt.wantRules)
				}
			} else {
				for _, rule := range tt.wantRules {
					if !hasRule(d.Reasons, rule) {
						t.Errorf("reasons %v lack %s", got, rule)
					}
				}
			}
			if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
				t.Errorf("record is not schema-valid: %v", err)
			}
		})
	}
}

// TestSecretMisdirectedMessage: the denial says which secret, where it may
// go, and what was attempted, never a value.
func TestSecretMisdirectedMessage(t *testing.T) {
	req := baseRequest()
	req.Action = contract.Action{ID: "t1", Type: contract.ActType, Reason: "r", PolicyTags: []string{}, Selector: "#q", Text: "{{secret:PW}}", Redact: true}
	req.Target = &contract.Element{Tag: "input", Type: "text", Name: "password"}
	req.Session.Secrets = map[string][]string{"PW": {"https://bank.example"}}
	d := sharedGate(t).Decide(context.Background(), req)
	var msg string
	for _, r := range d.Reasons {
		if r.Rule == "secret_misdirected" {
			msg = r.Message
		}
	}
	for _, want := range []string{"secret PW may only be typed", "on https://bank.example", "this type action puts it in its text on https://shop.example", "not sensitive by its own facts (only its words say so", "https://shop.example is not an origin the secret is bound to"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestSecretUses(t *testing.T) {
	a := contract.Action{ID: "a1", Type: contract.ActType, Reason: "type {{secret:A}}", PolicyTags: []string{"x", "{{secret:A}}"}, Selector: "#x{{secret:B}}", Text: "{{secret:A}}", Redact: true}
	uses, malformed := secretUses(actionhash.Action(a), map[string][]string{"A": nil})
	want := []any{
		map[string]any{"name": "A", "field": "policyTags", "whole": true, "declared": true},
		map[string]any{"name": "A", "field": "reason", "whole": false, "declared": true},
		map[string]any{"name": "B", "field": "selector", "whole": false, "declared": false},
		map[string]any{"name": "A", "field": "text", "whole": true, "declared": true},
	}
	if !reflect.DeepEqual(uses, want) || len(malformed) != 0 {
		t.Errorf("uses %v, malformed %v; want %v", uses, malformed, want)
	}
	a.Text = "{{secret:A}} {{secret:"
	_, malformed = secretUses(actionhash.Action(a), nil)
	if len(malformed) != 1 || malformed[0].(map[string]any)["field"] != "text" {
		t.Errorf("malformed %v, want the text", malformed)
	}
}

func TestSecretBindings(t *testing.T) {
	var errs []string
	got := secretBindings(map[string][]string{
		"PW":  {"HTTPS://Shop.Example:443", "https://shop.example", "http://127.0.0.1:8080"},
		"BAD": {"https://shop.example/login", "ftp://files.example"},
		"bad": {"https://shop.example"},
	}, func(field, raw string, err error) { errs = append(errs, field+" "+raw) })
	want := map[string]any{"PW": []any{"https://shop.example", "http://127.0.0.1:8080"}, "BAD": []any{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bindings %v, want %v", got, want)
	}
	if wantErrs := []string{"secrets BAD@https://shop.example/login", "secrets BAD@ftp://files.example", "secrets bad"}; !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("config errors %v, want %v", errs, wantErrs)
	}
}
