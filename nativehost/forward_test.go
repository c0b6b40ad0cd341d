package nativehost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/session"
)

// TestForwardWaitsForThumbnails: forward's channel closes only once every
// event and every screenshot's thumbnail is sent, so that session.ended,
// sent after it, comes after them all (the extension takes nothing of a
// session after its end), however long the decoding takes.
func TestForwardWaitsForThumbnails(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 1280, 800))); err != nil {
		t.Fatal(err)
	}
	p := pair(t, nil)
	got := make(chan string, 64)
	p.a.Subscribe(func(name string, data json.RawMessage) {
		var ev struct {
			Type string `json:"type"`
			URI  string `json:"uri"`
		}
		_ = json.Unmarshal(data, &ev)
		got <- name + " " + ev.Type + ev.URI
	})
	bus := session.NewBus(0)
	sub := bus.Subscribe(context.Background(), session.SubscribeOptions{FromStart: true, Buffer: 256})
	done := forward(sub, p.b, dir, t.Logf)
	const shots = 5
	for i := range shots {
		uri := fmt.Sprintf("artifacts/shot-%d.png", i)
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(uri)), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		w, h := 1280, 800
		if err := bus.Publish(contract.StreamEvent{Type: contract.EventScreenshot, URL: &uri, Width: &w, Height: &h}); err != nil {
			t.Fatal(err)
		}
	}
	bus.Close()
	<-done
	// Frames arrive in the order they were sent: what came before this
	// one was sent before done closed.
	if err := p.b.Notify("test.after", struct{}{}); err != nil {
		t.Fatal(err)
	}
	events, thumbs := 0, map[string]bool{}
	for m := range got {
		if m == "test.after " {
			break
		}
		switch {
		case m == EventSession+" screenshot":
			events++
		case len(m) > len(EventThumbnail) && m[:len(EventThumbnail)] == EventThumbnail:
			thumbs[m[len(EventThumbnail)+1:]] = true
		default:
			t.Errorf("unexpected %q", m)
		}
	}
	if events != shots || len(thumbs) != shots {
		t.Errorf("%d events and %d thumbnails before the end, want %d of each", events, len(thumbs), shots)
	}
}
