package llm

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// StructuredOutput says how the client asks the endpoint for JSON.
type StructuredOutput string

// The structured-output modes.
const (
	// StructuredAuto asks for json_schema and falls back to json_object,
	// once and for the rest of the client's life, when the endpoint rejects
	// json_schema with a 400 that mentions response_format or json_schema.
	StructuredAuto StructuredOutput = "auto"
	// StructuredJSONSchema sends response_format json_schema (strict) with
	// a strict-mode form of the schema; the endpoint constrains decoding.
	StructuredJSONSchema StructuredOutput = "json_schema"
	// StructuredJSONObject sends response_format json_object and puts the
	// schema into the system prompt (Ollama, older vLLM, llama.cpp server,
	// LM Studio and most local servers accept it).
	StructuredJSONObject StructuredOutput = "json_object"
)

// ParseStructuredOutput parses a --structured-output flag value; "" is
// auto.
func ParseStructuredOutput(s string) (StructuredOutput, error) {
	switch StructuredOutput(s) {
	case "", StructuredAuto:
		return StructuredAuto, nil
	case StructuredJSONSchema, StructuredJSONObject:
		return StructuredOutput(s), nil
	}
	return "", fmt.Errorf("llm: unknown structured output mode %q (want auto, json_schema or json_object)", s)
}

// Defaults of a Config's zero fields.
const (
	DefaultBaseURL          = "https://api.openai.com/v1"
	DefaultTimeout          = 120 * time.Second
	DefaultMaxRetries       = 3
	DefaultBackoff          = 500 * time.Millisecond
	DefaultMaxBackoff       = 20 * time.Second
	DefaultMaxResponseBytes = 8 << 20
	DefaultAzureAPIVersion  = "2024-10-21"
)

// EnvAPIKey is the environment variable the API key is read from.
const EnvAPIKey = "OPENAI_API_KEY"

// Key is an API key. It never prints: every fmt verb, String and
// MarshalJSON give "[redacted]" (or "" for an empty key), so that a Config
// can be logged.
type Key string

const redacted = "[redacted]"

// String returns "[redacted]", never the key.
func (k Key) String() string {
	if k == "" {
		return ""
	}
	return redacted
}

// GoString returns "[redacted]", never the key.
func (k Key) GoString() string { return `"` + k.String() + `"` }

// Format writes "[redacted]" for every verb.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// MarshalJSON writes "[redacted]", never the key.
func (k Key) MarshalJSON() ([]byte, error) { return []byte(`"` + k.String() + `"`), nil }

