package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
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
	// Images are the images the message shows after its text (a user
	// message only); the prompt hash covers them by their SHA-256.
	Images []Image `json:"-"`
}

// hashedMessage is a message as PromptHash encodes it: a message without
// images exactly as Message encodes, one with images with the SHA-256 of
// each in "images".
type hashedMessage struct {
	Role    Role     `json:"role"`
	Content string   `json:"content"`
	Images  []string `json:"images,omitempty"`
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
	// the messages sent, as [{"role","content"}...], a message with images
	// with "images" too: see PromptHash.
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
	// CostUSD is what the call cost in US dollars at the model's price
	// (Budget.Price); nil when the model has no price.
	CostUSD *float64 `json:"costUsd,omitempty"`
	// Images are the images the call showed the model, in the order sent
	// (bundle path and SHA-256); nil when none.
	Images []contract.ModelImage `json:"images,omitempty"`
	// Error is the call's error, when it failed; "" when it succeeded.
	Error string `json:"error,omitempty"`
}

// ModelCall returns the record of the call as the evidence bundle stores
// it (contract.ModelCall, schema kind "model-call"): for session
// sessionID, made for step step, ending at t (written in UTC with
// nanoseconds). What the endpoint reported is kept within the schema's
// bounds, so that a hostile or broken endpoint cannot make the record
// unwritable: token counts are clamped to 0..2^53-1, the cost to
// 0..contract.MaxModelCallCostUSD, the latency to
// 0..contract.MaxModelLatencyMs, the model id and the error cut to
// contract.MaxModelIDLen and contract.MaxModelCallError characters (marked
// with "…") with invalid UTF-8 replaced. A call that failed before it sent
// anything (an empty request: no attempt, no prompt hash) is recorded as
// one attempt over no messages (PromptHash(nil)), its error saying why. Mode
// "" (no schema asked for) becomes contract.ModelOutputNone. The purpose,
// session id and step are the caller's and copied as they are: the
// evidence writer refuses a record they make invalid.
func (r CallRecord) ModelCall(sessionID string, step int, t time.Time) contract.ModelCall {
	mc := contract.ModelCall{
		SessionID:        sessionID,
		Step:             step,
		Purpose:          contract.ModelPurpose(r.Purpose),
		Model:            cutRunes(r.Model, contract.MaxModelIDLen),
		PromptHash:       r.PromptHash,
		PromptTokens:     clampTokens(r.PromptTokens),
		CompletionTokens: clampTokens(r.CompletionTokens),
		TotalTokens:      clampTokens(r.TotalTokens),
		LatencyMs:        float64(min(max(r.LatencyMs, 0), contract.MaxModelLatencyMs)),
		Attempts:         max(r.Attempts, 1),
		Mode:             contract.ModelOutputMode(r.Mode),
		Images:           r.Images,
		Error:            cutRunes(r.Error, contract.MaxModelCallError),
		Time:             t.UTC().Format(time.RFC3339Nano),
	}
	if r.CostUSD != nil {
		c := min(max(*r.CostUSD, 0), contract.MaxModelCallCostUSD)
		if c != c { // NaN
			c = 0
		}
		mc.CostUSD = &c
	}
	if mc.PromptHash == "" {
		mc.PromptHash = PromptHash(nil)
	}
	if mc.Mode == "" {
		mc.Mode = contract.ModelOutputNone
	}
	return mc
}

// maxTokens is the largest token count a record holds: 2^53 - 1, which
// every JSON reader holds exactly (a variable, so that the conversion
// compiles where int has 32 bits).
var maxTokens int64 = 1<<53 - 1

func clampTokens(n int) int {
	switch {
	case n < 0:
		return 0
	case int64(n) > maxTokens:
		return int(maxTokens)
	}
	return n
}

// cutRunes makes s valid UTF-8 of at most n characters, marking a cut with
// "…".
func cutRunes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n-1 {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// PromptHash returns the SHA-256, in lowercase hex, of the RFC 8785
// canonical JSON of msgs as an array of {"role", "content"} objects, as
// canonjson.Marshal writes it (each byte of invalid UTF-8 as U+FFFD, as
// encoding/json reads it). A message that shows images is
// {"role", "content", "images"}, images being the SHA-256 (lowercase hex)
// of each image's bytes, in order: the hash covers an image by its hash,
// which the model-call record lists, never by its bytes, and a prompt
// without images hashes as it always did. A prompt canonjson refuses (one
// over schemas.MaxDocumentBytes once encoded) is hashed in a plain
// encoding instead, which is still deterministic.
func PromptHash(msgs []Message) string {
	var v any = msgs
	switch {
	case msgs == nil:
		v = []Message{}
	case countImages(msgs) > 0:
		hm := make([]hashedMessage, len(msgs))
		for i, m := range msgs {
			hm[i] = hashedMessage{Role: m.Role, Content: m.Content}
			for _, im := range m.Images {
				hm[i].Images = append(hm[i].Images, im.SHA256())
			}
		}
		v = hm
	}
	b, err := canonjson.Marshal(v)
	if err != nil {
		b = nil
		for _, m := range msgs {
			b = append(b, m.Role...)
			b = append(b, 0)
			b = append(b, m.Content...)
			b = append(b, 0)
			for _, im := range m.Images {
				b = append(b, im.SHA256()...)
				b = append(b, 0)
			}
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
	// CostUSD is what the call cost at the model's price (Budget.Price);
	// nil when it has none.
	CostUSD *float64
	// Images are the images the request showed the model (bundle path
	// and SHA-256), in the order sent; nil when none.
	Images []contract.ModelImage
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
		CostUSD:          r.CostUSD,
		Images:           r.Images,
	}
	if err != nil {
		rec.Error = text.Ellipsize(err.Error(), 500)
	}
	return rec
}
