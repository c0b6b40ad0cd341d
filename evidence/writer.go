package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
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
	images map[string]Hash          // image uri -> its SHA-256
	allow  map[string]bool          // action id -> its last decision allowed it
	apprv  map[string]bool          // approval ids consumed
	dirs   map[string]bool          // directories created
	synced map[string]bool          // files to fsync at the seal
	err    error                    // sticky
	done   bool                     // sealed or closed
	lastAt string                   // the time of the last entry
	hook   func(stage string) error // tests: fault injection between steps
	obs    obsScratch               // reused by each observation
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
		images: map[string]Hash{}, allow: map[string]bool{}, apprv: map[string]bool{},
		dirs: map[string]bool{}, synced: map[string]bool{},
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
	canon, masked, err = canonicalize(maskAs, v, m)
	if err != nil {
		return nil, rec{}, false, err
	}
	if r, err = parseRec(canon, &schemas.Tape{}); err != nil {
		return nil, rec{}, false, err
	}
	if shape != "" {
		if err := validateRec(shape, r); err != nil {
			return nil, rec{}, false, err
		}
	}
	return canon, r, masked, nil
}

// Plan records a plan: the first as plan.json, each revision after it as
// plans/{n}.json.
func (w *Writer) Plan(p contract.Plan) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	canon, _, masked, err := w.prepare(string(schemas.KindPlan), p)
	if err != nil {
		return fmt.Errorf("evidence: plan: %w", err)
	}
	file := planFile(w.plans + 1)
	if err := w.appendFile(contract.LedgerPlan, file, canon, true); err != nil {
		return err
	}
	w.plans++
	return w.noteMasked(masked, file)
}

// Decision records a policy decision record as a line of decisions.jsonl.
// Its sessionId, when present, must be the bundle's.
func (w *Writer) Decision(rec contract.DecisionRecord) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	sc := getRecScratch() // canon and r are used until the method returns
	defer putRecScratch(sc)
	canon, r, masked, err := prepareDecision(&rec, w.mask, sc)
	if err != nil {
		return fmt.Errorf("evidence: decision: %w", err)
	}
	d := decisionOf(r)
	if err := d.check(w.sid, w.apprv); err != nil {
		return fmt.Errorf("evidence: decision: %w", err)
	}
	if err := w.appendLine(contract.LedgerDecision, FileDecisions, canon); err != nil {
		return err
	}
	d.apply(w.allow, w.apprv)
	w.counts.Decisions++
	return w.noteMasked(masked, FileDecisions)
}

// Action records an executed action with its result as a line of
// actions.jsonl. The text of a type action with Redact true is stored as
// RedactedText (and masked from then on wherever it appears). The result
// must be the action's (same id and action name) and carry the bundle's
// session id. An action that no allow decision preceded is recorded all
// the same, and the error wraps ErrNotAllowed.
func (w *Writer) Action(a contract.Action, r contract.ToolResult) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if a.Type == contract.ActType && a.Redact {
		w.mask.addRedacted(a.Text)
		a.Text = RedactedText
	}
	sc := getRecScratch() // canon and lr are used until the method returns
	defer putRecScratch(sc)
	canon, lr, masked, err := prepareActionLine(&a, &r, w.mask, sc)
	if err != nil {
		return fmt.Errorf("evidence: action: %w", err)
	}
	if err := validateActionLine(lr); err != nil {
		return fmt.Errorf("evidence: action: %w", err)
	}
	facts, err := checkActionLine(lr, w.sid)
	if err != nil {
		return fmt.Errorf("evidence: action: %w", err)
	}
	if err := w.appendLine(contract.LedgerAction, FileActions, canon); err != nil {
		return err
	}
	w.counts.Actions++
	allowed := w.allow[facts.id]
	delete(w.allow, facts.id)
	if err := w.noteMasked(masked, FileActions); err != nil {
		return err
	}
	if !allowed {
		return fmt.Errorf("%w: %s (actions.jsonl line %d)", ErrNotAllowed, facts.id, w.lines[FileActions])
	}
	return nil
}

// Event records a stream event as a line of events.jsonl.
func (w *Writer) Event(ev contract.StreamEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.event(ev)
}

