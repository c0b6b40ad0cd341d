package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/schemas"
)

const ollamaDigest = "46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e"

// ollamaEndpoint is an httptest server speaking Ollama's dialect: its
// model listings (GET /v1/models, GET /api/tags with the digest) and chat
// completions, passed to a scripted llmtest server that completes the
// orders task.
func ollamaEndpoint(t *testing.T, model string) string {
	t.Helper()
	chat := llmtest.NewServer(t)
	chat.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"x","steps":[{"id":"s1","description":"read the orders","successCriteria":"table extracted"}]}`)(w, r)
			return
		}
		llmtest.Answer(`{"actions":[{"id":"e1","type":"extract","reason":"read","policyTags":[],"extract":"table","selector":"#orders"}],"status":"done","summary":"read the orders table"}`)(w, r)
	})
	target, err := url.Parse(strings.TrimSuffix(chat.URL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","created":1,"owned_by":"library"}]}`, model)
	})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"models":[{"name":%q,"model":%q,"size":4920753328,"digest":%q}]}`, model, model, ollamaDigest)
	})
	mux.Handle("POST /v1/chat/completions", httputil.NewSingleHostReverseProxy(target))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func writeRegistry(t *testing.T, endpoint, name, digest string) string {
	t.Helper()
	doc := fmt.Sprintf(`{"models":[{"name":%q,"endpoint":%q,"id":%q,"digest":%q,"contextTokens":131072,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false}]}`, name, endpoint, name, digest)
	p := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunModelRegistry: with --model-registry, a model whose endpoint
// reports the registered id and digest runs, and the reported identity is
// in the manifest and the report; a digest mismatch and a model missing
// from the registry refuse the run (exit 2) before any browser starts,
// saying what was expected and what the endpoint reported.
func TestRunModelRegistry(t *testing.T) {
	const model = "llama3.1:8b"
	site := demoSite(t)
	base := ollamaEndpoint(t, model)
	run := func(t *testing.T, reg, model string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"run", "--evidence", t.TempDir(), "--json", "--llm-base-url", base, "--model", model, "--model-registry", reg, "--goal", "List my orders", "--url", site + "/orders"}, Stdio{Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}

	t.Run("match", func(t *testing.T) {
		code, out, errs := run(t, writeRegistry(t, base, model, "sha256:"+ollamaDigest), model)
		if code != ExitOK {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		var o contract.Output
		if err := contract.Decode(schemas.KindOutput, []byte(out), &o); err != nil {
			t.Fatal(err)
		}
		dir := verifyOutput(t, o)
		b, err := audit.Open(context.Background(), dir, audit.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := b.Manifest.Versions
		want := contract.Versions{Aegis: got.Aegis, Policy: got.Policy, Model: model, ModelID: model, ModelDigest: ollamaDigest}
		if got != want {
			t.Errorf("manifest versions = %+v, want %+v", got, want)
		}
		var rep bytes.Buffer
		if err := audit.RenderReport(b, &rep); err != nil {
			t.Fatal(err)
		}
		if line := "Model " + model + ": the endpoint reported id " + model + ", digest " + ollamaDigest + ", checked against the model registry."; !strings.Contains(rep.String(), line) {
			t.Errorf("the report does not say %q", line)
		}
	})

	refusals := []struct {
		name, reg, model string
		want             []string
	}{
		{"digest mismatch", writeRegistry(t, base, model, strings.Repeat("0", 64)), model,
			[]string{"expects digest " + strings.Repeat("0", 64), "reported " + ollamaDigest, "update the registry"}},
		{"not in the registry", writeRegistry(t, base, model, ollamaDigest), "qwen2.5:7b",
			[]string{`model "qwen2.5:7b"`, "not in the registry"}},
		{"bad registry file", writeFile(t, "bad.json", `{"models":[]}`, 0o600), model,
			[]string{"--model-registry", "/models"}},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, tt.reg, tt.model)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, errs)
			}
			for _, s := range tt.want {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr does not say %q:\n%s", s, errs)
				}
			}
		})
	}
}