// Config configures a Client. Only Model is required; everything else has
// a default.
type Config struct {
	// BaseURL is the endpoint's base URL, up to and including /v1 (such as
	// "http://127.0.0.1:11434/v1" for Ollama, "http://127.0.0.1:8000/v1"
	// for vLLM). Default DefaultBaseURL (OpenAI).
	BaseURL string
	// Model is the model id sent with every request (for Azure, the
	// deployment name).
	Model string
	// APIKey is sent as a bearer token (Azure: the api-key header). Empty
	// sends none, which local servers accept. See LoadAPIKey.
	APIKey Key
	// Azure selects the Azure OpenAI protocol (deployment in the path,
	// api-key header, api-version query) with APIVersion (default
	// DefaultAzureAPIVersion).
	Azure bool
	// APIVersion is the Azure api-version.
	APIVersion string
	// Timeout bounds one HTTP attempt (default DefaultTimeout). A timed-out
	// attempt is retried.
	Timeout time.Duration
	// MaxRetries bounds the retries after the first attempt, on timeouts,
	// network errors, 408, 429 and 5xx (default DefaultMaxRetries; negative
	// means none).
	MaxRetries int
	// Backoff is the base of the exponential backoff with full jitter:
	// before retry n the client waits a random duration in
	// [0, min(MaxBackoff, Backoff·2^(n-1))] (default DefaultBackoff).
	Backoff time.Duration
	// MaxBackoff caps one wait, including a server's Retry-After (default
	// DefaultMaxBackoff).
	MaxBackoff time.Duration
	// StructuredOutput picks how JSON is requested (default auto).
	StructuredOutput StructuredOutput
	// MaxTokens bounds the completion (max_completion_tokens); 0 leaves it
	// to the endpoint, or, under a Budget with a limit, to the budget
	// (DefaultCompletionBound, or what is left of it after the prompt), so
	// that what a call may use is known before it is sent.
	MaxTokens int
	// Temperature, when set, is sent as the sampling temperature.
	Temperature *float32
	// Seed, when set, is sent as the sampling seed.
	Seed *int
	// MaxResponseBytes bounds a response body (default
	// DefaultMaxResponseBytes); a larger one is an error, never truncated.
	MaxResponseBytes int64
	// Guard, when set, is run over every request body before it is sent;
	// a request it refuses is never sent and the call fails with a
	// *GuardError (not retried). secrets.Set.Guard makes one.
	Guard func(body []byte) error
	// Clock times the attempts (Timeout) and the waits between them;
	// default the system clock. Tests hand in one they drive.
	Clock Clock
	// Budget, when set, is the session's model budget (NewBudget), shared
	// by the clients of the session's Planner and Navigator: every
	// response's usage is charged to it, and a request is refused before
	// it is sent (a *BudgetError) when the budget is passed already or the
	// prompt's estimated tokens (Budget.EstimatePromptTokens) plus the
	// completion bound (MaxTokens, or the budget's) are more than what is
	// left, the calls in flight holding theirs. nil means no budget.
	Budget *Budget
	// HTTPClient is the HTTP client to use; default a new http.Client.
	// Redirects are never followed, whatever its CheckRedirect.
	HTTPClient *http.Client
}

func (c Config) withDefaults() (Config, error) {
	if strings.TrimSpace(c.Model) == "" {
		return c, errors.New("llm: Config.Model is required")
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return c, fmt.Errorf("llm: base URL %q is not an http(s) URL", c.BaseURL)
	}
	if strings.ContainsAny(string(c.APIKey), "\r\n") {
		return c, errors.New("llm: the API key contains a line break")
	}
	if c.Azure && c.APIVersion == "" {
		c.APIVersion = DefaultAzureAPIVersion
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	mode, err := ParseStructuredOutput(string(c.StructuredOutput))
	if err != nil {
		return c, err
	}
	c.StructuredOutput = mode
	return c, nil
}

// MaxKeyFileBytes bounds a key file.
const MaxKeyFileBytes = 16 << 10

// LoadAPIKey returns the API key: the content of keyFile when it is not
// empty, else the environment variable OPENAI_API_KEY (which may be unset:
// local servers need no key). Like ssh with a private key, it refuses a key
// file that the group or others may read or write (mode & 0o077 != 0), one
// that is not a regular file, and one larger than MaxKeyFileBytes. The key
// is the file's content trimmed of white space; it must be one line.
// Errors never contain the key.
func LoadAPIKey(keyFile string) (Key, error) {
	if keyFile == "" {
		return Key(strings.TrimSpace(os.Getenv(EnvAPIKey))), nil
	}
	f, err := os.Open(keyFile)
	if err != nil {
		return "", fmt.Errorf("llm: key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("llm: key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("llm: key file %s is not a regular file", keyFile)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("llm: key file %s is accessible by group or others (mode %04o); run chmod 600 %s", keyFile, perm, keyFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("llm: key file %s: read failed", keyFile)
	}
	if len(b) > MaxKeyFileBytes {
		return "", fmt.Errorf("llm: key file %s is larger than %d bytes", keyFile, MaxKeyFileBytes)
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("llm: key file %s is empty", keyFile)
	}
	if strings.ContainsAny(k, "\r\n") {
		return "", fmt.Errorf("llm: key file %s holds more than one line", keyFile)
	}
	return Key(k), nil
}
