package witness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aegis-run/aegis/evidence"
)

// What a witness does with a checkpoint (FORMAT.md, section 14): it keeps,
// per origin, every checkpoint it accepted, append-only, and accepts a new
// one only when it is signed by the key of the origin's first checkpoint
// and extends the latest one (a consistency proof from the latest size).

// MaxProofHashes bounds the consistency proof of a request.
const MaxProofHashes = 63

// ErrInconsistent is wrapped by the refusal of a checkpoint that does not
// extend the witness's latest one for its origin: smaller, a different
// root for the same size, or a consistency proof that does not hold.
var ErrInconsistent = errors.New("witness: checkpoint inconsistent with the witness's latest")

// ErrNotFound is returned by Latest when the witness holds no checkpoint
// for the origin.
var ErrNotFound = errors.New("witness: no checkpoint for this origin")

// ConflictError refuses a checkpoint sent with a consistency proof from a
// size other than that of the witness's latest checkpoint; Size is that
// size (0: none), from which the sender may prove again.
type ConflictError struct{ Size uint64 }

// Error says which size the witness holds.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("witness: the latest checkpoint the witness holds has size %d", e.Size)
}

// ErrFull is wrapped by the refusal of the first checkpoint of an origin
// when the witness keeps as many origins as Admission.MaxOrigins allows.
var ErrFull = errors.New("witness: full")

// Store keeps the checkpoints of a Log, append-only.
type Store interface {
	// Latest returns the latest note stored for origin, or nil.
	Latest(origin string) ([]byte, error)
	// Append stores a note for origin after every other.
	Append(origin string, note []byte) error
	// Origins counts the origins it holds notes of.
	Origins() (int, error)
}

// Admission is what a witness takes beyond the rules of section 14 (a
// witness that others reach, `aegis witness serve`): without it, anyone
// who reaches the witness can start the log of a session id not used yet,
// with a key of their own, before the session's first checkpoint.
type Admission struct {
	// Keys, when not nil, are the key ids (evidence.KeyID) the witness
	// takes checkpoints signed by; a checkpoint signed by another key is
	// refused (ErrSignature).
	Keys map[string]bool
	// MaxOrigins, when above 0, is the most origins the witness keeps:
	// the first checkpoint of one more is refused (ErrFull).
	MaxOrigins int
}

// Log is a witness: it checks checkpoints and keeps those it accepts in its
// store. It is safe for concurrent use; one Log must be the only writer of
// its store's origins.
type Log struct {
	store   Store
	admit   Admission
	origins int // the origins the store holds, counted when admit.MaxOrigins > 0
	mu      sync.Mutex
	latest  map[string]*Signed // origin -> latest accepted
}

// NewLog returns a witness keeping its checkpoints in store, taking a
// checkpoint of any key and of any number of origins.
func NewLog(store Store) *Log { return &Log{store: store, latest: map[string]*Signed{}} }

// NewAdmittingLog returns a witness keeping its checkpoints in store that
// takes only what adm admits (it counts the origins the store holds).
func NewAdmittingLog(store Store, adm Admission) (*Log, error) {
	l := NewLog(store)
	l.admit = adm
	if adm.MaxOrigins > 0 {
		n, err := store.Origins()
		if err != nil {
			return nil, fmt.Errorf("witness: store: %w", err)
		}
		l.origins = n
	}
	return l, nil
}

// Add checks a signed checkpoint against the latest one held for its
// origin and stores it: old is the size of the latest one the sender
// believes the witness holds (0 for none), proof a consistency proof from
// that size to the checkpoint's. A checkpoint equal to the latest one is
// accepted again without being stored twice. The errors wrap ErrMalformed,
// ErrSignature (not the origin's key), ErrInconsistent, or are a
// *ConflictError (old is not the latest size).
func (l *Log) Add(old uint64, proof []evidence.Hash, note []byte) error {
	s, err := OpenNote(note)
	if err != nil {
		return err
	}
	if len(proof) > MaxProofHashes {
		return fmt.Errorf("%w request: a proof of more than %d hashes", ErrMalformed, MaxProofHashes)
	}
	if l.admit.Keys != nil && !l.admit.Keys[s.KeyID] {
		return fmt.Errorf("%w: a key this witness does not take (--keys) signed the checkpoint of %s: %s", ErrSignature, s.Origin, s.KeyID)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	last, err := l.latestLocked(s.Origin)
	if err != nil {
		return err
	}
	if last == nil {
		if old != 0 {
			return &ConflictError{Size: 0}
		}
		if max := l.admit.MaxOrigins; max > 0 && l.origins >= max {
			return fmt.Errorf("%w: it keeps %d origins, its limit, and starts no log for %s", ErrFull, l.origins, s.Origin)
		}
		if err := l.appendLocked(s); err != nil {
			return err
		}
		l.origins++
		return nil
	}
	switch {
	case s.KeyID != last.KeyID:
		return fmt.Errorf("%w: %s is signed by %s, its earlier checkpoints by %s", ErrSignature, s.Origin, s.KeyID, last.KeyID)
	case old != last.Size:
		return &ConflictError{Size: last.Size}
	case s.Size < last.Size:
		return fmt.Errorf("%w: size %d is smaller than the %d held", ErrInconsistent, s.Size, last.Size)
	case s.Size == last.Size:
		if s.Root != last.Root || s.Head != last.Head {
			return fmt.Errorf("%w: a different root or head for the %d entries held", ErrInconsistent, s.Size)
		}
		return nil
	}
	if err := evidence.VerifyConsistency(last.Size, s.Size, last.Root, s.Root, proof); err != nil {
		return fmt.Errorf("%w: %w", ErrInconsistent, err)
	}
	return l.appendLocked(s)
}

// Latest returns the latest checkpoint held for origin, or ErrNotFound.
func (l *Log) Latest(origin string) (*Signed, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := l.latestLocked(origin)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNotFound
	}
	return s, nil
}

