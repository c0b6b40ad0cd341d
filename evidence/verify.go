package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// PubKey, when set, is the trusted key: the bundle must carry a seal
	// signature that verifies under it.
	PubKey ed25519.PublicKey
	// AllowUnsealed makes an unsealed bundle whose entries all verify a
	// success (the report says how many): the state a crash leaves.
	// Otherwise it is an *UnsealedError.
	AllowUnsealed bool
	// Progress, when set, is called as bytes are verified, with the bytes
	// done and the bundle's total.
	Progress func(done, total int64)
}

// Report is what Verify established about a bundle.
type Report struct {
	// Path is the bundle (directory or archive) verified.
	Path string `json:"path"`
	// SessionID is the session the bundle records ("" when not even the
	// genesis entry verified).
	SessionID string `json:"sessionId,omitempty"`
	// Sealed says the bundle is sealed and the seal verified.
	Sealed bool `json:"sealed"`
	// Entries is the number of ledger entries that verified, all of them
	// for a valid bundle; for an invalid one, those before the failure.
	Entries int `json:"entries"`
	// Incomplete describes what a crash left uncommitted in an unsealed
	// bundle ("" when nothing).
	Incomplete string `json:"incomplete,omitempty"`
	// Status is the final status of a sealed session.
	Status contract.SessionStatus `json:"status,omitempty"`
	// Counts are the records counted.
	Counts contract.Counts `json:"counts"`
	// HeadHash and MerkleRoot are the seal's (recomputed), or those of the
	// intact entries of an unsealed bundle.
	HeadHash   string `json:"headHash,omitempty"`
	MerkleRoot string `json:"merkleRoot,omitempty"`
	// Signer is the key id of the seal signature ("" when unsigned); the
	// signature verified under the key the id names.
	Signer string `json:"signer,omitempty"`
	// Authenticated says the signature verified under VerifyOptions.PubKey.
	Authenticated bool `json:"authenticated"`
	// Files and Bytes count the files and bytes verified.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// VerifyError is the first failure Verify found: where, and what was
// expected.
type VerifyError struct {
	// File is the bundle-relative path of the file at fault.
	File string
	// Line is the line (from 1) of File at fault; 0 when the whole file.
	Line int
	// Entry is the index of the ledger entry concerned; -1 when none.
	Entry int
	// Check names the check that failed, such as "contentHash", "schema",
	// "chain", "missing", "extra", "seal", "signature", "authorization".
	Check string
	// Want and Got are the expected and the found value, when the check
	// compares two.
	Want, Got string
	// Err is the underlying error, if any.
	Err error
}

// Error names the place (file, line, ledger entry), the check, and what was
// expected and found.
func (e *VerifyError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, " line %d", e.Line)
	}
	if e.Entry >= 0 {
		fmt.Fprintf(&b, " (ledger entry %d)", e.Entry)
	}
	b.WriteString(": ")
	b.WriteString(e.Check)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Want != "" || e.Got != "" {
		fmt.Fprintf(&b, ": want %s, got %s", e.Want, e.Got)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

// ErrUnsealed is wrapped by the error for an unsealed bundle.
var ErrUnsealed = errors.New("bundle is not sealed")

// UnsealedError reports a bundle whose entries verify but that was never
// sealed: the session is running, or its writer stopped (a crash, kill -9,
// a disk error).
type UnsealedError struct {
	// Entries is the number of intact entries.
	Entries int
	// Incomplete describes what was left uncommitted ("" when nothing).
	Incomplete string
}

// Error says the bundle is unsealed and how many entries are intact.
func (e *UnsealedError) Error() string {
	s := fmt.Sprintf("unsealed, %d intact entries", e.Entries)
	if e.Incomplete != "" {
		s += " (" + e.Incomplete + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrUnsealed) hold.
func (e *UnsealedError) Is(target error) bool { return target == ErrUnsealed }

// Verify verifies the bundle at path, a directory or a packed .tar.zst
// archive: every file against its schema and canonical form, every hash,
// the chain, the Merkle root and the seal, the signature when present (and
// against opts.PubKey when given), every executed action preceded by an
// allow decision, and no missing or extra file or line. A valid sealed
// bundle returns a nil error; an invalid one a *VerifyError naming the
// first failure; an unsealed one whose entries verify an *UnsealedError
// (nil with AllowUnsealed). The report is returned in every case but a
// usage error (path unreadable).
func Verify(ctx context.Context, path string, opts VerifyOptions) (*Report, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: verify: %w", err)
	}
	if !fi.IsDir() {
		return verifyArchive(ctx, path, opts)
	}
	r, err := VerifyFS(ctx, os.DirFS(path), opts)
	r.Path = path
	return r, err
}

// VerifyFS verifies the bundle at the root of fsys, as Verify does a
// directory.
func VerifyFS(ctx context.Context, fsys fs.FS, opts VerifyOptions) (*Report, error) {
	v := newVerifier(ctx, fsys, opts)
	err := v.run()
	return v.report, err
}

func verifyArchive(ctx context.Context, path string, opts VerifyOptions) (*Report, error) {
	tmp, err := os.MkdirTemp("", "aegis-verify-")
	if err != nil {
		return nil, fmt.Errorf("evidence: verify: %w", err)
	}
	defer os.RemoveAll(tmp)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: verify: %w", err)
	}
	defer f.Close()
	dir := filepath.Join(tmp, "bundle")
	if err := Unpack(ctx, f, dir, UnpackOptions{}); err != nil {
		return &Report{Path: path}, &VerifyError{File: filepath.Base(path), Entry: -1, Check: "archive", Err: err}
	}
	r, err := VerifyFS(ctx, os.DirFS(dir), opts)
	r.Path = path
	return r, err
}

