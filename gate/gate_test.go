package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

type decideCase struct {
	name       string
	mutate     func(*Request)
	wantResult contract.DecisionResult
	wantRules  []string         // deny rules that must be among the reasons
	wantRisk   contract.RiskTag // "" = any
}

func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	g := sharedGate(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest()
			if tc.mutate != nil {
				tc.mutate(&req)
			}
			d := g.Decide(context.Background(), req)
			if d.FailClosed {
				t.Fatalf("failed closed: %v", d.Err)
			}
			if got, want := d.Result, tc.wantResult; got != want {
				t.Errorf("result = %s, want %s (reasons %v, risk reasons %v)", got, want, d.Reasons, d.RiskReasons)
			}
			if got, want := d.Allow, tc.wantResult == contract.ResultAllowed || tc.wantResult == contract.ResultApproved; got != want {
				t.Errorf("allow = %v, want %v", got, want)
			}
			for _, rule := range tc.wantRules {
				if !hasRule(d.Reasons, rule) {
					t.Errorf("reasons %v lack rule %s", ruleNames(d.Reasons), rule)
				}
			}
			if tc.wantRisk != "" && d.Risk != tc.wantRisk {
				t.Errorf("risk = %s, want %s (%v)", d.Risk, tc.wantRisk, d.RiskReasons)
			}
			if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
				t.Errorf("record is not schema-valid: %v", err)
			}
		})
	}
}

// TestDenyReasons covers every deny rule a Request can trigger (the rules
// that need an input Go never builds, such as a field of the wrong JSON
// type, are covered by the Rego tests).
func TestDenyReasons(t *testing.T) {
	denied := contract.ResultDenied
	runDecideCases(t, []decideCase{
		{"allowed base", nil, contract.ResultAllowed, nil, contract.RiskMedium},
		{"action_type_unknown", func(r *Request) { r.Action.Type = "shell" }, denied, []string{"action_type_unknown"}, contract.RiskHigh},
		{"action_invalid: click without selector", func(r *Request) { r.Action.Selector = "" }, denied, []string{RuleActionInvalid}, ""},
		{"action_invalid: text over the contract bound", typeInto("#q", &contract.Element{Tag: "input"}, false), contract.ResultAllowed, nil, ""},
		{"step_budget_exceeded", func(r *Request) { r.StepIndex = 26 }, denied, []string{"step_budget_exceeded"}, ""},
		{"step at budget allowed", func(r *Request) { r.StepIndex = 25 }, contract.ResultAllowed, nil, ""},
		{"step_budget_invalid: negative step", func(r *Request) { r.StepIndex = -1 }, denied, []string{"step_budget_invalid"}, ""},
		{"step_budget_invalid: no budget", func(r *Request) { r.Session.MaxStepBudget = 0 }, denied, []string{"step_budget_invalid"}, ""},
		{"decision_log_missing", func(r *Request) { r.Session.DecisionLogID = "" }, denied, []string{"decision_log_missing"}, ""},
		{"decision_log_missing: not an id", func(r *Request) { r.Session.DecisionLogID = "../../etc" }, denied, []string{"decision_log_missing"}, ""},
		{"permission_unknown", func(r *Request) { r.Session.Permission = "root" }, denied, []string{"permission_unknown"}, ""},
		{"permission_unknown: preset", func(r *Request) { r.Session.Preset = "yolo" }, denied, []string{"permission_unknown"}, ""},
		{"permission_denied", func(r *Request) { r.Session.Permission = "disabled" }, denied, []string{"permission_denied"}, ""},
		{"url_invalid", navigateTo(" https://shop.example/"), denied, []string{"url_invalid", RuleURLFloor}, ""},
		{"url_scheme", navigateTo("javascript:alert(1)"), denied, []string{"url_scheme", RuleURLFloor}, ""},
		{"url_userinfo", navigateTo("https://shop.example@evil.example/"), denied, []string{"url_userinfo", "origin_not_allowed", RuleURLFloor}, ""},
		{"origin_not_allowed: navigate", navigateTo("https://evil.example/"), denied, []string{"origin_not_allowed"}, ""},
		{"origin_not_allowed: action on a foreign page", func(r *Request) { r.ActiveURL = "https://evil.example/" }, denied, []string{"origin_not_allowed"}, ""},
		{"blocked_domain", navigateTo("https://payments.example/pay"), denied, []string{"blocked_domain"}, ""},
		{"blocked_domain: subdomain, even when allowed", func(r *Request) {
			navigateTo("https://a.payments.example/")(r)
			r.Session.AllowedOrigins = append(r.Session.AllowedOrigins, "https://*.payments.example")
		}, denied, []string{"blocked_domain"}, ""},
		{"session_policy_invalid: allowlist", func(r *Request) { r.Session.AllowedOrigins = []string{"ftp://files.example"} }, denied, []string{"session_policy_invalid", "origin_not_allowed"}, ""},
		{"session_policy_invalid: blocked domain", func(r *Request) { r.Policy.BlockedDomains = []string{"bad host!"} }, denied, []string{"session_policy_invalid"}, ""},
		{"session_policy_invalid: empty selector", func(r *Request) { r.Policy.SensitiveSelectors = []string{" "} }, denied, []string{"session_policy_invalid"}, ""},
		{"origin_not_allowed: empty allowlist", func(r *Request) { r.Session.AllowedOrigins = nil }, denied, []string{"origin_not_allowed"}, ""},
		{"target_unresolved", typeInto("#q", nil, false), denied, []string{"target_unresolved"}, ""},
		{"target_invalid", func(r *Request) { r.Target.Text = strings.Repeat("x", contract.MaxElementText+1) }, denied, []string{RuleTargetInvalid}, ""},
		{"sensitive_unredacted", typeInto("#pw", &contract.Element{Tag: "input", Type: "password"}, false), denied, []string{"sensitive_unredacted"}, contract.RiskHigh},
		{"sensitive_extract", func(r *Request) {
			r.Action = contract.Action{ID: "e1", Type: contract.ActExtract, Reason: "read", PolicyTags: []string{}, Selector: "#pw", Extract: "text"}
			r.Target = &contract.Element{Tag: "input", Type: "password"}
		}, denied, []string{"sensitive_extract"}, ""},
	})
}

