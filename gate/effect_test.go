package gate

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// causing makes the request a question about an effect of its action.
func causing(kind contract.EffectKind, method, origin, path string, fields ...string) func(*Request) {
	return func(r *Request) {
		r.Effect = &contract.Effect{Kind: kind, Method: method, Origin: origin, Path: path, Fields: fields, ResourceType: "fetch"}
	}
}

// clickOn makes the action a click on a button captioned caption, the
// model's selector saying nothing.
func clickOn(caption string) func(*Request) {
	return func(r *Request) {
		r.Action.Selector = "form > button:nth-of-type(2)"
		r.Target = &contract.Element{Tag: "button", Type: "submit", Text: caption}
	}
}

func both(fs ...func(*Request)) func(*Request) {
	return func(r *Request) {
		for _, f := range fs {
			f(r)
		}
	}
}

func withPermission(level, preset string) func(*Request) {
	return func(r *Request) { r.Session.Permission, r.Session.Preset = level, preset }
}

// TestEffectDecisions: effects judged through the embedded policy, risk
// following the effect whatever the button said (issue 15 part 2).
func TestEffectDecisions(t *testing.T) {
	const shop = "https://shop.example"
	paused, allowed, denied := contract.ResultPaused, contract.ResultAllowed, contract.ResultDenied
	extract := func(r *Request) {
		r.Action = contract.Action{ID: "x1", Type: contract.ActExtract, Reason: "read", PolicyTags: []string{}, Extract: "text"}
		r.Target = nil
	}
	runDecideCases(t, []decideCase{
		{"POST /pay: paused, high", causing(contract.EffectRequest, "POST", shop, "/pay"), paused, nil, contract.RiskHigh},
		{"POST /pay behind Continue: paused, high", both(clickOn("Continue"), causing(contract.EffectRequest, "POST", shop, "/pay")), paused, nil, contract.RiskHigh},
		{"form POST /checkout/confirm navigation: high", causing(contract.EffectNavigation, "POST", shop, "/checkout/confirm", "address", "email"), paused, nil, contract.RiskHigh},
		{"POST /api/account/delete: high", causing(contract.EffectRequest, "POST", shop, "/api/account/delete"), paused, nil, contract.RiskHigh},
		{"POST /transfers: high", causing(contract.EffectRequest, "POST", shop, "/transfers"), paused, nil, contract.RiskHigh},
		{"POST /pаy, Cyrillic а percent-encoded: high", causing(contract.EffectRequest, "POST", shop, "/p%D0%B0y"), paused, nil, contract.RiskHigh},
		{"POST /api/orders: high", causing(contract.EffectRequest, "POST", shop, "/api/orders"), paused, nil, contract.RiskHigh},
		{"POST with a card number field: high", causing(contract.EffectRequest, "PUT", shop, "/api/step2", "cardNumber", "name"), paused, nil, contract.RiskHigh},
		{"POST with an iban field: high", causing(contract.EffectRequest, "POST", shop, "/api/profile", "payout_iban"), paused, nil, contract.RiskHigh},
		{"DELETE anything: high", causing(contract.EffectRequest, "DELETE", shop, "/api/items/3"), paused, nil, contract.RiskHigh},
		{"POST padded to the kept field names (cardNumber pushed out): high", causing(contract.EffectRequest, "POST", shop, "/api/step2", paddedFields()...), paused, nil, contract.RiskHigh},
		{"POST with a path as long as is kept (/pay pushed out): high", causing(contract.EffectRequest, "POST", shop, "/"+strings.Repeat("a", contract.MaxEffectPath-1)), paused, nil, contract.RiskHigh},
		{"GET with as many field names: reads, low", causing(contract.EffectRequest, "GET", shop, "/api/search", paddedFields()...), allowed, nil, contract.RiskLow},
		{"POST /api/cart, balanced: allowed, medium", both(withPermission("", "balanced"), causing(contract.EffectRequest, "POST", shop, "/api/cart", "qty", "sku")), allowed, nil, contract.RiskMedium},
		{"POST /api/cart behind Pay now: medium", both(clickOn("Pay now"), causing(contract.EffectRequest, "POST", shop, "/api/cart")), allowed, nil, contract.RiskMedium},
		{"POST /display-settings: not pay", causing(contract.EffectRequest, "POST", shop, "/display-settings"), allowed, nil, contract.RiskMedium},
		{"GET /pay navigation: as navigate, high", causing(contract.EffectNavigation, "GET", shop, "/pay"), paused, nil, contract.RiskHigh},
		{"GET /products navigation: as navigate, medium", causing(contract.EffectNavigation, "GET", shop, "/products"), allowed, nil, contract.RiskMedium},
		{"GET /api/pay fetch: reads, low", causing(contract.EffectRequest, "GET", shop, "/api/pay"), allowed, nil, contract.RiskLow},
		{"frame GET on an allowed subdomain", causing(contract.EffectFrame, "GET", "https://a.docs.example", "/embed"), allowed, nil, contract.RiskMedium},
		{"POST to a foreign origin: denied", causing(contract.EffectRequest, "POST", "https://evil.example", "/collect", "q"), denied, []string{"origin_not_allowed"}, ""},
		{"form POST navigation to a foreign origin: denied", causing(contract.EffectNavigation, "POST", "https://evil.example", "/"), denied, []string{"origin_not_allowed"}, ""},
		{"POST to a blocked domain: denied", causing(contract.EffectRequest, "POST", "https://payments.example", "/charge"), denied, []string{"blocked_domain"}, ""},
		{"POST over http to the https origin: denied", causing(contract.EffectRequest, "POST", "http://shop.example", "/api/cart"), denied, []string{"origin_not_allowed"}, ""},
		{"origin that is not an origin: denied", causing(contract.EffectRequest, "POST", "https://shop.example/x", "/api/cart"), denied, []string{"url_invalid"}, ""},
		{"opaque origin: denied", causing(contract.EffectRequest, "POST", "null", "/x"), denied, []string{"url_invalid"}, ""},
		{"peer channel: denied", causing(contract.EffectPeer, "", "", ""), denied, []string{"effect_kind_denied"}, ""},
		{"download: denied", causing(contract.EffectDownload, "GET", shop, "/report.pdf"), denied, []string{"effect_kind_denied"}, contract.RiskHigh},
		{"refused by the boundary: denied", func(r *Request) {
			causing(contract.EffectRequest, "POST", shop, "/api/cart")(r)
			r.Effect.Refused = "downloads are off"
		}, denied, []string{RuleEffectRefused}, ""},
		{"path without a leading slash: denied", causing(contract.EffectRequest, "POST", shop, "evil.example/x"), denied, []string{RuleEffectInvalid}, ""},
		{"unknown kind: denied", causing("teleport", "POST", shop, "/"), denied, []string{RuleEffectInvalid, "effect_kind_denied"}, ""},
		{"observe: no state-changing effect", both(extract, withPermission("observe", ""), causing(contract.EffectRequest, "POST", shop, "/api/cart")), denied, []string{"permission_denied"}, ""},
		{"observe: read-only effects", both(extract, withPermission("observe", ""), causing(contract.EffectRequest, "GET", shop, "/api/cart")), allowed, nil, contract.RiskLow},
		{"control: an effect needs no confirmation of its own", both(withPermission("control", ""), causing(contract.EffectRequest, "POST", shop, "/api/cart")), allowed, nil, contract.RiskMedium},
		{"effect of an action on a foreign page: denied", both(func(r *Request) { r.ActiveURL = "https://evil.example/" }, causing(contract.EffectRequest, "POST", shop, "/api/cart")), denied, []string{"origin_not_allowed"}, ""},
	})
}