// verifier holds the state of one verification.
type verifier struct {
	ctx    context.Context
	fsys   fs.FS
	opts   VerifyOptions
	report *Report

	files    map[string]int64  // every regular file, by path
	folded   map[string]string // folded path -> path
	data     map[string][]byte // JSON Lines files read
	ends     map[string][]int  // per JSON Lines file, the offset after each complete line
	lines    map[string]int    // per JSON Lines file, the lines committed
	used     map[string]bool   // files committed
	total    int64
	done     int64
	lastTick int64

	sid        string
	startCanon []byte
	startTree  any
	endTree    any
	hashes     []Hash
	prev       Hash
	lastKind   contract.LedgerKind
	lastTime   string
	next       string              // the file the next entry must record, if any
	nextKind   contract.LedgerKind // and its kind
	prevDigest Hash                // the digest of the previous entry's record
	prevImg    imageInfo           // the previous entry's image type, for its record
	prevSize   int                 // and its size
	counts     contract.Counts
	plans      int
	images     map[string]Hash
	allow      map[string]bool
	consumed   map[string]bool
}

func newVerifier(ctx context.Context, fsys fs.FS, opts VerifyOptions) *verifier {
	return &verifier{
		ctx: ctx, fsys: fsys, opts: opts, report: &Report{},
		files: map[string]int64{}, folded: map[string]string{}, data: map[string][]byte{},
		ends: map[string][]int{}, lines: map[string]int{}, used: map[string]bool{},
		images: map[string]Hash{}, allow: map[string]bool{}, consumed: map[string]bool{},
	}
}

func fault(file string, line, entry int, check string, err error) *VerifyError {
	return &VerifyError{File: file, Line: line, Entry: entry, Check: check, Err: err}
}

func mismatch(file string, line, entry int, check, want, got string) *VerifyError {
	return &VerifyError{File: file, Line: line, Entry: entry, Check: check, Want: want, Got: got}
}

// list walks the bundle: regular files only.
func (v *verifier) list() error {
	return fs.WalkDir(v.fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return fault(rel, 0, -1, "unreadable", err)
		}
		if rel == "." {
			return nil
		}
		switch {
		case d.IsDir():
			if !validBundlePath(rel) {
				return fault(rel, 0, -1, "extra", errors.New("directory name not allowed in a bundle"))
			}
			return nil
		case !d.Type().IsRegular():
			return fault(rel, 0, -1, "file type", fmt.Errorf("%v: only regular files belong in a bundle", d.Type()))
		}
		info, err := d.Info()
		if err != nil {
			return fault(rel, 0, -1, "unreadable", err)
		}
		if prev, dup := v.folded[foldPath(rel)]; dup {
			return fault(rel, 0, -1, "extra", fmt.Errorf("collides with %s on a case-insensitive file system", prev))
		}
		v.folded[foldPath(rel)] = rel
		v.files[rel] = info.Size()
		v.total += info.Size()
		return nil
	})
}

func (v *verifier) read(file string) ([]byte, error) {
	b, err := fs.ReadFile(v.fsys, file)
	if err == nil {
		v.progress(int64(len(b)))
	}
	return b, err
}

func (v *verifier) progress(n int64) {
	v.done += n
	v.report.Bytes = v.done
	if v.opts.Progress != nil && (v.done-v.lastTick >= 8<<20 || v.done == v.total) {
		v.lastTick = v.done
		v.opts.Progress(v.done, v.total)
	}
}

// jsonFile returns a JSON file's content: its bytes without the one final
// line feed it must end with.
func jsonFile(file string, b []byte, entry int) ([]byte, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fault(file, 0, entry, "line feed", errors.New("a JSON file ends with one line feed"))
	}
	return b[:len(b)-1], nil
}

