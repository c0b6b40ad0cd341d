package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/schemas"
)

const ollamaDigest = "46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e"

// ollamaEndpoint is an httptest server speaking Ollama's dialect
// (llmtest.Ollama: its model listings, GET /v1/models and GET /api/tags
// with the digest) whose chat completions complete the orders task.
func ollamaEndpoint(t *testing.T, model string) string {
	t.Helper()
	srv := llmtest.NewDialect(t, llmtest.Ollama, llmtest.Served{ID: model, Digest: ollamaDigest})
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"x","steps":[{"id":"s1","description":"read the orders","successCriteria":"table extracted"}]}`)(w, r)
			return
		}
		llmtest.Answer(`{"actions":[{"id":"e1","type":"extract","reason":"read","policyTags":[],"extract":"table","selector":"#orders"}],"status":"done","summary":"read the orders table"}`)(w, r)
	})
	return srv.URL
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
		b := outputBundle(t, out)
		got := b.Manifest.Versions
		want := contract.Versions{Aegis: got.Aegis, Policy: got.Policy, Model: model, ModelID: model, ModelDigest: ollamaDigest, ModelPrices: &contract.ModelPrices{}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("manifest versions = %+v, want %+v", got, want)
		}
		var rep bytes.Buffer
		if err := audit.RenderReport(b, &rep); err != nil {
			t.Fatal(err)
		}
		if line := "Model " + model + ": the endpoint reported id " + model + ", digest " + ollamaDigest + ", checked against the model registry; priced at $0.00 and $0.00 per million prompt and completion tokens."; !strings.Contains(rep.String(), line) {
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

// TestRunLLMCostBudget: --max-cost-usd bounds what the model calls cost at
// the registry's prices: the progress lines show the cost of the budget,
// the call that passes it ends the run aborted (exit 3) with the budget
// named, and each model call's record holds its cost. Without
// --model-registry the run is refused before it starts (exit 2), saying
// what to do.
func TestRunLLMCostBudget(t *testing.T) {
	const model = "Qwen/Qwen2.5-7B-Instruct"
	site := demoSite(t)
	srv := llmtest.NewDialect(t, llmtest.VLLM, llmtest.Served{ID: model, ContextTokens: 32768})
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.VLLM.Answer(`{"goal":"x","steps":[{"id":"s1","description":"wait","successCriteria":"waited"}]}`, 1, 899)(w, r)
			return
		}
		llmtest.VLLM.Answer(`{"actions":[{"id":"w1","type":"wait","reason":"wait","policyTags":[],"durationMs":1}],"status":"continue","summary":"waiting"}`, 1, 899)(w, r)
	})
	// $1 per million prompt tokens, $10 per million completion tokens:
	// $0.008991 a call.
	reg := writeFile(t, "models.json", fmt.Sprintf(`{"models":[{"name":%q,"endpoint":%q,"id":%q,"contextTokens":32768,"prices":{"inputPerMTokUsd":1,"outputPerMTokUsd":10},"images":false}]}`, model, srv.URL, model), 0o600)
	run := func(t *testing.T, extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		args := append([]string{"run", "--evidence", t.TempDir(), "--json", "--max-cost-usd", "0.025", "--llm-base-url", srv.URL, "--model", model, "--goal", "Wait", "--url", site + "/orders"}, extra...)
		code := Run(context.Background(), args, Stdio{Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}

	t.Run("no registry", func(t *testing.T) {
		code, _, errs := run(t)
		if code != ExitUsage || len(srv.Requests()) != 0 {
			t.Fatalf("exit %d after %d model requests, want %d before any\n%s", code, len(srv.Requests()), ExitUsage, errs)
		}
		if want := `a cost budget (--max-cost-usd or hints.maxCostUsd) needs the model's prices: give --model-registry FILE with an entry for model "` + model + `" at ` + srv.URL; !strings.Contains(errs, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errs)
		}
	})
	t.Run("passed", func(t *testing.T) {
		code, out, errs := run(t, "--model-registry", reg)
		if code != ExitAborted {
			t.Fatalf("exit %d, want %d\n%s", code, ExitAborted, errs)
		}
		for _, want := range []string{"tokens 1,800 · $0.018/$0.025\n", "tokens 2,700 · $0.027/$0.025; evidence", "why: aborted after 2 actions: the cost budget (maxCostUsd $0.025) was passed: cost $0.027 of $0.025"} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
		b := outputBundle(t, out)
		if len(b.ModelCalls) != 3 {
			t.Fatalf("%d model calls recorded, want 3", len(b.ModelCalls))
		}
		for i, mc := range b.ModelCalls {
			if mc.CostUSD == nil || *mc.CostUSD < 0.008990 || *mc.CostUSD > 0.008992 {
				t.Errorf("model call %d: cost %v, want 0.008991", i, mc.CostUSD)
			}
		}
		if got, _ := b.Manifest.Task.MaxCostUSD(); got != 0.025 {
			t.Errorf("the task's hints.maxCostUsd %v, want 0.025", got)
		}
		if got, want := b.Manifest.Versions.ModelPrices, (contract.ModelPrices{InputPerMTok: 1, OutputPerMTok: 10}); got == nil || *got != want {
			t.Errorf("manifest versions.modelPrices %+v, want %+v", got, want)
		}
		var rep bytes.Buffer
		if err := audit.RenderReport(b, &rep); err != nil {
			t.Fatal(err)
		}
		if want := "3 model calls: 2,700 tokens, cost $0.027 of a budget of $0.025."; !strings.Contains(rep.String(), want) {
			t.Errorf("the report does not say %q", want)
		}
	})
}

