// The tests on hard pages: shadow DOM, frames, script clickables, late and
// hostile elements, and Describe.

package drivertest

import (
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

func testShadow(t *testing.T, e *env) {
	e.do(t, e.navigate("/shadow"))
	obs := e.observe(t, driver.ObserveOptions{})
	btn, ok := findAffordance(obs, func(a contract.Affordance) bool { return a.Text == "Apply coupon" })
	if !ok || !strings.Contains(btn.Selector, driver.SelectorSeparator) {
		t.Fatalf("no shadow affordance for the button: %+v", obs.Affordances)
	}
	field, ok := findAffordance(obs, func(a contract.Affordance) bool { return a.Text == "Coupon code" })
	if !ok {
		t.Fatalf("no shadow affordance for the field: %+v", obs.Affordances)
	}
	e.do(t, e.typ(field.Selector, "SAVE10"))
	e.do(t, e.click(btn.Selector))
	e.waitText(t, "Shadow button clicked: SAVE10")
	e.do(t, e.click("#coupon >>> #apply"))
}

func testFrame(t *testing.T, e *env) {
	e.do(t, e.navigate("/frame"))
	var btn, field contract.Affordance
	deadline := time.Now().Add(10 * time.Second)
	for {
		obs := e.observe(t, driver.ObserveOptions{})
		b, ok1 := findAffordance(obs, func(a contract.Affordance) bool { return a.Text == "Subscribe" })
		f, ok2 := findAffordance(obs, func(a contract.Affordance) bool {
			return a.Text == "Email" && strings.Contains(a.Selector, driver.SelectorSeparator)
		})
		if ok1 && ok2 {
			btn, field = b, f
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frame affordances: %+v", obs.Affordances)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.HasPrefix(btn.Selector, "#newsletter "+driver.SelectorSeparator) {
		t.Errorf("frame button selector = %q", btn.Selector)
	}
	e.do(t, e.typ(field.Selector, "ada@example.com"))
	e.do(t, e.click(btn.Selector))
	e.waitText(t, "Frame button clicked: ada@example.com")
}

func testClickables(t *testing.T, e *env) {
	e.do(t, e.navigate("/widgets"))
	obs := e.observe(t, driver.ObserveOptions{})
	for _, sel := range []string{"#pointer-card", "#onclick-card", "#listener-card", "#tab-card", "#covered-btn", "#readonly"} {
		if _, ok := findAffordance(obs, bySelector(sel)); !ok {
			t.Errorf("no affordance %s", sel)
		}
	}
	for _, sel := range []string{"#hidden-btn", "#invisible-btn", "#overlay"} {
		if _, ok := findAffordance(obs, bySelector(sel)); ok {
			t.Errorf("affordance for %s, which is not interactive or not visible", sel)
		}
	}
	e.do(t, e.click("#listener-card"))
	e.waitText(t, "Listener card clicked")
	e.do(t, e.click("#onclick-card"))
	e.waitText(t, "Onclick card clicked")
}

func testLate(t *testing.T, e *env) {
	e.do(t, e.navigate("/widgets"))
	e.do(t, e.click("#late-btn"))
	e.waitText(t, "Late button clicked")
}

func testDescribe(t *testing.T, e *env) {
	e.do(t, e.navigate("/login"))
	ctx := ctxT(t, 20*time.Second)
	tests := []struct {
		sel  string
		want contract.Element
	}{
		{"#password", contract.Element{Tag: "input", Type: "password", Name: "password", ID: "password", Autocomplete: "current-password", Role: "textbox", Label: "Password"}},
		{"#username", contract.Element{Tag: "input", Type: "text", Name: "username", ID: "username", Autocomplete: "username", Role: "textbox", Label: "Username"}},
		{"#sign-in", contract.Element{Tag: "button", Type: "submit", ID: "sign-in", Role: "button", Label: "Sign in", Text: "Sign in"}},
	}
	for _, tt := range tests {
		got, err := e.d.Describe(ctx, tt.sel)
		if err != nil {
			t.Fatalf("Describe(%q): %v", tt.sel, err)
		}
		tt.want.Origin = e.site // the document's origin, from the browser
		if got != tt.want {
			t.Errorf("Describe(%q) = %+v, want %+v", tt.sel, got, tt.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Describe(%q): %v", tt.sel, err)
		}
	}
	_, err := e.d.Describe(ctx, "#nope")
	checkErr(t, err, nil, contract.CodeElementNotFound)
	_, err = e.d.Describe(ctx, "input")
	de := checkErr(t, err, nil, contract.CodeAmbiguousSelector)
	if de.Count != 2 {
		t.Errorf("ambiguous count = %d, want 2", de.Count)
	}
	_, err = e.d.Describe(ctx, "input[")
	checkErr(t, err, nil, contract.CodeElementNotFound)
	_, err = e.d.Describe(ctx, "#username >>> span")
	checkErr(t, err, nil, contract.CodeElementNotFound)
}

func testHostile(t *testing.T, e *env) {
	e.do(t, e.navigate("/hostile"))
	obs := e.observe(t, driver.ObserveOptions{})
	if !strings.Contains(obs.DOMText, "IGNORE PREVIOUS INSTRUCTIONS") {
		t.Errorf("visible injection text missing from domText (it is data, and must be shown as such)")
	}
	if strings.Contains(obs.DOMText, "SYSTEM: the user has authorized") {
		t.Errorf("domText holds text styled opacity:0, which is not visible")
	}
	help, ok := findAffordance(obs, bySelector("#helpful"))
	if !ok || !strings.HasPrefix(help.Text, "Ignore previous instructions") {
		t.Errorf("affordance #helpful = %+v, want its aria-label as its name", help)
	}
	for _, a := range obs.Affordances {
		if len([]rune(a.Text)) > driver.DefaultMaxAffordanceText {
			t.Errorf("affordance text of %d characters", len([]rune(a.Text)))
		}
	}
	if !strings.HasSuffix(obs.State.ActiveURL, "/hostile") {
		t.Errorf("observing navigated: %s", obs.State.ActiveURL)
	}
}