func (v *verifier) run() error {
	if err := v.list(); err != nil {
		return err
	}
	v.report.Files = len(v.files)
	// The manifest says whether the bundle is sealed.
	var manifestCanon []byte
	var manifestTree any
	manifest := rec{&schemas.Tape{}, -1}
	if _, ok := v.files[FileManifest]; ok {
		b, err := v.read(FileManifest)
		if err != nil {
			return fault(FileManifest, 0, -1, "unreadable", err)
		}
		if manifestCanon, err = jsonFile(FileManifest, b, -1); err != nil {
			return err
		}
		if manifest, err = parseRec(manifestCanon, manifest.t); err != nil {
			return fault(FileManifest, 0, -1, "canonical", err)
		}
		if err := validateRec(string(schemas.KindManifest), manifest); err != nil {
			return fault(FileManifest, 0, -1, "schema", err)
		}
		manifestTree = manifest.value()
	}
	sealed := manifest.at("seal").present()
	// The ledger, and the JSON Lines files its entries point into.
	var ledger []byte
	if _, ok := v.files[FileLedger]; ok {
		var err error
		if ledger, err = v.read(FileLedger); err != nil {
			return fault(FileLedger, 0, -1, "unreadable", err)
		}
	}
	for file := range jsonlKinds {
		if err := v.readJSONL(file); err != nil {
			return err
		}
	}
	var lines [][]byte
	partial := ""
	for len(ledger) > 0 {
		nl := bytes.IndexByte(ledger, '\n')
		if nl < 0 {
			partial = fmt.Sprintf("%s line %d is incomplete (%d bytes)", FileLedger, len(lines)+1, len(ledger))
			break
		}
		lines = append(lines, ledger[:nl])
		ledger = ledger[nl+1:]
	}
	if err := v.entries(lines); err != nil {
		return err
	}
	v.report.Entries = len(v.hashes)
	v.report.Counts = v.counts
	if len(v.hashes) > 0 {
		root, _ := MerkleRoot(v.hashes)
		v.report.HeadHash, v.report.MerkleRoot = v.prev.String(), root.String()
	}
	if sealed {
		if partial != "" {
			return fault(FileLedger, len(v.hashes)+1, -1, "extra", errors.New("incomplete last line in a sealed ledger"))
		}
		return v.sealed(manifestCanon, manifestTree)
	}
	return v.unsealed(manifestCanon, manifest, partial)
}

// readJSONL reads a JSON Lines file once and indexes its complete lines.
func (v *verifier) readJSONL(file string) error {
	var b []byte
	if _, ok := v.files[file]; ok {
		var err error
		if b, err = v.read(file); err != nil {
			return fault(file, 0, -1, "unreadable", err)
		}
	}
	ends := make([]int, 0, 64)
	for off := 0; ; {
		nl := bytes.IndexByte(b[off:], '\n')
		if nl < 0 {
			break
		}
		off += nl + 1
		ends = append(ends, off)
	}
	v.data[file], v.ends[file] = b, ends
	return nil
}

// prepared is what a worker established about one ledger entry ahead of
// the checks that must run in order: the entry parsed, its record read
// and hashed, and the record's own form (canonical, schema) checked. Its
// errors are reported by check, at their place in the order of checks, so
// the first failure named is the same whatever the workers' timing.
type prepared struct {
	e           contract.LedgerEntry // but for its hashes:
	prevHash    Hash                 // the entry's prevHash
	entryHash   Hash                 // its entryHash
	contentHash Hash                 // its contentHash
	eh          Hash                 // the entry hash recomputed
	lineErr     error                // the line is not a valid entry
	contentErr  error                // the record is missing or malformed as a file
	recErr      error                // the record breaks its form
	size        int
	digest      Hash
	rec         rec // a JSON record, parsed (its tape refers to buf or to a JSON Lines file)
	img         imageInfo
	buf         *[]byte // the buffer the record was read into, until checked
}

// release hands the record's tape and buffer back to their free lists.
func (p *prepared) release() {
	if p.rec.t != nil {
		putTape(p.rec.t)
		p.rec = rec{}
	}
	if p.buf != nil {
		putBuf(p.buf)
		p.buf = nil
	}
}

// entries verifies the ledger's complete lines in order. The work that
// does not depend on the entries before (reading, hashing, parsing,
// schema validation) runs ahead on up to GOMAXPROCS workers, at most a
// bounded window of entries ahead; the checks that do run here, in order.
func (v *verifier) entries(lines [][]byte) error {
	n := len(lines)
	workers := min(runtime.GOMAXPROCS(0), 4)
	results := make([]chan *prepared, n)
	for i := range results {
		results[i] = make(chan *prepared, 1)
	}
	stop := make(chan struct{})
	defer close(stop)
	window := make(chan struct{}, 4*workers)
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		go func() {
			for {
				select {
				case window <- struct{}{}:
				case <-stop:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				results[i] <- v.prepare(i, lines[i])
			}
		}()
	}
	for i := 0; i < n; i++ {
		var p *prepared
		select {
		case p = <-results[i]:
		case <-v.ctx.Done():
			return v.ctx.Err()
		}
		<-window
		err := v.check(i, p)
		p.release()
		if err != nil {
			return err
		}
		v.progress(int64(p.size)) // the ledger and JSON Lines files were counted when read
	}
	return nil
}