func (l *Log) latestLocked(origin string) (*Signed, error) {
	if s, ok := l.latest[origin]; ok {
		return s, nil
	}
	note, err := l.store.Latest(origin)
	if err != nil || note == nil {
		return nil, err
	}
	s, err := OpenNote(note)
	if err != nil {
		return nil, fmt.Errorf("witness: the stored checkpoint of %s: %w", origin, err)
	}
	l.latest[origin] = s
	return s, nil
}

func (l *Log) appendLocked(s *Signed) error {
	if err := l.store.Append(s.Origin, s.Note); err != nil {
		return fmt.Errorf("witness: store: %w", err)
	}
	l.latest[s.Origin] = s
	return nil
}

// A log file holds signed notes, each followed by an empty line, in the
// order they were accepted; it is only ever appended to.

// FileStore keeps the checkpoints of every origin in one log file.
type FileStore struct{ Path string }

// Latest returns the last note in the file whose origin is origin.
func (f FileStore) Latest(origin string) ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	notes, err := splitLog(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	prefix := []byte(origin + "\n")
	for i := len(notes) - 1; i >= 0; i-- {
		if bytes.HasPrefix(notes[i], prefix) {
			return notes[i], nil
		}
	}
	return nil, nil
}

// Append appends a note and its empty line in one write, and fsyncs.
func (f FileStore) Append(_ string, note []byte) error {
	return appendNote(f.Path, note)
}

// Origins counts the origins of the notes in the file.
func (f FileStore) Origins() (int, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	notes, err := splitLog(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.Path, err)
	}
	seen := map[string]bool{}
	for _, n := range notes {
		origin, _, _ := bytes.Cut(n, []byte("\n"))
		seen[string(origin)] = true
	}
	return len(seen), nil
}

// DirStore keeps the checkpoints of each origin in a log file of its own
// in a directory: the hex SHA-256 of the origin, with ".log".
type DirStore struct{ Dir string }

// file returns the log file of origin.
func (d DirStore) file(origin string) FileStore {
	sum := sha256.Sum256([]byte(origin))
	return FileStore{Path: filepath.Join(d.Dir, hex.EncodeToString(sum[:])+".log")}
}

// Latest returns the last note of origin's file.
func (d DirStore) Latest(origin string) ([]byte, error) { return d.file(origin).Latest(origin) }

// Append appends a note to origin's file.
func (d DirStore) Append(origin string, note []byte) error {
	return d.file(origin).Append(origin, note)
}

// Origins counts the log files in the directory (one per origin).
func (d DirStore) Origins() (int, error) {
	entries, err := os.ReadDir(d.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if h, ok := strings.CutSuffix(name, ".log"); ok && e.Type().IsRegular() && len(h) == 2*sha256.Size {
			n++
		}
	}
	return n, nil
}

// appendNote appends a note and an empty line to a log file.
func appendNote(path string, note []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(append([]byte{}, note...), '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// splitLog splits the bytes of a log file into its notes; an incomplete
// last note (a torn write) is an error, not skipped.
func splitLog(b []byte) ([][]byte, error) {
	var notes [][]byte
	for len(b) > 0 {
		text := bytes.Index(b, []byte("\n\n"))
		if text < 0 {
			return nil, fmt.Errorf("%w log: note %d is incomplete", ErrMalformed, len(notes)+1)
		}
		end := bytes.Index(b[text+2:], []byte("\n\n"))
		if end < 0 {
			return nil, fmt.Errorf("%w log: note %d is incomplete", ErrMalformed, len(notes)+1)
		}
		n := text + 2 + end + 1
		notes = append(notes, b[:n])
		b = b[n+1:]
	}
	return notes, nil
}
