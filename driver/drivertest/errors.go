// The tests of the typed errors.

package drivertest

import (
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

func testNavigateSchemes(t *testing.T, e *env) {
	for _, u := range []string{
		"javascript:alert(1)",
		"file:///etc/passwd",
		"data:text/html,<h1>hi</h1>",
		"chrome://settings",
		"about:blank",
		"ftp://example.com/",
		"/relative",
	} {
		a := contract.Action{ID: e.id(), Type: contract.ActNavigate, Reason: "test", URL: u}
		e.fail(t, ctxT(t, 10*time.Second), a, contract.CodeNavigationBlocked)
	}
}

func testNotFound(t *testing.T, e *env) {
	e.do(t, e.navigate("/form"))
	start := time.Now()
	a := e.click("#does-not-exist")
	a.TimeoutMs = 300
	de := e.fail(t, ctxT(t, 20*time.Second), a, contract.CodeElementNotFound)
	if d := time.Since(start); d > 5*time.Second || d < 300*time.Millisecond {
		t.Errorf("not found after %v, want after the 300ms wait", d)
	}
	if de.Selector != "#does-not-exist" {
		t.Errorf("error selector = %q", de.Selector)
	}
	e.fail(t, ctxT(t, 20*time.Second), e.typ("", "x"), contract.CodeElementNotFound)
	e.fail(t, ctxT(t, 20*time.Second), e.click("button["), contract.CodeElementNotFound)
	a = e.click("#name >>> button")
	a.TimeoutMs = 200
	e.fail(t, ctxT(t, 20*time.Second), a, contract.CodeElementNotFound)
}

func testAmbiguous(t *testing.T, e *env) {
	e.do(t, e.navigate("/widgets"))
	start := time.Now()
	de := e.fail(t, ctxT(t, 20*time.Second), e.click(".dup"), contract.CodeAmbiguousSelector)
	if de.Count != 3 {
		t.Errorf("count = %d, want 3", de.Count)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("ambiguity reported after %v: it must not be waited out", d)
	}
	e.fail(t, ctxT(t, 20*time.Second), e.typ("button", "x"), contract.CodeAmbiguousSelector)
}

func testNotInteractable(t *testing.T, e *env) {
	e.do(t, e.navigate("/widgets"))
	for _, sel := range []string{"#hidden-btn", "#invisible-btn", "#disabled-btn", "#covered-btn"} {
		a := e.click(sel)
		a.TimeoutMs = 200
		e.fail(t, ctxT(t, 20*time.Second), a, contract.CodeNotInteractable)
	}
	e.fail(t, ctxT(t, 500*time.Millisecond), e.typ("#readonly", "q-text"), contract.CodeNotInteractable)
	e.fail(t, ctxT(t, 20*time.Second), e.typ("#close-window", "q-text"), contract.CodeNotInteractable)
	obs := e.observe(t, driver.ObserveOptions{})
	if strings.Contains(obs.DOMText, "Covered button clicked") {
		t.Errorf("the covered button was clicked")
	}
}

func testTimeout(t *testing.T, e *env) {
	start := time.Now()
	e.fail(t, ctxT(t, 700*time.Millisecond), e.navigate("/slow?ms=5000"), contract.CodeTimeout)
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("navigation timeout reported after %v", d)
	}
	// The session is still usable.
	e.do(t, e.navigate("/form"))
}

func testPageClosed(t *testing.T, e *env) {
	e.do(t, e.navigate("/form"))
	if err := e.d.Close(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	e.fail(t, ctxT(t, 10*time.Second), e.click("#submit"), contract.CodePageClosed)
	_, err := e.d.Observe(ctxT(t, 10*time.Second), driver.ObserveOptions{})
	checkErr(t, err, nil, contract.CodePageClosed)
	_, err = e.d.Describe(ctxT(t, 10*time.Second), "#submit")
	checkErr(t, err, nil, contract.CodePageClosed)
}

func testUnsupported(t *testing.T, e *env) {
	a := contract.Action{ID: e.id(), Type: "hover", Reason: "t", Selector: "#x"}
	res, err := e.d.Act(ctxT(t, 10*time.Second), a)
	checkErr(t, err, res.Error, contract.CodeUnsupported)
	if res.OK {
		t.Error("OK for an unknown action")
	}
	e.fail(t, ctxT(t, 10*time.Second), contract.Action{ID: e.id(), Type: contract.ActExtract, Reason: "t", Extract: "pdf"}, contract.CodeUnsupported)
}