// prepare does the order-independent work for entry i. It reads only what
// the verifier does not change while entries are checked.
func (v *verifier) prepare(i int, line []byte) *prepared {
	p := &prepared{}
	t := getTape()
	defer putTape(t)
	r, err := parseRec(line, t)
	if err != nil {
		p.lineErr = fault(FileLedger, i+1, i, "canonical", err)
		return p
	}
	if err := validateRec(string(schemas.KindLedgerEntry), r); err != nil {
		p.lineErr = fault(FileLedger, i+1, i, "schema", err)
		return p
	}
	// The hashes are kept as bytes (the schema checked their spelling);
	// e holds the rest.
	e := contract.LedgerEntry{
		Index: int(r.at("index").num()), Kind: ledgerKind(r.at("kind")),
		File: r.at("file").str(), Time: r.at("time").str(),
	}
	p.prevHash, p.entryHash, p.contentHash = hashOf(r.at("prevHash")), hashOf(r.at("entryHash")), hashOf(r.at("contentHash"))
	if l := r.at("line"); l.present() {
		e.Line = int(l.num())
	}
	p.e, p.eh = e, lineEntryHash(line, r)
	// The record's bytes.
	var content []byte
	if _, isJSONL := jsonlKinds[e.File]; isJSONL {
		ends := v.ends[e.File]
		if e.Line > len(ends) {
			p.contentErr = fault(e.File, e.Line, i, "missing", errors.New("the line the ledger records is not there"))
			return p
		}
		start := 0
		if e.Line > 1 {
			start = ends[e.Line-2]
		}
		content = v.data[e.File][start : ends[e.Line-1]-1]
	} else {
		if _, ok := v.files[e.File]; !ok {
			p.contentErr = fault(e.File, 0, i, "missing", errors.New("the file the ledger records is not there"))
			return p
		}
		b, buf, err := v.readBuf(e.File)
		if err != nil {
			p.contentErr = fault(e.File, 0, i, "unreadable", err)
			return p
		}
		p.buf = buf
		p.size = len(b)
		content = b
		if e.Kind != contract.LedgerImage && e.Kind != contract.LedgerDOMSnapshot {
			if content, err = jsonFile(e.File, b, i); err != nil {
				p.contentErr = err
				p.release()
				return p
			}
		}
	}
	p.digest = sha256.Sum256(content)
	p.recErr = v.form(p, content)
	if p.rec.t == nil || p.recErr != nil {
		p.release() // nothing refers to the bytes any more
	}
	return p
}

// hashOf returns a hash written as 64 lowercase hex digits (checked by the
// schema); zero for anything else.
func hashOf(r rec) Hash {
	var h Hash
	if r.t.Kind(r.i) == schemas.TapeString {
		if b := r.t.Raw(r.i); len(b) == 2*len(h) {
			hex.Decode(h[:], b)
		}
	}
	return h
}

// ledgerKinds interns the ledger kinds.
var ledgerKinds = func() map[string]contract.LedgerKind {
	m := map[string]contract.LedgerKind{}
	for _, k := range []contract.LedgerKind{contract.LedgerManifestStart, contract.LedgerPlan, contract.LedgerAction,
		contract.LedgerDecision, contract.LedgerEvent, contract.LedgerModelCall, contract.LedgerDOMSnapshot,
		contract.LedgerObservation, contract.LedgerArtifact, contract.LedgerImage, contract.LedgerImageArtifact,
		contract.LedgerManifestEnd} {
		m[string(k)] = k
	}
	return m
}()

// ledgerKind returns the kind an entry names.
func ledgerKind(r rec) contract.LedgerKind {
	if r.t.Kind(r.i) != schemas.TapeString {
		return ""
	}
	if k, ok := ledgerKinds[string(r.t.Raw(r.i))]; ok {
		return k
	}
	return contract.LedgerKind(r.str())
}

// lineEntryHash returns the entry hash of a ledger line, valid against its
// schema and canonical: the hash of the line without its entryHash member
// (FORMAT.md, section 5), which is the canonical form of the entry without
// it.
func lineEntryHash(line []byte, r rec) Hash {
	j := r.at("entryHash").i
	from, _ := r.t.Span(j - 1) // the key, after its opening quote
	_, to := r.t.Span(j)       // the value, before its closing quote
	from, to = from-1, to+1
	if to < len(line) && line[to] == ',' {
		to++
	} else if from > 0 && line[from-1] == ',' {
		from--
	}
	h := sha256.New()
	h.Write([]byte(EntryPrefix))
	h.Write(line[:from])
	h.Write(line[to:])
	var out Hash
	h.Sum(out[:0])
	return out
}

