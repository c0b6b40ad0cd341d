// Package llm is the small model client the Planner and the Navigator
// share. It speaks the OpenAI chat completions API through go-openai, so it
// works with OpenAI, Azure OpenAI, Ollama, vLLM, llama.cpp server and LM
// Studio alike.
//
// What it adds to go-openai:
//
//   - structured output: response_format json_schema (strict) with the
//     schema rewritten for strict mode, or json_object with the schema in
//     the system prompt; in auto mode a 400 that rejects json_schema makes
//     the client fall back to json_object once, for the rest of its life;
//   - bounded retries with exponential backoff and jitter on timeouts,
//     network errors, 408, 409, 429 (honouring Retry-After, capped) and
//     5xx; never on other 4xx;
//   - typed errors (*APIError, *GuardError, *InvalidAnswerError) that never
//     contain the API key, even when the endpoint echoes it;
//   - a Guard run over every request body before it is sent (see package
//     secrets), and a cap on response bodies;
//   - one CallRecord per call for the evidence: model, prompt hash, token
//     usage, latency, attempts, the images shown;
//   - images in a message (a vision escalation) sent as OpenAI-compatible
//     image_url content parts (image.go);
//   - Ask: validate an answer and retry with the problems fed back,
//     bounded;
//   - a Budget of tokens and money shared by a session's clients: each
//     response's usage is charged to it (and costed at the model's
//     price), and a request it predicts would pass it is never sent
//     (*BudgetError).
//
// The model is assumed hostile: nothing here trusts its answers; callers
// validate them (Ask makes that the only way to get one).
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	openai "github.com/sashabaranov/go-openai"
)

// Request is one chat completion request.
type Request struct {
	// Purpose says who calls; it is copied into the CallRecord.
	Purpose Purpose
	// System is the system prompt. The client appends to it what the
	// structured-output mode needs (in json_object mode, the schema).
	System string
	// Messages follow the system prompt.
	Messages []Message
	// Schema, when set, asks for one JSON object valid under it.
	Schema *Schema
}

// Completer is what the Planner and the Navigator need of a model client;
// *Client implements it.
type Completer interface {
	// Complete sends one request, retrying as configured. The Response is
	// filled as far as the call got (prompt hash, attempts, latency) even
	// when it fails, so that failed calls can be recorded.
	Complete(ctx context.Context, req Request) (Response, error)
}

var _ Completer = (*Client)(nil)

// Client is a model client. It is safe for concurrent use.
type Client struct {
	cfg      Config
	api      *openai.Client
	fellBack atomic.Bool

	// sleep waits d on the clock or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter returns a random number in [0, 1); tests replace it.
	jitter func() float64
}

// New returns a client for cfg. It makes no request.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var oc openai.ClientConfig
	if cfg.Azure {
		oc = openai.DefaultAzureConfig(string(cfg.APIKey), cfg.BaseURL)
		oc.APIVersion = cfg.APIVersion
		oc.AzureModelMapperFunc = func(model string) string { return model }
	} else {
		oc = openai.DefaultConfig(string(cfg.APIKey))
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	oc.HTTPClient = &doer{c: &noRedirect, guard: cfg.Guard, max: cfg.MaxResponseBytes}
	c := &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), jitter: rand.Float64}
	c.sleep = c.wait
	return c, nil
}

// Model returns the configured model id.
func (c *Client) Model() string { return c.cfg.Model }

// Mode returns the structured-output mode the next request with a schema
// will use: json_schema or json_object (auto resolves to one of them).
func (c *Client) Mode() StructuredOutput {
	switch {
	case c.cfg.StructuredOutput == StructuredJSONObject:
		return StructuredJSONObject
	case c.cfg.StructuredOutput == StructuredAuto && c.fellBack.Load():
		return StructuredJSONObject
	}
	return StructuredJSONSchema
}