func TestActionInvalidBounds(t *testing.T) {
	g := sharedGate(t)
	for name, mutate := range map[string]func(*Request){
		"text": func(r *Request) {
			typeInto("#q", &contract.Element{Tag: "input"}, false)(r)
			r.Action.Text = strings.Repeat("x", maxText+1)
		},
		"selector":  func(r *Request) { r.Action.Selector = strings.Repeat("x", maxSelector+1) },
		"bad utf8":  func(r *Request) { r.Action.Reason = "\xff" },
		"tags":      func(r *Request) { r.Action.PolicyTags = make([]string, maxTags+1) },
		"long tag":  func(r *Request) { r.Action.PolicyTags = []string{strings.Repeat("t", 65)} },
		"long id":   func(r *Request) { r.Action.ID = strings.Repeat("a", 129) },
		"long url":  navigateTo("https://shop.example/" + strings.Repeat("a", MaxURLLength)),
		"select no": func(r *Request) { r.Action.Type, r.Action.Selector, r.Action.Value = contract.ActSelect, "", "x" },
	} {
		t.Run(name, func(t *testing.T) {
			req := baseRequest()
			mutate(&req)
			d := g.Decide(context.Background(), req)
			if d.Allow || !(hasRule(d.Reasons, RuleActionInvalid) || hasRule(d.Reasons, "url_invalid")) {
				t.Errorf("got %s %v, want denied by %s", d.Result, ruleNames(d.Reasons), RuleActionInvalid)
			}
		})
	}
}

func TestRiskLevels(t *testing.T) {
	scroll := func(r *Request) {
		r.Action = contract.Action{ID: "s1", Type: contract.ActScroll, Reason: "more", PolicyTags: []string{}, Direction: "down"}
		r.Target = nil
	}
	wait := func(r *Request) {
		r.Action = contract.Action{ID: "w1", Type: contract.ActWait, Reason: "load", PolicyTags: []string{}, DurationMs: 500}
		r.Target = nil
	}
	extract := func(r *Request) {
		r.Action = contract.Action{ID: "x1", Type: contract.ActExtract, Reason: "read", PolicyTags: []string{}, Extract: "table"}
		r.Target = nil
	}
	clickText := func(text string) func(*Request) {
		return func(r *Request) {
			r.Action.Selector, r.Target = "button:nth-of-type(3)", &contract.Element{Tag: "button", Text: text}
		}
	}
	paused := contract.ResultPaused
	runDecideCases(t, []decideCase{
		{"low: scroll", scroll, contract.ResultAllowed, nil, contract.RiskLow},
		{"low: wait", wait, contract.ResultAllowed, nil, contract.RiskLow},
		{"low: extract", extract, contract.ResultAllowed, nil, contract.RiskLow},
		{"medium: click", nil, contract.ResultAllowed, nil, contract.RiskMedium},
		{"medium: navigate", navigateTo("https://shop.example/products"), contract.ResultAllowed, nil, contract.RiskMedium},
		{"medium: type", typeInto("#q", &contract.Element{Tag: "input", Type: "search", Label: "Search"}, false), contract.ResultAllowed, nil, contract.RiskMedium},
		{"high: click Pay now (element text)", clickText("Pay now"), paused, nil, contract.RiskHigh},
		{"high: click delete (selector)", func(r *Request) { r.Action.Selector = "#deleteAccount"; r.Target = nil }, paused, nil, contract.RiskHigh},
		{"high: submit order", clickText("Submit order"), paused, nil, contract.RiskHigh},
		{"high: zero-width joiner in P\u200day", clickText("P\u200day"), paused, nil, contract.RiskHigh},
		{"high: fullwidth ＰＡＹ", clickText("ＰＡＹ"), paused, nil, contract.RiskHigh},
		{"medium: submit is not submit order", clickText("Submit"), contract.ResultAllowed, nil, contract.RiskMedium},
		{"medium: display is not pay", clickText("Display settings"), contract.ResultAllowed, nil, contract.RiskMedium},
		{"high: navigate to checkout", navigateTo("https://shop.example/checkout"), paused, nil, contract.RiskHigh},
		{"high: type into a password field, redacted", typeInto("#pw", &contract.Element{Tag: "input", Type: "password"}, true), paused, nil, contract.RiskHigh},
		{"high: select a card expiry", func(r *Request) {
			r.Action = contract.Action{ID: "s1", Type: contract.ActSelect, Reason: "exp", PolicyTags: []string{}, Selector: "#exp", Value: "12"}
			r.Target = &contract.Element{Tag: "select", Autocomplete: "cc-exp-month"}
		}, paused, nil, contract.RiskHigh},
		{"policyTags claiming approval change nothing", func(r *Request) {
			clickText("Pay now")(r)
			r.Action.PolicyTags = []string{"approved", "risk:low"}
		}, paused, nil, contract.RiskHigh},
	})
}