func (w *Writer) event(ev contract.StreamEvent) error {
	sc := getRecScratch() // canon and r are used until the method returns
	defer putRecScratch(sc)
	canon, r, masked, err := prepareEvent(&ev, w.mask, sc)
	if err != nil {
		return fmt.Errorf("evidence: event: %w", err)
	}
	if err := checkEvent(r, w.sid); err != nil {
		return fmt.Errorf("evidence: event: %w", err)
	}
	if err := w.appendLine(contract.LedgerEvent, FileEvents, canon); err != nil {
		return err
	}
	w.counts.Events++
	if w.opts.OnEvent != nil {
		written := ev
		if masked {
			// Hand on what was written, not what was given.
			if err := json.Unmarshal(canon, &written); err != nil {
				return w.fail(fmt.Errorf("evidence: event: re-reading a masked event: %w", err))
			}
		}
		w.opts.OnEvent(written)
	}
	return w.noteMasked(masked, FileEvents)
}

// ModelCall records a model call as a line of model-calls.jsonl. Its
// sessionId must be the bundle's; llm.CallRecord.ModelCall builds one. The
// record holds the prompt's hash, never the prompt; secret values in it
// (in an error message, say) are masked like anywhere else.
func (w *Writer) ModelCall(rec contract.ModelCall) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	sc := getRecScratch() // canon and r are used until the method returns
	defer putRecScratch(sc)
	canon, r, masked, err := prepareModelCall(&rec, w.mask, sc)
	if err != nil {
		return fmt.Errorf("evidence: model call: %w", err)
	}
	if err := checkModelCall(r, w.sid); err != nil {
		return fmt.Errorf("evidence: model call: %w", err)
	}
	if err := w.appendLine(contract.LedgerModelCall, FileModelCalls, canon); err != nil {
		return err
	}
	w.counts.ModelCalls++
	return w.noteMasked(masked, FileModelCalls)
}

// errorEvent appends an error event of the writer's own.
func (w *Writer) errorEvent(code, msg string) error {
	return w.event(contract.StreamEvent{Type: contract.EventError, Code: code, Message: msg, Timestamp: formatTime(w.clock())})
}

// noteMasked records, after a record whose secrets were masked, an error
// event that says so (without the values).
func (w *Writer) noteMasked(masked bool, file string) error {
	if !masked {
		return nil
	}
	return w.errorEvent(CodeSecretMasked, fmt.Sprintf("secret values were masked in %s (entry %d)", file, len(w.hashes)-1))
}

// Observation records the observation of a step: its DOM snapshot verbatim
// as dom/{step}.html, then the observation, its domSnapshot emptied, as
// dom/{step}.json. state.domHash must be the SHA-256 of the snapshot's
// UTF-8 bytes, or "" to have it set; it must carry the bundle's session id.
// Each step is recorded once.
func (w *Writer) Observation(step int, obs contract.Observation) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if step < 0 || step > 9999999999 {
		return fmt.Errorf("evidence: observation: step %d out of range", step)
	}
	htmlFile, obsFile := domFiles(step)
	if w.taken(htmlFile) || w.taken(obsFile) {
		return fmt.Errorf("evidence: observation: step %d already recorded", step)
	}
	snap := obs.DOMSnapshot
	if !utf8.ValidString(snap) {
		return errors.New("evidence: observation: DOM snapshot is not valid UTF-8")
	}
	snapBytes := []byte(snap) // one copy for the digests, the checks and the file
	digest := Hash(sha256.Sum256(snapBytes))
	switch obs.State.DOMHash {
	case "":
	case digest.String():
	default:
		return fmt.Errorf("evidence: observation: state.domHash %s is not the SHA-256 of the DOM snapshot (%s)", obs.State.DOMHash, digest)
	}
	snap, maskedSnap := w.mask.maskString(snap)
	if maskedSnap {
		snapBytes = []byte(snap)
		digest = sha256.Sum256(snapBytes)
	}
	if err := w.mask.check("the DOM snapshot", snapBytes); err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	obs.State.DOMHash = digest.String()
	obs.DOMSnapshot = ""
	canon, r, masked, err := prepareObservation(obs, w.mask, &w.obs)
	if err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	if err := checkObservation(r, w.sid, digest, snapBytes, true); err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	if err := w.appendFile(contract.LedgerDOMSnapshot, htmlFile, snapBytes, false); err != nil {
		return err
	}
	if err := w.appendFile(contract.LedgerObservation, obsFile, canon, true); err != nil {
		return err
	}
	w.counts.Observations++
	return w.noteMasked(masked || maskedSnap, obsFile)
}

