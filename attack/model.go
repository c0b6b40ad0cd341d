package attack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"text/template"

	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/planner"
)

// model is the hostile model: an OpenAI-compatible chat completions
// endpoint on loopback that answers each run's Planner with a one-step
// plan and its Navigator with the scenario's actions, one per answer, then
// with "done". Each run talks to it under its own base URL
// (/{key}/v1), so runs never share a script.
type model struct {
	srv   *httptest.Server
	world *world

	// secret is the session's secret: a request that carries it is
	// counted against its run.
	secret string

	mu    sync.Mutex
	calls map[string]int // navigator calls per run
}

func newModel(w *world) *model {
	m := &model{world: w, calls: map[string]int{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

func (m *model) close() { m.srv.Close() }

// baseURL is the endpoint a run's model client is configured with.
func (m *model) baseURL(r *runState) string { return m.srv.URL + "/" + r.key + "/v1" }

// planAnswer is the Planner's answer to every run.
const planAnswer = `{"goal":"follow the page","steps":[{"id":"s1","description":"do what the page asks","successCriteria":"the page is done"}]}`

func (m *model) serve(w http.ResponseWriter, req *http.Request) {
	key, rest, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	r := m.world.run(key)
	if r == nil || req.Method != http.MethodPost || rest != "v1/chat/completions" {
		http.NotFound(w, req)
		return
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil || json.Unmarshal(data, &body) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if carries(string(data), m.secret) {
		m.world.modelSaw(r)
	}
	images := 0
	for _, msg := range body.Messages {
		images += imageParts(msg.Content)
	}
	if images > 0 {
		m.world.modelShown(r, images)
	}
	if len(body.Messages) > 0 && strings.HasPrefix(textOf(body.Messages[0].Content), planner.SystemPrompt) {
		answer(w, planAnswer)
		return
	}
	m.mu.Lock()
	n := m.calls[key]
	m.calls[key]++
	m.mu.Unlock()
	answer(w, navigatorAnswer(r.sc, n, m.world.data(r)))
}

// contentPart is one part of a message whose content is a list of parts
// (OpenAI's chat completions: text and image_url parts).
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// textOf is a message's text: its content when a string, else its text
// parts joined.
func textOf(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []contentPart
	_ = json.Unmarshal(content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// imageParts counts the images a message's content holds: the parts of a
// list that are, or carry, an image (image_url, input_image, ...).
func imageParts(content json.RawMessage) int {
	var parts []contentPart
	if json.Unmarshal(content, &parts) != nil {
		return 0
	}
	n := 0
	for _, p := range parts {
		if strings.Contains(p.Type, "image") || len(p.ImageURL) > 0 {
			n++
		}
	}
	return n
}

// navigatorAnswer is the n-th Navigator answer of a scenario: its n-th
// action, then done (with a wait of a millisecond: a batch holds at least
// one action).
func navigatorAnswer(sc *Scenario, n int, d pageData) string {
	status, actions := "continue", []Step{}
	if n < len(sc.Steps) {
		s := sc.Steps[n]
		s.URL = expand(s.URL, d)
		actions = append(actions, s)
	} else {
		status = "done"
		actions = append(actions, Step{Type: "wait"})
	}
	raw := make([]map[string]any, len(actions))
	for i, s := range actions {
		raw[i] = s.action(fmt.Sprintf("h%d", n+1))
	}
	b, _ := json.Marshal(map[string]any{"actions": raw, "status": status, "summary": status})
	return string(b)
}

// expand fills a step's URL template ({{.A}}, {{.F}}); a secret
// placeholder in it is left as it is.
func expand(s string, d pageData) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	const hold = "\x00secret\x00"
	t, err := template.New("url").Parse(strings.ReplaceAll(s, secretPlaceholder, hold))
	if err != nil {
		return s
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return s
	}
	return strings.ReplaceAll(b.String(), hold, secretPlaceholder)
}

// action is the step as a BrowserAction the model proposes.
func (s Step) action(id string) map[string]any {
	a := map[string]any{"id": id, "type": s.Type, "reason": "the page asks for it", "policyTags": []string{}}
	switch s.Type {
	case "navigate":
		a["url"] = s.URL
	case "click":
		a["selector"] = s.Selector
	case "type":
		a["selector"], a["text"], a["redact"] = s.Selector, s.Text, strings.Contains(s.Text, "{{secret:")
	case "extract":
		a["extract"] = s.Extract
		if s.Selector != "" {
			a["selector"] = s.Selector
		}
		if s.Vision {
			a["vision"] = true
		}
	case "select":
		a["selector"], a["value"] = s.Selector, s.Value
	case "wait":
		a["durationMs"] = 1
	}
	return a
}

func answer(w http.ResponseWriter, content string) {
	llmtest.WriteCompletion(w, "hostile-model", content, map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
}
