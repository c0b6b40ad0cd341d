package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// SyncPolicy says when the Writer calls fsync. Either way the bundle
// survives the writing process being killed at any instant (kill -9): the
// operating system keeps what was written, every record is written before
// the ledger entry that commits to it, and nothing written is ever
// rewritten. The policies differ on a crash of the machine itself.
type SyncPolicy int

const (
	// SyncOnSeal fsyncs every file and directory of the bundle once, when
	// it is sealed (the default). A power loss before the seal may lose
	// recent records, or keep a ledger entry whose record did not reach
	// the disk; verify then reports where the bundle breaks.
	SyncOnSeal SyncPolicy = iota
	// SyncEveryRecord also fsyncs each record (and the directory of a new
	// file) before its ledger entry is written, and the ledger after each
	// entry: every entry on disk commits to a record on disk, at the cost
	// of two or three fsyncs per record.
	SyncEveryRecord
)

// Options configure a Writer.
type Options struct {
	// Secrets maps secret names to values. A value found in the free text
	// of a record (messages, reasons, page text, selectors, URLs: FORMAT.md,
	// section 10) is replaced by {{secret:NAME}}: defense in depth, on top
	// of the session never handing secrets to the writer. A value found
	// anywhere else (an id, a hash, a file name, a member name, or the
	// bytes of a ledger entry) refuses the record with an error wrapping
	// ErrSecret, and an image that contains a value is refused: no value
	// is in any byte the writer writes. Values must be at least
	// MinSecretLen bytes.
	Secrets map[string]string
	// MaxImageBytes caps the size of an image; 0 means
	// contract.MaxImageBytes (5 MiB), which is also the most allowed.
	MaxImageBytes int64
	// Clock returns the time; nil means time.Now.
	Clock func() time.Time
	// Sync is the fsync policy.
	Sync SyncPolicy
	// OnEvent, when set, is called with every event right after its line
	// of events.jsonl is written, in the file's order, as written (secret
	// values masked), including the writer's own error events (a
	// quarantined artifact, masked secrets): a live stream fed from it
	// carries exactly events.jsonl. It is called with the writer's lock
	// held: it must return quickly and must not call the writer.
	OnEvent func(contract.StreamEvent)
	// Checkpoint, when set, takes a checkpoint of the ledger's head right
	// after entry 0, after every decision that carries an approval and
	// every CheckpointEvery entries (0: DefaultCheckpointEvery) while the
	// session runs, from a goroutine of its own (a slow witness never holds
	// the writer up), and once more after the seal, each within
	// CheckpointTimeout (0: DefaultCheckpointTimeout). Checkpoints not
	// taken while running are recorded as an error event CodeWitnessFailed
	// just before the seal; see Checkpointer.
	Checkpoint        Checkpointer
	CheckpointEvery   int
	CheckpointTimeout time.Duration
	// ApprovalKey, when set, is the session's approval key
	// (ApprovalKeySize bytes, NewApprovalKey): Create records its
	// commitment (ApprovalKeyHash) in the manifest as approvalKeyHash,
	// Decision requires every approval to name its channel and carry a MAC
	// that checks under it (ApprovalMAC), and Seal reveals it in the
	// manifest as the session ended (FORMAT.md, section 8, rule 16). The
	// writer keeps it in memory only until then. nil: no approval may name
	// a channel or carry a MAC.
	ApprovalKey []byte
}

// ImageMeta is what the caller knows about an image besides its bytes.
type ImageMeta struct {
	// SourceURL is the absolute URL of the page the image shows; "" when
	// unknown.
	SourceURL string
	// ActionID is the id of the action that produced the image; "" when
	// none.
	ActionID string
}

// ErrQuarantined is wrapped by the errors of Writer.Image and
// Writer.Artifact when a record was refused and the refusal recorded as an
// event: the session may log it and go on.
var ErrQuarantined = errors.New("evidence: artifact quarantined")

// ErrNotAllowed is wrapped by the error of Writer.Action when the action it
// recorded had no allow decision before it: the action is recorded (the
// bundle must say what ran) and the bundle will not verify.
var ErrNotAllowed = errors.New("evidence: action executed without an allow decision")

// ErrClosed is returned by a Writer that was sealed or closed.
var ErrClosed = errors.New("evidence: writer is closed")