// paddedFields are as many field names as an effect keeps, sorted before
// "cardNumber": what a page padding its body leaves of it.
func paddedFields() []string {
	fs := make([]string, contract.MaxEffectFields)
	for i := range fs {
		fs[i] = fmt.Sprintf("a%02d", i)
	}
	return fs
}

// TestEffectRecorded: the decision record carries the effect it judged,
// risk reasons that name it, and stays schema-valid; an effect past its
// bounds is denied and not recorded.
func TestEffectRecorded(t *testing.T) {
	g := sharedGate(t)
	req := baseRequest()
	causing(contract.EffectRequest, "POST", "https://shop.example", "/pay", "amount", "card")(&req)
	d := g.Decide(context.Background(), req)
	if d.Effect == nil || !reflect.DeepEqual(*d.Effect, *req.Effect) {
		t.Fatalf("effect = %+v, want %+v", d.Effect, req.Effect)
	}
	if d.ActionID != req.Action.ID || d.ActionName != "browser.click" || d.Target == nil {
		t.Errorf("record %+v does not name the action that caused the effect", d.DecisionRecord)
	}
	var rules []string
	for _, r := range d.RiskReasons {
		rules = append(rules, r.Rule)
		if !strings.Contains(r.Message, "effect (POST request) to https://shop.example/pay") {
			t.Errorf("risk reason %q does not name the effect", r.Message)
		}
	}
	if got, want := strings.Join(rules, ","), "effect_high_risk_field,effect_high_risk_path"; got != want {
		t.Errorf("risk reasons %s, want %s", got, want)
	}
	if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
		t.Errorf("record is not schema-valid: %v", err)
	}
	if plain := g.Decide(context.Background(), baseRequest()); plain.Effect != nil {
		t.Errorf("decision on the action records effect %+v", plain.Effect)
	}
	bad := baseRequest()
	causing(contract.EffectRequest, "POST", "https://shop.example", "/"+strings.Repeat("p", contract.MaxEffectPath))(&bad)
	d = g.Decide(context.Background(), bad)
	if d.Allow || d.Effect != nil || !hasRule(d.Reasons, RuleEffectInvalid) {
		t.Errorf("effect past its bounds: allow %v, effect recorded %v, reasons %v", d.Allow, d.Effect != nil, ruleNames(d.Reasons))
	}
	if _, err := contract.Encode(schemas.KindDecision, d.DecisionRecord); err != nil {
		t.Errorf("record is not schema-valid: %v", err)
	}
}

