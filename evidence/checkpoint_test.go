package evidence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// heads is a Checkpointer that keeps what it is given, and fails or
// waits when told to.
type heads struct {
	mu      sync.Mutex
	got     []Head
	fail    func(Head) error
	release chan struct{} // when set, intermediate checkpoints wait for it
}

func (c *heads) Checkpoint(ctx context.Context, h Head) error {
	if c.release != nil && !h.Sealed {
		select {
		case <-c.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, h)
	if c.fail != nil {
		return c.fail(h)
	}
	return nil
}

func sealTest(t *testing.T, w *Writer) *contract.Manifest {
	t.Helper()
	m, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 10, 0, time.UTC), NewEd25519Signer(testKey()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWriterCheckpoints: the writer hands its head to the Checkpointer
// every CheckpointEvery entries and at the seal; each head's root is the
// Merkle root of its hashes, and the last is the seal's.
func TestWriterCheckpoints(t *testing.T) {
	cp := &heads{}
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Checkpoint: cp, CheckpointEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{steps: 3})
	m := sealTest(t, w)
	if len(cp.got) < 2 {
		t.Fatalf("%d checkpoints, want at least 2", len(cp.got))
	}
	last := cp.got[len(cp.got)-1]
	if !last.Sealed || last.Size != m.Seal.Entries || last.Root.String() != m.Seal.MerkleRoot || last.Last.String() != m.Seal.HeadHash {
		t.Errorf("the seal's checkpoint %+v, want the seal %+v", last, m.Seal)
	}
	prev := 0
	for _, h := range cp.got {
		root, _ := MerkleRoot(h.Hashes)
		switch {
		case h.Size <= prev:
			t.Errorf("checkpoint of %d entries after one of %d", h.Size, prev)
		case !h.Sealed && h.Size%4 != 0:
			t.Errorf("checkpoint of %d entries, want a multiple of 4", h.Size)
		case len(h.Hashes) != h.Size || root != h.Root || h.Hashes[h.Size-1] != h.Last || h.SessionID != testSession:
			t.Errorf("checkpoint %+v does not describe its hashes", h)
		}
		prev = h.Size
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{PubKey: testPub()}); err != nil {
		t.Fatal(err)
	}
}

// TestWriterCheckpointsDoNotWait: a witness that does not answer holds no
// record up: the session is written while every checkpoint waits.
func TestWriterCheckpointsDoNotWait(t *testing.T) {
	cp := &heads{release: make(chan struct{})}
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Checkpoint: cp, CheckpointEvery: 2, CheckpointTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{steps: 2}) // would hang here if a record waited for the witness
	close(cp.release)
	m := sealTest(t, w)
	if last := cp.got[len(cp.got)-1]; last.Size != m.Seal.Entries {
		t.Errorf("last checkpoint of %d entries, want %d", last.Size, m.Seal.Entries)
	}
}

// TestWriterCheckpointFailures: checkpoints the witness did not take are
// recorded as an error event before the seal; the bundle verifies.
func TestWriterCheckpointFailures(t *testing.T) {
	cp := &heads{fail: func(h Head) error { return errors.New("witness down") }}
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Checkpoint: cp, CheckpointEvery: 8})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{})
	m := sealTest(t, w)
	events, err := os.ReadFile(filepath.Join(w.Dir(), FileEvents))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(events)), "\n")
	mustContain(t, lines[len(lines)-1], CodeWitnessFailed, "not taken by the witness", "witness down")
	if last := cp.got[len(cp.got)-1]; !last.Sealed || last.Size != m.Seal.Entries {
		t.Errorf("the seal's checkpoint was not attempted after the failures: %+v", last)
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{PubKey: testPub()}); err != nil {
		t.Fatal(err)
	}
}

// TestWriterCloseWaitsForCheckpoints: Close leaves no checkpoint running.
func TestWriterCloseWaitsForCheckpoints(t *testing.T) {
	cp := &heads{release: make(chan struct{})}
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Checkpoint: cp, CheckpointEvery: 1, CheckpointTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	close(cp.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.got) != 1 || cp.got[0].Size != 1 {
		t.Errorf("checkpoints %+v, want the genesis entry's", cp.got)
	}
}
