package modelreg_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/modelreg"
)

// FuzzProbe: whatever an endpoint answers to its model listing and its
// Ollama tags, Probe returns an error or an identity whose id is the model
// asked for or the one model a llama.cpp server lists, and its errors stay
// short (the endpoint is not trusted to keep its listing short).
func FuzzProbe(f *testing.F) {
	f.Add(`{"data":[{"id":"llama3.1:8b"}]}`, `{"models":[{"name":"llama3.1:8b","digest":"46e0c10c039e019119339687c3c1757cc81b9da49709a3b3924863ba87ca666e"}]}`)
	f.Add(`{"data":[{"id":"/models/llama.gguf"}]}`, `not json`)
	f.Add(`{"data":null}`, `{"models":[{"name":null}]}`)
	f.Add(`[]`, `{}`)
	f.Fuzz(func(t *testing.T, models, tags string) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(models)) })
		mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tags)) })
		srv := httptest.NewServer(mux)
		defer srv.Close()
		for _, model := range []string{"llama3.1:8b", "llama.gguf"} {
			id, err := modelreg.Probe(context.Background(), modelreg.ProbeConfig{BaseURL: srv.URL + "/v1", Model: model})
			if err != nil {
				if len(err.Error()) > 2000 {
					t.Errorf("error of %d bytes: %.200s…", len(err.Error()), err)
				}
				continue
			}
			if id.ID != model && !strings.HasSuffix(id.ID, "/"+model) && !strings.HasSuffix(id.ID, `\`+model) {
				t.Errorf("Probe(%q) = id %q: neither the model asked for nor its llama.cpp path", model, id.ID)
			}
		}
	})
}
