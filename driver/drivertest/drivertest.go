// Package drivertest is the conformance suite every aegis driver must pass.
// It drives the demo site (package demosite) through the driver.Driver
// interface only, checks the page's resulting state through observations,
// and checks every typed error, the ToolResults against their schema, and
// that no typed password ever appears in an observation.
//
// A driver's test runs the suite with an Opener:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T, site string) driver.Driver {
//			d, err := driver.Open(ctx, driver.Config{Mode: contract.ModeSandbox, AllowedOrigins: []string{site}})
//			...
//			return d
//		})
//	}
package drivertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/schemas"
)

// Opener opens a fresh driver session for one test, on a blank page. site
// is the demo site's origin (such as "http://127.0.0.1:41234"): a driver
// with an allowlist must allow it. The suite closes the driver.
type Opener func(t *testing.T, site string) driver.Driver

// Secret is the password the suite types; it must never appear in an
// observation, an artifact, a ToolResult or an error.
const Secret = "Zq9-s3cr3t-PA55-w0rd"

// CardNumber is typed into a field named sensitive by a selector.
const CardNumber = "4111-1111-1111-1111"

// test is one conformance test.
type test struct {
	name string
	core bool // part of RunCore
	run  func(t *testing.T, e *env)
}

// env is what a test gets: its driver and the site.
type env struct {
	d    driver.Driver
	site string
	seq  int
}

// Run runs the whole conformance suite, each test on a fresh driver.
func Run(t *testing.T, open Opener) { run(t, open, false) }

// RunCore runs the core of the suite (observe, type, click, masking, one
// typed error, a screenshot): enough to prove a transport, such as a remote
// browser, without repeating everything.
func RunCore(t *testing.T, open Opener) { run(t, open, true) }

func run(t *testing.T, open Opener, coreOnly bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site, err := demosite.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start demo site: %v", err)
	}
	defer func() {
		cancel()
		<-site.Done()
	}()
	for _, tc := range tests {
		if coreOnly && !tc.core {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			d := open(t, site.URL())
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = d.Close(ctx)
			})
			tc.run(t, &env{d: d, site: site.URL()})
		})
	}
}

var tests = []test{
	{"Observe", true, testObserve},
	{"TypeAndClickSignIn", true, testSignIn},
	{"PasswordNeverObserved", true, testMasking},
	{"SensitiveSelectorMasked", false, testSensitiveSelector},
	{"TypeClearsFirst", false, testTypeClears},
	{"SelectAndCheckbox", false, testSelect},
	{"SelectMissingOption", false, testSelectMissing},
	{"Scroll", false, testScroll},
	{"Wait", false, testWait},
	{"ExtractText", false, testExtractText},
	{"ExtractTable", false, testExtractTable},
	{"ExtractLinks", false, testExtractLinks},
	{"ExtractScreenshot", true, testScreenshot},
	{"ShadowDOM", false, testShadow},
	{"SameOriginFrame", false, testFrame},
	{"ScriptClickables", false, testClickables},
	{"LateElement", false, testLate},
	{"Describe", false, testDescribe},
	{"HostilePage", false, testHostile},
	{"ErrElementNotFound", true, testNotFound},
	{"ErrAmbiguousSelector", false, testAmbiguous},
	{"ErrNotInteractable", false, testNotInteractable},
	{"ErrTimeout", false, testTimeout},
	{"ErrNavigationBlocked", false, testNavigateSchemes},
	{"ErrPageClosed", false, testPageClosed},
	{"ErrUnsupported", false, testUnsupported},
}

// ---------------------------------------------------------------------------
// Helpers.

func (e *env) id() string {
	e.seq++
	return fmt.Sprintf("a%d", e.seq)
}

func (e *env) navigate(path string) contract.Action {
	return contract.Action{ID: e.id(), Type: contract.ActNavigate, Reason: "test", URL: e.site + path}
}

func (e *env) click(sel string) contract.Action {
	return contract.Action{ID: e.id(), Type: contract.ActClick, Reason: "test", Selector: sel}
}

// typ types text into sel; as a session does, it sets Redact when the
// text is the secret (Secret), which taints the field.
func (e *env) typ(sel, text string) contract.Action {
	return contract.Action{ID: e.id(), Type: contract.ActType, Reason: "test", Selector: sel, Text: text, Redact: text == Secret}
}