// Complete sends req and returns the model's answer. It retries timeouts,
// network errors, 408, 409, 429 and 5xx at most Config.MaxRetries times
// with backoff, and, in auto mode, falls back from json_schema to
// json_object once when the endpoint rejects json_schema. Errors are an
// *APIError, a *GuardError, a *BudgetError (Config.Budget refused the
// call before it was sent), or the context's error (wrapped). The
// Response is filled as far as the call got, even on error.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	resp := Response{Purpose: req.Purpose, Model: c.cfg.Model}
	defer func() { resp.Latency = time.Since(start) }()
	if req.System == "" && len(req.Messages) == 0 {
		return resp, errors.New("llm: empty request")
	}
	shown := imagesOf(req.Messages)
	images := len(shown)
	if images > contract.MaxModelCallImages {
		// A model-call record lists at most that many: refused before
		// anything is sent, rather than sent and not recorded.
		return resp, fmt.Errorf("llm: %d images in one request: at most %d", images, contract.MaxModelCallImages)
	}
	retries := 0
	var last *APIError
	for attempt := 1; ; attempt++ {
		mode := StructuredOutput("")
		if req.Schema != nil {
			mode = c.Mode()
		}
		msgs := c.messages(req, mode)
		resp.PromptHash = PromptHash(msgs)
		resp.Mode = mode
		resp.Attempts = attempt
		size := promptBytes(msgs)
		held, err := c.cfg.Budget.reserve(c.cfg.Model, c.cfg.MaxTokens, size, images)
		if err != nil {
			// Refused before sending: nothing of it was sent or used.
			resp.Attempts = attempt - 1
			return resp, err
		}
		out, info, err := c.once(ctx, msgs, req.Schema, mode, held.bound)
		var ge *GuardError
		if attempt > 1 || !errors.As(err, &ge) {
			// The images go with every attempt the guard let out; a call
			// that sent none shows none.
			resp.Images = shown
		}
		if err != nil {
			if billable(err, info) {
				// The provider may have billed it: charge what it held.
				c.cfg.Budget.charge(held, Usage{}, 0)
			} else {
				c.cfg.Budget.release(held)
			}
		} else {
			resp.Model = out.Model
			if resp.Model == "" {
				resp.Model = c.cfg.Model
			}
			resp.Usage = Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens, TotalTokens: out.Usage.TotalTokens}
			if len(out.Choices) > 0 {
				resp.Content = out.Choices[0].Message.Content
				resp.FinishReason = string(out.Choices[0].FinishReason)
			}
			if cost, priced := c.cfg.Budget.charge(held, resp.Usage, len(resp.Content)); priced {
				resp.CostUSD = &cost
			}
			resp.Latency = time.Since(start)
			return resp, nil
		}
		if errors.As(err, &ge) {
			return resp, ge
		}
		if ctx.Err() != nil {
			return resp, c.ctxErr(ctx, last, attempt)
		}
		ae := c.classify(err, info, attempt)
		last = ae
		if c.cfg.StructuredOutput == StructuredAuto && mode == StructuredJSONSchema && rejectsSchema(ae) {
			c.fellBack.Store(true)
			continue
		}
		if !ae.Retryable() || retries >= c.cfg.MaxRetries {
			return resp, ae
		}
		retries++
		wait := c.backoff(retries, ae.RetryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return resp, ae
		}
		if err := c.sleep(ctx, wait); err != nil {
			return resp, c.ctxErr(ctx, last, attempt)
		}
	}
}

func (c *Client) ctxErr(ctx context.Context, last *APIError, attempts int) error {
	if last != nil {
		return fmt.Errorf("llm: chat completion abandoned after %d attempts (last: %s): %w", attempts, last.Error(), context.Cause(ctx))
	}
	return fmt.Errorf("llm: chat completion abandoned: %w", context.Cause(ctx))
}

// billable reports whether a failed attempt may have been billed by the
// provider: its request was sent (the guard let it through) and the
// endpoint did not refuse it with a 4xx or 5xx status: it answered 2xx
// (a body too large, not a chat completion, reset midway) or gave no
// status (a timeout, a network error after sending). Such an attempt is
// charged what it held (the prompt's estimate and the bound sent), so
// that failed attempts cannot spend past the budget unseen. A connection
// that was never made (a dial error: the endpoint is down or refused it)
// reached no provider and is not charged, so that retries against a
// server that is down say so rather than spend the budget.
func billable(err error, info *attemptInfo) bool {
	var ge *GuardError
	if !info.sent || errors.As(err, &ge) {
		return false
	}
	var oe *net.OpError
	if info.status == 0 && errors.As(err, &oe) && oe.Op == "dial" {
		return false
	}
	return info.status < 400
}

// rejectsSchema reports whether the endpoint refused response_format
// json_schema (rather than the request as such).
func rejectsSchema(e *APIError) bool {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity && e.Status != http.StatusNotImplemented {
		return false
	}
	s := strings.ToLower(e.Message + " " + e.Code + " " + e.Type)
	if p := paramOf(e.Err); p != "" {
		s += " " + strings.ToLower(p)
	}
	return strings.Contains(s, "response_format") || strings.Contains(s, "json_schema") || strings.Contains(s, "response format")
}

