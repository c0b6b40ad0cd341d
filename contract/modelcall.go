package contract

// ModelPurpose says who made a model call.
type ModelPurpose string

// The purposes of a model call.
const (
	ModelPurposePlan     ModelPurpose = "plan"     // the Planner
	ModelPurposeNavigate ModelPurpose = "navigate" // the Navigator
)

// ModelOutputMode is the structured-output mode of a model call's last
// request.
type ModelOutputMode string

// The structured-output modes a model call records.
const (
	// ModelOutputJSONSchema: response_format json_schema (strict).
	ModelOutputJSONSchema ModelOutputMode = "json_schema"
	// ModelOutputJSONObject: response_format json_object, the schema in
	// the system prompt.
	ModelOutputJSONObject ModelOutputMode = "json_object"
	// ModelOutputNone: no schema was asked for.
	ModelOutputNone ModelOutputMode = "none"
)

// MaxModelCallError bounds ModelCall.Error, in characters.
const MaxModelCallError = 2048

// MaxModelIDLen bounds ModelCall.Model, in characters.
const MaxModelIDLen = 256

// MaxModelLatencyMs bounds ModelCall.LatencyMs (a day).
const MaxModelLatencyMs = 86400000

// ModelCall is the record of one model call of a session (schema kind
// "model-call", model-call.schema.json): a line of model-calls.jsonl in the
// evidence bundle. It holds the prompt's hash, never the prompt or the
// answer. llm.CallRecord.ModelCall builds one.
type ModelCall struct {
	// SessionID is the session the call belongs to.
	SessionID string `json:"sessionId"`
	// Step is the step the call was made for: 0 for the plan made before
	// the first step, then the step the Navigator was asked about.
	Step int `json:"step"`
	// Purpose says whether the Planner or the Navigator called.
	Purpose ModelPurpose `json:"purpose"`
	// Model is the model id the endpoint answered with (the configured one
	// when it named none), 1 to MaxModelIDLen characters.
	Model string `json:"model"`
	// PromptHash is the SHA-256 (64 lowercase hex digits) of the canonical
	// JSON of the messages sent (llm.PromptHash).
	PromptHash string `json:"promptHash"`
	// PromptTokens is the prompt's size in tokens, as the endpoint
	// reported it (0 when it did not).
	PromptTokens int `json:"promptTokens"`
	// CompletionTokens is the answer's size in tokens (0 when not
	// reported).
	CompletionTokens int `json:"completionTokens"`
	// TotalTokens is the call's total, as the endpoint counts it (0 when
	// not reported).
	TotalTokens int `json:"totalTokens"`
	// LatencyMs is the wall-clock time of the call in milliseconds,
	// retries and backoff included (0 to MaxModelLatencyMs).
	LatencyMs float64 `json:"latencyMs"`
	// Attempts is the number of HTTP requests the call made (at least 1).
	Attempts int `json:"attempts"`
	// Mode is the structured-output mode of the last request.
	Mode ModelOutputMode `json:"mode"`
	// CostUSD is what the call cost in US dollars, from the usage the
	// endpoint reported at the model's registered prices (0 to
	// MaxModelCallCostUSD); nil (absent) when the model had no price.
	CostUSD *float64 `json:"costUsd,omitempty"`
	// Images are the images the call showed the model (a vision
	// escalation), in the order sent; nil when it showed none.
	Images []ModelImage `json:"images,omitempty"`
	// Error says why the call failed, 1 to MaxModelCallError characters;
	// "" (absent) when it succeeded.
	Error string `json:"error,omitempty"`
	// Time is when the call ended, an RFC 3339 date-time.
	Time string `json:"time"`
}

// MaxModelCallCostUSD bounds ModelCall.CostUSD: a call's cost in US
// dollars (the schema's maximum).
const MaxModelCallCostUSD = 1_000_000_000

// MaxModelCallImages bounds ModelCall.Images.
const MaxModelCallImages = 4

// ModelImage is one image a model call showed the model: where it is in
// the bundle and the SHA-256 of the bytes sent, which equals its
// ImageArtifact record's contentHash.
type ModelImage struct {
	// URI is the image's path in the bundle (ImageArtifact.URI).
	URI string `json:"uri"`
	// SHA256 is the SHA-256 (64 lowercase hex digits) of the bytes sent.
	SHA256 string `json:"sha256"`
}