func (e *env) sel(sel, value string) contract.Action {
	return contract.Action{ID: e.id(), Type: contract.ActSelect, Reason: "test", Selector: sel, Value: value}
}

func (e *env) extract(kind contract.ExtractKind, sel string) contract.Action {
	return contract.Action{ID: e.id(), Type: contract.ActExtract, Reason: "test", Extract: kind, Selector: sel}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// checkResult validates a ToolResult against its schema and its action.
func checkResult(t *testing.T, a contract.Action, res contract.ToolResult) {
	t.Helper()
	if _, err := contract.Encode(schemas.KindToolResult, res); err != nil {
		t.Fatalf("%s: ToolResult breaks its schema: %v\n%+v", a.Type, err, res)
	}
	if res.ActionID != a.ID || res.Action != a.PolicyName() {
		t.Errorf("ToolResult names action %q %q, want %q %q", res.ActionID, res.Action, a.ID, a.PolicyName())
	}
	if a.Type == contract.ActType && a.Text != "" {
		b, _ := json.Marshal(res)
		if bytes.Contains(b, []byte(a.Text)) {
			t.Fatalf("ToolResult holds the typed text: %s", b)
		}
	}
}

// do runs an action that must succeed.
func (e *env) do(t *testing.T, a contract.Action) contract.ToolResult {
	t.Helper()
	res, err := e.d.Act(ctxT(t, 60*time.Second), a)
	if err != nil {
		t.Fatalf("%s %s%s: %v", a.Type, a.Selector, a.URL, err)
	}
	checkResult(t, a, res)
	if !res.OK || res.Error != nil {
		t.Fatalf("%s: OK=%v Error=%v with a nil error", a.Type, res.OK, res.Error)
	}
	switch a.Type {
	case contract.ActClick, contract.ActType, contract.ActSelect, contract.ActScroll:
		if res.InputLatencyMs == nil {
			t.Errorf("%s: no inputLatencyMs", a.Type)
		}
	case contract.ActExtract:
		if res.CaptureLatencyMs == nil || len(res.ArtifactIDs) != 1 {
			t.Errorf("extract: captureLatencyMs %v, artifactIds %v", res.CaptureLatencyMs, res.ArtifactIDs)
		}
	}
	return res
}

// fail runs an action that must fail with code and returns its error.
func (e *env) fail(t *testing.T, ctx context.Context, a contract.Action, code contract.ErrorCode) *driver.Error {
	t.Helper()
	res, err := e.d.Act(ctx, a)
	if err == nil {
		t.Fatalf("%s %q: succeeded, want %s", a.Type, a.Selector+a.URL, code)
	}
	checkResult(t, a, res)
	return checkErr(t, err, res.Error, code)
}

// sentinels maps each code to its sentinel error.
var sentinels = map[contract.ErrorCode]error{
	contract.CodeElementNotFound:   driver.ErrElementNotFound,
	contract.CodeAmbiguousSelector: driver.ErrAmbiguousSelector,
	contract.CodeNotInteractable:   driver.ErrNotInteractable,
	contract.CodeTimeout:           driver.ErrTimeout,
	contract.CodeNavigationBlocked: driver.ErrNavigationBlocked,
	contract.CodePageClosed:        driver.ErrPageClosed,
	contract.CodeUnsupported:       driver.ErrUnsupported,
	contract.CodeInternal:          driver.ErrInternal,
}

func checkErr(t *testing.T, err error, te *contract.ToolError, code contract.ErrorCode) *driver.Error {
	t.Helper()
	var de *driver.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *driver.Error", err, err)
	}
	if de.Code != code {
		t.Fatalf("error code = %s, want %s (%v)", de.Code, code, err)
	}
	if !errors.Is(err, sentinels[code]) {
		t.Errorf("errors.Is(err, sentinel of %s) = false", code)
	}
	for c, s := range sentinels {
		if c != code && errors.Is(err, s) {
			t.Errorf("errors.Is(err, sentinel of %s) = true for a %s error", c, code)
		}
	}
	if te != nil && te.Code != code {
		t.Errorf("ToolResult error code = %s, want %s", te.Code, code)
	}
	return de
}

