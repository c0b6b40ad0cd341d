package witness

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/aegis-run/aegis/evidence"
)

// Anchor takes a writer's checkpoints to a witness: it is the
// evidence.Checkpointer of a session that has one (Options.Checkpoint).
// It signs each checkpoint, proves it consistent with the last one the
// witness accepted, and keeps count of what was taken and what was not.
type Anchor struct {
	w      Witness
	signer evidence.Signer
	// OnFailure, when set, is called (from the writer's checkpoint
	// goroutine, or within Seal) with each checkpoint not taken.
	OnFailure func(error)

	mu     sync.Mutex
	report AnchorReport // report.Size: the last checkpoint the witness took
}

// AnchorReport is what an Anchor did.
type AnchorReport struct {
	// Witness names the witness.
	Witness string `json:"witness"`
	// KeyID is the key that signed the checkpoints.
	KeyID string `json:"keyId"`
	// Origin is their origin.
	Origin string `json:"origin,omitempty"`
	// Taken and Failed count the checkpoints the witness took and those
	// it did not (refused or unreachable).
	Taken  int `json:"taken"`
	Failed int `json:"failed"`
	// Size is the size of the last checkpoint taken.
	Size uint64 `json:"size"`
	// Sealed says the checkpoint of the sealed bundle was taken.
	Sealed bool `json:"sealed"`
	// Err is the last failure ("" when none).
	Err string `json:"error,omitempty"`
}

// NewAnchor returns the Anchor that takes checkpoints to w, signed by
// signer; a nil signer means a fresh Ed25519 key of the session's own (the
// witness then holds the session to it: only that key may extend the log).
func NewAnchor(w Witness, signer evidence.Signer) (*Anchor, error) {
	if signer == nil {
		_, key, err := evidence.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("witness: a key for the checkpoints: %w", err)
		}
		signer = evidence.NewEd25519Signer(key)
	}
	return &Anchor{w: w, signer: signer, report: AnchorReport{Witness: w.String(), KeyID: signer.KeyID()}}, nil
}

// Checkpoint signs the checkpoint of h and has the witness take it,
// proving it consistent with the last checkpoint the witness took (asking
// the witness once which one that is when it disagrees).
func (a *Anchor) Checkpoint(ctx context.Context, h evidence.Head) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.checkpoint(ctx, h)
	a.report.Origin = Origin(h.SessionID)
	if err != nil {
		a.report.Failed++
		a.report.Err = err.Error()
		if a.OnFailure != nil {
			a.OnFailure(err)
		}
		return err
	}
	a.report.Taken++
	a.report.Sealed = h.Sealed
	return nil
}

func (a *Anchor) checkpoint(ctx context.Context, h evidence.Head) error {
	s, err := Sign(ctx, CheckpointOf(h), a.signer)
	if err != nil {
		return err
	}
	err = a.add(ctx, a.report.Size, h, s.Note)
	var conflict *ConflictError
	if errors.As(err, &conflict) && conflict.Size != a.report.Size {
		// The witness holds another size (this process restarted, or an
		// answer was lost): prove from that one, once.
		err = a.add(ctx, conflict.Size, h, s.Note)
	}
	if err != nil {
		return fmt.Errorf("witness %s: checkpoint of %d entries: %w", a.w, h.Size, err)
	}
	a.report.Size = uint64(h.Size)
	return nil
}

func (a *Anchor) add(ctx context.Context, old uint64, h evidence.Head, note []byte) error {
	var proof []evidence.Hash
	if old > 0 && old < uint64(h.Size) {
		var err error
		if proof, err = evidence.ConsistencyProof(h.Hashes, int(old)); err != nil {
			return err
		}
	}
	if old > uint64(h.Size) {
		return fmt.Errorf("%w: the witness holds %d entries, more than the %d of this ledger", ErrInconsistent, old, h.Size)
	}
	return a.w.Add(ctx, old, proof, note)
}

// Report returns what the Anchor did so far.
func (a *Anchor) Report() AnchorReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.report
}
