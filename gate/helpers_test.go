package gate

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// testNow is the pinned decision time of the tests.
var testNow = time.Date(2026, 1, 23, 10, 0, 0, 0, time.UTC)

var (
	embeddedOnce sync.Once
	embeddedGate *Gate
	embeddedErr  error
)

// sharedGate returns one gate on the embedded policy for the whole test
// binary: compiling it is the slow part.
func sharedGate(t testing.TB) *Gate {
	t.Helper()
	embeddedOnce.Do(func() {
		embeddedGate, embeddedErr = New(context.Background(), Options{Timeout: 5 * time.Second})
	})
	if embeddedErr != nil {
		t.Fatal(embeddedErr)
	}
	return embeddedGate
}

// baseRequest is a plain allowed click: on an allowed page, a button
// labelled Next, full permission through the default preset.
func baseRequest() Request {
	return Request{
		SessionID: "s-1",
		StepIndex: 3,
		Action: contract.Action{
			ID: "a1", Type: contract.ActClick, Reason: "open the next page", PolicyTags: []string{},
			Selector: "#next",
		},
		Target:    &contract.Element{Tag: "button", Type: "button", ID: "next", Text: "Next"},
		ActiveURL: "https://shop.example/cart",
		Session: Session{
			AllowedOrigins: []string{"https://shop.example", "https://*.docs.example"},
			MaxStepBudget:  25,
			DecisionLogID:  "dec-2026-01-23-001",
		},
		Policy: SessionPolicy{
			BlockedDomains:     []string{"payments.example"},
			SensitiveSelectors: []string{"input[name=ssn]"},
		},
		Now: testNow,
	}
}

func navigateTo(u string) func(*Request) {
	return func(r *Request) {
		r.Action = contract.Action{ID: "n1", Type: contract.ActNavigate, Reason: "go", PolicyTags: []string{}, URL: u}
		r.Target = nil
	}
}

func typeInto(sel string, target *contract.Element, redact bool) func(*Request) {
	return func(r *Request) {
		r.Action = contract.Action{ID: "t1", Type: contract.ActType, Reason: "fill", PolicyTags: []string{}, Selector: sel, Text: "s3cret", Redact: redact}
		r.Target = target
	}
}

func hasRule(rs []contract.Reason, rule string) bool {
	for _, r := range rs {
		if r.Rule == rule {
			return true
		}
	}
	return false
}

func ruleNames(rs []contract.Reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Rule)
	}
	return out
}

