package evidence

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The end of a session: sealing (and signing) the bundle, or closing it
// unsealed.

// Seal ends the session: it records the manifest as the session ended
// (status, endTime, counts, the signer's key id, and the approval key,
// revealed: Options.ApprovalKey) as the last ledger entry, provenance/manifest-end.json; fsyncs the bundle; signs the sealed
// manifest with signer when it is not nil (provenance/seal.dsse.json); and
// replaces manifest.json by the sealed manifest, which it returns. With
// Options.Checkpoint, it first records the checkpoints not taken (an error
// event, before the manifest-end entry) and at last sends the sealed head,
// waiting for the witness's answer; the bundle is sealed whatever that
// answer (see Checkpointer). status must be a final status. The writer is
// closed afterwards, whatever the outcome.
func (w *Writer) Seal(ctx context.Context, status contract.SessionStatus, endTime time.Time, signer Signer) (*contract.Manifest, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return nil, err
	}
	defer w.closeFiles()
	if status == contract.SessionRunning || status == "" {
		w.done = true
		return nil, fmt.Errorf("evidence: seal: status %q is not a final status", status)
	}
	if w.owed != nil {
		w.done = true
		return nil, fmt.Errorf("evidence: seal: %w", w.owed.owed("the seal"))
	}
	if w.cps != nil {
		if err := w.recordFailures(); err != nil {
			w.done = true
			return nil, fmt.Errorf("evidence: seal: %w", err)
		}
	}
	end := w.start
	end.Status = status
	if endTime.Before(w.floor) {
		// The session did not end before what it recorded.
		endTime = w.floor
	}
	end.EndedAt = formatTime(endTime)
	end.Counts = w.counts
	if signer != nil {
		end.Signer = signer.KeyID()
	}
	if w.opts.ApprovalKey != nil {
		// Revealed now, so that every approval's MAC can be checked.
		end.ApprovalKey = hex.EncodeToString(w.opts.ApprovalKey)
	}
	canon, _, _, err := w.prepare(string(schemas.KindManifest), end)
	if err != nil {
		w.done = true
		return nil, fmt.Errorf("evidence: seal: %w", err)
	}
	if err := ctx.Err(); err != nil {
		w.done = true
		return nil, fmt.Errorf("evidence: seal: %w", err)
	}
	if err := w.appendFile(contract.LedgerManifestEnd, FileManifestEnd, canon, true); err != nil {
		w.done = true
		return nil, fmt.Errorf("evidence: seal: %w", err)
	}
	w.done = true
	root, err := MerkleRoot(w.hashes)
	if err != nil {
		return nil, w.fail(err)
	}
	sealed := end
	sealed.Seal = &contract.Seal{Entries: len(w.hashes), HeadHash: w.prev.String(), MerkleRoot: root.String(), SealedAt: w.lastAt}
	final, _, _, err := w.prepare(string(schemas.KindManifest), sealed)
	if err != nil {
		return nil, w.fail(fmt.Errorf("seal: %w", err))
	}
	if err := w.syncAll(); err != nil {
		return nil, w.fail(fmt.Errorf("seal: %w", err))
	}
	if signer != nil {
		env, err := signEnvelope(ctx, signer, final)
		if err != nil {
			return nil, w.fail(fmt.Errorf("seal: sign: %w", err))
		}
		if err := w.mask.check(FileSeal, env); err != nil {
			return nil, w.fail(fmt.Errorf("seal: %w", err))
		}
		if err := w.writeAtomic(FileSeal, env); err != nil {
			return nil, w.fail(fmt.Errorf("seal: %s: %w", FileSeal, err))
		}
	}
	if err := w.step("seal manifest"); err != nil {
		return nil, w.fail(err)
	}
	if err := w.writeAtomic(FileManifest, append(final, '\n')); err != nil {
		return nil, w.fail(fmt.Errorf("seal: %s: %w", FileManifest, err))
	}
	if w.cps != nil {
		// The bundle is sealed whatever the witness answers; the
		// Checkpointer reports its own failure (see Checkpointer).
		_ = w.sealCheckpoint(ctx)
	}
	return &sealed, nil
}

// syncAll fsyncs every file and directory the writer wrote.
func (w *Writer) syncAll() error {
	for _, f := range w.jsonl {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := w.ledger.Sync(); err != nil {
		return err
	}
	if w.opts.Sync != SyncEveryRecord {
		for file := range w.synced {
			if _, open := w.jsonl[file]; open || file == FileLedger {
				continue
			}
			f, err := os.Open(filepath.Join(w.dir, filepath.FromSlash(file)))
			if err != nil {
				return err
			}
			err = f.Sync()
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	for d := range w.dirs {
		if err := syncDir(filepath.Join(w.dir, filepath.FromSlash(d))); err != nil {
			return err
		}
	}
	return syncDir(w.dir)
}

// Close closes the writer without sealing: the bundle stays unsealed, its
// entries intact. Closing a sealed or closed writer does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	if w.cps != nil {
		w.cps.drain()
	}
	return w.closeFiles()
}

func (w *Writer) closeFiles() error {
	var errs []error
	for _, f := range w.jsonl {
		errs = append(errs, f.Close())
	}
	w.jsonl = map[string]*os.File{}
	if w.ledger != nil {
		errs = append(errs, w.ledger.Close())
		w.ledger = nil
	}
	return errors.Join(errs...)
}
