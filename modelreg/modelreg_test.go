package modelreg_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/modelreg"
)

const digest = "46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e"

// openAI is an httptest server listing models as OpenAI does. The local
// servers' dialects are llmtest's (llmtest.NewDialect).
func openAI(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o-2024-08-06","object":"model","created":1,"owned_by":"system"},{"id":"gpt-4o-mini","object":"model","owned_by":"system"}]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const ggufPath = "/models/qwen2.5-7b-instruct-q4_k_m.gguf"

// TestProbeDialects: Probe learns each server's identity of the model:
// OpenAI's id; Ollama's id and digest; a llama.cpp server's id (its file
// path, or its --alias, which --model may name by the file's name) and
// model_path, no digest; vLLM's id and the context it serves.
func TestProbeDialects(t *testing.T) {
	tests := []struct {
		name  string
		base  func(t *testing.T) string
		model string
		want  modelreg.Identity
	}{
		{"openai", func(t *testing.T) string { return openAI(t).URL + "/v1/" }, "gpt-4o-2024-08-06", modelreg.Identity{ID: "gpt-4o-2024-08-06"}},
		{"ollama", func(t *testing.T) string {
			return llmtest.NewDialect(t, llmtest.Ollama, llmtest.Served{ID: "llama3.1:8b", Digest: digest}).URL
		}, "llama3.1:8b", modelreg.Identity{ID: "llama3.1:8b", Digest: digest, Server: modelreg.ServerOllama}},
		{"llama.cpp by path", func(t *testing.T) string {
			return llmtest.NewDialect(t, llmtest.LlamaCpp, llmtest.Served{ID: ggufPath, ContextTokens: 8192}).URL
		}, ggufPath, modelreg.Identity{ID: ggufPath, Server: modelreg.ServerLlamaCpp, ModelPath: ggufPath}},
		{"llama.cpp by file name", func(t *testing.T) string {
			return llmtest.NewDialect(t, llmtest.LlamaCpp, llmtest.Served{ID: ggufPath}).URL + "/"
		}, "qwen2.5-7b-instruct-q4_k_m.gguf", modelreg.Identity{ID: ggufPath, Server: modelreg.ServerLlamaCpp, ModelPath: ggufPath}},
		{"llama.cpp --alias", func(t *testing.T) string {
			return llmtest.NewDialect(t, llmtest.LlamaCpp, llmtest.Served{ID: "qwen", Path: ggufPath}).URL
		}, "qwen", modelreg.Identity{ID: "qwen", Server: modelreg.ServerLlamaCpp, ModelPath: ggufPath}},
		{"vllm", func(t *testing.T) string {
			return llmtest.NewDialect(t, llmtest.VLLM, llmtest.Served{ID: "Qwen/Qwen2.5-7B-Instruct", ContextTokens: 32768}).URL
		}, "Qwen/Qwen2.5-7B-Instruct", modelreg.Identity{ID: "Qwen/Qwen2.5-7B-Instruct", Server: modelreg.ServerVLLM, ContextTokens: 32768}},
		{"vllm without max_model_len", func(t *testing.T) string {
			return llmtest.NewDialect(t, llmtest.VLLM, llmtest.Served{ID: "served-name", Root: "/weights/qwen"}).URL
		}, "served-name", modelreg.Identity{ID: "served-name", Server: modelreg.ServerVLLM}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: tt.base(t), Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Probe = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestProbeModelNotServed(t *testing.T) {
	srv := openAI(t)
	_, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: srv.URL + "/v1", Model: "o3"})
	if err == nil || !strings.Contains(err.Error(), `does not list model "o3"`) || !strings.Contains(err.Error(), `"gpt-4o-mini"`) {
		t.Fatalf("err = %v, want one naming the model and what the endpoint lists", err)
	}
}

func registry(t *testing.T, base string) *modelreg.Registry {
	t.Helper()
	r, err := modelreg.Parse([]byte(fmt.Sprintf(`{"models":[
	{"name":"gpt-4o-2024-08-06","endpoint":%[1]q,"id":"gpt-4o-2024-08-06","contextTokens":128000,"prices":{"inputPerMTokUsd":2.5,"outputPerMTokUsd":10},"images":true},
	{"name":"llama3.1:8b","endpoint":%[1]q,"id":"llama3.1:8b","digest":"sha256:%[2]s","contextTokens":131072,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false},
	{"name":"pinned","endpoint":%[1]q,"id":"pinned","digest":%[2]q,"contextTokens":4096,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false}]}`, base, digest)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheck(t *testing.T) {
	const base = "http://127.0.0.1:11434/v1"
	r := registry(t, base)
	other := strings.Repeat("0", 64)
	tests := []struct {
		name, model, endpoint string
		got                   modelreg.Identity
		wantErr               []string // substrings; nil: allowed
	}{
		{"openai match", "gpt-4o-2024-08-06", base + "/", modelreg.Identity{ID: "gpt-4o-2024-08-06"}, nil},
		{"ollama digest match", "llama3.1:8b", base, modelreg.Identity{ID: "llama3.1:8b", Digest: digest}, nil},
		{"digest mismatch", "llama3.1:8b", base, modelreg.Identity{ID: "llama3.1:8b", Digest: "sha256:" + other},
			[]string{"expects digest sha256:" + digest, "reported sha256:" + other, "update the registry"}},
		{"no digest reported", "pinned", base, modelreg.Identity{ID: "pinned"}, []string{"expects digest " + digest, "reported none"}},
		{"id mismatch", "gpt-4o-2024-08-06", base, modelreg.Identity{ID: "gpt-4o-mini"}, []string{`expects id "gpt-4o-2024-08-06"`, `reported "gpt-4o-mini"`}},
		{"not in registry", "o3", base, modelreg.Identity{ID: "o3"}, []string{`model "o3"`, "not in the registry"}},
		{"llama.cpp cannot report the digest", "pinned", base, modelreg.Identity{ID: "pinned", Server: modelreg.ServerLlamaCpp, ModelPath: ggufPath},
			[]string{"expects digest " + digest, "a llama.cpp server reports no digest of its model file", `model_path "` + ggufPath + `"`, `by modelPath "` + ggufPath + `"`}},
		{"context within what is served", "gpt-4o-2024-08-06", base, modelreg.Identity{ID: "gpt-4o-2024-08-06", Server: modelreg.ServerVLLM, ContextTokens: 128000}, nil},
		{"context longer than served", "gpt-4o-2024-08-06", base, modelreg.Identity{ID: "gpt-4o-2024-08-06", Server: modelreg.ServerVLLM, ContextTokens: 32768},
			[]string{"context of 128000 tokens", "serves at most 32768 (max_model_len)", "lower contextTokens"}},
		{"other endpoint", "llama3.1:8b", "http://10.0.0.2:11434/v1", modelreg.Identity{ID: "llama3.1:8b", Digest: digest}, []string{"registered for " + base, "not for endpoint http://10.0.0.2:11434/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := r.Check(tt.model, tt.endpoint, tt.got)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if got, want := m.Name, tt.model; got != want {
					t.Errorf("entry %q, want %q", got, want)
				}
				return
			}
			if !errors.Is(err, modelreg.ErrRefused) {
				t.Fatalf("err = %v, want ErrRefused", err)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to say %q", err, s)
				}
			}
		})
	}
}

// TestProbeThenCheck: what Probe learns of each local server passes Check
// against a matching registry entry, and a registry entry that asks more
// than the server can report or serves is refused.
func TestProbeThenCheck(t *testing.T) {
	tests := []struct {
		name    string
		d       llmtest.Dialect
		served  llmtest.Served
		entry   string // the registry entry's extra members
		wantErr string
	}{
		{"ollama", llmtest.Ollama, llmtest.Served{ID: "m", Digest: digest}, `"digest":"sha256:` + digest + `"`, ""},
		{"ollama, other digest", llmtest.Ollama, llmtest.Served{ID: "m", Digest: strings.Repeat("1", 64)}, `"digest":"` + digest + `"`, "the model's weights changed"},
		{"llama.cpp", llmtest.LlamaCpp, llmtest.Served{ID: "m", Path: ggufPath}, ``, ""},
		{"llama.cpp with a digest", llmtest.LlamaCpp, llmtest.Served{ID: "m", Path: ggufPath}, `"digest":"` + digest + `"`, "reports no digest"},
		{"llama.cpp with its model file", llmtest.LlamaCpp, llmtest.Served{ID: "m", Path: ggufPath}, `"modelPath":"` + ggufPath + `"`, ""},
		{"llama.cpp, another file behind the alias", llmtest.LlamaCpp, llmtest.Served{ID: "m", Path: "/models/other.gguf"}, `"modelPath":"` + ggufPath + `"`, `expects model file "` + ggufPath + `", the server reported "/models/other.gguf"`},
		{"model file, server reports none", llmtest.Ollama, llmtest.Served{ID: "m", Digest: digest}, `"modelPath":"` + ggufPath + `"`, `expects model file "` + ggufPath + `", the endpoint reported none`},
		{"vllm", llmtest.VLLM, llmtest.Served{ID: "m", ContextTokens: 4096}, ``, ""},
		{"vllm, shorter context", llmtest.VLLM, llmtest.Served{ID: "m", ContextTokens: 2048}, ``, "serves at most 2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewDialect(t, tt.d, tt.served)
			extra := ""
			if tt.entry != "" {
				extra = "," + tt.entry
			}
			r, err := modelreg.Parse([]byte(fmt.Sprintf(`{"models":[{"name":"m","endpoint":%q,"id":"m","contextTokens":4096,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false%s}]}`, srv.URL, extra)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: srv.URL, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Check("m", srv.URL, got)
			if (err == nil) != (tt.wantErr == "") || (err != nil && (!errors.Is(err, modelreg.ErrRefused) || !strings.Contains(err.Error(), tt.wantErr))) {
				t.Errorf("Check: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadBadFiles(t *testing.T) {
	entry := `{"name":"m","endpoint":"http://127.0.0.1:8000/v1","id":"m","contextTokens":4096,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false}`
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"not JSON", `{"models":`, []string{"reg.json"}},
		{"empty list", `{"models":[]}`, []string{"/models", "minimum 1 items"}},
		{"missing prices", `{"models":[{"name":"m","endpoint":"http://127.0.0.1:8000/v1","id":"m","contextTokens":4096,"images":false}]}`, []string{"/models/0", "prices"}},
		{"bad digest", `{"models":[{"name":"m","endpoint":"http://127.0.0.1:8000/v1","id":"m","digest":"abc","contextTokens":4096,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false}]}`, []string{"/models/0/digest"}},
		{"unknown field", `{"models":[` + entry + `],"extra":1}`, []string{"extra"}},
		{"listed twice", `{"models":[` + entry + `,` + entry + `]}`, []string{`model "m" is listed twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "reg.json")
			if err := os.WriteFile(p, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := modelreg.Load(p)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, s := range append(tt.want, "model registry") {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to say %q", err, s)
				}
			}
		})
	}
	if _, err := modelreg.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: err = %v", err)
	}
}

// TestProbeModelPathBounds: a llama.cpp server whose model path the
// manifest could not record as reported (not printable ASCII, or longer
// than modelreg.MaxModelPath), or an Ollama server whose digest is none,
// is refused by Probe, saying so, rather than failing the run late when
// the bundle is created.
func TestProbeModelPathBounds(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"non-ASCII", "/models/modèle-7b.gguf", "not printable ASCII"},
		{"control character", "/models/m\n.gguf", "not printable ASCII"},
		{"too long", "/" + strings.Repeat("m", modelreg.MaxModelPath), "more than 4096"},
		{"digest", "", "not a SHA-256 digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewDialect(t, llmtest.LlamaCpp, llmtest.Served{ID: "m", Path: tt.path})
			if tt.path == "" {
				srv = llmtest.NewDialect(t, llmtest.Ollama, llmtest.Served{ID: "m", Digest: "sha256:NOT-HEX"})
			}
			_, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: srv.URL, Model: "m"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Probe: %v, want a refusal saying %q", err, tt.want)
			}
		})
	}
}