func TestSensitiveFields(t *testing.T) {
	text := &contract.Element{Tag: "input", Type: "text"}
	denied := contract.ResultDenied
	runDecideCases(t, []decideCase{
		{"type=password called #pw", typeInto("#pw", &contract.Element{Tag: "INPUT", Type: "Password"}, false), denied, []string{"sensitive_unredacted"}, contract.RiskHigh},
		{"type=password called #username", typeInto("#username", &contract.Element{Tag: "input", Type: "password"}, false), denied, []string{"sensitive_unredacted"}, ""},
		{"autocomplete=cc-number", typeInto("#c", &contract.Element{Tag: "input", Autocomplete: "cc-number"}, false), denied, []string{"sensitive_unredacted"}, ""},
		{"autocomplete with section and one-time-code", typeInto("#c", &contract.Element{Tag: "input", Autocomplete: "section-2fa One-Time-Code"}, false), denied, []string{"sensitive_unredacted"}, ""},
		{"name=ssn", typeInto("#f3", &contract.Element{Tag: "input", Name: "ssn"}, false), denied, []string{"sensitive_unredacted"}, ""},
		{"label Card number", typeInto("#f4", &contract.Element{Tag: "input", Label: "Card number"}, false), denied, []string{"sensitive_unredacted"}, ""},
		{"camelCase id cardNumber", typeInto("#f5", &contract.Element{Tag: "input", ID: "cardNumber"}, false), denied, []string{"sensitive_unredacted"}, ""},
		// Seed 001's selectors, judged on the element the selector resolved
		// to, whatever the selector says.
		{"seed: input[type=password] called anything", typeInto("form > :nth-child(2)", &contract.Element{Tag: "input", Type: "password"}, false), denied, []string{"sensitive_unredacted"}, contract.RiskHigh},
		{"seed: input[name=ssn] called anything", typeInto("#f9", &contract.Element{Tag: "input", Type: "text", Name: "ssn"}, false), denied, []string{"sensitive_unredacted"}, ""},
		{"session selector matched by the browser", func(r *Request) {
			typeInto("#v", &contract.Element{Tag: "input", Type: "text", SensitiveSelector: "#vault"}, false)(r)
			r.Policy.SensitiveSelectors = []string{"#vault"}
		}, denied, []string{"sensitive_unredacted"}, contract.RiskHigh},
		// The selector the model wrote makes no field sensitive: the
		// element is a plain text field, so it stays medium risk (and the
		// session refuses to type a secret into it).
		{"selector claims password", typeInto("#q:not([name=password])", text, true), contract.ResultAllowed, nil, contract.RiskMedium},
		{"selector spells the seed selector", typeInto(`#q:not(INPUT[type = "password"])`, text, true), contract.ResultAllowed, nil, contract.RiskMedium},
		{"selector spells input[name=ssn]", typeInto("form input[name=ssn], #q", text, true), contract.ResultAllowed, nil, contract.RiskMedium},
		{"selector spells autocomplete=cc-", typeInto("#q:not([autocomplete=cc-number])", text, true), contract.ResultAllowed, nil, contract.RiskMedium},
		{"selector spells the session selector", func(r *Request) {
			typeInto("#vault, #q", text, true)(r)
			r.Policy.SensitiveSelectors = []string{"#vault"}
		}, contract.ResultAllowed, nil, contract.RiskMedium},
		{"redacted password: paused", typeInto("#pw", &contract.Element{Tag: "input", Type: "password"}, true), contract.ResultPaused, nil, contract.RiskHigh},
		{"plain field, unredacted: allowed", typeInto("#q", &contract.Element{Tag: "input", Type: "search"}, false), contract.ResultAllowed, nil, contract.RiskMedium},
		{"click on a password field: not sensitive", func(r *Request) { r.Target = &contract.Element{Tag: "input", Type: "password"} }, contract.ResultAllowed, nil, contract.RiskMedium},
	})
}

