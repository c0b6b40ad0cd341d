package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// fakeBundle writes what a live server reads of a bundle being written
// (the ledger's kind and line, decisions.jsonl, the screenshots) in the
// writer's order: a record, then its ledger entry; an event reaches the
// bus after both.
type fakeBundle struct {
	t   testing.TB
	dir string
	fs  *fakeSession

	mu        sync.Mutex
	index     int
	decisions int
	events    int
}

func newFakeBundle(t testing.TB, fs *fakeSession) *fakeBundle {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "provenance"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &fakeBundle{t: t, dir: dir, fs: fs}
}

func (b *fakeBundle) appendLine(file string, line []byte) {
	f, err := os.OpenFile(filepath.Join(b.dir, filepath.FromSlash(file)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		b.t.Fatal(err)
	}
}

func (b *fakeBundle) ledger(kind contract.LedgerKind, file string, line int) {
	e, _ := json.Marshal(map[string]any{"index": b.index, "kind": kind, "file": file, "line": line})
	b.index++
	b.appendLine(evidence.FileLedger, e)
}

// decision records a decision on action id at step, with deny rules.
func (b *fakeBundle) decision(id string, typ contract.ActionType, step int, result contract.DecisionResult, risk contract.RiskTag, rules ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	reasons := []map[string]string{}
	for _, r := range rules {
		reasons = append(reasons, map[string]string{"rule": r, "message": "because " + r})
	}
	rec, _ := json.Marshal(map[string]any{
		"actionId": id, "stepIndex": step, "action": map[string]any{"id": id, "type": typ},
		"result": result, "risk": risk, "reasons": reasons, "allow": result == contract.ResultAllowed || result == contract.ResultApproved,
	})
	b.appendLine(evidence.FileDecisions, rec)
	b.decisions++
	b.ledger(contract.LedgerDecision, evidence.FileDecisions, b.decisions)
}

// event records an event and publishes it.
func (b *fakeBundle) event(ev contract.StreamEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Timestamp == "" {
		ev.Timestamp = stamp(b.events)
	}
	line, err := canonjson.Marshal(ev)
	if err != nil {
		b.t.Fatal(err)
	}
	b.appendLine(evidence.FileEvents, line)
	b.events++
	b.ledger(contract.LedgerEvent, evidence.FileEvents, b.events)
	if err := b.fs.bus.Publish(ev); err != nil {
		b.t.Fatal(err)
	}
}

// screenshot stores a PNG of w×h pixels as artifacts/NAME.png and records
// its event.
func (b *fakeBundle) screenshot(name string, w, h int) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(40 + x%200), uint8(90 + y%120), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.t.Fatal(err)
	}
	uri := fmt.Sprintf("artifacts/%s.png", name)
	if err := os.WriteFile(filepath.Join(b.dir, filepath.FromSlash(uri)), buf.Bytes(), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.event(contract.StreamEvent{Type: contract.EventScreenshot, URL: &uri, Width: &w, Height: &h})
}

func strPtr(s string) *string { return &s }