func paramOf(err error) string {
	var oe *openai.APIError
	if errors.As(err, &oe) && oe.Param != nil {
		return *oe.Param
	}
	return ""
}

// System prompt additions per structured-output mode.
const (
	jsonObjectInstruction = "\n\nAnswer with exactly one JSON object and nothing else (no prose, no code fence). It must be valid under this JSON Schema:\n"
	jsonSchemaInstruction = "\n\nAnswer with exactly one JSON object that follows the response schema %q, and nothing else."
)

// messages builds the messages sent for req in mode.
func (c *Client) messages(req Request, mode StructuredOutput) []Message {
	sys := req.System
	switch mode {
	case StructuredJSONObject:
		sys += jsonObjectInstruction + string(req.Schema.Doc)
	case StructuredJSONSchema:
		sys += fmt.Sprintf(jsonSchemaInstruction, req.Schema.Name)
	}
	msgs := make([]Message, 0, len(req.Messages)+1)
	if sys != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: sys})
	}
	return append(msgs, req.Messages...)
}

// attemptInfo is what the transport learned about one attempt's answer.
type attemptInfo struct {
	sent       bool // the transport was reached
	status     int
	retryAfter time.Duration
}

type infoKey struct{}

// once sends one attempt; maxCompletion is the completion bound sent
// (max_completion_tokens), 0 for none.
func (c *Client) once(ctx context.Context, msgs []Message, schema *Schema, mode StructuredOutput, maxCompletion int) (openai.ChatCompletionResponse, *attemptInfo, error) {
	actx, release := c.attemptContext(ctx)
	defer release()
	info := &attemptInfo{}
	actx = context.WithValue(actx, infoKey{}, info)
	creq := openai.ChatCompletionRequest{
		Model:               c.cfg.Model,
		Messages:            make([]openai.ChatCompletionMessage, len(msgs)),
		MaxCompletionTokens: maxCompletion,
		Seed:                c.cfg.Seed,
	}
	if c.cfg.Temperature != nil {
		creq.Temperature = *c.cfg.Temperature
	}
	for i, m := range msgs {
		creq.Messages[i] = chatMessage(m)
	}
	switch mode {
	case StructuredJSONSchema:
		creq.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   schema.Name,
				Schema: schema.Strict,
				Strict: true,
			},
		}
	case StructuredJSONObject:
		creq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	out, err := c.api.CreateChatCompletion(actx, creq)
	if err != nil && ctx.Err() == nil && timedOut(actx) {
		err = &timeoutError{after: c.cfg.Timeout, err: err}
	}
	return out, info, err
}

// chatMessage is m as go-openai sends it: a message with images as
// content parts, its text first, then an image_url part (a data: URL) per
// image.
func chatMessage(m Message) openai.ChatCompletionMessage {
	if len(m.Images) == 0 {
		return openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
	}
	parts := make([]openai.ChatMessagePart, 0, len(m.Images)+1)
	parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
	for _, im := range m.Images {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: im.DataURL()}})
	}
	return openai.ChatCompletionMessage{Role: string(m.Role), MultiContent: parts}
}

type timeoutError struct {
	after time.Duration
	err   error
}

// Error says how long the attempt waited.
func (e *timeoutError) Error() string { return fmt.Sprintf("no answer within %v", e.after) }

// Unwrap returns go-openai's error.
func (e *timeoutError) Unwrap() error { return e.err }

// errResponseTooLarge is the read error of a response body over
// Config.MaxResponseBytes.
var errResponseTooLarge = errors.New("llm: response body too large")

