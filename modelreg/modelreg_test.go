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

	"github.com/aegis-run/aegis/modelreg"
)

const digest = "46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e"

// dialect is an httptest server speaking one server's model listing.
func dialect(t *testing.T, name string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	switch name {
	case "openai": // OpenAI and vLLM
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o-2024-08-06","object":"model","created":1,"owned_by":"system"},{"id":"gpt-4o-mini","object":"model","owned_by":"system"}]}`)
		})
	case "ollama":
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"llama3.1:8b","object":"model","created":1,"owned_by":"library"}]}`)
		})
		mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"models":[{"name":"llama3.1:8b","model":"llama3.1:8b","modified_at":"2024-08-01T00:00:00Z","size":4920753328,"digest":%q,"details":{"format":"gguf","family":"llama"}}]}`, digest)
		})
	case "llamacpp":
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"/models/qwen2.5-7b-instruct-q4_k_m.gguf","object":"model","created":1,"owned_by":"llamacpp","meta":{"vocab_type":2,"n_ctx_train":32768,"n_params":7615616512}}]}`)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeDialects(t *testing.T) {
	tests := []struct {
		dialect, model string
		want           modelreg.Identity
	}{
		{"openai", "gpt-4o-2024-08-06", modelreg.Identity{ID: "gpt-4o-2024-08-06"}},
		{"ollama", "llama3.1:8b", modelreg.Identity{ID: "llama3.1:8b", Digest: digest}},
		{"llamacpp", "/models/qwen2.5-7b-instruct-q4_k_m.gguf", modelreg.Identity{ID: "/models/qwen2.5-7b-instruct-q4_k_m.gguf"}},
		{"llamacpp", "qwen2.5-7b-instruct-q4_k_m.gguf", modelreg.Identity{ID: "/models/qwen2.5-7b-instruct-q4_k_m.gguf"}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.model, func(t *testing.T) {
			srv := dialect(t, tt.dialect)
			got, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: srv.URL + "/v1/", Model: tt.model})
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
	srv := dialect(t, "openai")
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

func TestProbeThenCheck(t *testing.T) {
	srv := dialect(t, "ollama")
	r := registry(t, srv.URL+"/v1")
	got, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: srv.URL + "/v1", Model: "llama3.1:8b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Check("llama3.1:8b", srv.URL+"/v1", got); err != nil {
		t.Fatal(err)
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
