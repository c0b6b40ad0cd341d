package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestSessionEnvRegistryOnce: the sessions of one command ask the model's
// endpoint once: an answer and a refusal alike are remembered, and a
// second session of the same model gets the same answer without asking
// again.
func TestSessionEnvRegistryOnce(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			asked.Add(1)
		}
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"served","object":"model","owned_by":"x"}]}`)
	}))
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		name, id string
		refused  bool
	}{{"answer", "served", false}, {"refusal", "other", true}} {
		t.Run(tt.name, func(t *testing.T) {
			asked.Store(0)
			reg := writeFile(t, "models.json", fmt.Sprintf(`{"models":[{"name":"served","endpoint":%q,"id":%q,"contextTokens":4096,"prices":{"inputPerMTokUsd":0,"outputPerMTokUsd":0},"images":false}]}`, srv.URL+"/v1", tt.id), 0o600)
			e := &sessionEnv{o: &runOptions{modelRegistry: reg, baseURL: srv.URL + "/v1"}, regs: map[string]*registryCall{}}
			for i := range 2 {
				r, err := e.registry(context.Background(), "served")
				if (err != nil) != tt.refused || (!tt.refused && r.ident.ID != "served") {
					t.Fatalf("call %d: %+v, %v; want refused %v", i, r, err, tt.refused)
				}
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the endpoint was asked %d times, want once", n)
			}
		})
	}
}
