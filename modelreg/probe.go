package modelreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/internal/text"
)

// maxProbeBytes bounds a listing an endpoint returns.
const maxProbeBytes = 4 << 20

// Identity is what an endpoint reported about the model it serves.
type Identity struct {
	// ID is the model's id in GET /v1/models.
	ID string
	// Digest is the digest the endpoint reported (Ollama's /api/tags);
	// "" when it reports none (the llama.cpp server and vLLM report
	// none).
	Digest string
	// Server is the dialect the endpoint showed it speaks: ServerOllama
	// (it answered /api/tags), ServerLlamaCpp (it answered /props),
	// ServerVLLM (its listing is vLLM's), "" when none of them.
	Server string
	// ModelPath is the model file a llama.cpp server reported (GET /props
	// model_path): the identity's extra fact where no digest is reported.
	ModelPath string
	// ContextTokens is the context the endpoint serves the model with,
	// when it reports it (vLLM's max_model_len); 0 otherwise.
	ContextTokens int
}

// The servers Probe recognizes (Identity.Server).
const (
	ServerOllama   = "ollama"
	ServerLlamaCpp = "llama.cpp"
	ServerVLLM     = "vllm"
)

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
// names; vLLM adds root and max_model_len). Where the base ends in /v1,
// its root (the base without /v1) tells the local servers apart: GET
// {root}/api/tags gives Ollama's digest of the model, else GET
// {root}/props gives a llama.cpp server's model_path (it reports no
// digest: the file is not hashed). An endpoint answering neither (404 or
// another status) is not taken for either.
func Probe(ctx context.Context, pc ProbeConfig) (Identity, error) {
	base := NormalizeEndpoint(pc.BaseURL)
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := getJSON(ctx, pc, base+"/models", &list); err != nil {
		return Identity{}, fmt.Errorf("model identity: %w", err)
	}
	var ids []string
	found := -1
	for i, d := range list.Data {
		ids = append(ids, d.ID)
		if d.ID == pc.Model && found < 0 {
			found = i
		}
	}
	if found < 0 && len(list.Data) == 1 && isLlamaCppAlias(pc.Model, list.Data[0].ID) {
		found = 0
	}
	if found < 0 {
		return Identity{}, fmt.Errorf("model identity: %s/models does not list model %q (it lists %s)", base, pc.Model, quoteList(ids))
	}
	m := list.Data[found]
	ident := Identity{ID: m.ID}
	if m.OwnedBy == "vllm" || m.MaxModelLen > 0 {
		ident.Server, ident.ContextTokens = ServerVLLM, max(m.MaxModelLen, 0)
	}
	root, ok := strings.CutSuffix(base, "/v1")
	if !ok || ident.Server == ServerVLLM {
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
	case err == nil:
		ident.Server = ServerOllama
		for _, t := range tags.Models {
			if t.Name == ident.ID || t.Model == ident.ID {
				ident.Digest = t.Digest
				break
			}
		}
		if ident.Digest != "" && !isDigest(ident.Digest) {
			return Identity{}, fmt.Errorf("model identity: %s/api/tags: the server reported the digest %q for model %q, which is not a SHA-256 digest (64 lowercase hex digits, optionally prefixed sha256:)", root, text.Ellipsize(ident.Digest, 100), ident.ID)
		}
		return ident, nil
	case !errors.As(err, &se):
		return Identity{}, fmt.Errorf("model identity: %w", err)
	}
	var props struct {
		ModelPath string `json:"model_path"`
	}
	err = getJSON(ctx, pc, root+"/props", &props)
	switch {
	case errors.As(err, &se):
		return ident, nil // neither Ollama nor llama.cpp
	case err != nil:
		return Identity{}, fmt.Errorf("model identity: %w", err)
	case props.ModelPath != "":
		if err := checkModelPath(props.ModelPath); err != nil {
			return Identity{}, fmt.Errorf("model identity: %s/props: %w", root, err)
		}
		ident.Server, ident.ModelPath = ServerLlamaCpp, props.ModelPath
	}
	return ident, nil
}

// isDigest reports whether d is a digest the manifest records
// (versions.modelDigest): 64 lowercase hex digits, optionally prefixed
// sha256:.
func isDigest(d string) bool {
	_, err := evidence.ParseHash(strings.TrimPrefix(d, "sha256:"))
	return err == nil
}

// MaxModelPath is the longest model path an Identity holds, in bytes: the
// bound of the manifest's versions.modelPath.
const MaxModelPath = 4096

// checkModelPath refuses a model path the manifest cannot record as it
// was reported (versions.modelPath: 1 to MaxModelPath printable ASCII
// characters). It is refused rather than escaped: the path is compared
// with the registry's as reported, and an escaped form would be a second
// spelling of it.
func checkModelPath(p string) error {
	if len(p) > MaxModelPath {
		return fmt.Errorf("the server reported a model path of %d bytes, more than %d: serve the model from a shorter path", len(p), MaxModelPath)
	}
	for i := 0; i < len(p); i++ {
		if p[i] < ' ' || p[i] > '~' {
			return fmt.Errorf("the server reported the model path %q, which is not printable ASCII (the manifest records it as reported): serve the model from a path of printable ASCII characters (a symbolic link will do)", text.Ellipsize(p, 200))
		}
	}
	return nil
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
