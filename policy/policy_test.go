package policy_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/policy"
)

// TestRegoUnitTests runs the embedded policy's Rego tests through the gate's
// test runner: every test passes and they cover at least 95 percent of the
// policy's lines.
func TestRegoUnitTests(t *testing.T) {
	report, err := gate.RunPolicyTests(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range report.Tests {
		if !tc.Pass {
			t.Errorf("%s.%s (%s): fail=%v skip=%v %s", tc.Package, tc.Name, tc.Location, tc.Fail, tc.Skip, tc.Error)
		}
	}
	if len(report.Tests) < 50 {
		t.Errorf("only %d Rego tests", len(report.Tests))
	}
	if report.Coverage < 95 {
		t.Errorf("coverage %.1f%%, want at least 95%%; not covered: %v", report.Coverage, report.NotCovered)
	}
	t.Logf("%d Rego tests, coverage %.1f%%", len(report.Tests), report.Coverage)
}

// TestEmbeddedFiles: the bundle holds the policy, its tests and its data,
// and the data is one JSON object under aegis.config.
func TestEmbeddedFiles(t *testing.T) {
	for _, name := range []string{"browser.rego", "browser_test.rego", "data.json"} {
		if _, err := fs.Stat(policy.FS(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	b, err := fs.ReadFile(policy.FS(), "data.json")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Aegis struct {
			Config map[string]json.RawMessage `json:"config"`
		} `json:"aegis"`
	}
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"default_preset", "limits", "action_types", "permissions", "presets", "risk", "sensitive", "urls", "vision", "exceptions"} {
		if _, ok := data.Aegis.Config[k]; !ok {
			t.Errorf("data.aegis.config has no %q", k)
		}
	}
}
