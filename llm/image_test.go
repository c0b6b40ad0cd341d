package llm_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
)

// tinyPNG is a 2×2 PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	img.Set(1, 1, color.NRGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestPromptHashImages pins the prompt hash of a message with images: it
// is {"role","content","images":[SHA-256 hex...]} in the canonical JSON,
// the other messages of the prompt hashing as without images.
func TestPromptHashImages(t *testing.T) {
	im := llm.NewImage("artifacts/a1-image.png", contract.MIMEPNG, []byte("not really a png"))
	if got, want := im.SHA256(), sha256hex("not really a png"); got != want {
		t.Fatalf("image hash %s, want %s", got, want)
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "Rules."},
		{Role: llm.RoleUser, Content: "look", Images: []llm.Image{im}},
	}
	doc := `[{"content":"Rules.","role":"system"},{"content":"look","images":["` + im.SHA256() + `"],"role":"user"}]`
	got := llm.PromptHash(msgs)
	if want := sha256hex(doc); got != want {
		t.Errorf("PromptHash = %s, want the hash of %s, %s", got, doc, want)
	}
	// Another image, or none, is another prompt.
	other := []llm.Message{msgs[0], {Role: llm.RoleUser, Content: "look", Images: []llm.Image{llm.NewImage("artifacts/a1-image.png", contract.MIMEPNG, []byte("another"))}}}
	none := []llm.Message{msgs[0], {Role: llm.RoleUser, Content: "look"}}
	if llm.PromptHash(other) == got || llm.PromptHash(none) == got {
		t.Error("the prompt hash does not cover the image")
	}
	// An Image made without NewImage hashes the same.
	lit := llm.Image{URI: im.URI, MIMEType: im.MIMEType, Data: im.Data}
	if llm.PromptHash([]llm.Message{msgs[0], {Role: llm.RoleUser, Content: "look", Images: []llm.Image{lit}}}) != got {
		t.Error("an Image literal hashes differently")
	}
}

// TestCompleteSendsImages: a message with an image is sent as a text part
// and an image_url part with a data: URL of the bytes; the response and
// its record list the image by its bundle path and SHA-256, and the prompt
// hash covers it.
func TestCompleteSendsImages(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(validPlan))
	c, _ := newClient(t, srv)
	data := tinyPNG(t)
	im := llm.NewImage("artifacts/a2-image.png", contract.MIMEPNG, data)
	req := planRequest(t)
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: "The page:", Images: []llm.Image{im}})
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	parts := r.Images()
	if len(parts) != 1 {
		t.Fatalf("%d image parts sent, want 1", len(parts))
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Content != "The page:" || len(last.Images) != 1 || len(r.Messages[1].Images) != 0 {
		t.Errorf("messages sent: %+v", r.Messages)
	}
	mime, got, err := parts[0].Decode()
	if err != nil || mime != contract.MIMEPNG || !bytes.Equal(got, data) {
		t.Errorf("image part: %s, %d bytes, %v; want the %d bytes of the PNG", mime, len(got), err, len(data))
	}
	want := []contract.ModelImage{{URI: "artifacts/a2-image.png", SHA256: sha256hex(string(data))}}
	if !reflect.DeepEqual(resp.Images, want) {
		t.Errorf("response images %+v, want %+v", resp.Images, want)
	}
	mc := resp.Record(nil).ModelCall("s1", 1, time.Unix(0, 0))
	if !reflect.DeepEqual(mc.Images, want) {
		t.Errorf("model-call images %+v, want %+v", mc.Images, want)
	}
	sent := make([]llm.Message, len(r.Messages))
	for i, m := range r.Messages {
		sent[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Content}
	}
	sent[len(sent)-1].Images = []llm.Image{llm.NewImage("", mime, got)}
	if resp.PromptHash != llm.PromptHash(sent) {
		t.Errorf("prompt hash %s is not the hash of the messages sent", resp.PromptHash)
	}
	if !strings.Contains(string(r.Raw), `"image_url":{"url":"data:image/png;base64,`) {
		t.Errorf("body holds no data: URL image part: %.300s", r.Raw)
	}
}

// TestCompleteImagesBounded: a request with more images than a model-call
// record lists is refused before it is sent.
func TestCompleteImagesBounded(t *testing.T) {
	srv := llmtest.NewServer(t)
	c, _ := newClient(t, srv)
	im := llm.NewImage("artifacts/x.png", contract.MIMEPNG, tinyPNG(t))
	ims := make([]llm.Image, contract.MaxModelCallImages+1)
	for i := range ims {
		ims[i] = im
	}
	_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x", Images: ims}}})
	if err == nil || len(srv.Requests()) != 0 {
		t.Fatalf("err %v after %d requests, want a refusal before sending", err, len(srv.Requests()))
	}
}

// TestBudgetCountsImages: the prediction counts an image as
// llm.ImageTokens, so that a call an image would push past the budget is
// refused before it is sent, while the same call without it goes.
func TestBudgetCountsImages(t *testing.T) {
	srv := llmtest.NewServer(t, usageAnswer(map[string]int{"prompt_tokens": 15, "completion_tokens": 5, "total_tokens": 20}))
	b := newBudget(t, llm.ImageTokens)
	c, _ := newClient(t, srv, func(cfg *llm.Config) { cfg.Budget = b })
	text := llm.Message{Role: llm.RoleUser, Content: strings.Repeat("x", 60)}
	withImage := text
	withImage.Images = []llm.Image{llm.NewImage("artifacts/x.png", contract.MIMEPNG, tinyPNG(t))}
	resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{withImage}})
	var be *llm.BudgetError
	if !errors.As(err, &be) || be.Predicted <= llm.ImageTokens || len(srv.Requests()) != 0 {
		t.Fatalf("err %v after %d requests, want a predicted budget error before sending", err, len(srv.Requests()))
	}
	if resp.Images != nil {
		t.Errorf("a call refused before it was sent records images %+v", resp.Images)
	}
	if _, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{text}}); err != nil {
		t.Fatalf("without the image: %v", err)
	}
}