// The free lists of the buffers records are read into and of the tapes
// they are parsed onto: bounded, so that what verify keeps between runs
// is bounded too (at most maxFreeBufs buffers of at most maxKeptBuf
// bytes), and unlike a sync.Pool not emptied by every garbage collection.
const (
	maxFreeBufs  = 16
	maxKeptBuf   = 1 << 20
	minBufCap    = 256 << 10
	maxFreeTapes = 32
)

var (
	freeBufs  = make(chan *[]byte, maxFreeBufs)
	freeTapes = make(chan *schemas.Tape, maxFreeTapes)
)

// getBuf returns a buffer of capacity at least n from the free list, or a
// new one.
func getBuf(n int) *[]byte {
	select {
	case bp := <-freeBufs:
		if cap(*bp) >= n {
			return bp
		}
	default:
	}
	b := make([]byte, 0, max(n, minBufCap))
	return &b
}

// putBuf hands a buffer back, unless it is large or the list full.
func putBuf(bp *[]byte) {
	if cap(*bp) > maxKeptBuf {
		return
	}
	select {
	case freeBufs <- bp:
	default:
	}
}

// getTape returns a tape from the free list, or a new one.
func getTape() *schemas.Tape {
	select {
	case t := <-freeTapes:
		return t
	default:
		return &schemas.Tape{}
	}
}

// putTape hands a tape back, unless the list is full.
func putTape(t *schemas.Tape) {
	t.Reset(nil)
	select {
	case freeTapes <- t:
	default:
	}
}

// readBuf reads a whole file into a buffer from the free list, which the
// caller hands back (putBuf) when done with the bytes.
func (v *verifier) readBuf(file string) ([]byte, *[]byte, error) {
	f, err := v.fsys.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	size := v.files[file] // as listed: a file that changed since fails below
	if size > schemas.MaxDocumentBytes && size > contract.MaxImageBytes {
		return nil, nil, fmt.Errorf("%d bytes: larger than any record", size)
	}
	bp := getBuf(int(size) + 1)
	b := (*bp)[:size+1]
	n, err := io.ReadFull(f, b)
	if err == io.EOF && size == 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != io.ErrUnexpectedEOF || int64(n) != size {
		putBuf(bp)
		if err == nil || err == io.ErrUnexpectedEOF || err == io.EOF {
			err = errors.New("the file changed while verified")
		}
		return nil, nil, err
	}
	return b[:n], bp, nil
}

// form checks what a record is by itself: an image's type, a snapshot's
// text, a JSON record's canonical form and schema.
func (v *verifier) form(p *prepared, content []byte) error {
	e := p.e
	bad := func(check string, err error) error { return fault(e.File, e.Line, e.Index, check, err) }
	switch e.Kind {
	case contract.LedgerImage:
		info, ok := sniffImage(content)
		switch {
		case !ok:
			return bad("image", errors.New("not a PNG, JPEG or WebP image"))
		case !strings.HasSuffix(e.File, imageExt[info.mime]):
			return bad("image", fmt.Errorf("the bytes are %s, not what the extension says", info.mime))
		case len(content) > contract.MaxImageBytes:
			return bad("image", fmt.Errorf("%d bytes, at most %d allowed", len(content), contract.MaxImageBytes))
		}
		p.img = info
		return nil
	case contract.LedgerDOMSnapshot:
		if err := checkSnapshot(content); err != nil {
			return bad("dom snapshot", err)
		}
		return nil
	}
	r, err := parseRec(content, getTape())
	p.rec = r
	if err != nil {
		return bad("canonical", err)
	}
	var shape string
	switch e.Kind {
	case contract.LedgerManifestStart, contract.LedgerManifestEnd:
		shape = string(schemas.KindManifest)
	case contract.LedgerPlan:
		shape = string(schemas.KindPlan)
	case contract.LedgerDecision:
		shape = string(schemas.KindDecision)
	case contract.LedgerEvent:
		shape = string(schemas.KindEvent)
	case contract.LedgerModelCall:
		shape = string(schemas.KindModelCall)
	case contract.LedgerObservation:
		shape = string(schemas.KindObservation)
	case contract.LedgerArtifact:
		shape = shapeArtifact
	case contract.LedgerImageArtifact:
		shape = string(schemas.KindImageArtifact)
	case contract.LedgerAction:
		if err := validateActionLine(r); err != nil {
			return bad("schema", err)
		}
		return nil
	}
	if err := validateRec(shape, r); err != nil {
		return bad("schema", err)
	}
	return nil
}

