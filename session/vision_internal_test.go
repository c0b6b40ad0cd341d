package session

import (
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
)

// eventRecorder is a Recorder that keeps the events; embedding the
// interface leaves every other method unimplemented (unused here).
type eventRecorder struct {
	Recorder
	events []contract.StreamEvent
}

func (e *eventRecorder) Event(ev contract.StreamEvent) error {
	e.events = append(e.events, ev)
	return nil
}

// TestQueueImageMismatch: a screenshot whose bytes are not the ones its
// record commits to is not queued for the model, and an error event
// (vision.image_mismatch) says so; the right bytes are queued silently.
func TestQueueImageMismatch(t *testing.T) {
	rec := &eventRecorder{}
	r := &run{cfg: &Config{Clock: time.Now}, w: rec, vision: true}
	data := []byte("\x89PNG\r\n\x1a\n not really")
	good := llm.NewImage("artifacts/shot.png", "image/png", data).SHA256()
	if err := r.queueImage("artifacts/shot.png", "image/png", strings.Repeat("0", 64), data); err != nil {
		t.Fatal(err)
	}
	if r.image != nil || len(rec.events) != 1 || rec.events[0].Type != contract.EventError || rec.events[0].Code != "vision.image_mismatch" || !strings.Contains(rec.events[0].Message, "was not shown to the model") {
		t.Fatalf("mismatch: image %v, events %+v", r.image, rec.events)
	}
	if err := r.queueImage("artifacts/shot.png", "image/png", good, data); err != nil {
		t.Fatal(err)
	}
	if r.image == nil || len(rec.events) != 1 {
		t.Errorf("match: image %v, %d events", r.image, len(rec.events))
	}
}
