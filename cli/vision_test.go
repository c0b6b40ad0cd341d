package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/modelreg"
	"github.com/aegis-run/aegis/schemas"
)

// TestModelImages: whether the model is shown images: --vision without a
// registry, the registry's "images" with one (--vision against it is a
// usage error), never for the offline agents (no model).
func TestModelImages(t *testing.T) {
	tests := []struct {
		name    string
		o       runOptions
		model   string
		entry   *modelreg.Model
		want    bool
		wantErr bool
	}{
		{"offline", runOptions{}, "", nil, false, false},
		{"offline with --vision", runOptions{vision: true}, "", nil, false, true},
		{"model", runOptions{}, "m", nil, false, false},
		{"model with --vision", runOptions{vision: true}, "m", nil, true, false},
		{"registry says images", runOptions{modelRegistry: "r.json"}, "m", &modelreg.Model{Images: true}, true, false},
		{"registry says images, --vision", runOptions{modelRegistry: "r.json", vision: true}, "m", &modelreg.Model{Images: true}, true, false},
		{"registry says none", runOptions{modelRegistry: "r.json"}, "m", &modelreg.Model{}, false, false},
		{"registry says none, --vision", runOptions{modelRegistry: "r.json", vision: true}, "m", &modelreg.Model{}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := modelImages(&tt.o, tt.model, tt.entry)
			var ee *exitError
			if got != tt.want || (err != nil) != tt.wantErr || (err != nil && (!errors.As(err, &ee) || ee.code != ExitUsage)) {
				t.Errorf("modelImages = %v, %v; want %v, error %v (a usage error)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestRunVision: with --vision the model that asks to see the page gets
// one image in its next request (the default classification, restricted,
// allows it), and the bundle verifies. (Without --vision nothing is shown:
// the session tests.)
func TestRunVision(t *testing.T) {
	site := demoSite(t)
	srv := llmtest.NewServer(t)
	navN := 0
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"x","steps":[{"id":"s1","description":"look","successCriteria":"seen"}]}`)(w, r)
			return
		}
		navN++
		if navN == 1 {
			llmtest.Answer(`{"actions":[{"id":"v1","type":"extract","reason":"look","policyTags":[],"extract":"screenshot","vision":true}],"status":"continue","summary":"looking"}`)(w, r)
			return
		}
		llmtest.Answer(`{"actions":[{"id":"w1","type":"wait","reason":"wait","policyTags":[],"durationMs":1}],"status":"done","summary":"seen"}`)(w, r)
	})
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"run", "--evidence", t.TempDir(), "--json", "--vision", "--llm-base-url", srv.URL, "--model", "fake", "--goal", "Look", "--url", site + "/orders"}, Stdio{Out: &out, Err: &errb})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	var o contract.Output
	if err := contract.Decode(schemas.KindOutput, out.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	verifyOutput(t, o)
	reqs := srv.Requests()
	first, last := reqs[1], reqs[len(reqs)-1]
	if len(first.Images()) != 0 || len(last.Images()) != 1 || !strings.Contains(first.Messages[0].Content, `"vision":true`) {
		t.Errorf("%d requests; images %d then %d; the prompt says how to ask: %v", len(reqs), len(first.Images()), len(last.Images()), strings.Contains(first.Messages[0].Content, `"vision":true`))
	}
}
