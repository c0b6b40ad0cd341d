// The tests of observing, typing, clicking, selecting, scrolling, waiting, and
// of masking what is typed.

package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

func testObserve(t *testing.T, e *env) {
	res := e.do(t, e.navigate("/form"))
	if !strings.HasSuffix(res.URL, "/form") {
		t.Errorf("ToolResult url = %q, want the form", res.URL)
	}
	obs := e.observe(t, driver.ObserveOptions{})
	if got, want := obs.State.ActiveURL, e.site+"/form"; got != want {
		t.Errorf("activeUrl = %q, want %q", got, want)
	}
	if got, want := obs.State.Title, "Order · Aegis Demo Shop"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	if !strings.Contains(obs.DOMText, "Place an order") {
		t.Errorf("domText lacks the heading:\n%s", obs.DOMText)
	}
	if obs.State.Viewport.Width <= 0 || obs.State.Viewport.Height <= 0 {
		t.Errorf("viewport = %+v", obs.State.Viewport)
	}
	want := []contract.Affordance{
		{Selector: "#name", Role: "textbox", Text: "Full name", ActionHint: contract.HintType},
		{Selector: "#shipping", Role: "combobox", Text: "Shipping", ActionHint: contract.HintSelect},
		{Selector: "#gift", Role: "checkbox", Text: "Gift wrap", ActionHint: contract.HintClick},
		{Selector: "#submit", Role: "button", Text: "Place order", ActionHint: contract.HintClick},
	}
	for _, w := range want {
		got, ok := findAffordance(obs, bySelector(w.Selector))
		if !ok {
			t.Errorf("no affordance %q in %+v", w.Selector, obs.Affordances)
			continue
		}
		if got != w {
			t.Errorf("affordance %q = %+v, want %+v", w.Selector, got, w)
		}
	}
	// Every affordance's selector resolves to exactly one element.
	for _, a := range obs.Affordances {
		if _, err := e.d.Describe(ctxT(t, 10*time.Second), a.Selector); err != nil {
			t.Errorf("Describe(%q): %v", a.Selector, err)
		}
	}
	// A second observation of the unchanged page hashes the same.
	again := e.observe(t, driver.ObserveOptions{})
	if again.State.DOMHash != obs.State.DOMHash {
		t.Errorf("domHash changed on an unchanged page: %s then %s", obs.State.DOMHash, again.State.DOMHash)
	}
}

func testSignIn(t *testing.T, e *env) {
	e.do(t, e.navigate("/login"))
	e.do(t, e.typ("#username", "alice"))
	e.do(t, e.typ("#password", Secret))
	res := e.do(t, e.click("#sign-in"))
	if !strings.HasSuffix(res.URL, "/account") {
		t.Errorf("after sign-in the ToolResult url = %q, want /account", res.URL)
	}
	e.waitText(t, "Signed in as alice")
}

func testMasking(t *testing.T, e *env) {
	e.do(t, e.navigate("/login"))
	e.do(t, e.typ("#username", "alice"))
	res := e.do(t, e.typ("#password", Secret))
	noSecret(t, Secret, "type result", res)
	obs := e.observe(t, driver.ObserveOptions{})
	noSecret(t, Secret, "observation", obs)
	if !strings.Contains(obs.DOMSnapshot, driver.Mask) {
		t.Errorf("snapshot does not show the password field as masked")
	}
	if !strings.Contains(obs.DOMSnapshot, `"alice"`) {
		t.Errorf("snapshot lacks the (non-sensitive) username value")
	}
	el, err := e.d.Describe(ctxT(t, 10*time.Second), "#password")
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, Secret, "described element", el)
	if el.Type != "password" || el.Autocomplete != "current-password" {
		t.Errorf("Describe(#password) = %+v", el)
	}
	// Extractions mask it too.
	e.do(t, e.extract(contract.ExtractText, ""))
	e.do(t, e.extract(contract.ExtractText, "#password"))
	e.do(t, e.extract(contract.ExtractText, "#login-form"))
	arts := e.d.TakeArtifacts()
	noSecret(t, Secret, "artifacts", arts)
	if len(arts) != 3 || arts[1].Artifact.Value != driver.Mask {
		t.Errorf("extract text of the password field = %+v, want %q", arts, driver.Mask)
	}
	next := e.observe(t, driver.ObserveOptions{})
	noSecret(t, Secret, "observation with artifacts", next)
	// A failing type action does not quote its text.
	a := e.typ("#no-such-field", Secret)
	a2 := a
	ctx := ctxT(t, 10*time.Second)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	res2, err := e.d.Act(short, contract.Action{ID: a2.ID, Type: a2.Type, Reason: a2.Reason, Selector: a2.Selector, Text: a2.Text, Redact: true})
	if err == nil {
		t.Fatal("typing into a missing field succeeded")
	}
	noSecret(t, Secret, "failed type result", res2)
	if strings.Contains(err.Error(), Secret) {
		t.Fatalf("error holds the secret: %v", err)
	}
	// Typing the secret into the selector itself is not echoed either.
	short, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	res3, err := e.d.Act(short, contract.Action{ID: e.id(), Type: contract.ActType, Reason: "t", Selector: "#" + Secret, Text: Secret, Redact: true})
	if err == nil {
		t.Fatal("typing into a missing field succeeded")
	}
	noSecret(t, Secret, "failed type result", res3)
	if strings.Contains(err.Error(), Secret) {
		t.Fatalf("error holds the secret: %v", err)
	}
}