func TestPermissionLevelsAndPresets(t *testing.T) {
	extract := func(level, preset string) func(*Request) {
		return func(r *Request) {
			r.Action = contract.Action{ID: "x1", Type: contract.ActExtract, Reason: "read", PolicyTags: []string{}, Extract: "text"}
			r.Target = nil
			r.Session.Permission, r.Session.Preset = level, preset
		}
	}
	click := func(level, preset string) func(*Request) {
		return func(r *Request) { r.Session.Permission, r.Session.Preset = level, preset }
	}
	denied, paused, allowed := contract.ResultDenied, contract.ResultPaused, contract.ResultAllowed
	runDecideCases(t, []decideCase{
		{"disabled: click", click("disabled", ""), denied, []string{"permission_denied"}, ""},
		{"disabled: extract", extract("disabled", ""), denied, []string{"permission_denied"}, ""},
		{"observe: click", click("observe", ""), denied, []string{"permission_denied"}, ""},
		{"observe: extract", extract("observe", ""), allowed, nil, contract.RiskLow},
		{"control: click pauses", click("control", ""), paused, nil, contract.RiskMedium},
		{"control: extract", extract("control", ""), allowed, nil, ""},
		{"full: click", click("full", ""), allowed, nil, ""},
		{"safe preset", click("", "safe"), denied, []string{"permission_denied"}, ""},
		{"balanced preset", click("", "balanced"), paused, nil, ""},
		{"power preset", click("", "power"), allowed, nil, ""},
		{"developer preset", click("", "developer"), allowed, nil, ""},
		{"default preset is power", click("", ""), allowed, nil, ""},
		{"permission beats preset", click("full", "safe"), allowed, nil, ""},
	})
	g := sharedGate(t)
	for _, tc := range []struct{ permission, preset, want string }{
		{"", "safe", "disabled"}, {"", "balanced", "control"}, {"", "power", "full"}, {"", "developer", "full"},
		{"observe", "", "observe"}, {"", "", "full"},
	} {
		req := baseRequest()
		req.Session.Permission, req.Session.Preset = tc.permission, tc.preset
		if got := g.Decide(context.Background(), req).Permission; got != tc.want {
			t.Errorf("permission %q preset %q: got level %q, want %q", tc.permission, tc.preset, got, tc.want)
		}
	}
}