// check runs the checks of entry i that depend on the entries before it,
// in order, and records the entry.
func (v *verifier) check(i int, p *prepared) error {
	if p.lineErr != nil {
		return p.lineErr
	}
	e := p.e
	where := func(check string, err error) error { return fault(FileLedger, i+1, i, check, err) }
	if e.Index != i {
		return mismatch(FileLedger, i+1, i, "index", fmt.Sprint(i), fmt.Sprint(e.Index))
	}
	var wantPrev Hash // 64 zeros for entry 0: contract.GenesisPrevHash
	if i > 0 {
		wantPrev = v.prev
	}
	if p.prevHash != wantPrev {
		return mismatch(FileLedger, i+1, i, "chain: prevHash", wantPrev.String(), p.prevHash.String())
	}
	if p.entryHash != p.eh {
		return mismatch(FileLedger, i+1, i, "entryHash", p.eh.String(), p.entryHash.String())
	}
	if v.lastKind == contract.LedgerManifestEnd {
		return where("extra", errors.New("an entry after the manifest-end entry"))
	}
	if v.next != "" && (e.File != v.next || e.Kind != v.nextKind) {
		return where("order", fmt.Errorf("entry records %s %s, want %s %s (recorded with the entry before it)", e.Kind, e.File, v.nextKind, v.next))
	}
	// Each line of a JSON Lines file in turn, each other file once.
	if _, isJSONL := jsonlKinds[e.File]; isJSONL {
		if e.Line != v.lines[e.File]+1 {
			return mismatch(FileLedger, i+1, i, "line", fmt.Sprintf("%s line %d", e.File, v.lines[e.File]+1), fmt.Sprintf("line %d", e.Line))
		}
	} else if v.used[e.File] {
		return fault(FileLedger, i+1, i, "duplicate", fmt.Errorf("%s is recorded twice", e.File))
	}
	if p.contentErr != nil {
		return p.contentErr
	}
	v.used[e.File] = true
	if e.Line > 0 {
		v.lines[e.File] = e.Line
	}
	if got := ContentHash(e.Kind, p.digest); got != p.contentHash {
		return mismatch(e.File, e.Line, i, "contentHash (the record does not match its ledger entry)", p.contentHash.String(), got.String())
	}
	if p.recErr != nil {
		return p.recErr
	}
	if err := v.record(p); err != nil {
		return err
	}
	v.hashes = append(v.hashes, p.eh)
	v.prev = p.eh
	v.lastKind, v.lastTime = e.Kind, e.Time
	v.prevDigest, v.prevImg, v.prevSize = p.digest, p.img, p.size
	return nil
}

// record checks what a well-formed record says against the records before
// it, by kind.
func (v *verifier) record(p *prepared) error {
	e, r := p.e, p.rec
	bad := func(check string, err error) error { return fault(e.File, e.Line, e.Index, check, err) }
	v.next, v.nextKind = "", ""
	switch e.Kind {
	case contract.LedgerImage:
		v.images[e.File] = p.digest
		v.next, v.nextKind = artifactFile(artifactID(e.File)), contract.LedgerImageArtifact
	case contract.LedgerDOMSnapshot:
		_, v.next = domFiles(stepOf(e.File))
		v.nextKind = contract.LedgerObservation
	case contract.LedgerManifestStart:
		if err := checkStartManifest(r); err != nil {
			return bad("manifest", err)
		}
		v.sid = r.at("sessionId").str()
		v.report.SessionID = v.sid
		v.startCanon, v.startTree = bytes.Clone(r.t.Raw(0)), r.value()
	case contract.LedgerPlan:
		if want := planFile(v.plans + 1); e.File != want {
			return bad("order", fmt.Errorf("plan revision %d must be %s", v.plans+1, want))
		}
		v.plans++
	case contract.LedgerDecision:
		d := decisionOf(r)
		if err := d.check(v.sid, v.consumed); err != nil {
			return bad("decision", err)
		}
		d.apply(v.allow, v.consumed)
		v.counts.Decisions++
	case contract.LedgerAction:
		facts, err := checkActionLine(r, v.sid)
		if err != nil {
			return bad("schema", err)
		}
		if !v.allow[facts.id] {
			return bad("authorization", fmt.Errorf("action %q executed without an allow decision before it", facts.id))
		}
		delete(v.allow, facts.id)
		v.counts.Actions++
	case contract.LedgerEvent:
		if err := checkEvent(r, v.sid); err != nil {
			return bad("event", err)
		}
		v.counts.Events++
	case contract.LedgerModelCall:
		if err := checkModelCall(r, v.sid); err != nil {
			return bad("model call", err)
		}
		v.counts.ModelCalls++
	case contract.LedgerObservation:
		if html, _ := domFiles(stepOf(e.File)); v.lastKind != contract.LedgerDOMSnapshot || !v.used[html] {
			return bad("order", fmt.Errorf("not recorded right after its snapshot %s", html))
		}
		if err := checkObservation(r, v.sid, v.prevDigest, nil, false); err != nil {
			return bad("observation", err)
		}
		v.counts.Observations++
	case contract.LedgerArtifact:
		if id := r.at("id").str(); artifactFile(id) != e.File {
			return bad("artifact", fmt.Errorf("id %q does not match the file name", id))
		}
		if err := checkArtifact(r, v.images); err != nil {
			return bad("artifact", err)
		}
		v.counts.Artifacts++
	case contract.LedgerImageArtifact:
		if v.lastKind != contract.LedgerImage {
			return bad("order", errors.New("an image record follows its image"))
		}
		img := strings.TrimSuffix(e.File, ".json") + imageExt[v.prevImg.mime]
		if err := checkImageRecord(r, img, v.prevSize, v.prevImg, v.prevDigest); err != nil {
			return bad("image record", err)
		}
		v.counts.Artifacts++
	case contract.LedgerManifestEnd:
		tree := r.value()
		if err := v.checkEndManifest(tree); err != nil {
			return bad("manifest", err)
		}
		v.endTree = tree
	}
	return nil
}