// TestEffectHashBinds: the action hash of an effect decision binds the
// effect; without one it is the hash it always was.
func TestEffectHashBinds(t *testing.T) {
	g := sharedGate(t)
	click := baseRequest()
	pay := baseRequest()
	causing(contract.EffectRequest, "POST", "https://shop.example", "/pay", "amount")(&pay)
	if got, want := g.ActionHash(click), oldActionHash(t, click); got != want {
		t.Fatalf("hash without an effect changed: %s, want %s", got, want)
	}
	base := g.ActionHash(pay)
	if base == g.ActionHash(click) {
		t.Fatal("the effect is not in the hash")
	}
	for name, mutate := range map[string]func(*contract.Effect){
		"method":  func(e *contract.Effect) { e.Method = "PUT" },
		"origin":  func(e *contract.Effect) { e.Origin = "https://a.docs.example" },
		"path":    func(e *contract.Effect) { e.Path = "/pay/all" },
		"fields":  func(e *contract.Effect) { e.Fields = []string{"amount", "to"} },
		"kind":    func(e *contract.Effect) { e.Kind = contract.EffectNavigation },
		"type":    func(e *contract.Effect) { e.ResourceType = "xhr" },
		"refused": func(e *contract.Effect) { e.Refused = "no" },
	} {
		req := pay
		e := *pay.Effect
		mutate(&e)
		req.Effect = &e
		if g.ActionHash(req) == base {
			t.Errorf("%s: same hash", name)
		}
	}
	// Recomputable from the record: the record's effect gives the same hash.
	d := g.Decide(context.Background(), pay)
	again := pay
	again.Effect = d.Effect
	if d.ActionHash != base || g.ActionHash(again) != base {
		t.Errorf("record hash %s, recomputed %s, want %s", d.ActionHash, g.ActionHash(again), base)
	}
}