// classify turns the error of one attempt into an *APIError, with the API
// key scrubbed from everything the endpoint said.
func (c *Client) classify(err error, info *attemptInfo, attempts int) *APIError {
	ae := &APIError{Attempts: attempts, RetryAfter: info.retryAfter}
	var te *timeoutError
	var oe *openai.APIError
	var re *openai.RequestError
	switch {
	case !info.sent && !errors.As(err, &te):
		// go-openai refused the request before sending it (such as
		// parameters a reasoning model does not take): trying again
		// cannot help.
		ae.Code = "invalid_request"
		ae.Message = text.Ellipsize(c.scrubErr(err), 300)
		ae.Err = scrubbedError{msg: c.scrubErr(err)}
	case errors.As(err, &te):
		ae.Code = CodeTimeout
		ae.Message = te.Error()
		ae.Err = ErrTimeout
	case errors.Is(err, errResponseTooLarge):
		ae.Status = info.status
		ae.Code = "response_too_large"
		ae.Message = fmt.Sprintf("response body larger than %d bytes", c.cfg.MaxResponseBytes)
		ae.Err = errResponseTooLarge
	case errors.As(err, &oe):
		cp := *oe
		cp.Message = c.scrub(cp.Message)
		if cp.Param != nil {
			p := c.scrub(*cp.Param)
			cp.Param = &p
		}
		ae.Status = cp.HTTPStatusCode
		ae.Code = c.scrub(codeString(cp.Code))
		ae.Type = c.scrub(cp.Type)
		ae.Message = text.Ellipsize(cp.Message, 1000)
		ae.Err = &cp
	case errors.As(err, &re):
		cp := *re
		cp.Body = []byte(c.scrub(string(cp.Body)))
		cp.Err = scrubbedError{msg: c.scrubErr(cp.Err)}
		ae.Status = cp.HTTPStatusCode
		ae.Message = text.Ellipsize(strings.TrimSpace(string(cp.Body)), 1000)
		ae.Err = &cp
	default:
		var se *json.SyntaxError
		var ue *json.UnmarshalTypeError
		if info.status != 0 && (errors.As(err, &se) || errors.As(err, &ue)) {
			ae.Status = info.status
			ae.Code = "bad_response"
			ae.Message = "the endpoint's answer is not a chat completion: " + text.Ellipsize(c.scrubErr(err), 300)
		} else {
			ae.Code = CodeNetwork
			ae.Message = text.Ellipsize(c.scrubErr(err), 300)
		}
		ae.Err = scrubbedError{msg: c.scrubErr(err), cause: ErrNetwork}
		if ae.Code == "bad_response" {
			ae.Err = scrubbedError{msg: c.scrubErr(err)}
		}
	}
	if ae.Status == 0 && info.status >= 400 {
		ae.Status = info.status
	}
	return ae
}

func codeString(code any) string {
	switch t := code.(type) {
	case nil:
		return ""
	case string:
		return t
	case int:
		return strconv.Itoa(t)
	}
	return fmt.Sprint(code)
}

// scrubbedError carries the message of an error whose original might hold
// the API key; it unwraps to cause (which holds no text of the endpoint).
type scrubbedError struct {
	msg   string
	cause error
}

// Error returns the scrubbed message.
func (e scrubbedError) Error() string { return e.msg }

// Unwrap returns the sentinel cause, if any.
func (e scrubbedError) Unwrap() error { return e.cause }

func (c *Client) scrubErr(err error) string {
	if err == nil {
		return ""
	}
	return c.scrub(err.Error())
}

// scrub replaces the API key in s by "[redacted]".
func (c *Client) scrub(s string) string {
	if k := string(c.cfg.APIKey); k != "" && strings.Contains(s, k) {
		s = strings.ReplaceAll(s, k, redacted)
	}
	return s
}

// backoff returns the wait before retry n (1-based): the server's
// Retry-After when it sent one, else exponential backoff with equal
// jitter, Backoff·2^(n-1) halved plus a random half; capped at
// MaxBackoff.
func (c *Client) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, c.cfg.MaxBackoff)
	}
	d := c.cfg.Backoff
	for i := 1; i < n && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + time.Duration(c.jitter()*float64(d/2))
}

// parseRetryAfter reads Retry-After-Ms (OpenAI) or Retry-After (seconds or
// an HTTP date); 0 when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || s > 1e6 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// doer is the HTTP transport go-openai uses: it runs the guard over the
// body before anything is sent, records the answer's status and
// Retry-After for the retry logic, and caps the answer's size.
type doer struct {
	c     *http.Client
	guard func([]byte) error
	max   int64
}

// Do guards, sends and caps one request (openai.HTTPDoer).
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if info, ok := req.Context().Value(infoKey{}).(*attemptInfo); ok {
		info.sent = true
	}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		if d.guard != nil {
			if err := d.guard(body); err != nil {
				return nil, &GuardError{Err: err}
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	} else if d.guard != nil {
		if err := d.guard(nil); err != nil {
			return nil, &GuardError{Err: err}
		}
	}
	resp, err := d.c.Do(req)
	if err != nil {
		return nil, err
	}
	if info, ok := req.Context().Value(infoKey{}).(*attemptInfo); ok {
		info.status = resp.StatusCode
		info.retryAfter = parseRetryAfter(resp.Header, time.Now())
	}
	resp.Body = &limitedBody{rc: resp.Body, left: d.max}
	return resp, nil
}

// limitedBody fails, rather than truncates, a body over its limit.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

// Read reads, failing past the limit.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	return n, err
}

// Close closes the body.
func (b *limitedBody) Close() error { return b.rc.Close() }
