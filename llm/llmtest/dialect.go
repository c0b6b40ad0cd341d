package llmtest

// Local model servers speak OpenAI's chat completions API at /v1, each
// with a dialect of its own: how it lists its models, what else it says
// about them, how it reports usage and errors. A dialect Server answers
// those listings as the server does (as documented by each project, and
// as aegis reads them: modelreg.Probe), and Dialect.Answer and
// Dialect.Error write completions and errors in the dialect's shape.
// Every dialect's chat completions take image_url content parts (a
// vision model's; Message.Images): whether the model accepts them is the
// model registry's "images", not something a server reports.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Dialect is a local model server's flavour of the OpenAI API.
type Dialect string

// The dialects.
const (
	// Ollama (ollama serve): GET /v1/models lists name:tag ids
	// (owned_by "library"); GET /api/tags lists each model with its
	// digest (the SHA-256 of its manifest, 64 hex digits).
	Ollama Dialect = "ollama"
	// LlamaCpp is the llama.cpp server (llama-server -m FILE.gguf
	// [--alias NAME]): GET /v1/models lists its one model by its file
	// path or --alias (owned_by "llamacpp", with meta); GET /props
	// reports model_path (and the context size), but no digest of the
	// file.
	LlamaCpp Dialect = "llama.cpp"
	// VLLM (vllm serve MODEL): GET /v1/models lists the served model
	// name with root (the weights it was loaded from) and max_model_len
	// (the context it serves).
	VLLM Dialect = "vllm"
)

// Served is the model a dialect Server serves.
type Served struct {
	// ID is the id GET /v1/models lists: Ollama's name:tag, llama.cpp's
	// file path or --alias, vLLM's served model name.
	ID string
	// Digest is Ollama's digest of the model in /api/tags (64 hex
	// digits); ignored by the other dialects.
	Digest string
	// Path is llama.cpp's model_path in /props (the -m file); "" is ID.
	Path string
	// Root is vLLM's root in /v1/models; "" is ID.
	Root string
	// ContextTokens is the context the server serves: vLLM's
	// max_model_len, llama.cpp's n_ctx in /props (0 leaves them out).
	ContextTokens int
}

// NewDialect starts a Server speaking dialect d about model m: it answers
// d's model listings, and chat completions from replies as NewServer
// does.
func NewDialect(t testing.TB, d Dialect, m Served, replies ...Reply) *Server {
	s := &Server{t: t, replies: replies, arrived: make(chan struct{}), listings: listings(d, m)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// listings are d's GET endpoints about m, by path.
func listings(d Dialect, m Served) map[string]http.HandlerFunc {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	switch d {
	case Ollama:
		return map[string]http.HandlerFunc{
			"/v1/models": jsonHandler(map[string]any{"object": "list", "data": []any{
				map[string]any{"id": m.ID, "object": "model", "created": created, "owned_by": "library"},
			}}),
			"/api/tags": jsonHandler(map[string]any{"models": []any{map[string]any{
				"name": m.ID, "model": m.ID, "modified_at": "2026-01-01T00:00:00Z", "size": 4920753328, "digest": m.Digest,
				"details": map[string]any{"format": "gguf", "family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
			}}}),
		}
	case LlamaCpp:
		path := m.Path
		if path == "" {
			path = m.ID
		}
		props := map[string]any{
			"model_path": path, "total_slots": 1, "modalities": map[string]any{"vision": false},
			"build_info": "b6000-test", "default_generation_settings": map[string]any{"n_ctx": m.ContextTokens},
		}
		return map[string]http.HandlerFunc{
			"/v1/models": jsonHandler(map[string]any{"object": "list", "data": []any{
				map[string]any{"id": m.ID, "object": "model", "created": created, "owned_by": "llamacpp",
					"meta": map[string]any{"n_ctx_train": 131072, "n_params": 8030261248, "size": 4920733696}},
			}}),
			"/props": jsonHandler(props),
		}
	case VLLM:
		root := m.Root
		if root == "" {
			root = m.ID
		}
		model := map[string]any{"id": m.ID, "object": "model", "created": created, "owned_by": "vllm", "root": root, "parent": nil}
		if m.ContextTokens > 0 {
			model["max_model_len"] = m.ContextTokens
		}
		return map[string]http.HandlerFunc{
			"/v1/models": jsonHandler(map[string]any{"object": "list", "data": []any{model}}),
		}
	}
	panic("llmtest: unknown dialect " + string(d))
}

func jsonHandler(v any) http.HandlerFunc {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

// Answer replies 200 with a chat completion of content as d writes it,
// reporting prompt and completion tokens in d's usage: OpenAI's three
// counts (Ollama's /v1 maps its native prompt_eval_count and eval_count
// to them), with llama.cpp's prompt_tokens_details and timings and vLLM's
// null prompt_tokens_details beside them.
func (d Dialect) Answer(content string, prompt, completion int) Reply {
	return func(w http.ResponseWriter, r *Request) {
		usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
		body := map[string]any{
			"id": "chatcmpl-" + string(d), "object": "chat.completion", "created": time.Now().Unix(), "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		}
		switch d {
		case Ollama:
			body["system_fingerprint"] = "fp_ollama"
		case LlamaCpp:
			usage["prompt_tokens_details"] = map[string]any{"cached_tokens": 0}
			body["timings"] = map[string]any{"prompt_n": prompt, "predicted_n": completion, "cache_n": 0}
		case VLLM:
			usage["prompt_tokens_details"] = nil
		}
		body["usage"] = usage
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}
}

// Error replies with HTTP status code and an error body as d writes it,
// without usage: Ollama's and llama.cpp's {"error": {...}}, vLLM's
// top-level {"object": "error", "message", "type", "code"}.
func (d Dialect) Error(code int, message string) Reply {
	return func(w http.ResponseWriter, _ *Request) {
		var body any
		switch d {
		case VLLM:
			body = map[string]any{"object": "error", "message": message, "type": strings.ReplaceAll(http.StatusText(code), " ", "") + "Error", "param": nil, "code": code}
		case LlamaCpp:
			body = map[string]any{"error": map[string]any{"code": code, "message": message, "type": "invalid_request_error"}}
		default:
			body = map[string]any{"error": map[string]any{"message": message, "type": "api_error", "param": nil, "code": nil}}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	}
}
