package witness

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// testSigner returns the Ed25519 signer of a fixed seed.
func testSigner(seed byte) *evidence.Ed25519Signer {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return evidence.NewEd25519Signer(ed25519.NewKeyFromSeed(s))
}

// clock starts at 2026-01-23T10:15:00Z and advances a second per call.
func clock() func() time.Time {
	t := time.Date(2026, 1, 23, 10, 15, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// session describes a test bundle: events error events with messages
// "event 0", "event 1", ... (but changed, a different message for that
// event), signed by signer, checkpointed to cp every `every` entries.
type session struct {
	id      string
	events  int
	changed int // -1: none
	signer  evidence.Signer
	cp      evidence.Checkpointer
	every   int
}

// write writes, seals and verifies the bundle in root; it returns the
// verify report.
func (s session) write(t *testing.T, root string) *evidence.Report {
	t.Helper()
	w, err := evidence.Create(root, contract.Manifest{
		SessionID: s.id,
		Task:      contract.Input{Goal: "Read the price", URLs: []string{"https://example.com/"}},
		Driver:    contract.ModePlaywright,
		StartedAt: "2026-01-23T10:15:00Z",
		Versions:  contract.Versions{Aegis: "v0.1.0", Policy: fmt.Sprintf("%064x", 1)},
	}, evidence.Options{Clock: clock(), Checkpoint: s.cp, CheckpointEvery: s.every})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < s.events; i++ {
		msg := fmt.Sprintf("event %d", i)
		if i == s.changed {
			msg = "rewritten"
		}
		if err := w.Event(contract.StreamEvent{Type: contract.EventError, Code: "test.event", Message: msg, Timestamp: "2026-01-23T10:15:00Z"}); err != nil {
			t.Fatal(err)
		}
	}
	var signer evidence.Signer
	if s.signer != nil {
		signer = s.signer
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 15, 0, 0, time.UTC), signer); err != nil {
		t.Fatal(err)
	}
	rep, err := evidence.Verify(context.Background(), w.Dir(), evidence.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