// Artifact records an extracted artifact as artifacts/{id}.json. An empty
// Hash is set: the SHA-256 of Value, or for a screenshot (whose Value is
// the uri of an image stored before) the image's. A refused artifact (bad
// hash, unknown image, invalid record, id taken, write error) is recorded
// as an error event instead, and the error wraps ErrQuarantined: the
// session may go on.
func (w *Writer) Artifact(a contract.Artifact) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.artifact(a); err != nil {
		return w.quarantine(a.ID, err)
	}
	return nil
}

func (w *Writer) artifact(a contract.Artifact) error {
	want, err := w.artifactHash(a)
	if err != nil {
		return err
	}
	if a.Hash == "" {
		a.Hash = want
	}
	if a.Hash != want {
		what := "the value"
		if a.Type == contract.ArtifactScreenshot {
			what = "its image"
		}
		return fmt.Errorf("hash %s, want the SHA-256 of %s %s", a.Hash, what, want)
	}
	canon, r, masked, err := w.prepare(shapeArtifact, a)
	if err != nil {
		return err
	}
	if masked {
		// The value changed, and its hash with it.
		a.Value = r.at("value").str()
		if a.Type != contract.ArtifactScreenshot {
			h := sha256.Sum256([]byte(a.Value))
			a.Hash = hex.EncodeToString(h[:])
		}
		if canon, r, _, err = w.prepare(shapeArtifact, a); err != nil {
			return err
		}
	}
	if err := checkArtifact(r, w.images); err != nil {
		return err
	}
	file := artifactFile(a.ID)
	if w.taken(file) {
		return fmt.Errorf("%s already recorded", file)
	}
	if err := w.appendFile(contract.LedgerArtifact, file, canon, true); err != nil {
		return err
	}
	w.counts.Artifacts++
	return w.noteMasked(masked, file)
}

func (w *Writer) artifactHash(a contract.Artifact) (string, error) {
	if a.Type == contract.ArtifactScreenshot {
		h, ok := w.images[a.Value]
		if !ok {
			return "", fmt.Errorf("screenshot value %q is not the uri of an image stored in the bundle", a.Value)
		}
		return h.String(), nil
	}
	h := sha256.Sum256([]byte(a.Value))
	return hex.EncodeToString(h[:]), nil
}

// quarantine records a refused artifact as an error event and returns the
// error to hand the caller. A failure to record the event is sticky.
func (w *Writer) quarantine(id string, cause error) error {
	if w.err != nil { // the cause stopped the writer: nothing more can be recorded
		return w.err
	}
	id, _ = w.mask.maskString(id) // an id that holds a secret value was refused for it: do not repeat it
	qe := &QuarantineError{ID: id, Reason: "refused", Err: cause}
	msg := fmt.Sprintf("artifact %q not stored: %v", id, cause)
	if len(msg) > 4000 {
		msg = msg[:4000]
	}
	if !utf8.ValidString(msg) {
		msg = fmt.Sprintf("artifact not stored: %v", cause)
	}
	if err := w.errorEvent(CodeArtifactQuarantined, msg); err != nil {
		return errors.Join(qe, w.fail(err))
	}
	return qe
}

// Image stores an image as artifacts/{id}.png, .jpg or .webp (the type
// recognized from the bytes, never from a name or claim) and its record,
// which it returns, as artifacts/{id}.json. An image that is empty, too
// large (Options.MaxImageBytes), not PNG, JPEG or WebP, holds a secret
// value, or cannot be written is not stored: the refusal is recorded as an
// error event, and the error wraps ErrQuarantined: the session may go on.
func (w *Writer) Image(id string, data []byte, meta ImageMeta) (contract.ImageArtifact, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return contract.ImageArtifact{}, err
	}
	rec, err := w.image(id, data, meta)
	if err != nil {
		return contract.ImageArtifact{}, w.quarantine(id, err)
	}
	return rec, nil
}

