package evidence

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestOnEventCarriesEventsJSONL: OnEvent sees every line of events.jsonl,
// in order, as written: the caller's events with secrets masked, and the
// writer's own error events (a masked secret, a quarantined image).
func TestOnEventCarriesEventsJSONL(t *testing.T) {
	const secret = "hunter2-hunter2-hunter2"
	var seen []contract.StreamEvent
	w, err := Create(t.TempDir(), testManifest(), Options{
		Clock: fixedClock(), Secrets: map[string]string{"PW": secret},
		OnEvent: func(ev contract.StreamEvent) { seen = append(seen, ev) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := "2026-11-21T12:00:00Z"
	if err := w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: w.SessionID(), Timestamp: ts}); err != nil {
		t.Fatal(err)
	}
	if err := w.Event(contract.StreamEvent{Type: contract.EventError, Code: "x", Message: "typed " + secret + " somewhere", Timestamp: ts}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Image("bad", []byte("not an image"), ImageMeta{}); err == nil {
		t.Fatal("a non-image was stored")
	}
	b, err := os.ReadFile(filepath.Join(w.Dir(), FileEvents))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if got, want := len(seen), len(lines); got != want || want != 4 {
		t.Fatalf("OnEvent saw %d events, events.jsonl has %d lines (want 4: started, error, masked note, quarantine)", got, want)
	}
	for i, ev := range seen {
		var fromFile contract.StreamEvent
		if err := json.Unmarshal([]byte(lines[i]), &fromFile); err != nil {
			t.Fatal(err)
		}
		if got, want := mustMarshal(t, ev), mustMarshal(t, fromFile); got != want {
			t.Errorf("event %d: OnEvent saw %s, events.jsonl has %s", i, got, want)
		}
		if strings.Contains(mustMarshal(t, ev), secret) {
			t.Errorf("event %d handed on the secret: %+v", i, ev)
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
