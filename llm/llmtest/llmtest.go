// Package llmtest is a fake OpenAI-compatible chat completions endpoint
// for tests: it records every request and answers from a script of
// replies (a valid answer, an error status with headers, a timeout the
// test's Clock fires once the server has the request...). NewDialect
// starts one that also speaks a local server's dialect (Ollama, the
// llama.cpp server, vLLM: their model listings, usage and error bodies);
// every one takes messages of content parts, image_url among them.
package llmtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one chat message of a recorded request.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role string `json:"role"`
	// Content is the message's text: its content string, or the text of
	// its text parts (joined) when its content is an array of parts.
	Content string `json:"content"`
	// Images are its image_url parts, in order; nil when its content is a
	// string.
	Images []ImagePart `json:"-"`
}

// ImagePart is one image_url content part of a recorded message.
type ImagePart struct {
	// URL is the part's image_url.url: a data: URL as aegis sends it.
	URL string
	// Detail is its image_url.detail, "" when absent.
	Detail string
}

// Decode returns the MIME type and the bytes of a base64 data: URL, or an
// error for any other URL.
func (p ImagePart) Decode() (mime string, data []byte, err error) {
	rest, ok := strings.CutPrefix(p.URL, "data:")
	if !ok {
		return "", nil, fmt.Errorf("llmtest: image URL is not a data: URL: %.40q", p.URL)
	}
	mime, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return "", nil, fmt.Errorf("llmtest: image data URL is not base64: %.40q", p.URL)
	}
	data, err = base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, fmt.Errorf("llmtest: image data URL: %w", err)
	}
	return mime, data, nil
}

// UnmarshalJSON reads a message whose content is a string or an array of
// content parts (text and image_url), as the OpenAI API allows.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role}
	if len(raw.Content) == 0 || raw.Content[0] != '[' {
		if len(raw.Content) == 0 || string(raw.Content) == "null" {
			return nil
		}
		return json.Unmarshal(raw.Content, &m.Content)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw.Content, &parts); err != nil {
		return err
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			if p.ImageURL == nil {
				return fmt.Errorf("llmtest: image_url part without image_url")
			}
			m.Images = append(m.Images, ImagePart{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
		default:
			return fmt.Errorf("llmtest: unknown content part type %q", p.Type)
		}
	}
	m.Content = strings.Join(texts, "\n")
	return nil
}

// ResponseFormat is the response_format of a recorded request.
type ResponseFormat struct {
	// Type is "json_schema", "json_object" or "text".
	Type string `json:"type"`
	// JSONSchema is the schema of a json_schema request.
	JSONSchema *struct {
		Name   string          `json:"name"`
		Strict bool            `json:"strict"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// Request is one recorded request.
type Request struct {
	// Raw is the body as received.
	Raw []byte `json:"-"`
	// Header is the request's header.
	Header http.Header `json:"-"`
	// Context is the request's context, done when the client goes away.
	Context context.Context `json:"-"`
	// Model is the body's model.
	Model string `json:"model"`
	// Messages are the body's messages.
	Messages []Message `json:"messages"`
	// ResponseFormat is the body's response_format; nil when absent.
	ResponseFormat *ResponseFormat `json:"response_format"`
}

// Last returns the content of the request's last message.
func (r Request) Last() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// Images returns the image parts of every message of the request, in
// order.
func (r Request) Images() []ImagePart {
	var out []ImagePart
	for _, m := range r.Messages {
		out = append(out, m.Images...)
	}
	return out
}

// Reply answers one request.
type Reply func(w http.ResponseWriter, r *Request)

// Server is a fake chat completions endpoint. Its URL is the base URL to
// configure (it ends in /v1).
type Server struct {
	// URL is the base URL, such as http://127.0.0.1:1234/v1.
	URL string

	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []Request
	arrived chan struct{} // closed and replaced on each request
	replies []Reply
	// Default answers requests once the script is used up; nil fails the
	// test.
	fallback Reply
	// listings answer GET requests by path (NewDialect); set before the
	// server starts and never changed.
	listings map[string]http.HandlerFunc
}

// NewServer starts a server that answers with replies, in order; it is
// closed when the test ends.
func NewServer(t testing.TB, replies ...Reply) *Server {
	s := &Server{t: t, replies: replies, arrived: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Always makes r answer every request once the script is used up.
func (s *Server) Always(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = r
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Await waits until the server has received n requests. Call it from the
// test's goroutine.
func (s *Server) Await(t testing.TB, n int) {
	t.Helper()
	deadline := time.NewTimer(guard)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, arrived := len(s.reqs), s.arrived
		s.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("llmtest: %d requests received, waited for %d", got, n)
		}
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if s.listings != nil && r.Method == http.MethodGet {
		// A dialect server (dialect.go) answers its listings, and what
		// it does not serve with 404, as the real one.
		if h := s.listings[r.URL.Path]; h != nil {
			h(w, r)
		} else {
			http.NotFound(w, r)
		}
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("llmtest: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The client went away while it sent the request (a session
		// aborted or cancelled mid-call): there is no one to answer, and
		// nothing wrong with the test.
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		s.t.Errorf("llmtest: request body is not JSON: %v", err)
	}
	req.Raw = body
	req.Header = r.Header.Clone()
	req.Context = r.Context()
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	var reply Reply
	if len(s.replies) > 0 {
		reply, s.replies = s.replies[0], s.replies[1:]
	} else {
		reply = s.fallback
	}
	s.mu.Unlock()
	if reply == nil {
		s.t.Errorf("llmtest: request %d has no scripted reply", len(s.Requests()))
		http.Error(w, `{"error":{"message":"no scripted reply"}}`, http.StatusTeapot)
		return
	}
	reply(w, &req)
}

// Usage is the token usage Answer reports.
var Usage = map[string]int{"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}

// Answer replies 200 with a chat completion whose content is content,
// model "fake-model-1" and Usage.
func Answer(content string) Reply {
	return func(w http.ResponseWriter, r *Request) { WriteCompletion(w, "fake-model-1", content, Usage) }
}

// WriteCompletion writes a 200 chat completion of model whose one choice's
// content is content, with usage: what an OpenAI-compatible endpoint
// answers.
func WriteCompletion(w http.ResponseWriter, model, content string, usage map[string]int) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":      "chatcmpl-" + model,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content},
			"finish_reason": "stop",
		}},
		"usage": usage,
	})
}

// AnswerJSON is Answer with v encoded as JSON.
func AnswerJSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return Answer(string(b))
}

// Status replies with the HTTP status code, an OpenAI error body with
// message, and headers given as "Name: value" strings.
func Status(code int, message string, headers ...string) Reply {
	return func(w http.ResponseWriter, r *Request) {
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ":")
			w.Header().Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": message, "type": "test_error", "code": fmt.Sprintf("http_%d", code),
		}})
	}
}

// Raw replies with the status code and body as given.
func Raw(code int, body string) Reply {
	return func(w http.ResponseWriter, r *Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// Delay waits d (or until the client goes away), then replies with then.
func Delay(d time.Duration, then Reply) Reply {
	return func(w http.ResponseWriter, r *Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			then(w, r)
		case <-r.Context.Done():
		}
	}
}