// observe observes and checks the observation against its schema, its
// domHash and the uniqueness of its selectors' syntax.
func (e *env) observe(t *testing.T, o driver.ObserveOptions) contract.Observation {
	t.Helper()
	obs, err := e.d.Observe(ctxT(t, 60*time.Second), o)
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	checkObservation(t, obs, e.d.Mode())
	return obs
}

// CheckObservation fails t if obs breaks its schema or its domHash is not
// the SHA-256 of its canonical snapshot.
func CheckObservation(t testing.TB, obs contract.Observation) {
	t.Helper()
	checkObservation(t, obs, obs.State.Mode)
}

func checkObservation(t testing.TB, obs contract.Observation, mode contract.DriverMode) {
	t.Helper()
	if _, err := contract.Encode(schemas.KindObservation, obs); err != nil {
		t.Fatalf("observation breaks its schema: %v", err)
	}
	if obs.State.Mode != mode {
		t.Errorf("state.mode = %q, want %q", obs.State.Mode, mode)
	}
	sum := sha256.Sum256([]byte(obs.DOMSnapshot))
	if got, want := obs.State.DOMHash, hex.EncodeToString(sum[:]); got != want {
		t.Errorf("domHash = %s, want sha256(domSnapshot) = %s", got, want)
	}
	var snap any
	if err := json.Unmarshal([]byte(obs.DOMSnapshot), &snap); err != nil {
		t.Errorf("domSnapshot is not JSON: %v", err)
	}
	seen := map[string]bool{}
	for _, a := range obs.Affordances {
		if seen[a.Selector] {
			t.Errorf("selector %q given to two affordances", a.Selector)
		}
		seen[a.Selector] = true
		if _, err := driver.ParseSelector(a.Selector); err != nil {
			t.Errorf("affordance selector %q does not parse: %v", a.Selector, err)
		}
	}
}