// stepOf returns the step of dom/{step}.ext.
func stepOf(file string) int {
	m := reDOM.FindStringSubmatch(file)
	n := 0
	for _, c := range m[1] {
		n = n*10 + int(c-'0')
	}
	return n
}

// checkEndManifest: the manifest as the session ended is the manifest as
// it started but for its status, endedAt, counts (which must be the
// records counted) and signer.
func (v *verifier) checkEndManifest(tree any) error {
	end, _ := tree.(map[string]any)
	start, _ := v.startTree.(map[string]any)
	if s := strMember(end, "status"); s == string(contract.SessionRunning) {
		return errors.New("status running in the manifest-end record")
	}
	if end["seal"] != nil {
		return errors.New("seal in the manifest-end record")
	}
	keys := map[string]bool{}
	for k := range end {
		keys[k] = true
	}
	for k := range start {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch k {
		case "status", "endedAt", "counts", "signer":
			continue
		}
		if !schemas.Equal(end[k], start[k]) {
			return fmt.Errorf("%s differs from the manifest as the session started", k)
		}
	}
	var counts contract.Counts
	if err := decodeTree(end["counts"], &counts); err != nil {
		return err
	}
	if counts != v.counts {
		return fmt.Errorf("counts %+v, but the bundle holds %+v", counts, v.counts)
	}
	return nil
}

// sealed finishes the verification of a sealed bundle.
func (v *verifier) sealed(manifestCanon []byte, manifestTree any) error {
	if v.endTree == nil {
		if _, ok := v.files[FileLedger]; !ok {
			return fault(FileLedger, 0, -1, "missing", errors.New("the manifest is sealed"))
		}
		return fault(FileLedger, len(v.hashes)+1, -1, "missing", fmt.Errorf("%s is sealed, but the ledger (%d entries) does not end with the manifest-end entry", FileManifest, len(v.hashes)))
	}
	// The sealed manifest is the manifest-end record plus the seal, every
	// member of which is recomputed.
	root, _ := MerkleRoot(v.hashes)
	want := map[string]any{}
	for k, x := range v.endTree.(map[string]any) {
		want[k] = x
	}
	want["seal"] = map[string]any{
		"entries":    jsonNumber(len(v.hashes)),
		"headHash":   v.prev.String(),
		"merkleRoot": root.String(),
		"sealedAt":   v.lastTime,
	}
	wantCanon, err := canonjson.EncodeValue(want)
	if err != nil {
		return fault(FileManifest, 0, -1, "seal", err)
	}
	if !bytes.Equal(wantCanon, manifestCanon) {
		return manifestDiff(want, manifestTree)
	}
	// Nothing beyond what the ledger records.
	signer := strMember(v.endTree, "signer")
	if err := v.leftovers(func(file string) bool { return file == FileSeal && signer != "" }); err != nil {
		return err
	}
	// The signature.
	if signer == "" {
		if v.opts.PubKey != nil {
			return fault(FileSeal, 0, -1, "signature", errors.New("missing: the bundle is not signed, but a trusted key was given"))
		}
	} else {
		if _, ok := v.files[FileSeal]; !ok {
			return fault(FileSeal, 0, -1, "missing", fmt.Errorf("the manifest names signer %s", signer))
		}
		b, err := v.read(FileSeal)
		if err != nil {
			return fault(FileSeal, 0, -1, "unreadable", err)
		}
		content, err := jsonFile(FileSeal, b, -1)
		if err != nil {
			return err
		}
		tree, err := canonjson.ParseCanonical(content)
		if err != nil {
			return fault(FileSeal, 0, -1, "canonical", err)
		}
		auth, err := openEnvelope(tree, signer, manifestCanon, v.opts.PubKey)
		if err != nil {
			return fault(FileSeal, 0, -1, "DSSE envelope", err)
		}
		v.report.Signer, v.report.Authenticated = signer, auth
	}
	v.report.Sealed = true
	v.report.Status = contract.SessionStatus(strMember(v.endTree, "status"))
	return nil
}

