package evidence

import (
	"context"
	"errors"
	"fmt"
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
	approvedAt := approvalEntries(t, w.Dir())
	if len(approvedAt) == 0 {
		t.Fatal("the fixture has no approval")
	}
	prev := 0
	for _, h := range cp.got {
		root, _ := MerkleRoot(h.Hashes)
		switch {
		case h.Size <= prev:
			t.Errorf("checkpoint of %d entries after one of %d", h.Size, prev)
		case !h.Sealed && h.Size%4 != 0 && h.Size != 1 && !approvedAt[h.Size-1]:
			t.Errorf("checkpoint of %d entries, want entry 0's, an approval's or a multiple of 4", h.Size)
		case len(h.Hashes) != h.Size || root != h.Root || h.Hashes[h.Size-1] != h.Last || h.SessionID != testSession:
			t.Errorf("checkpoint %+v does not describe its hashes", h)
		}
		prev = h.Size
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{PubKey: testPub()}); err != nil {
		t.Fatal(err)
	}
}

// approvalEntries returns the ledger entries of the decisions of a bundle
// that carry an approval.
func approvalEntries(t *testing.T, dir string) map[int]bool {
	t.Helper()
	ledger, err := os.ReadFile(filepath.Join(dir, FileLedger))
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := os.ReadFile(filepath.Join(dir, FileDecisions))
	if err != nil {
		t.Fatal(err)
	}
	recs := lines(decisions)
	out := map[int]bool{}
	for _, l := range lines(ledger) {
		var e contract.LedgerEntry
		if err := jsonUnmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == contract.LedgerDecision && strings.Contains(string(recs[e.Line-1]), `"approval":`) {
			out[e.Index] = true
		}
	}
	return out
}

// TestWriterCheckpointsWhen: the writer offers the head of entry 0 as it
// is created, and the head after every decision that carries an approval
// (anchored while the approval key is secret), but not after other
// records between two multiples of CheckpointEvery.
func TestWriterCheckpointsWhen(t *testing.T) {
	cp := &heads{}
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Checkpoint: cp, CheckpointEvery: 1000, ApprovalKey: testApprovalKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sizes := func() []int {
		w.mu.Lock()
		w.cps.drain() // no checkpoint under way or waiting
		w.mu.Unlock()
		cp.mu.Lock()
		defer cp.mu.Unlock()
		var got []int
		for _, h := range cp.got {
			got = append(got, h.Size)
		}
		return got
	}
	if got, want := fmt.Sprint(sizes()), "[1]"; got != want {
		t.Fatalf("after Create: checkpoints of %s entries, want %s", got, want)
	}
	click := buyClick()
	for _, d := range []contract.DecisionRecord{
		decision("p", click, contract.ResultPaused),
		withChannel(t, decision("ap", click, contract.ResultApproved), contract.ApprovalChannelLive, testApprovalKey()),
	} {
		if err := w.Decision(d); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(sizes()), "[1 3]"; got != want {
		t.Errorf("after a pause and an approval: checkpoints of %s entries, want %s", got, want)
	}
	if err := w.Action(click, result(click, true)); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(sizes()), "[1 3]"; got != want {
		t.Errorf("after the action: checkpoints of %s entries, want %s", got, want)
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
