package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Part is one content part of a message sent as an array, as OpenAI's
// chat completions API (and Ollama's, llama.cpp's and vLLM's /v1
// endpoints) take it: a "text" part, or an "image_url" part whose URL is
// usually a data: URL of the image.
type Part struct {
	// Type is "text" or "image_url".
	Type string `json:"type"`
	// Text is a text part's text.
	Text string `json:"text,omitempty"`
	// ImageURL is an image_url part's image.
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image of an image_url part.
type ImageURL struct {
	// URL is the image's URL: data:image/png;base64,... for an image sent
	// inline.
	URL string `json:"url"`
	// Detail is the detail asked for ("low", "high", "auto"); "" when
	// absent.
	Detail string `json:"detail,omitempty"`
}

// UnmarshalJSON reads a message whose content is a string or an array of
// parts (Content then holds the text parts joined by newlines).
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
		return nil
	case c[0] == '[':
		if err := json.Unmarshal(c, &m.Parts); err != nil {
			return fmt.Errorf("llmtest: message content parts: %w", err)
		}
		var texts []string
		for _, p := range m.Parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		m.Content = strings.Join(texts, "\n")
		return nil
	}
	return json.Unmarshal(c, &m.Content)
}

// Images returns the URLs of the message's image_url parts, in order.
func (m Message) Images() []string {
	var out []string
	for _, p := range m.Parts {
		if p.Type == "image_url" && p.ImageURL != nil {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}
