package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/aegis-run/aegis/canonjson"
)

// Purpose says what a model call was for.
type Purpose string

// The purposes of a model call.
const (
	PurposePlan     Purpose = "plan"     // the Planner
	PurposeNavigate Purpose = "navigate" // the Navigator
)

// Role is the author of a chat message.
type Role string

// The chat roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one chat message.
type Message struct {
	// Role is who wrote the message.
	Role Role `json:"role"`
	// Content is its text.
	Content string `json:"content"`
}

// Usage is the token usage the endpoint reported (zero when it reported
// none).
type Usage struct {
	// PromptTokens is the size of the prompt in tokens.
	PromptTokens int `json:"promptTokens"`
	// CompletionTokens is the size of the answer in tokens.
	CompletionTokens int `json:"completionTokens"`
	// TotalTokens is their sum, as the endpoint counts it.
	TotalTokens int `json:"totalTokens"`
}

// CallRecord is what the evidence records of one model call: a Complete,
// with all its HTTP attempts. It holds no prompt and no answer, only the
// prompt's hash.
type CallRecord struct {
	// Purpose says whether the Planner or the Navigator called.
	Purpose Purpose `json:"purpose"`
	// Model is the model id the endpoint answered with (the configured one
	// when it did not say).
	Model string `json:"model"`
	// PromptHash is the SHA-256 (hex) of the canonical JSON (RFC 8785) of
	// the messages sent, as [{"role","content"}...]: see PromptHash.
	PromptHash string `json:"promptHash"`
	// PromptTokens is the prompt's size in tokens, as the endpoint
	// reported it (0 when it did not).
	PromptTokens int `json:"promptTokens"`
	// CompletionTokens is the answer's size in tokens.
	CompletionTokens int `json:"completionTokens"`
	// TotalTokens is the call's total, as the endpoint counts it.
	TotalTokens int `json:"totalTokens"`
	// LatencyMs is the wall-clock time of the call, retries and backoff
	// included.
	LatencyMs int64 `json:"latencyMs"`
	// Attempts is the number of HTTP requests made (1 + retries).
	Attempts int `json:"attempts"`
	// Mode is the structured-output mode of the last attempt.
	Mode StructuredOutput `json:"mode,omitempty"`
	// Error is the call's error, when it failed; "" when it succeeded.
	Error string `json:"error,omitempty"`
}

// PromptHash returns the SHA-256, in lowercase hex, of the RFC 8785
// canonical JSON of msgs as an array of {"role", "content"} objects.
func PromptHash(msgs []Message) string {
	if msgs == nil {
		msgs = []Message{}
	}
	b, err := canonjson.Marshal(msgs)
	if err != nil {
		// Only invalid UTF-8 fails; hash the plain encoding instead, which
		// is still deterministic.
		b = nil
		for _, m := range msgs {
			b = append(b, m.Role...)
			b = append(b, 0)
			b = append(b, m.Content...)
			b = append(b, 0)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Response is the answer of one Complete.
type Response struct {
	// Purpose is the request's purpose.
	Purpose Purpose
	// Content is the text of the model's answer.
	Content string
	// FinishReason is the endpoint's finish_reason ("stop", "length"...).
	FinishReason string
	// Usage is the reported token usage.
	Usage Usage
	// Model is the model id the endpoint answered with.
	Model string
	// Latency is the wall-clock time of the call, retries included.
	Latency time.Duration
	// PromptHash is the hash of the messages sent (see PromptHash).
	PromptHash string
	// Attempts is the number of HTTP requests made.
	Attempts int
	// Mode is the structured-output mode of the last attempt.
	Mode StructuredOutput
}

// Record returns the call's evidence record; err is the call's error, if
// any.
func (r Response) Record(err error) CallRecord {
	rec := CallRecord{
		Purpose:          r.Purpose,
		Model:            r.Model,
		PromptHash:       r.PromptHash,
		PromptTokens:     r.Usage.PromptTokens,
		CompletionTokens: r.Usage.CompletionTokens,
		TotalTokens:      r.Usage.TotalTokens,
		LatencyMs:        r.Latency.Milliseconds(),
		Attempts:         r.Attempts,
		Mode:             r.Mode,
	}
	if err != nil {
		rec.Error = truncate(err.Error(), 500)
	}
	return rec
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