func jsonNumber(n int) any { return json.Number(strconv.Itoa(n)) }

// manifestDiff names the first member of manifest.json that differs from
// what the ledger says it must be.
func manifestDiff(want map[string]any, got any) error {
	g, _ := got.(map[string]any)
	names := map[string]bool{}
	for k := range want {
		names[k] = true
	}
	for k := range g {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if schemas.Equal(want[k], g[k]) {
			continue
		}
		if wm, ok := want[k].(map[string]any); ok {
			if gm, ok := g[k].(map[string]any); ok {
				for sk, wv := range wm {
					if !schemas.Equal(wv, gm[sk]) {
						return mismatch(FileManifest, 0, -1, k+"."+sk, short(wv), short(gm[sk]))
					}
				}
			}
		}
		return mismatch(FileManifest, 0, -1, k+" (against the ledger's manifest-end record and seal)", short(want[k]), short(g[k]))
	}
	return fault(FileManifest, 0, -1, "seal", errors.New("differs from the sealed manifest the ledger implies"))
}

// short renders a JSON value for a message.
func short(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := canonjson.EncodeValue(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

// leftovers fails on any file, or line of a JSON Lines file, that no
// entry committed, but for the manifest, the ledger and what allow admits.
func (v *verifier) leftovers(allow func(string) bool) error {
	names := make([]string, 0, len(v.files))
	for f := range v.files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if _, isJSONL := jsonlKinds[f]; isJSONL && v.used[f] {
			ends := v.ends[f]
			committed := 0
			if n := v.lines[f]; n > 0 {
				committed = ends[n-1]
			}
			if len(v.data[f]) != committed {
				return fault(f, v.lines[f]+1, -1, "extra", errors.New("a line the ledger does not record"))
			}
			continue
		}
		if v.used[f] || f == FileManifest || f == FileLedger || allow(f) {
			continue
		}
		return fault(f, 0, -1, "extra", errors.New("a file the ledger does not record"))
	}
	return nil
}

// unsealed finishes the verification of an unsealed bundle: what its
// ledger records verified; what a crash can leave beyond that is at most
// one uncommitted record (a last line, or a file), a partial last ledger
// line, and the temporary files of a seal in progress.
func (v *verifier) unsealed(manifestCanon []byte, manifest rec, partial string) error {
	n := len(v.hashes)
	switch {
	case !manifest.present() && n > 0:
		return fault(FileManifest, 0, -1, "missing", fmt.Errorf("the ledger has %d entries", n))
	case manifest.present() && n > 0 && !bytes.Equal(manifestCanon, v.startCanon):
		return fault(FileManifest, 0, -1, "manifest", fmt.Errorf("unsealed, but not the manifest as the session started (%s)", FileManifestStart))
	case manifest.present() && n == 0:
		if err := checkStartManifest(manifest); err != nil {
			return fault(FileManifest, 0, -1, "manifest", err)
		}
	}
	sealing := v.lastKind == contract.LedgerManifestEnd
	var tail []string
	if partial != "" {
		tail = append(tail, partial)
	}
	var uncommitted []string
	names := make([]string, 0, len(v.files))
	for f := range v.files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if _, isJSONL := jsonlKinds[f]; isJSONL {
			ends := v.ends[f]
			committed := 0
			if c := v.lines[f]; c > 0 {
				committed = ends[c-1]
			}
			rest := v.data[f][committed:]
			switch nl := bytes.IndexByte(rest, '\n'); {
			case len(rest) == 0:
			case nl >= 0 && nl != len(rest)-1:
				return fault(f, v.lines[f]+2, -1, "extra", errors.New("more than one line the ledger does not record"))
			default:
				uncommitted = append(uncommitted, fmt.Sprintf("%s line %d", f, v.lines[f]+1))
			}
			continue
		}
		switch {
		case v.used[f] || f == FileManifest || f == FileLedger:
		case f == FileManifest+tmpSuffix && (n == 0 || sealing):
			tail = append(tail, f)
		case (f == FileSeal || f == FileSeal+tmpSuffix) && sealing:
			tail = append(tail, f)
		case isRecordPath(f):
			uncommitted = append(uncommitted, f)
		default:
			return fault(f, 0, -1, "extra", errors.New("a file the ledger does not record"))
		}
	}
	if len(uncommitted) > 1 {
		return fault(uncommitted[1], 0, -1, "extra", fmt.Errorf("uncommitted beside %s: a crash leaves at most one record uncommitted", uncommitted[0]))
	}
	v.report.Incomplete = strings.Join(append(uncommitted, tail...), "; ")
	// With a trusted key only a sealed, signed bundle passes.
	if v.opts.AllowUnsealed && v.opts.PubKey == nil {
		return nil
	}
	return &UnsealedError{Entries: n, Incomplete: v.report.Incomplete}
}