func (w *Writer) image(id string, data []byte, meta ImageMeta) (contract.ImageArtifact, error) {
	var rec contract.ImageArtifact
	switch {
	case len(data) == 0:
		return rec, errors.New("empty image")
	case int64(len(data)) > w.opts.MaxImageBytes:
		return rec, fmt.Errorf("image of %d bytes exceeds the limit of %d", len(data), w.opts.MaxImageBytes)
	}
	info, ok := sniffImage(data)
	if !ok {
		return rec, errors.New("not a PNG, JPEG or WebP image (by its bytes)")
	}
	if p, found := w.mask.findIn(data); found {
		return rec, fmt.Errorf("image holds the value of %s", p)
	}
	file := "artifacts/" + id + imageExt[info.mime]
	digest := Hash(sha256.Sum256(data))
	rec = contract.ImageArtifact{
		ID: id, URI: file, MIMEType: info.mime, ByteSize: int64(len(data)), ContentHash: digest.String(),
		Width: info.width, Height: info.height, SourceURL: meta.SourceURL, ActionID: meta.ActionID,
	}
	canon, r, masked, err := w.prepare(string(schemas.KindImageArtifact), rec)
	if err != nil {
		return contract.ImageArtifact{}, err
	}
	if masked {
		return contract.ImageArtifact{}, errors.New("image record holds a secret value")
	}
	recFile := artifactFile(id)
	if !reArtifact.MatchString(file) {
		return contract.ImageArtifact{}, fmt.Errorf("id %q cannot name a file", id)
	}
	if w.taken(file) || w.taken(recFile) {
		return contract.ImageArtifact{}, fmt.Errorf("id %q already recorded", id)
	}
	if err := checkImageRecord(r, file, len(data), info, digest); err != nil {
		return contract.ImageArtifact{}, err
	}
	if err := w.appendFile(contract.LedgerImage, file, data, false); err != nil {
		return contract.ImageArtifact{}, err
	}
	w.images[file] = digest
	if err := w.appendFile(contract.LedgerImageArtifact, recFile, canon, true); err != nil {
		return contract.ImageArtifact{}, err
	}
	w.counts.Artifacts++
	return rec, nil
}

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
	if err := w.mkdir(filepath.ToSlash(filepath.Dir(file))); err != nil {
		return fmt.Errorf("evidence: %s: %w", file, err)
	}
	path := filepath.Join(w.dir, filepath.FromSlash(file))
	err = func() error {
		if err := w.step("create " + file); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
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
		Time:        formatTime(w.clock()),
	}
	if len(w.hashes) > 0 {
		e.PrevHash = w.prev.String()
	}
	eh := entryHash(encodeEntry(e, false))
	e.EntryHash = eh.String()
	b := encodeEntry(e, true)
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
	w.lastAt = e.time
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

// Seal ends the session: it records the manifest as the session ended
// (status, endTime, counts, and the signer's key id) as the last ledger
// entry, provenance/manifest-end.json; fsyncs the bundle; signs the sealed
// manifest with signer when it is not nil (provenance/seal.dsse.json); and
// replaces manifest.json by the sealed manifest, which it returns. status
// must be a final status. The writer is closed afterwards, whatever the
// outcome.
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
	end := w.start
	end.Status = status
	end.EndedAt = formatTime(endTime)
	end.Counts = w.counts
	if signer != nil {
		end.Signer = signer.KeyID()
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

// encodeEntry returns the canonical bytes of a ledger entry, with or
// without its entryHash member. Members in canonical (sorted) order.
func encodeEntry(e contract.LedgerEntry, withHash bool) []byte {
	b := make([]byte, 0, 320)
	b = append(b, `{"contentHash":`...)
	b = canonjson.AppendString(b, e.ContentHash)
	if withHash {
		b = append(b, `,"entryHash":`...)
		b = canonjson.AppendString(b, e.EntryHash)
	}
	b = append(b, `,"file":`...)
	b = canonjson.AppendString(b, e.File)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(e.Index), 10)
	b = append(b, `,"kind":`...)
	b = canonjson.AppendString(b, string(e.Kind))
	if e.Line != 0 {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(e.Line), 10)
	}
	b = append(b, `,"prevHash":`...)
	b = canonjson.AppendString(b, e.PrevHash)
	b = append(b, `,"time":`...)
	b = canonjson.AppendString(b, e.Time)
	return append(b, '}')
}