// waitText observes until the page's text contains want.
func (e *env) waitText(t *testing.T, want string) contract.Observation {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		obs := e.observe(t, driver.ObserveOptions{})
		if strings.Contains(obs.DOMText, want) {
			return obs
		}
		if time.Now().After(deadline) {
			t.Fatalf("page text never contained %q; last text:\n%s", want, obs.DOMText)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func findAffordance(obs contract.Observation, pred func(contract.Affordance) bool) (contract.Affordance, bool) {
	for _, a := range obs.Affordances {
		if pred(a) {
			return a, true
		}
	}
	return contract.Affordance{}, false
}

func bySelector(sel string) func(contract.Affordance) bool {
	return func(a contract.Affordance) bool { return a.Selector == sel }
}

// ---------------------------------------------------------------------------
// Tests.

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

// noSecret fails t if any of the values, marshaled, holds secret.
func noSecret(t *testing.T, secret string, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) {
		t.Fatalf("%s holds the secret: %s", what, b)
	}
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

func takeOne(t *testing.T, e *env, res contract.ToolResult) driver.Extracted {
	t.Helper()
	arts := e.d.TakeArtifacts()
	if len(arts) != 1 || arts[0].Artifact.ID != res.ArtifactIDs[0] {
		t.Fatalf("TakeArtifacts = %+v, want the one artifact %v", arts, res.ArtifactIDs)
	}
	a := arts[0].Artifact
	if a.SourceURL == "" || len(a.Hash) != 64 {
		t.Errorf("artifact record %+v", a)
	}
	if arts[0].Image == nil {
		sum := sha256.Sum256([]byte(a.Value))
		if a.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("artifact hash is not sha256(value)")
		}
	}
	if e.d.TakeArtifacts() != nil {
		t.Errorf("TakeArtifacts did not forget")
	}
	return arts[0]
}

func testExtractText(t *testing.T, e *env) {
	e.do(t, e.navigate("/orders"))
	res := e.do(t, e.extract(contract.ExtractText, ""))
	a := takeOne(t, e, res)
	if !strings.Contains(a.Artifact.Value, "Your orders") || !strings.Contains(a.Artifact.Value, "A-1003") {
		t.Errorf("page text = %q", a.Artifact.Value)
	}
	res = e.do(t, e.extract(contract.ExtractText, "h1"))
	if a := takeOne(t, e, res); a.Artifact.Value != "Your orders" || a.Artifact.SourceSelector != "h1" {
		t.Errorf("text of h1 = %+v", a.Artifact)
	}
	// The next observation carries the two records, the one after none.
	obs := e.observe(t, driver.ObserveOptions{})
	if len(obs.ExtractedArtifacts) != 2 {
		t.Errorf("observation carries %d artifact records, want 2", len(obs.ExtractedArtifacts))
	}
	if obs = e.observe(t, driver.ObserveOptions{}); len(obs.ExtractedArtifacts) != 0 {
		t.Errorf("second observation carries %d artifact records, want 0", len(obs.ExtractedArtifacts))
	}
}

func testExtractTable(t *testing.T, e *env) {
	e.do(t, e.navigate("/orders"))
	for _, sel := range []string{"", "#orders"} {
		res := e.do(t, e.extract(contract.ExtractTable, sel))
		a := takeOne(t, e, res)
		var rows [][]string
		if err := json.Unmarshal([]byte(a.Artifact.Value), &rows); err != nil {
			t.Fatalf("table value is not rows: %v: %s", err, a.Artifact.Value)
		}
		if len(rows) != 6 {
			t.Fatalf("table has %d rows, want 6: %v", len(rows), rows)
		}
		if got, want := strings.Join(rows[0], "|"), "Order|Date|Status|Total"; got != want {
			t.Errorf("header = %q, want %q", got, want)
		}
		if got, want := strings.Join(rows[3], "|"), "A-1003|2026-01-19|Shipped|€99.90"; got != want {
			t.Errorf("row 3 = %q, want %q", got, want)
		}
	}
	e.fail(t, ctxT(t, 10*time.Second), e.extract(contract.ExtractTable, "h1"), contract.CodeElementNotFound)
}

func testExtractLinks(t *testing.T, e *env) {
	e.do(t, e.navigate("/external"))
	res := e.do(t, e.extract(contract.ExtractLink, "main"))
	a := takeOne(t, e, res)
	var links []struct{ Text, Href string }
	if err := json.Unmarshal([]byte(a.Artifact.Value), &links); err != nil {
		t.Fatalf("links value: %v: %s", err, a.Artifact.Value)
	}
	want := map[string]string{
		demosite.ExternalOrigin + "/": "Visit our partner",
		e.site + "/go-external":       "Partner offers (redirect)",
		e.site + "/download":          "Download invoice",
	}
	got := map[string]string{}
	for _, l := range links {
		got[l.Href] = l.Text
	}
	for href, text := range want {
		if got[href] != text {
			t.Errorf("link %s: text %q, want %q (all: %v)", href, got[href], text, links)
		}
	}
}

func testScreenshot(t *testing.T, e *env) {
	e.do(t, e.navigate("/orders"))
	for _, sel := range []string{"", "#orders"} {
		res := e.do(t, e.extract(contract.ExtractScreenshot, sel))
		a := takeOne(t, e, res)
		if a.Image == nil || len(a.Data) == 0 {
			t.Fatalf("screenshot without image: %+v", a)
		}
		if _, err := contract.Encode(schemas.KindImageArtifact, a.Image); err != nil {
			t.Fatalf("image artifact breaks its schema: %v", err)
		}
		if !bytes.HasPrefix(a.Data, []byte("\x89PNG\r\n\x1a\n")) || a.Image.MIMEType != contract.MIMEPNG {
			t.Errorf("screenshot is not a PNG")
		}
		sum := sha256.Sum256(a.Data)
		if a.Image.ContentHash != hex.EncodeToString(sum[:]) || a.Artifact.Hash != a.Image.ContentHash || int(a.Image.ByteSize) != len(a.Data) {
			t.Errorf("image record does not match its bytes: %+v", a.Image)
		}
		if a.Artifact.Value != a.Image.URI || a.Image.ActionID != res.ActionID {
			t.Errorf("artifact %+v / image %+v", a.Artifact, a.Image)
		}
		if sel == "" && (a.Image.Width < 100 || a.Image.Height < 100) {
			t.Errorf("page screenshot is %dx%d", a.Image.Width, a.Image.Height)
		}
		if sel != "" && (a.Image.Width < 200 || a.Image.Height < 50 || a.Image.Height > 400) {
			t.Errorf("table screenshot is %dx%d", a.Image.Width, a.Image.Height)
		}
	}
}

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
