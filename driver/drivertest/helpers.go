// The suite's helpers: building actions, running them, and checking results,
// errors and observations.

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
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/schemas"
)

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