// TestEffectApprovalBinds: an approval granted for "click causing POST
// /pay" approves that effect once, and neither another effect of the same
// click nor the click itself.
func TestEffectApprovalBinds(t *testing.T) {
	store := NewApprovals()
	g, err := New(context.Background(), Options{Approvals: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pay := baseRequest()
	both(clickOn("Continue"), causing(contract.EffectRequest, "POST", "https://shop.example", "/pay"))(&pay)
	first := g.Decide(ctx, pay)
	if first.Result != contract.ResultPaused {
		t.Fatalf("POST /pay: %s %v", first.Result, first.Reasons)
	}
	grant := func() string {
		a, err := store.Grant(first.ActionHash, "alice@example.com", testNow, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	highClick := pay
	highClick.Effect = nil
	highClick.Target = &contract.Element{Tag: "button", Type: "submit", Text: "Pay now"} // paused on its own
	other := pay
	other.Effect = &contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://shop.example", Path: "/transfer"}
	for name, req := range map[string]Request{"another effect of the click": other, "the click itself": highClick} {
		req.ApprovalID = grant()
		if d := g.Decide(ctx, req); d.Allow || !hasRule(d.Reasons, RuleApprovalInvalid) {
			t.Errorf("%s: got %s %v, want denied by %s", name, d.Result, ruleNames(d.Reasons), RuleApprovalInvalid)
		}
	}
	pay.ApprovalID = grant()
	if d := g.Decide(ctx, pay); !d.Allow || d.Result != contract.ResultApproved || d.Effect == nil {
		t.Errorf("the approved effect: got %s %v", d.Result, d.Reasons)
	}
}

// TestConfusableCaptions: the element's words are normalized before the
// policy matches them (issue 15 part 2), and risk is not read from words
// that are not risk words.
func TestConfusableCaptions(t *testing.T) {
	paused, allowed := contract.ResultPaused, contract.ResultAllowed
	runDecideCases(t, []decideCase{
		{"Pаy now (Cyrillic а)", clickOn("P\u0430y now"), paused, nil, contract.RiskHigh},
		{"РАУ (Cyrillic capitals)", clickOn("\u0420\u0410\u0423"), paused, nil, contract.RiskHigh},
		{"Dеlеtе account (Cyrillic е)", clickOn("D\u0435l\u0435t\u0435 account"), paused, nil, contract.RiskHigh},
		{"Pay with a Greek capital Alpha", clickOn("P\u0391Y"), paused, nil, contract.RiskHigh},
		{"mathematical bold 𝐏𝐚𝐲", clickOn("𝐏𝐚𝐲 𝐧𝐨𝐰"), paused, nil, contract.RiskHigh},
		{"small capitals ᴘᴀʏ", clickOn("ᴘᴀʏ"), paused, nil, contract.RiskHigh},
		{"soft hyphen and word joiner", clickOn("Pa\u00ady\u2060"), paused, nil, contract.RiskHigh},
		{"Hangul filler inside", clickOn("Pa\u3164y"), paused, nil, contract.RiskHigh},
		{"label in Lisu letters", func(r *Request) {
			r.Action.Selector = "#b"
			r.Target = &contract.Element{Tag: "button", Label: "ꓑꓮꓬ"}
		}, paused, nil, contract.RiskHigh},
		{"Continue: not high by words", clickOn("Continue"), allowed, nil, contract.RiskMedium},
		{"Display: not pay", clickOn("Displ\u0430y settings"), allowed, nil, contract.RiskMedium},
		{"model's selector may raise", func(r *Request) {
			clickOn("Continue")(r)
			r.Action.Selector = "#payNow"
		}, paused, nil, contract.RiskHigh},
		{"model's selector cannot lower", func(r *Request) {
			clickOn("Pay now")(r)
			r.Action.Selector = "#continue"
		}, paused, nil, contract.RiskHigh},
		{"sensitive name in Cyrillic look-alikes", typeInto("#f", &contract.Element{Tag: "input", Type: "text", Name: "\u0440\u0430ssword"}, false), contract.ResultDenied, []string{"sensitive_unredacted"}, ""},
	})
}

// TestFrameOrigin: an element in a frame of another origin is judged on
// that origin (issue 15 part 4).
func TestFrameOrigin(t *testing.T) {
	inFrame := func(origin string) func(*Request) {
		return func(r *Request) { r.Target.Origin = origin }
	}
	allowed, denied := contract.ResultAllowed, contract.ResultDenied
	runDecideCases(t, []decideCase{
		{"same origin as the page", inFrame("https://shop.example"), allowed, nil, contract.RiskMedium},
		{"same origin, default port written", inFrame("https://shop.example:443"), allowed, nil, contract.RiskMedium},
		{"allowed frame of another origin", inFrame("https://a.docs.example"), allowed, nil, contract.RiskMedium},
		{"foreign frame", inFrame("https://evil.example"), denied, []string{"origin_not_allowed"}, ""},
		{"foreign frame on another port", inFrame("https://shop.example:8443"), denied, []string{"origin_not_allowed"}, ""},
		{"frame of a blocked domain", func(r *Request) {
			r.Session.AllowedOrigins = append(r.Session.AllowedOrigins, "https://payments.example")
			inFrame("https://payments.example")(r)
		}, denied, []string{"blocked_domain"}, ""},
		{"opaque frame", inFrame("null"), denied, []string{"url_invalid"}, ""},
		{"not an origin", inFrame("https://shop.example/path"), denied, []string{"url_invalid"}, ""},
		{"page moved away, element still on the allowed origin", func(r *Request) {
			r.ActiveURL = "https://evil.example/"
			inFrame("https://shop.example")(r)
		}, denied, []string{"origin_not_allowed"}, ""},
	})
	g := sharedGate(t)
	req := baseRequest()
	inFrame("https://evil.example")(&req)
	d := g.Decide(context.Background(), req)
	found := false
	for _, r := range d.Reasons {
		found = found || (r.Rule == "origin_not_allowed" && strings.Contains(r.Message, "element's frame origin https://evil.example"))
	}
	if !found {
		t.Errorf("reasons %v do not name the element's frame", d.Reasons)
	}
	// The origin is bound into the hash when reported; without it the
	// hash is what it always was.
	plain := baseRequest()
	if g.ActionHash(plain) != oldActionHash(t, plain) {
		t.Error("hash of an element without origin changed")
	}
	framed := baseRequest()
	inFrame("https://shop.example")(&framed)
	if g.ActionHash(framed) == g.ActionHash(plain) {
		t.Error("the element's origin is not in the hash")
	}
}
