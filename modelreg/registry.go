// Package modelreg holds the model registry: the models a site allows, at
// which endpoint, with the identity (and digest) the endpoint must report,
// their context size, prices and whether they accept images. The shape of
// a registry file is schemas/model-registry.schema.json; Load validates a
// file against it. Probe asks an endpoint what it serves (OpenAI, vLLM and
// the llama.cpp server: GET /v1/models; Ollama also: GET /api/tags with
// each model's digest; llama.cpp: GET /props with its model_path; vLLM:
// max_model_len in its listing) and Registry.Check refuses a model the
// registry does not list, whose reported identity differs from the
// registered one, whose registered digest the endpoint cannot report
// (llama.cpp), whose registered model file differs from the one a
// llama.cpp server reports (or that it does not report), or whose
// registered context is longer than the endpoint serves (vLLM).
package modelreg

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// MaxFileBytes bounds a registry file.
const MaxFileBytes = 1 << 20

// Registry is a parsed registry file.
type Registry struct {
	// Models are the allowed models.
	Models []Model `json:"models"`
}

// Model is one allowed model at one endpoint.
type Model struct {
	// Name is the model as --model names it and requests send it.
	Name string `json:"name"`
	// Endpoint is the endpoint's base URL up to and including /v1.
	Endpoint string `json:"endpoint"`
	// ID is the id the endpoint reports in GET /v1/models.
	ID string `json:"id"`
	// Digest is the digest the endpoint must report; "" when none is
	// required.
	Digest string `json:"digest,omitempty"`
	// ModelPath is the model file a llama.cpp server must report (GET
	// /props model_path); "" when none is required.
	ModelPath string `json:"modelPath,omitempty"`
	// ContextTokens is the model's context size in tokens.
	ContextTokens int `json:"contextTokens"`
	// Prices are what the model costs.
	Prices Prices `json:"prices"`
	// Images is whether the model accepts image parts.
	Images bool `json:"images"`
}

// Prices are a model's prices in US dollars per million tokens
// (inputPerMTokUsd, outputPerMTokUsd), as the manifest records them.
type Prices = contract.ModelPrices

// Load reads the registry file at path and validates it against its
// schema; the error names the file and every problem.
func Load(path string) (*Registry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model registry: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("model registry %s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("model registry %s: larger than %d bytes", path, MaxFileBytes)
	}
	r, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("model registry %s: %w", path, err)
	}
	return r, nil
}

// Parse validates a registry document and decodes it.
func Parse(doc []byte) (*Registry, error) {
	if err := schemas.Validate(schemas.KindModelRegistry, doc); err != nil {
		return nil, err
	}
	var r Registry
	if err := json.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	seen := map[[2]string]bool{}
	for i, m := range r.Models {
		k := [2]string{m.Name, NormalizeEndpoint(m.Endpoint)}
		if seen[k] {
			return nil, fmt.Errorf("/models/%d: model %q is listed twice for endpoint %s", i, m.Name, m.Endpoint)
		}
		seen[k] = true
	}
	return &r, nil
}

// NormalizeEndpoint returns a base URL without trailing slashes, for
// comparison.
func NormalizeEndpoint(u string) string { return strings.TrimRight(u, "/") }

// ErrRefused marks every refusal of Check: the model is not allowed, or the
// endpoint reported another identity than the registry's.
var ErrRefused = errors.New("model registry refuses the model")

// Lookup returns the registry's entry for the model name at the endpoint.
func (r *Registry) Lookup(name, endpoint string) (Model, bool) {
	ep := NormalizeEndpoint(endpoint)
	for _, m := range r.Models {
		if m.Name == name && NormalizeEndpoint(m.Endpoint) == ep {
			return m, true
		}
	}
	return Model{}, false
}

// Check returns the registry's entry for the model name at the endpoint if
// the endpoint's reported identity matches it, and otherwise an error
// wrapping ErrRefused that says what was expected, what the endpoint
// reported, and what to do.
func (r *Registry) Check(name, endpoint string, got Identity) (Model, error) {
	m, ok := r.Lookup(name, endpoint)
	if !ok {
		var at []string
		for _, x := range r.Models {
			if x.Name == name {
				at = append(at, x.Endpoint)
			}
		}
		if len(at) > 0 {
			return Model{}, fmt.Errorf("%w: model %q is registered for %s, not for endpoint %s: use a registered endpoint or add an entry for this one", ErrRefused, name, strings.Join(at, ", "), endpoint)
		}
		return Model{}, fmt.Errorf("%w: model %q at %s is not in the registry: choose a registered model or add an entry for it", ErrRefused, name, endpoint)
	}
	if got.ID != m.ID {
		return Model{}, fmt.Errorf("%w: model %q at %s: the registry expects id %q, the endpoint reported %q: the endpoint serves another model; fix the endpoint or the registry", ErrRefused, name, endpoint, m.ID, got.ID)
	}
	if m.ContextTokens > got.ContextTokens && got.ContextTokens > 0 {
		return Model{}, fmt.Errorf("%w: model %q at %s: the registry says a context of %d tokens, the endpoint serves at most %d (max_model_len): lower contextTokens in the registry, or serve the model with a longer context (vllm serve --max-model-len)", ErrRefused, name, endpoint, m.ContextTokens, got.ContextTokens)
	}
	if m.ModelPath != "" {
		switch {
		case got.ModelPath == "":
			return Model{}, fmt.Errorf("%w: model %q at %s: the registry expects model file %q, the endpoint reported none (only a llama.cpp server reports one, at GET /props): serve the model from a llama.cpp server, or remove modelPath from the registry entry", ErrRefused, name, endpoint, m.ModelPath)
		case got.ModelPath != m.ModelPath:
			return Model{}, fmt.Errorf("%w: model %q at %s: the registry expects model file %q, the server reported %q: it serves another model file under the same name; start it with the registered file (llama-server -m) or update the registry after review", ErrRefused, name, endpoint, m.ModelPath, got.ModelPath)
		}
	}
	if m.Digest != "" {
		want := strings.TrimPrefix(m.Digest, "sha256:")
		have := strings.TrimPrefix(got.Digest, "sha256:")
		switch {
		case got.Digest == "" && got.Server == ServerLlamaCpp:
			return Model{}, fmt.Errorf("%w: model %q at %s: the registry expects digest %s, but a llama.cpp server reports no digest of its model file (GET /props gives only model_path %q), so the digest cannot be checked: replace the digest in the registry entry by modelPath %q (the server's id and model file then identify the model, though not the file's bytes), or serve the model from Ollama, which reports a digest", ErrRefused, name, endpoint, m.Digest, got.ModelPath, got.ModelPath)
		case got.Digest == "":
			return Model{}, fmt.Errorf("%w: model %q at %s: the registry expects digest %s, the endpoint reported none: the registered digest needs an endpoint that reports one (Ollama's /api/tags), or remove it from the registry", ErrRefused, name, endpoint, m.Digest)
		case want != have:
			return Model{}, fmt.Errorf("%w: model %q at %s: the registry expects digest %s, the endpoint reported %s: the model's weights changed; pull the registered model or update the registry after review", ErrRefused, name, endpoint, m.Digest, got.Digest)
		}
	}
	return m, nil
}
