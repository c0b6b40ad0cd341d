package navigator_test

import (
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// page returns a schema-valid observation of url with text and
// affordances.
func page(t testing.TB, url, text string, affs ...contract.Affordance) contract.Observation {
	t.Helper()
	o := contract.Observation{
		State: contract.State{
			SessionID: "s-test", Mode: contract.ModePlaywright, ActiveURL: url, Title: "Test page",
			Viewport:  contract.Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
			Timestamp: "2026-01-23T10:16:02Z", DOMHash: strings.Repeat("ab", 32),
			PolicyContext: contract.PolicyContext{Classification: contract.ClassPublic, MaxStepBudget: 50, DecisionLogID: "dec-test"},
		},
		DOMText:     text,
		DOMSnapshot: `{"root":["#document",{},["html",{},["body",{}]]],"v":1}`,
		Affordances: affs,
	}
	if _, err := contract.Encode(schemas.KindObservation, o); err != nil {
		t.Fatalf("test observation invalid: %v", err)
	}
	return o
}

func aff(sel, role, text string, hint contract.ActionHint) contract.Affordance {
	return contract.Affordance{Selector: sel, Role: role, Text: text, ActionHint: hint}
}

// loginPage is a synthetic sign-in page like the demo site's.
func loginPage(t testing.TB) contract.Observation {
	return page(t, "http://shop.test/login", "Sign in\nUsername\nPassword\nSign in",
		aff(":root > body > header > nav > a:nth-of-type(1)", "link", "Order", contract.HintClick),
		aff(":root > body > header > nav > a:nth-of-type(2)", "link", "Orders", contract.HintClick),
		aff("#username", "textbox", "Username", contract.HintType),
		aff("#password", "textbox", "Password", contract.HintType),
		aff("#sign-in", "button", "Sign in", contract.HintClick),
	)
}
