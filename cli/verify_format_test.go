package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// oldFormatBundle writes and seals an aegis-evidence/1 bundle whose one
// decision does not record the action it allowed, and returns its
// directory.
func oldFormatBundle(t *testing.T) string {
	t.Helper()
	w, err := evidence.Create(t.TempDir(), contract.Manifest{
		FormatVersion: contract.ManifestFormatVersion1, SessionID: "old-1",
		Task:   contract.Input{Goal: "Open the page", URLs: []string{"https://example.com/"}},
		Driver: contract.ModePlaywright, Versions: contract.Versions{Aegis: "test", Policy: strings.Repeat("ab", 32)},
	}, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := "2026-01-23T10:15:00Z"
	nav := contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open", PolicyTags: []string{}, URL: "https://example.com/"}
	for _, step := range []func() error{
		func() error {
			return w.Decision(contract.DecisionRecord{
				DecisionID: "dec-" + strings.Repeat("1", 32), SessionID: "old-1", StepIndex: 1, ActionID: "a1", ActionHash: strings.Repeat("cd", 32),
				ActionName: nav.PolicyName(), PolicyVersion: strings.Repeat("ab", 32), PolicySource: "embedded",
				Allow: true, Result: contract.ResultAllowed, Risk: contract.RiskLow, EvaluatedAt: at,
			})
		},
		func() error {
			return w.Action(nav, contract.ToolResult{ActionID: "a1", Action: nav.PolicyName(), RiskTag: contract.RiskLow, SessionID: "old-1", OK: true, StartedAt: at, EndedAt: at})
		},
		func() error {
			return w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: nav.Type, RiskLevel: contract.RiskLow, Summary: "opened", Timestamp: at})
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

// TestVerifySaysWhatItDidNotCheck: an aegis-evidence/1 bundle verifies,
// and aegis verify says, in its text and in --json, that decided =
// executed was not checked; the current format's example bundle gets no
// such note.
func TestVerifySaysWhatItDidNotCheck(t *testing.T) {
	old := oldFormatBundle(t)
	code, out, errOut := run(t, "", "verify", old)
	if code != ExitOK || !strings.Contains(out, ": valid:") || !strings.Contains(out, ": note: decided = executed not checked: format aegis-evidence/1") ||
		!strings.Contains(out, "1 of 1 executed actions had no decided action to compare with") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = run(t, "", "verify", "--json", old)
	var res struct {
		Report evidence.Report `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != ExitOK || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if got := res.Report; got.FormatVersion != contract.ManifestFormatVersion1 || len(got.Unchecked) != 1 {
		t.Errorf("report format %q unchecked %q, want %s and one note", got.FormatVersion, got.Unchecked, contract.ManifestFormatVersion1)
	}
	if code, out, _ := run(t, "", "verify", exampleBundle); code != ExitOK || strings.Contains(out, "note:") {
		t.Errorf("the example bundle (format %s): exit %d, %q", contract.ManifestFormatVersion, code, out)
	}
}