func testSensitiveSelector(t *testing.T, e *env) {
	e.do(t, e.navigate("/form"))
	e.do(t, e.typ("#email", CardNumber))
	plain := e.observe(t, driver.ObserveOptions{})
	if !strings.Contains(plain.DOMSnapshot, CardNumber) {
		t.Fatalf("without a sensitive selector the value should be in the snapshot")
	}
	masked := e.observe(t, driver.ObserveOptions{SensitiveSelectors: []string{"input[name=email]"}})
	noSecret(t, CardNumber, "observation with sensitive selector", masked)
	if masked.State.DOMHash == plain.State.DOMHash {
		t.Errorf("masking did not change the domHash")
	}
}

func testTypeClears(t *testing.T, e *env) {
	e.do(t, e.navigate("/form"))
	e.do(t, e.typ("#name", "first"))
	e.do(t, e.typ("#name", "second"))
	obs := e.observe(t, driver.ObserveOptions{})
	if !strings.Contains(obs.DOMSnapshot, `"second"`) || strings.Contains(obs.DOMSnapshot, "firstsecond") {
		t.Errorf("type did not clear first: snapshot %s", obs.DOMSnapshot)
	}
	e.do(t, e.typ("#notes", "line one"))
	e.do(t, e.typ("#notes", ""))
	e.do(t, e.click("#submit"))
	e.waitText(t, "Thank you, second!")
}

func testSelect(t *testing.T, e *env) {
	e.do(t, e.navigate("/form"))
	e.do(t, e.typ("#name", "Ada"))
	e.do(t, e.sel("#shipping", "express"))
	e.do(t, e.click("#gift"))
	e.do(t, e.click("#submit"))
	obs := e.waitText(t, "Thank you, Ada!")
	for _, w := range []string{"Shipping: Express", "Gift wrap: yes", "Your order number is A-"} {
		if !strings.Contains(obs.DOMText, w) {
			t.Errorf("confirmation lacks %q:\n%s", w, obs.DOMText)
		}
	}
	// By label.
	e.do(t, e.navigate("/form"))
	e.do(t, e.sel("#shipping", "Express"))
	e.do(t, e.sel("#shipping", "Standard"))
	e.do(t, e.click("#submit"))
	obs = e.waitText(t, "Thank you, customer!")
	if !strings.Contains(obs.DOMText, "Shipping: Standard") || !strings.Contains(obs.DOMText, "Gift wrap: no") {
		t.Errorf("confirmation:\n%s", obs.DOMText)
	}
}

func testSelectMissing(t *testing.T, e *env) {
	e.do(t, e.navigate("/form"))
	start := time.Now()
	e.fail(t, ctxT(t, 20*time.Second), e.sel("#shipping", "teleport"), contract.CodeElementNotFound)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a missing option took %v to report: it must not be waited for", d)
	}
	e.fail(t, ctxT(t, 20*time.Second), e.sel("#name", "x"), contract.CodeNotInteractable)
}

func testScroll(t *testing.T, e *env) {
	e.do(t, e.navigate("/long"))
	e.do(t, contract.Action{ID: e.id(), Type: contract.ActScroll, Reason: "t", Direction: contract.ScrollDown, AmountPx: 1200})
	e.waitText(t, "Scrolled to 1200 px")
	e.do(t, contract.Action{ID: e.id(), Type: contract.ActScroll, Reason: "t", Direction: contract.ScrollUp, AmountPx: 500})
	e.waitText(t, "Scrolled to 700 px")
	obs := e.observe(t, driver.ObserveOptions{})
	h := obs.State.Viewport.Height
	e.do(t, contract.Action{ID: e.id(), Type: contract.ActScroll, Reason: "t", Direction: contract.ScrollDown})
	e.waitText(t, fmt.Sprintf("Scrolled to %d px", 700+h))
	e.do(t, contract.Action{ID: e.id(), Type: contract.ActScroll, Reason: "t", Direction: contract.ScrollUp, AmountPx: 100000})
	e.waitText(t, "Scrolled to 0 px")
}

func testWait(t *testing.T, e *env) {
	a := contract.Action{ID: e.id(), Type: contract.ActWait, Reason: "t", DurationMs: 150}
	start := time.Now()
	res := e.do(t, a)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("wait 150ms returned after %v", d)
	}
	if res.InputLatencyMs != nil {
		t.Errorf("wait has an input latency")
	}
	// Bounded by the context.
	start = time.Now()
	e.fail(t, ctxT(t, 200*time.Millisecond), contract.Action{ID: e.id(), Type: contract.ActWait, Reason: "t", DurationMs: 30000}, contract.CodeTimeout)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a wait beyond the deadline took %v", d)
	}
}
