package modelreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aegis-run/aegis/internal/text"
)

// maxProbeBytes bounds a listing an endpoint returns.
const maxProbeBytes = 4 << 20

// Identity is what an endpoint reported about the model it serves.
type Identity struct {
	// ID is the model's id in GET /v1/models.
	ID string
	// Digest is the digest the endpoint reported (Ollama's /api/tags);
	// "" when it reports none.
	Digest string
}

// ProbeConfig says how to reach an endpoint.
type ProbeConfig struct {
	// BaseURL is the endpoint's base URL up to and including /v1.
	BaseURL string
	// Model is the model name to look for.
	Model string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// HTTP is the client; nil is http.DefaultClient.
	HTTP *http.Client
}

// Probe asks the endpoint for the model's identity: GET {base}/models must
// list the model (OpenAI, vLLM, the llama.cpp server; a llama.cpp server
// lists its one model under its file path or --alias, whatever --model
// names), and GET {root}/api/tags, where root is the base without /v1,
// gives its digest when the endpoint is Ollama (an endpoint without that
// listing reports no digest).
func Probe(ctx context.Context, pc ProbeConfig) (Identity, error) {
	base := NormalizeEndpoint(pc.BaseURL)
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := getJSON(ctx, pc, base+"/models", &list); err != nil {
		return Identity{}, fmt.Errorf("model identity: %w", err)
	}
	var ids []string
	id := ""
	for _, d := range list.Data {
		ids = append(ids, d.ID)
		if d.ID == pc.Model {
			id = d.ID
		}
	}
	if id == "" && len(list.Data) == 1 && isLlamaCppAlias(pc.Model, list.Data[0].ID) {
		id = list.Data[0].ID
	}
	if id == "" {
		return Identity{}, fmt.Errorf("model identity: %s/models does not list model %q (it lists %s)", base, pc.Model, quoteList(ids))
	}
	ident := Identity{ID: id}
	root, ok := strings.CutSuffix(base, "/v1")
	if !ok {
		return ident, nil
	}
	var tags struct {
		Models []struct {
			Name   string `json:"name"`
			Model  string `json:"model"`
			Digest string `json:"digest"`
		} `json:"models"`
	}
	err := getJSON(ctx, pc, root+"/api/tags", &tags)
	var se *statusError
	switch {
	case errors.As(err, &se):
		return ident, nil // not Ollama
	case err != nil:
		return Identity{}, fmt.Errorf("model identity: %w", err)
	}
	for _, m := range tags.Models {
		if m.Name == id || m.Model == id {
			ident.Digest = m.Digest
			break
		}
	}
	return ident, nil
}

// isLlamaCppAlias reports whether name is the file name of the model path
// a llama.cpp server lists (it serves whatever name a request sends).
func isLlamaCppAlias(name, id string) bool {
	i := strings.LastIndexAny(id, `/\`)
	return i >= 0 && id[i+1:] == name
}

type statusError struct {
	url    string
	status int
}

func (e *statusError) Error() string { return fmt.Sprintf("GET %s: HTTP %d", e.url, e.status) }

func getJSON(ctx context.Context, pc ProbeConfig, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if pc.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+pc.APIKey)
	}
	c := pc.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{url: url, status: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(b) > maxProbeBytes {
		return fmt.Errorf("GET %s: answer larger than %d bytes", url, maxProbeBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// quoteList quotes the ids an endpoint listed for an error message: at
// most 10, each cut to 100 bytes (the endpoint is not trusted to keep
// its listing short).
func quoteList(s []string) string {
	if len(s) == 0 {
		return "no models"
	}
	const most = 10
	var q []string
	for _, x := range s[:min(len(s), most)] {
		q = append(q, fmt.Sprintf("%q", text.Ellipsize(x, 100)))
	}
	if len(s) > most {
		q = append(q, fmt.Sprintf("and %d more", len(s)-most))
	}
	return strings.Join(q, ", ")
}