// QuarantineError says why an artifact or image was not stored.
type QuarantineError struct {
	// ID is the artifact's or image's id.
	ID string
	// Reason says why, in words.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error names the artifact and why it was refused.
func (e *QuarantineError) Error() string {
	s := fmt.Sprintf("evidence: artifact %s quarantined: %s", e.ID, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrQuarantined) hold.
func (e *QuarantineError) Is(target error) bool { return target == ErrQuarantined }

// Unwrap returns the underlying error.
func (e *QuarantineError) Unwrap() error { return e.Err }

// The event codes of the error events the writer appends itself.
const (
	// CodeArtifactQuarantined: an artifact or image was refused.
	CodeArtifactQuarantined = "evidence.artifact_quarantined"
	// CodeSecretMasked: a record held a secret value, now masked.
	CodeSecretMasked = "evidence.secret_masked"
)

// Writer appends the records of one session to its evidence bundle, each
// followed by the ledger entry that commits to it. Its methods are safe for
// concurrent use; records are committed in the order the calls get the
// lock. An error that leaves a file in doubt (a failed or short write)
// is sticky: every later call returns it, and the bundle stays unsealed,
// its complete entries intact.
type Writer struct {
	mu     sync.Mutex
	dir    string
	opts   Options
	clock  func() time.Time
	mask   *masker
	start  contract.Manifest // as first written (masked)
	sid    string
	ledger *os.File
	jsonl  map[string]*os.File
	lines  map[string]int
	used   map[string]string // folded path -> path, every file recorded
	hashes []Hash
	prev   Hash
	counts contract.Counts
	plans  int
	images map[string]Hash    // image uri -> its SHA-256
	allow  map[string]decided // action id -> what its last decision decided
	apprv  map[string]bool    // approval ids consumed
	ran    map[string]bool    // ids of the actions recorded
	vision map[string]bool    // action ids whose last line is an allowed vision escalation (rule 17)
	shown  map[string]bool    // image uris whose record names one (rule 17)
	dirs   map[string]bool    // directories created
	synced map[string]bool    // files to fsync at the seal
	err    error              // sticky
	done   bool               // sealed or closed
	lastAt string             // the time of the last entry
	// floor is the earliest time the next entry may have: the last
	// entry's, or a time the record being written states (FORMAT.md,
	// section 8, rule 11); a clock that steps back is held at it.
	floor     time.Time
	owed      *pendingAction               // the action line waiting for its event
	arts      map[string]contract.Artifact // extracted artifacts stored, by id
	artDigest map[string]Hash              // artifacts/{id}.json -> D of its record
	embedded  map[string]embeddedArtifact  // artifacts/{id}.json -> a copy embedded before the file
	hook      func(stage string) error     // tests: fault injection between steps
	cps       *checkpoints                 // nil without Options.Checkpoint
}

// Create starts the evidence bundle of a session in root/SESSIONID and
// returns its writer. root must exist; the bundle directory must not. m
// is the manifest as the session starts: its Status must be "" or running
// (it is written as running), EndedAt, Signer and Seal empty, Counts zero;
// an empty Goal is copied from Task.Goal, an empty StartedAt set from the
// clock, an empty FormatVersion set. The manifest is written as
// manifest.json and, as the genesis entry of the ledger, as
// provenance/manifest-start.json.
func Create(root string, m contract.Manifest, opts Options) (*Writer, error) {
	mask, err := newMasker(opts.Secrets)
	if err != nil {
		return nil, err
	}
	if opts.MaxImageBytes <= 0 || opts.MaxImageBytes > contract.MaxImageBytes {
		opts.MaxImageBytes = contract.MaxImageBytes
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	if m.FormatVersion == "" {
		m.FormatVersion = contract.ManifestFormatVersion
	}
	if m.Goal == "" {
		m.Goal = m.Task.Goal
	}
	if m.StartedAt == "" {
		m.StartedAt = formatTime(clock())
	}
	if m.Status == "" {
		m.Status = contract.SessionRunning
	}
	switch {
	case m.Status != contract.SessionRunning:
		return nil, fmt.Errorf("evidence: create: status %q, want running", m.Status)
	case m.EndedAt != "" || m.Signer != "" || m.Seal != nil:
		return nil, errors.New("evidence: create: the manifest of a running session has no endedAt, signer or seal")
	case m.Counts != (contract.Counts{}):
		return nil, errors.New("evidence: create: counts must start at zero")
	case m.Goal != m.Task.Goal:
		return nil, errors.New("evidence: create: goal differs from task.goal")
	case m.ApprovalKey != "":
		return nil, errors.New("evidence: create: the approval key is revealed at the seal, never at the start")
	}
	if opts.ApprovalKey != nil {
		if len(opts.ApprovalKey) != ApprovalKeySize {
			return nil, fmt.Errorf("evidence: create: an approval key is %d bytes, not %d", ApprovalKeySize, len(opts.ApprovalKey))
		}
		opts.ApprovalKey = append([]byte(nil), opts.ApprovalKey...)
		h := ApprovalKeyHash(opts.ApprovalKey)
		if m.ApprovalKeyHash != "" && m.ApprovalKeyHash != h {
			return nil, errors.New("evidence: create: approvalKeyHash is not the commitment to the approval key")
		}
		m.ApprovalKeyHash = h
	} else if m.ApprovalKeyHash != "" {
		return nil, errors.New("evidence: create: approvalKeyHash without the approval key (Options.ApprovalKey)")
	}
	canon, r, _, err := prepareRecord(string(schemas.KindManifest), m, mask)
	if err != nil {
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	if err := checkStartManifest(r); err != nil {
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	var start contract.Manifest
	if err := json.Unmarshal(canon, &start); err != nil {
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	dir := filepath.Join(root, start.SessionID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	w := &Writer{
		dir: dir, opts: opts, clock: clock, mask: mask, start: start, sid: start.SessionID,
		jsonl: map[string]*os.File{}, lines: map[string]int{}, used: map[string]string{},
		images: map[string]Hash{}, allow: map[string]decided{}, apprv: map[string]bool{}, ran: map[string]bool{},
		vision: map[string]bool{}, shown: map[string]bool{},
		dirs: map[string]bool{}, synced: map[string]bool{},
		arts: map[string]contract.Artifact{}, artDigest: map[string]Hash{}, embedded: map[string]embeddedArtifact{},
		cps: newCheckpoints(opts),
	}
	// The genesis entry is not before the session's start.
	if err := w.raiseFloor(start.StartedAt); err != nil {
		return nil, fmt.Errorf("evidence: create: startedAt: %w", err)
	}
	for _, d := range []string{"provenance"} {
		if err := w.mkdir(d); err != nil {
			return nil, fmt.Errorf("evidence: create: %w", err)
		}
	}
	// manifest.json first (atomically), so that a bundle with a ledger
	// entry always has one; then the genesis record and its entry.
	if err := w.writeAtomic(FileManifest, append(canon, '\n')); err != nil {
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(FileLedger)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	w.ledger = f
	w.synced[FileLedger] = true
	if err := w.appendFile(contract.LedgerManifestStart, FileManifestStart, canon, true); err != nil {
		w.ledger.Close()
		return nil, fmt.Errorf("evidence: create: %w", err)
	}
	return w, nil
}

// Dir returns the bundle directory.
func (w *Writer) Dir() string { return w.dir }

// SessionID returns the session id the bundle records.
func (w *Writer) SessionID() string { return w.sid }

// Err returns the sticky error that stopped the writer, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// raiseFloor makes the next entries no earlier than the time t a record
// states.
func (w *Writer) raiseFloor(t string) error {
	at, err := parseTime(t)
	if err != nil {
		return err
	}
	if at.After(w.floor) {
		w.floor = at
	}
	return nil
}

// now returns the time of the next entry: the clock's, but never before
// the floor.
func (w *Writer) now() time.Time {
	t := w.clock()
	if t.Before(w.floor) {
		return w.floor
	}
	return t
}

// usable returns why the writer cannot take a record, or nil.
func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return ErrClosed
	}
	return nil
}

// fail makes err sticky and returns it.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("evidence: writer stopped: %w", err)
	}
	return w.err
}

// prepare canonicalizes a record and validates it as the named shape.
func (w *Writer) prepare(shape string, v any) (canon []byte, r rec, masked bool, err error) {
	return prepareRecord(shape, v, w.mask)
}

// prepareRecord canonicalizes a record (masking what m masks in its free
// text), parses the canonical bytes as the verifier will, and validates
// them as the named shape (none when shape is "": a line of actions.jsonl,
// which validateActionLine validates).
func prepareRecord(shape string, v any, m *masker) (canon []byte, r rec, masked bool, err error) {
	maskAs := shape
	if shape == "" {
		maskAs = shapeActionLine
	}
	canon, paths, err := canonicalize(maskAs, v, m)
	if err != nil {
		return nil, rec{}, false, err
	}
	masked = len(paths) > 0
	if r, err = parseRec(canon); err != nil {
		return nil, rec{}, false, err
	}
	if shape != "" {
		if err := validateRec(shape, r); err != nil {
			return nil, rec{}, false, err
		}
	}
	return canon, r, masked, nil
}
