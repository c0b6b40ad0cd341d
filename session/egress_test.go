package session_test

import (
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// TestExtractHoldingSecretRefused: an extract whose value spells out a
// secret (here only by its letters and digits) is refused: no artifact is
// stored or output, the step fails with an error naming the secret, an
// artifact.secret_refused event is recorded, and the observations in the
// bundle hold the placeholder where the page showed the value.
func TestExtractHoldingSecretRefused(t *testing.T) {
	const value = "A1003A1005" // the orders page shows "A-1003 A-1005"
	set, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	site := newFakeSite()
	srv := fakeModel(t, nil, script(
		answer("continue", aExtract("x1", "text", "#orders")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, set)
	cfg := fakeCfg(t, site, task("Read the orders", []string{fakeOrigin + "/orders"}, ""), pl, nav)
	cfg.Secrets = set
	var errs []string
	cfg.OnStep = func(r session.StepReport) {
		if r.Error != "" {
			errs = append(errs, r.Error)
		}
	}
	res, err := run(t, cfg)
	if err != nil {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if len(res.Artifacts) != 0 {
		t.Errorf("artifacts %+v, want none", res.Artifacts)
	}
	for name := range files {
		if strings.HasPrefix(name, "artifacts/") {
			t.Errorf("%s stored", name)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "holds the value of secret PW") {
		t.Errorf("step errors %q, want the refusal", errs)
	}
	refused := false
	for _, e := range events(t, files) {
		refused = refused || (e.Type == contract.EventError && e.Code == "artifact.secret_refused")
	}
	if !refused {
		t.Error("no artifact.secret_refused event")
	}
	for name, b := range files {
		if strings.Contains(secrets.Normalize(string(b)), strings.ToLower(value)) {
			t.Errorf("%s spells out the value", name)
		}
	}
	if obs := string(files["dom/1.json"]); !strings.Contains(obs, secrets.Placeholder("PW")) {
		t.Errorf("the observation does not hold the placeholder: %.300s", obs)
	}
}
