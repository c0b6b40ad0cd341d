package evidence

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// How a Writer writes: a record to a new file or as the next line of a
// JSON Lines file, then the ledger entry that commits to it.

// taken reports whether a file of that name (or one that collides with it
// on a case-insensitive file system) was recorded.
func (w *Writer) taken(file string) bool {
	_, ok := w.used[foldPath(file)]
	return ok
}

// mkdir creates a directory of the bundle once.
func (w *Writer) mkdir(d string) error {
	if d == "." || w.dirs[d] {
		return nil
	}
	if err := w.mkdir(filepath.ToSlash(filepath.Dir(d))); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(w.dir, filepath.FromSlash(d)), 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	w.dirs[d] = true
	return nil
}

// appendFile writes a record to a new file (with a final line feed when
// it is JSON) and commits it. A failed write removes the file; if that
// works the writer stays usable, else the error is sticky.
func (w *Writer) appendFile(kind contract.LedgerKind, file string, content []byte, isJSON bool) error {
	if w.taken(file) {
		return fmt.Errorf("evidence: %s already recorded", file)
	}
	entry, err := w.entryFor(kind, file, 0, content)
	if err != nil {
		return fmt.Errorf("evidence: %s: %w", file, err)
	}
	if err := w.step("mkdir " + file); err != nil {
		return err
	}
	dir := filepath.ToSlash(filepath.Dir(file))
	newDir := dir != "." && !w.dirs[dir]
	if err := w.mkdir(dir); err != nil {
		return fmt.Errorf("evidence: %s: %w", file, err)
	}
	path := filepath.Join(w.dir, filepath.FromSlash(file))
	err = func() error {
		if err := w.step("create " + file); err != nil {
			w.removeNewDir(dir, newDir)
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			w.removeNewDir(dir, newDir)
			return err
		}
		data := content
		if isJSON {
			data = make([]byte, 0, len(content)+1)
			data = append(append(data, content...), '\n')
		}
		_, werr := f.Write(data)
		if werr == nil {
			werr = w.step("write " + file)
		}
		if werr == nil && w.opts.Sync == SyncEveryRecord {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			if rerr := os.Remove(path); rerr != nil {
				return w.fail(errors.Join(werr, rerr))
			}
			w.removeNewDir(dir, newDir)
		}
		return werr
	}()
	if err != nil {
		return fmt.Errorf("evidence: %s: %w", file, err)
	}
	if w.opts.Sync == SyncEveryRecord {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return w.fail(fmt.Errorf("%s: %w", file, err))
		}
	}
	w.synced[file] = true
	return w.commit(entry)
}

// removeNewDir removes the directory dir if this record created it
// (created) and nothing is in it: a bundle holds no empty directory.
func (w *Writer) removeNewDir(dir string, created bool) {
	if created && os.Remove(filepath.Join(w.dir, filepath.FromSlash(dir))) == nil {
		delete(w.dirs, dir)
	}
}

// appendLine writes a record as the next line of a JSON Lines file and
// commits it. Any failure is sticky: the file may hold part of the line.
func (w *Writer) appendLine(kind contract.LedgerKind, file string, content []byte) error {
	entry, err := w.entryFor(kind, file, w.lines[file]+1, content)
	if err != nil {
		return fmt.Errorf("evidence: %s: %w", file, err)
	}
	f := w.jsonl[file]
	if f == nil {
		var err error
		f, err = os.OpenFile(filepath.Join(w.dir, file), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return w.fail(fmt.Errorf("%s: %w", file, err))
		}
		w.jsonl[file] = f
		w.used[foldPath(file)] = file
		w.synced[file] = true
	}
	data := make([]byte, 0, len(content)+1)
	data = append(append(data, content...), '\n')
	if _, err := f.Write(data); err != nil {
		return w.fail(fmt.Errorf("%s: %w", file, err))
	}
	if err := w.step("write " + file); err != nil {
		return w.fail(err)
	}
	if w.opts.Sync == SyncEveryRecord {
		if err := f.Sync(); err != nil {
			return w.fail(fmt.Errorf("%s: %w", file, err))
		}
	}
	w.lines[file]++
	return w.commit(entry)
}

// pendingEntry is the ledger entry of a record, computed before the
// record is written, so that its line is checked (no secret value in it)
// before anything is written.
type pendingEntry struct {
	file string
	line []byte // the canonical entry, without its line feed
	hash Hash
	time string
}

// entryFor computes the next ledger entry, for a record of the kind at
// file (and line, for a JSON Lines file) whose bytes are content. It
// returns an error wrapping ErrSecret when the entry would hold a secret
// value (which only a coincidence of a hash's hex digits or a time's
// digits with a short secret can bring about).
func (w *Writer) entryFor(kind contract.LedgerKind, file string, line int, content []byte) (pendingEntry, error) {
	digest := Hash(sha256.Sum256(content))
	e := contract.LedgerEntry{
		Index: len(w.hashes), Kind: kind, File: file, Line: line,
		ContentHash: ContentHash(kind, digest).String(),
		PrevHash:    contract.GenesisPrevHash,
		Time:        formatTime(w.now()),
	}
	if len(w.hashes) > 0 {
		e.PrevHash = w.prev.String()
	}
	unhashed, err := encodeEntry(e, false)
	if err != nil {
		return pendingEntry{}, err
	}
	eh := entryHash(unhashed)
	e.EntryHash = eh.String()
	b, err := encodeEntry(e, true)
	if err != nil {
		return pendingEntry{}, err
	}
	if err := w.mask.check("its ledger entry", b); err != nil {
		return pendingEntry{}, err
	}
	return pendingEntry{file: file, line: b, hash: eh, time: e.Time}, nil
}

// commit appends the ledger entry of a record already written. Any
// failure is sticky.
func (w *Writer) commit(e pendingEntry) error {
	if err := w.step("ledger " + e.file); err != nil {
		return w.fail(err)
	}
	if _, err := w.ledger.Write(append(e.line, '\n')); err != nil {
		return w.fail(fmt.Errorf("%s: %w", FileLedger, err))
	}
	if w.opts.Sync == SyncEveryRecord {
		if err := w.ledger.Sync(); err != nil {
			return w.fail(fmt.Errorf("%s: %w", FileLedger, err))
		}
	}
	w.used[foldPath(e.file)] = e.file
	w.hashes = append(w.hashes, e.hash)
	w.prev = e.hash
	if w.cps != nil {
		w.cps.committed(w.sid, w.hashes)
	}
	w.lastAt = e.time
	_ = w.raiseFloor(e.time) // written by formatTime: it parses
	return nil
}

// step runs the fault-injection hook (tests only).
func (w *Writer) step(stage string) error {
	if w.hook == nil {
		return nil
	}
	return w.hook(stage)
}

// writeAtomic writes a file through a temporary file renamed into place,
// so that it is either absent, as before, or complete.
func (w *Writer) writeAtomic(file string, data []byte) error {
	path := filepath.Join(w.dir, filepath.FromSlash(file))
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// encodeEntry returns the canonical bytes of a ledger entry, with or
// without its entryHash member.
func encodeEntry(e contract.LedgerEntry, withHash bool) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	tree, err := schemas.DecodeOwn(b)
	if err != nil {
		return nil, err
	}
	if !withHash {
		delete(tree.(map[string]any), "entryHash")
	}
	return canonjson.EncodeValue(tree)
}