func TestURLTricks(t *testing.T) {
	denied, allowed := contract.ResultDenied, contract.ResultAllowed
	withIP := func(u string) func(*Request) {
		return func(r *Request) {
			navigateTo(u)(r)
			r.Session.AllowedOrigins = []string{"http://127.0.0.1", "https://[::1]", "https://xn--bcher-kva.example"}
		}
	}
	runDecideCases(t, []decideCase{
		{"userinfo hides the real host", navigateTo("https://ok.example@evil.example/"), denied, []string{"url_userinfo", "origin_not_allowed"}, ""},
		{"userinfo with an allowed real host", navigateTo("https://evil.example@shop.example/"), denied, []string{"url_userinfo"}, ""},
		{"uppercase host", navigateTo("HTTPS://SHOP.EXAMPLE/Cart"), allowed, nil, ""},
		{"trailing dot", navigateTo("https://shop.example./"), allowed, nil, ""},
		{"explicit default port", navigateTo("https://shop.example:443/"), allowed, nil, ""},
		{"other port", navigateTo("https://shop.example:8443/"), denied, []string{"origin_not_allowed"}, ""},
		{"http is another origin", navigateTo("http://shop.example/"), denied, []string{"origin_not_allowed"}, ""},
		// The policy reads the host as shop.example; asked as a probe, as
		// the URL breaks browser-action's uri format and a session's gate
		// denies what it cannot record (TestUnrecordedActionDenied).
		{"percent-encoded host", func(r *Request) { navigateTo("https://sh%6Fp.example/")(r); r.Probe = true }, allowed, nil, ""},
		{"fullwidth host maps to ASCII", navigateTo("https://ｓｈｏｐ.example/"), allowed, nil, ""},
		{"homograph: Cyrillic o", navigateTo("https://sh\u043ep.example/"), denied, []string{"origin_not_allowed"}, ""},
		{"punycode of a homograph", navigateTo("https://xn--shp-ted.example/"), denied, []string{"origin_not_allowed"}, ""},
		{"IDN allowed in punycode form", withIP("https://bücher.example/"), allowed, nil, ""},
		{"IDN allowed in Unicode form", withIP("https://xn--bcher-kva.example/"), allowed, nil, ""},
		{"wildcard allows a subdomain", navigateTo("https://a.docs.example/x"), allowed, nil, ""},
		{"wildcard allows the apex", navigateTo("https://docs.example/"), allowed, nil, ""},
		{"wildcard does not allow a lookalike", navigateTo("https://evildocs.example/"), denied, []string{"origin_not_allowed"}, ""},
		{"allowed host is not a suffix of another", navigateTo("https://shop.example.evil.example/"), denied, []string{"origin_not_allowed"}, ""},
		{"IPv4 literal not allowed", navigateTo("http://127.0.0.1/"), denied, []string{"origin_not_allowed"}, ""},
		{"IPv4 literal allowed", withIP("http://127.0.0.1/"), allowed, nil, ""},
		{"decimal IPv4 is the same host", withIP("http://2130706433/"), allowed, nil, ""},
		{"hex IPv4 is the same host", withIP("http://0x7f.0.0.1/"), allowed, nil, ""},
		{"octal short IPv4 is the same host", withIP("http://0177.1/"), allowed, nil, ""},
		{"decimal IPv4 of another host", withIP("http://2130706434/"), denied, []string{"origin_not_allowed"}, ""},
		{"IPv6 literal allowed", withIP("https://[0:0:0::1]/"), allowed, nil, ""},
		{"IPv6 mapped IPv4 is not 127.0.0.1", withIP("http://[::ffff:127.0.0.1]/"), denied, []string{"origin_not_allowed"}, ""},
		{"IPv4 out of range", withIP("http://256.0.0.1/"), denied, []string{"url_invalid"}, ""},
		{"javascript:", navigateTo("javascript:alert(document.cookie)"), denied, []string{"url_scheme"}, ""},
		{"JavaScript: uppercase", navigateTo("JavaScript:alert(1)"), denied, []string{"url_scheme"}, ""},
		{"data:", navigateTo("data:text/html,<script>alert(1)</script>"), denied, []string{"url_scheme"}, ""},
		{"file:", navigateTo("file:///etc/passwd"), denied, []string{"url_scheme"}, ""},
		{"chrome:", navigateTo("chrome://settings/passwords"), denied, []string{"url_scheme"}, ""},
		{"blob:", navigateTo("blob:https://shop.example/550e8400"), denied, []string{"url_scheme"}, ""},
		{"about:", navigateTo("about:blank"), denied, []string{"url_scheme"}, ""},
		{"scheme-relative", navigateTo("//evil.example/"), denied, []string{"url_invalid"}, ""},
		{"relative path", navigateTo("/account"), denied, []string{"url_invalid"}, ""},
		{"leading space", navigateTo(" https://shop.example/"), denied, []string{"url_invalid"}, ""},
		{"tab inside the scheme", navigateTo("java\tscript:alert(1)"), denied, []string{"url_invalid"}, ""},
		{"newline in the path", navigateTo("https://shop.example/\nx"), denied, []string{"url_invalid"}, ""},
		{"NUL", navigateTo("https://shop.example/\x00"), denied, []string{"url_invalid"}, ""},
		{"backslash authority trick", navigateTo(`https://shop.example\@evil.example/`), denied, []string{"url_invalid"}, ""},
		{"missing slashes", navigateTo("https:shop.example"), denied, []string{"url_invalid"}, ""},
		{"three slashes", navigateTo("https:///evil.example"), denied, []string{"url_invalid"}, ""},
		{"blocked after normalization", navigateTo("https://PAYMENTS.example./"), denied, []string{"blocked_domain"}, ""},
		{"page on about:blank, navigate out", func(r *Request) {
			navigateTo("https://shop.example/")(r)
			r.ActiveURL = "about:blank"
		}, allowed, nil, ""},
		{"click on about:blank", func(r *Request) { r.ActiveURL = "about:blank" }, denied, []string{"url_scheme"}, ""},
	})
}

