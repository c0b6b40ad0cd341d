package contract_test

import (
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

func TestToolErrorIsAnError(t *testing.T) {
	var err error = &contract.ToolError{Code: contract.CodeTimeout, Message: "no response in 5s"}
	if got, want := err.Error(), "timeout: no response in 5s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestToolResultOKAndError checks the rule that ties ok to error: a
// failure must say why, a success must not carry an error.
func TestToolResultOKAndError(t *testing.T) {
	fail := &contract.ToolError{Code: contract.CodeElementNotFound, Message: "no #email"}
	tests := []struct {
		name    string
		ok      bool
		err     *contract.ToolError
		wantErr string // "" = valid
	}{
		{"success", true, nil, ""},
		{"failure with error", false, fail, ""},
		{"failure without error", false, nil, "missing properties: 'error'"},
		{"success with error", true, fail, "not failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := handToolResult()
			r.OK, r.Error = tt.ok, tt.err
			_, err := contract.Encode(schemas.KindToolResult, r)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestToolResultOmitsAbsentFields(t *testing.T) {
	r := contract.ToolResult{ActionID: "a1", Action: "browser.wait", RiskTag: contract.RiskLow, SessionID: "s1", OK: true,
		StartedAt: "2026-01-23T10:00:00Z", EndedAt: "2026-01-23T10:00:01Z"}
	b, err := contract.Encode(schemas.KindToolResult, r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"actionId":"a1","action":"browser.wait","riskTag":"low","sessionId":"s1","ok":true,"startedAt":"2026-01-23T10:00:00Z","endedAt":"2026-01-23T10:00:01Z"}`
	if got := string(b); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A zero latency is a measurement, not an absence.
	r.InputLatencyMs = floatp(0)
	b, err = contract.Encode(schemas.KindToolResult, r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"inputLatencyMs":0`) {
		t.Errorf("got %s, want inputLatencyMs 0 written", b)
	}
}

func TestImageArtifactCap(t *testing.T) {
	im := contract.ImageArtifact{ID: "i1", URI: "artifacts/i1.png", MIMEType: contract.MIMEPNG, ByteSize: contract.MaxImageBytes, ContentHash: hex64(9)}
	if _, err := contract.Encode(schemas.KindImageArtifact, im); err != nil {
		t.Errorf("at the cap: %v", err)
	}
	im.ByteSize++
	if _, err := contract.Encode(schemas.KindImageArtifact, im); err == nil {
		t.Error("over the cap: accepted")
	}
}