// Pools the random requests draw from: enough of each rule's triggers
// that every rule fires somewhere in a few thousand requests.
var (
	randURLs = []string{
		"https://shop.example/cart", "https://shop.example/checkout", "https://shop.example/account/delete",
		"https://SHOP.example./x", "http://shop.example/", "https://shop.example:8443/", "https://shop.example:443/ok",
		"https://a.docs.example/", "https://docs.example/guide", "https://evil.example/", "about:blank",
		"javascript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd", "chrome://settings",
		"blob:https://shop.example/1", "https://ok.example@evil.example/", "https://shop.example@evil.example/",
		"https://payments.example/pay", "https://a.payments.example/", "http://127.0.0.1/", "http://0x7f.1/",
		"http://2130706433/", "https://[::1]/", "https://xn--shp-ted.example/", "https://sh\u043ep.example/",
		"//evil.example/", " https://shop.example/", "https://shop.example/\t", "https://shop.example\\@evil.example/",
		"https://ｓｈｏｐ.example/", "https:shop.example", "https:///shop.example", "", "https://shop.example/%2e%2e/pay",
	}
	randSelectors = []string{
		"#next", "#pw", "button.pay-now", "#delete-account", "input[type=password]", "INPUT[type = 'password']",
		"input[name=ssn]", "#q", "a.display", "#submitOrder", "#submit", "#cardNumber", "", "#secret-box",
	}
	randTargets = []*contract.Element{
		nil,
		{Tag: "button", Text: "Next"},
		{Tag: "BUTTON", Text: "Pay now"},
		{Tag: "input", Type: "password", ID: "pw"},
		{Tag: "input", Type: "text", Autocomplete: "cc-number"},
		{Tag: "input", Type: "text", Autocomplete: "section-a one-time-code"},
		{Tag: "select", Name: "exp", Autocomplete: "cc-exp-month"},
		{Tag: "input", Type: "text", Name: "ssn"},
		{Tag: "input", Type: "text", Label: "Search"},
		{Tag: "p", Text: "Password rules"},
		{Tag: "a", Text: "Delete my account"},
		{Tag: "textarea", Label: "Comment"},
	}
	randTypes    = []contract.ActionType{"navigate", "click", "type", "select", "scroll", "wait", "extract", "shell", ""}
	randPerms    = []string{"", "", "", "disabled", "observe", "control", "full", "root"}
	randPresets  = []string{"", "", "safe", "balanced", "power", "developer", "yolo"}
	randAllowed  = [][]string{{"https://shop.example"}, {"https://shop.example", "https://*.docs.example"}, {}, {"ftp://x"}, {"shop.example", "http://127.0.0.1"}}
	randBlocked  = [][]string{{}, {"payments.example"}, {"*.evil.example", "payments.example"}, {"bad host!"}}
	randLogIDs   = []string{"dec-1", "dec-1", "dec-1", "", "bad id!"}
	randBudgets  = []int{25, 25, 10, 1, 0}
	randTexts    = []string{"hello", "", "delete everything", "4111 1111 1111 1111"}
	randExtracts = []contract.ExtractKind{"text", "table", "link", "screenshot"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomRequest draws a request from the pools: hostile actions, hostile
// pages, and every kind of session. Each part of the base request is
// replaced with some probability, so that the sample holds plain allows as
// well as requests broken in one or several ways.
func randomRequest(r *rand.Rand) Request {
	req := baseRequest()
	maybe := func() bool { return r.IntN(6) == 0 }
	if maybe() {
		req.SessionID = pick(r, []string{"s-1", "s-2", ""})
	}
	if maybe() {
		req.StepIndex = r.IntN(42) - 1
	}
	if maybe() {
		req.ActiveURL = pick(r, randURLs)
	}
	if maybe() {
		req.Session.Permission = pick(r, randPerms)
	}
	if maybe() {
		req.Session.Preset = pick(r, randPresets)
	}
	if maybe() {
		req.Session.AllowedOrigins = pick(r, randAllowed)
	}
	if maybe() {
		req.Session.MaxStepBudget = pick(r, randBudgets)
	}
	if maybe() {
		req.Session.DecisionLogID = pick(r, randLogIDs)
	}
	if maybe() {
		req.Policy.BlockedDomains = pick(r, randBlocked)
	}
	if maybe() {
		req.Policy.SensitiveSelectors = pick(r, [][]string{nil, {"#secret-box"}, {"input[name=ssn]"}})
	}
	if maybe() {
		req.Policy.GovernedExceptions = []Exception{pick(r, []Exception{
			{ID: "ge-1", Rule: "origin_not_allowed", Reason: "incident", ExpiresAt: "2026-02-15T00:00:00Z", DecisionLogID: "dec-7"},
			{ID: "ge-2", Rule: "step_budget_exceeded", Reason: "long task", ExpiresAt: "2026-01-01T00:00:00Z", DecisionLogID: "dec-7"},
			{ID: "ge-3", Rule: "url_scheme", Reason: "no", ExpiresAt: "2026-02-15T00:00:00Z", DecisionLogID: "dec-7"},
			{ID: "ge-4", Reason: "seed-style", ExpiresAt: "2026-02-15T00:00:00Z"},
			{ID: "ge-5", Rule: "blocked_domain", Reason: "r", ExpiresAt: "not a time", DecisionLogID: "dec-7"},
			{ID: "ge-6", Rule: "target_unresolved", Reason: "r", ExpiresAt: "2027-01-01T00:00:00Z", DecisionLogID: "dec-7"},
		})}
	}
	if maybe() {
		req.Now = testNow.AddDate(0, 1, 0)
	}
	if r.IntN(3) == 0 {
		req.Target = pick(r, randTargets)
	}
	if r.IntN(3) == 0 {
		return req
	}
	a := contract.Action{ID: pick(r, []string{"a1", "", "bad id/"}), Type: pick(r, randTypes), Reason: "r", PolicyTags: []string{}}
	switch a.Type {
	case contract.ActNavigate:
		a.URL = pick(r, randURLs)
		if r.IntN(2) == 0 {
			a.URL = pick(r, []string{"https://shop.example/products", "https://docs.example/", "https://a.docs.example/x?q=1"})
		}
	case contract.ActClick:
		a.Selector = pick(r, randSelectors)
		a.TimeoutMs = r.IntN(2) * 500
	case contract.ActType:
		a.Selector, a.Text, a.Redact = pick(r, randSelectors), pick(r, randTexts), r.IntN(2) == 0
	case contract.ActSelect:
		a.Selector, a.Value = pick(r, randSelectors), pick(r, []string{"12", "Delete", "pay monthly"})
	case contract.ActScroll:
		a.Direction = pick(r, []contract.ScrollDirection{"up", "down", ""})
	case contract.ActWait:
		a.DurationMs = r.IntN(3) * 100
	case contract.ActExtract:
		a.Extract = pick(r, randExtracts)
		a.Selector = pick(r, randSelectors)
	default:
		a.Selector = pick(r, randSelectors)
		a.URL = pick(r, randURLs)
	}
	req.Action = a
	if r.IntN(2) == 0 {
		req.Target = pick(r, randTargets)
	}
	return req
}