func TestGovernedExceptions(t *testing.T) {
	onEvil := func(es ...Exception) func(*Request) {
		return func(r *Request) {
			r.ActiveURL = "https://evil.example/"
			r.Policy.GovernedExceptions = es
		}
	}
	valid := Exception{ID: "ge-1", Rule: "origin_not_allowed", Reason: "incident 42", ExpiresAt: "2026-02-15T00:00:00Z", DecisionLogID: "dec-approval-7"}
	expired := valid
	expired.ExpiresAt = "2026-01-23T10:00:00Z" // exactly the decision time: expired
	other := valid
	other.Rule = "step_budget_exceeded"
	unwaivable := valid
	unwaivable.Rule = "url_scheme"
	seed := Exception{ID: "ge-2026-01-23-ops-001", ExpiresAt: "2026-02-15T00:00:00Z", Reason: "Emergency remediation workflow"}
	badTime := valid
	badTime.ExpiresAt = "next tuesday"

	g := sharedGate(t)
	for _, tc := range []struct {
		name       string
		mutate     func(*Request)
		wantAllow  bool
		wantStatus []contract.ExceptionStatus
		wantWhy    string
	}{
		{"valid exception waives its rule", onEvil(valid), true, []contract.ExceptionStatus{"applied"}, "waives rule origin_not_allowed"},
		{"expired exception waives nothing", onEvil(expired), false, []contract.ExceptionStatus{"expired"}, "expired at"},
		{"exception for another rule is out of scope", onEvil(other), false, []contract.ExceptionStatus{"out_of_scope"}, "did not fire"},
		{"exception for an unwaivable rule is out of scope", func(r *Request) {
			navigateTo("javascript:alert(1)")(r)
			r.Policy.GovernedExceptions = []Exception{unwaivable}
		}, false, []contract.ExceptionStatus{"out_of_scope"}, "may not be waived"},
		{"seed's exception without a rule is malformed", onEvil(seed), false, []contract.ExceptionStatus{"malformed"}, "names no rule"},
		{"unparsable expiry is malformed", onEvil(badTime), false, []contract.ExceptionStatus{"malformed"}, "RFC 3339"},
		{"unused exception on an allowed action", func(r *Request) { r.Policy.GovernedExceptions = []Exception{valid} }, true, []contract.ExceptionStatus{"out_of_scope"}, "did not fire"},
		{"two exceptions, one applies", onEvil(expired, valid), true, []contract.ExceptionStatus{"expired", "applied"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest()
			tc.mutate(&req)
			d := g.Decide(context.Background(), req)
			if got, want := d.Allow, tc.wantAllow; got != want {
				t.Errorf("allow = %v, want %v (%v)", got, want, d.Reasons)
			}
			var got []contract.ExceptionStatus
			for _, e := range d.Exceptions {
				got = append(got, e.Status)
			}
			if !slices.Equal(got, tc.wantStatus) {
				t.Errorf("statuses = %v, want %v (%+v)", got, tc.wantStatus, d.Exceptions)
			}
			if tc.wantWhy != "" && (len(d.Exceptions) == 0 || !strings.Contains(d.Exceptions[0].Why, tc.wantWhy)) {
				t.Errorf("why = %+v, want it to contain %q", d.Exceptions, tc.wantWhy)
			}
			if tc.wantAllow && slices.Contains(got, contract.ExceptionApplied) {
				if len(d.Waived) == 0 || d.Waived[0].ExceptionID != "ge-1" || d.Waived[0].Rule != "origin_not_allowed" {
					t.Errorf("waived = %+v, want origin_not_allowed waived by ge-1", d.Waived)
				}
			}
			if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
				t.Errorf("record is not schema-valid: %v", err)
			}
		})
	}
}

func TestApprovals(t *testing.T) {
	store := NewApprovals()
	g, err := New(context.Background(), Options{Approvals: store})
	if err != nil {
		t.Fatal(err)
	}
	pay := baseRequest()
	pay.Target = &contract.Element{Tag: "button", Text: "Pay now"}
	decide := func(r Request) Decision { return g.Decide(context.Background(), r) }

	first := decide(pay)
	if got, want := first.Result, contract.ResultPaused; got != want {
		t.Fatalf("unapproved: result = %s, want %s", got, want)
	}
	if first.Allow || !first.RequiresApproval || len(first.ApprovalReasons) == 0 {
		t.Fatalf("unapproved: %+v", first.DecisionRecord)
	}
	if got, want := first.ActionHash, g.ActionHash(pay); got != want {
		t.Fatalf("ActionHash = %s, record says %s", want, got)
	}
	grant := func(hash string, ttl time.Duration) string {
		a, err := store.Grant(hash, "alice@example.com", testNow, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}

	t.Run("bound approval is used once", func(t *testing.T) {
		r := pay
		r.ApprovalID = grant(first.ActionHash, time.Minute)
		d := decide(r)
		if got, want := d.Result, contract.ResultApproved; got != want || !d.Allow {
			t.Fatalf("result = %s (allow %v), want %s: %v", got, d.Allow, want, d.Reasons)
		}
		if d.Approval == nil || d.Approval.ActionHash != first.ActionHash || d.Approval.Approver != "alice@example.com" {
			t.Errorf("approval = %+v", d.Approval)
		}
		if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
			t.Errorf("record is not schema-valid: %v", err)
		}
		again := decide(r)
		if again.Allow || !hasRule(again.Reasons, RuleApprovalInvalid) || !strings.Contains(again.Reasons[0].Message, "already used") {
			t.Errorf("reused approval: %s %v", again.Result, again.Reasons)
		}
	})
	t.Run("expired approval", func(t *testing.T) {
		r := pay
		r.ApprovalID = grant(first.ActionHash, time.Minute)
		r.Now = testNow.Add(2 * time.Minute)
		d := decide(r)
		if d.Allow || !hasRule(d.Reasons, RuleApprovalInvalid) || !strings.Contains(d.Reasons[0].Message, "expired") {
			t.Errorf("got %s %v", d.Result, d.Reasons)
		}
	})
	t.Run("approval of another action", func(t *testing.T) {
		r := pay
		r.ApprovalID = grant(first.ActionHash, time.Minute)
		r.Target = &contract.Element{Tag: "button", Text: "Pay now (x10)"}
		d := decide(r)
		if d.Allow || !hasRule(d.Reasons, RuleApprovalInvalid) || !strings.Contains(d.Reasons[0].Message, "different action") {
			t.Errorf("got %s %v", d.Result, d.Reasons)
		}
		// The attempt burnt it: the right action cannot use it either.
		r.Target = pay.Target
		if d := decide(r); d.Allow {
			t.Errorf("burnt approval was accepted")
		}
	})
	t.Run("approval bound to another session", func(t *testing.T) {
		r := pay
		r.ApprovalID = grant(first.ActionHash, time.Minute)
		r.SessionID = "s-2"
		if d := decide(r); d.Allow {
			t.Errorf("approval crossed sessions")
		}
	})
	t.Run("unknown approval", func(t *testing.T) {
		r := pay
		r.ApprovalID = "apr-00000000000000000000000000000000"
		if d := decide(r); d.Allow || !hasRule(d.Reasons, RuleApprovalInvalid) {
			t.Errorf("got %s %v", d.Result, d.Reasons)
		}
	})
	t.Run("approval on a denied action is not consumed", func(t *testing.T) {
		r := pay
		id := grant(first.ActionHash, time.Minute)
		r.ApprovalID = id
		r.StepIndex = 99 // past the budget: denied before any approval
		if d := decide(r); d.Allow || !hasRule(d.Reasons, "step_budget_exceeded") {
			t.Fatalf("got %s %v", d.Result, d.Reasons)
		}
		r.StepIndex = pay.StepIndex
		if d := decide(r); !d.Allow {
			t.Errorf("approval was consumed by a denied decision: %v", d.Reasons)
		}
	})
	t.Run("no approval store", func(t *testing.T) {
		r := pay
		r.ApprovalID = "apr-00000000000000000000000000000000"
		if d := sharedGate(t).Decide(context.Background(), r); d.Allow || !hasRule(d.Reasons, RuleApprovalInvalid) {
			t.Errorf("got %s %v", d.Result, d.Reasons)
		}
	})
}