// TestRunLlamaCpp: against a llama.cpp server (its dialect: the model
// listed under its --alias, GET /props with the model file), a registered
// model runs and the manifest records the model file; a registry entry
// with another modelPath is refused (exit 2), and so is one with a digest,
// since the server cannot report one.
func TestRunLlamaCpp(t *testing.T) {
	const model, file = "qwen", "/models/qwen2.5-7b-instruct-q4_k_m.gguf"
	site := demoSite(t)
	srv := llmtest.NewDialect(t, llmtest.LlamaCpp, llmtest.Served{ID: model, Path: file})
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.LlamaCpp.Answer(`{"goal":"x","steps":[{"id":"s1","description":"read the orders","successCriteria":"table extracted"}]}`, 700, 40)(w, r)
			return
		}
		llmtest.LlamaCpp.Answer(`{"actions":[{"id":"e1","type":"extract","reason":"read","policyTags":[],"extract":"table","selector":"#orders"}],"status":"done","summary":"read the orders table"}`, 900, 60)(w, r)
	})
	entry := `{"models":[{"name":%q,"endpoint":%q,"id":%q%s,"contextTokens":32768,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false}]}`
	run := func(t *testing.T, digest string) (int, string, string) {
		reg := writeFile(t, "models.json", fmt.Sprintf(entry, model, srv.URL, model, digest), 0o600)
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{"run", "--evidence", t.TempDir(), "--json", "--llm-base-url", srv.URL, "--model", model, "--model-registry", reg, "--goal", "List my orders", "--url", site + "/orders"}, Stdio{Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	t.Run("registered", func(t *testing.T) {
		code, out, errs := run(t, `,"modelPath":"`+file+`"`)
		if code != ExitOK {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		var o contract.Output
		if err := contract.Decode(schemas.KindOutput, []byte(out), &o); err != nil {
			t.Fatal(err)
		}
		b, err := audit.Open(context.Background(), verifyOutput(t, o), audit.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := b.Manifest.Versions; v.ModelID != model || v.ModelPath != file || v.ModelDigest != "" {
			t.Errorf("manifest versions %+v, want id %q, path %q, no digest", v, model, file)
		}
		if !strings.Contains(errs, "tokens 1,700 · $0.00") {
			t.Errorf("the progress lines do not show the tokens and the cost at 0:\n%s", errs)
		}
	})
	t.Run("another model file behind the alias", func(t *testing.T) {
		code, _, errs := run(t, `,"modelPath":"/models/other.gguf"`)
		if code != ExitUsage || !strings.Contains(errs, `expects model file "/models/other.gguf", the server reported "`+file+`"`) {
			t.Fatalf("exit %d, want %d refusing the model file\n%s", code, ExitUsage, errs)
		}
	})
	t.Run("digest registered", func(t *testing.T) {
		code, _, errs := run(t, `,"digest":"`+ollamaDigest+`"`)
		if code != ExitUsage {
			t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, errs)
		}
		for _, want := range []string{"a llama.cpp server reports no digest of its model file", `model_path "` + file + `"`, `replace the digest in the registry entry by modelPath "` + file + `"`} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errs)
			}
		}
	})
}

// outputBundle opens the bundle of the run whose --json output is out,
// after checking it verifies.
func outputBundle(t *testing.T, out string) *audit.Bundle {
	t.Helper()
	var o contract.Output
	if err := contract.Decode(schemas.KindOutput, []byte(out), &o); err != nil {
		t.Fatal(err)
	}
	b, err := audit.Open(context.Background(), verifyOutput(t, o), audit.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
