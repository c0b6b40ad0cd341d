package evidence

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/internal/text"
)

// Checkpoints: while a session runs, the writer hands the head of its
// ledger to a Checkpointer (a witness, package witness) right after entry
// 0 (the session claims its log at the witness, and anchors the
// commitment to its approval key while the key is secret), after every
// decision that carries an approval (anchored while only the session can
// MAC one), every Options.CheckpointEvery entries, and once more when the
// bundle is sealed, so that a copy of the ledger's head lives outside the
// bundle (FORMAT.md, section 14).

// DefaultCheckpointEvery is the number of entries between two checkpoints
// when Options.CheckpointEvery is 0.
const DefaultCheckpointEvery = 64

// DefaultCheckpointTimeout bounds one checkpoint when
// Options.CheckpointTimeout is 0.
const DefaultCheckpointTimeout = 5 * time.Second

// CodeWitnessFailed is the code of the error event the writer records,
// before the seal, when checkpoints of the session were not accepted.
const CodeWitnessFailed = "evidence.witness_failed"

// Head is the state of a ledger that a checkpoint commits to.
type Head struct {
	// SessionID is the bundle's session.
	SessionID string
	// Size is the number of ledger entries.
	Size int
	// Root is the RFC 6962 Merkle tree hash over their entry hashes.
	Root Hash
	// Last is the entryHash of the last of them (the head hash).
	Last Hash
	// Sealed says the last entry is the manifest-end entry.
	Sealed bool
	// Hashes are the Size entry hashes, in order, for consistency proofs.
	// They are shared with the writer: read them, never change them.
	Hashes []Hash
}

// Checkpointer takes checkpoints of a ledger (to a witness). Checkpoint is
// called from one goroutine at a time, with heads of growing size, and
// must return within ctx's deadline. An error says the checkpoint was not
// taken: the writer records the failures of a running session in the
// bundle (an error event CodeWitnessFailed before the seal); that of the
// seal's checkpoint is the Checkpointer's to report.
type Checkpointer interface {
	Checkpoint(ctx context.Context, h Head) error
}

// checkpoints hands the writer's heads to its Checkpointer from a
// goroutine of its own, so that a slow witness never holds the session up:
// while one checkpoint is under way, a newer head replaces the one
// waiting, and only the latest is sent.
type checkpoints struct {
	cp      Checkpointer
	every   int
	timeout time.Duration
	tree    rootBuilder

	offered int // the size of the last head offered; the writer's lock guards it

	mu      sync.Mutex
	idle    *sync.Cond
	waiting *Head
	busy    bool
	failed  []string // "at N entries: why", of the heads not taken
}

func newCheckpoints(opts Options) *checkpoints {
	if opts.Checkpoint == nil {
		return nil
	}
	c := &checkpoints{cp: opts.Checkpoint, every: opts.CheckpointEvery, timeout: opts.CheckpointTimeout}
	if c.every <= 0 {
		c.every = DefaultCheckpointEvery
	}
	if c.timeout <= 0 {
		c.timeout = DefaultCheckpointTimeout
	}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// committed is called with the writer's lock held after each entry is
// committed; hashes are the writer's entry hashes, the new one last. It
// offers the head of entry 0 and of every c.every entries.
func (c *checkpoints) committed(sid string, hashes []Hash) {
	n := len(hashes)
	c.tree.add(LeafHash(hashes[n-1]))
	if n == 1 || n%c.every == 0 {
		c.now(sid, hashes)
	}
}

// now offers the head of the ledger as it is, unless it was offered
// already: called with the writer's lock held, after the entry of a
// decision that carries an approval, too.
func (c *checkpoints) now(sid string, hashes []Hash) {
	if len(hashes) == c.offered {
		return
	}
	c.offered = len(hashes)
	c.offer(c.head(sid, hashes, false))
}

// head returns the head of the ledger whose entry hashes are hashes.
func (c *checkpoints) head(sid string, hashes []Hash, sealed bool) Head {
	n := len(hashes)
	return Head{SessionID: sid, Size: n, Root: c.tree.root(), Last: hashes[n-1], Sealed: sealed, Hashes: hashes[:n:n]}
}

// offer queues h to be sent, replacing a head still waiting.
func (c *checkpoints) offer(h Head) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting = &h
	if !c.busy {
		c.busy = true
		go c.send()
	}
}

// send sends the waiting heads until none is left.
func (c *checkpoints) send() {
	c.mu.Lock()
	for c.waiting != nil {
		h := *c.waiting
		c.waiting = nil
		c.mu.Unlock()
		err := c.one(context.Background(), h)
		c.mu.Lock()
		if err != nil {
			c.failed = append(c.failed, fmt.Sprintf("at %d entries: %v", h.Size, err))
		}
	}
	c.busy = false
	c.idle.Broadcast()
	c.mu.Unlock()
}

// one sends one head, within the timeout.
func (c *checkpoints) one(ctx context.Context, h Head) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.cp.Checkpoint(ctx, h)
}

// drain waits until no checkpoint is under way or waiting, and returns the
// failures so far (and forgets them).
func (c *checkpoints) drain() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.busy {
		c.idle.Wait()
	}
	f := c.failed
	c.failed = nil
	return f
}

// recordFailures waits for the checkpoints under way and records those not
// taken as one error event, before the seal. Called with the lock held.
func (w *Writer) recordFailures() error {
	failed := w.cps.drain()
	if len(failed) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d checkpoint(s) not taken by the witness: %s", len(failed), strings.Join(failed, "; "))
	return w.errorEvent(CodeWitnessFailed, text.CutBytes(strings.ToValidUTF8(msg, "?"), 4000))
}

// sealCheckpoint sends the sealed ledger's head and waits for the answer
// (within the timeout). Called with the lock held, once the bundle is
// sealed.
func (w *Writer) sealCheckpoint(ctx context.Context) error {
	w.cps.drain()
	return w.cps.one(ctx, w.cps.head(w.sid, w.hashes, true))
}