func TestApprovalsGrantValidation(t *testing.T) {
	s := NewApprovals()
	h := strings.Repeat("a", 64)
	for name, f := range map[string]func() error{
		"bad hash":    func() error { _, err := s.Grant("xyz", "bob", testNow, time.Minute); return err },
		"no approver": func() error { _, err := s.Grant(h, "", testNow, time.Minute); return err },
		"zero ttl":    func() error { _, err := s.Grant(h, "bob", testNow, 0); return err },
		"long ttl":    func() error { _, err := s.Grant(h, "bob", testNow, 2*MaxApprovalTTL); return err },
		"no time":     func() error { _, err := s.Grant(h, "bob", time.Time{}, time.Minute); return err },
	} {
		if f() == nil {
			t.Errorf("%s: Grant accepted it", name)
		}
	}
	a, err := s.Grant(h, "bob", testNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consume(a.ID, h, testNow); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		id, hash string
		want     error
	}{
		"used":    {a.ID, h, ErrApprovalUsed},
		"unknown": {"apr-x", h, ErrApprovalUnknown},
	} {
		if _, err := s.Consume(tc.id, tc.hash, testNow); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
	b, _ := s.Grant(h, "bob", testNow, time.Minute)
	if _, err := s.Consume(b.ID, strings.Repeat("b", 64), testNow); !errors.Is(err, ErrApprovalMismatch) {
		t.Errorf("mismatch: got %v", err)
	}
	c, _ := s.Grant(h, "bob", testNow, time.Minute)
	if _, err := s.Consume(c.ID, h, testNow.Add(time.Minute)); !errors.Is(err, ErrApprovalExpired) {
		t.Errorf("expired: got %v", err)
	}
	var nilStore *Approvals
	if _, err := nilStore.Consume("x", h, testNow); !errors.Is(err, ErrApprovalUnknown) {
		t.Errorf("nil store: got %v", err)
	}
	// Expired entries are pruned once the store is large.
	for i := 0; i < 1100; i++ {
		if _, err := s.Grant(h, "bob", testNow.Add(time.Duration(i)*time.Hour), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.byID); n > 1025 {
		t.Errorf("store holds %d approvals, want expired ones pruned", n)
	}
}

// TestDecisionDeterministic: the same request at the same pinned time
// gives the same record, id included; the id is recomputable from the
// record.
func TestDecisionDeterministic(t *testing.T) {
	g := sharedGate(t)
	a := g.Decide(context.Background(), baseRequest())
	b := g.Decide(context.Background(), baseRequest())
	a.DurationUs, b.DurationUs = 0, 0
	if !reflect.DeepEqual(a.DecisionRecord, b.DecisionRecord) {
		t.Errorf("records differ:\n%+v\n%+v", a.DecisionRecord, b.DecisionRecord)
	}
	at, err := time.Parse(time.RFC3339Nano, a.EvaluatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := DecisionID(a.PolicyVersion, a.ActionHash, a.StepIndex, at), a.DecisionID; got != want {
		t.Errorf("recomputed id %s, record has %s", got, want)
	}
	later := baseRequest()
	later.Now = testNow.Add(time.Second)
	if c := g.Decide(context.Background(), later); c.DecisionID == a.DecisionID {
		t.Error("a later decision has the same id")
	}
}

func TestClockPinsTime(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	g, err := New(context.Background(), Options{Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	req := baseRequest()
	req.Now = time.Time{}
	d := g.Decide(context.Background(), req)
	if got, want := d.EvaluatedAt, "2026-03-01T11:00:00Z"; got != want {
		t.Errorf("evaluatedAt = %s, want %s", got, want)
	}
}

// TestConcurrentDecisions shares one Gate between goroutines (run with
// -race); every decision must equal the sequential one.
func TestConcurrentDecisions(t *testing.T) {
	g := sharedGate(t)
	r := rand.New(rand.NewPCG(7, 7))
	reqs := make([]Request, 64)
	want := make([]string, len(reqs))
	for i := range reqs {
		reqs[i] = randomRequest(r)
		d := g.Decide(context.Background(), reqs[i])
		d.DurationUs = 0
		want[i] = recordString(d.DecisionRecord)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(reqs))
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for k := range reqs {
				i := (k + w*7) % len(reqs)
				d := g.Decide(context.Background(), reqs[i])
				d.DurationUs = 0
				if got := recordString(d.DecisionRecord); got != want[i] {
					errs <- fmt.Sprintf("request %d: got %s, want %s", i, got, want[i])
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestGoFloor: a policy that allows everything still cannot allow what the
// Go floor refuses.
func TestGoFloor(t *testing.T) {
	allowAll := fstest.MapFS{"p.rego": {Data: []byte(`package aegis.browser

decision := {"allow": true, "deny": [], "risk": "low", "requires_approval": false, "action_name": "browser.navigate"}
`)}}
	g, err := New(context.Background(), Options{PolicyFS: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"javascript:alert(1)", "https://a@b.example/", "//evil.example", "file:///etc/passwd", "https://"} {
		req := baseRequest()
		navigateTo(u)(&req)
		if d := g.Decide(context.Background(), req); d.Allow || !hasRule(d.Reasons, RuleURLFloor) {
			t.Errorf("%q: got %s %v, want denied by %s", u, d.Result, ruleNames(d.Reasons), RuleURLFloor)
		}
	}
	req := baseRequest()
	if d := g.Decide(context.Background(), req); !d.Allow || d.PolicySource != SourceFS {
		t.Errorf("allow-all policy denied the base request: %v", d.Reasons)
	}
}

func TestReasonsSortedAndBounded(t *testing.T) {
	g := sharedGate(t)
	req := baseRequest()
	req.Action.Type = "shell"
	req.StepIndex = -5
	req.Session.DecisionLogID = ""
	req.Session.Permission = "root"
	req.ActiveURL = "javascript:x"
	d := g.Decide(context.Background(), req)
	if len(d.Reasons) < 4 {
		t.Fatalf("reasons = %v", d.Reasons)
	}
	if !slices.IsSortedFunc(d.Reasons, func(a, b contract.Reason) int {
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	}) {
		t.Errorf("reasons not sorted: %v", ruleNames(d.Reasons))
	}
}

// TestDecisionRecordsTarget: the record holds the element the gate judged
// (so that the decision can be judged again), in every outcome, fail-closed
// included; none for an action without one; and an element past its
// bounds, which is denied, is not recorded (the record stays valid).
func TestDecisionRecordsTarget(t *testing.T) {
	g := sharedGate(t)
	ctx := context.Background()
	req := baseRequest()
	d := g.Decide(ctx, req)
	if d.Target == nil || *d.Target != *req.Target {
		t.Errorf("allowed click: target %+v, want %+v", d.Target, req.Target)
	}
	var none *Gate
	if d := none.Decide(ctx, req); !d.FailClosed || d.Target == nil || *d.Target != *req.Target {
		t.Errorf("fail-closed decision: target %+v, fail closed %v; want %+v", d.Target, d.FailClosed, req.Target)
	}
	nav := baseRequest()
	navigateTo("https://shop.example/a")(&nav)
	nav.Target = nil
	if d := g.Decide(ctx, nav); d.Target != nil {
		t.Errorf("navigation: target %+v, want none", d.Target)
	}
	bad := baseRequest()
	bad.Target.Label = strings.Repeat("x", contract.MaxElementLabel+1)
	d = g.Decide(ctx, bad)
	if d.Target != nil || !hasRule(d.Reasons, RuleTargetInvalid) {
		t.Errorf("element past its bounds: target %+v, reasons %v; want none, denied for %s", d.Target, ruleNames(d.Reasons), RuleTargetInvalid)
	}
	if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
		t.Errorf("record is not schema-valid: %v", err)
	}
}

// recordString is a decision record as text that compares by value (its
// JSON: fmt would print the addresses of its pointers).
func recordString(r contract.DecisionRecord) string {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Sprint(r, err)
	}
	return string(b)
}
