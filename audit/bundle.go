package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// Verification statuses of a bundle.
const (
	// StatusValid: sealed, and every entry, the seal and the signature (if
	// any) verified.
	StatusValid = "valid"
	// StatusTampered: verification failed; Verification.Err names the
	// place.
	StatusTampered = "tampered"
	// StatusUnsealed: every complete entry verified, but the bundle was
	// never sealed (a session still running, or a writer that died).
	StatusUnsealed = "unsealed"
)

// Verification is what evidence.Verify established about a bundle.
type Verification struct {
	// Status is StatusValid, StatusTampered or StatusUnsealed.
	Status string
	// Report is the verifier's report (entries verified, counts, seal).
	Report *evidence.Report
	// Err is the verifier's error: a *evidence.VerifyError for a tampered
	// bundle, a *evidence.UnsealedError for an unsealed one, nil when
	// valid.
	Err error
}

// Place returns where a tampered bundle breaks: the file, line and ledger
// entry; "" when the bundle is not tampered.
func (v Verification) Place() string {
	var ve *evidence.VerifyError
	if !errors.As(v.Err, &ve) {
		return ""
	}
	s := ve.File
	if ve.Line > 0 {
		s += " line " + strconv.Itoa(ve.Line)
	}
	if ve.Entry >= 0 {
		s += " (ledger entry " + strconv.Itoa(ve.Entry) + ")"
	}
	return s
}

// TamperedError is returned by Open (and so Replay and PolicyDiff) for a
// bundle that does not verify. It wraps the verifier's *evidence.VerifyError.
type TamperedError struct {
	// Path is the bundle.
	Path string
	// Err is the verifier's error.
	Err error
}

// Error names the bundle and the place where it breaks.
func (e *TamperedError) Error() string {
	return fmt.Sprintf("audit: %s does not verify, refusing it: %v", e.Path, e.Err)
}

// Unwrap returns the verifier's error.
func (e *TamperedError) Unwrap() error { return e.Err }

// OpenOptions configure Open.
type OpenOptions struct {
	// AllowUnsealed reads an unsealed bundle whose complete entries verify
	// (its intact entries only). Otherwise it is refused with an error
	// wrapping *evidence.UnsealedError.
	AllowUnsealed bool
	// AllowTampered reads a bundle that does not verify, up to the place
	// where it breaks (the entries before it verified; nothing after it is
	// read). Report uses it to show a tampered bundle; nothing else should.
	AllowTampered bool
	// PubKey, when set, is the trusted key the seal must be signed with.
	PubKey ed25519.PublicKey
}

// Bundle is a verified evidence bundle read into memory, in ledger order.
type Bundle struct {
	// Path is the bundle as given (a directory or a .tar.zst file).
	Path string
	// Dir is the directory the records were read from.
	Dir string
	// Verification says whether the bundle verified.
	Verification Verification
	// Manifest is the manifest as the session started
	// (provenance/manifest-start.json).
	Manifest contract.Manifest
	// End is the manifest as the session ended (status, endedAt, counts,
	// signer); nil for a bundle that was not sealed or not read that far.
	End *contract.Manifest
	// Seal is the seal of manifest.json; nil when unsealed.
	Seal *contract.Seal
	// Plans are the plan and its revisions, in order.
	Plans []contract.Plan
	// Initial are the observations recorded before the first step.
	Initial []*Observed
	// Steps are the proposed actions, in order.
	Steps []*Step
	// Events are every stream event, in order.
	Events []contract.StreamEvent
	// ModelCalls are the model-call records, in order.
	ModelCalls []contract.ModelCall
	// Entries counts the ledger entries read.
	Entries int

	images  map[string]string // image uri -> path in Dir
	cleanup func()
}

// ImagePath returns the file of the image with bundle-relative uri, or ""
// when the bundle holds no such image.
func (b *Bundle) ImagePath(uri string) string {
	if p, ok := b.images[uri]; ok {
		return p
	}
	return ""
}

// Close removes what Open unpacked (for a .tar.zst bundle).
func (b *Bundle) Close() error {
	if b.cleanup != nil {
		b.cleanup()
		b.cleanup = nil
	}
	return nil
}

// maxRecordBytes bounds one record read back from a verified bundle (the
// largest record is a DOM snapshot of 4194304 characters).
const maxRecordBytes = 32 << 20

// Open verifies the bundle at path (a directory or a packed .tar.zst) and
// reads it. A bundle that does not verify is refused with a *TamperedError
// naming the place, unless opts.AllowTampered; an unsealed one with an error
// wrapping *evidence.UnsealedError, unless opts.AllowUnsealed. Only the
// entries that verified are read. Close the bundle when done.
func Open(ctx context.Context, bundlePath string, opts OpenOptions) (*Bundle, error) {
	fi, err := os.Stat(bundlePath)
	if err != nil {
		return nil, fmt.Errorf("audit: open bundle: %w", err)
	}
	b := &Bundle{Path: bundlePath, Dir: bundlePath, images: map[string]string{}}
	if !fi.IsDir() {
		tmp, err := os.MkdirTemp("", "aegis-audit-")
		if err != nil {
			return nil, fmt.Errorf("audit: open bundle: %w", err)
		}
		b.cleanup = func() { os.RemoveAll(tmp) }
		f, err := os.Open(bundlePath)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("audit: open bundle: %w", err)
		}
		b.Dir = filepath.Join(tmp, "bundle")
		err = evidence.Unpack(ctx, f, b.Dir, evidence.UnpackOptions{})
		f.Close()
		if err != nil {
			b.Close()
			v := &evidence.VerifyError{File: filepath.Base(bundlePath), Entry: -1, Check: "archive", Err: err}
			return nil, &TamperedError{Path: bundlePath, Err: v}
		}
	}
	rep, verr := evidence.Verify(ctx, b.Dir, evidence.VerifyOptions{PubKey: opts.PubKey, AllowUnsealed: true})
	if rep != nil {
		rep.Path = bundlePath
	}
	b.Verification = Verification{Status: StatusValid, Report: rep}
	switch {
	case verr == nil && rep != nil && !rep.Sealed:
		b.Verification.Status = StatusUnsealed
		b.Verification.Err = &evidence.UnsealedError{Entries: rep.Entries, Incomplete: rep.Incomplete}
	case verr == nil:
	case rep == nil:
		b.Close()
		return nil, fmt.Errorf("audit: verify %s: %w", bundlePath, verr)
	default:
		b.Verification.Status = StatusTampered
		b.Verification.Err = verr
	}
	switch b.Verification.Status {
	case StatusTampered:
		if !opts.AllowTampered {
			b.Close()
			return nil, &TamperedError{Path: bundlePath, Err: verr}
		}
	case StatusUnsealed:
		if !opts.AllowUnsealed {
			b.Close()
			return nil, fmt.Errorf("audit: %s is %w; refusing it without an explicit allowance (--allow-unsealed)", bundlePath, b.Verification.Err)
		}
	}
	n := rep.Entries
	var ve *evidence.VerifyError
	if b.Verification.Status == StatusTampered && errors.As(verr, &ve) && ve.Entry >= 0 {
		// The entries are checked in order: those before the first
		// failure verified, and nothing from it on is read.
		n = ve.Entry
	}
	if err := b.read(ctx, n); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// read reads the first n ledger entries and their records.
func (b *Bundle) read(ctx context.Context, n int) error {
	ledger, err := b.file(evidence.FileLedger)
	if err != nil {
		return err
	}
	lines := splitLines(ledger)
	if n > len(lines) {
		n = len(lines)
	}
	jsonl := map[string][][]byte{}
	lineOf := func(file string, line int) ([]byte, error) {
		ls, ok := jsonl[file]
		if !ok {
			data, err := b.file(file)
			if err != nil {
				return nil, err
			}
			ls = splitLines(data)
			jsonl[file] = ls
		}
		if line < 1 || line > len(ls) {
			return nil, fmt.Errorf("audit: %s has no line %d", file, line)
		}
		return ls[line-1], nil
	}
	r := &reader{b: b, cur: "about:blank"}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("audit: read bundle: %w", err)
		}
		var e contract.LedgerEntry
		if err := json.Unmarshal(lines[i], &e); err != nil {
			return fmt.Errorf("audit: ledger entry %d: %w", i, err)
		}
		var rec []byte
		switch e.Kind {
		case contract.LedgerImage, contract.LedgerDOMSnapshot:
			// Read with their companion record.
		default:
			if e.Line > 0 {
				rec, err = lineOf(e.File, e.Line)
			} else {
				rec, err = b.file(e.File)
			}
			if err != nil {
				return err
			}
		}
		if err := r.add(e, rec); err != nil {
			return fmt.Errorf("audit: %s (ledger entry %d): %w", e.File, e.Index, err)
		}
		b.Entries++
	}
	if b.Verification.Status == StatusValid {
		var m contract.Manifest
		if data, err := b.file(evidence.FileManifest); err == nil && json.Unmarshal(data, &m) == nil {
			b.Seal = m.Seal
		}
	}
	return nil
}

// file reads a bundle file by its bundle-relative path.
func (b *Bundle) file(rel string) ([]byte, error) {
	if !validRel(rel) {
		return nil, fmt.Errorf("audit: %q is not a bundle path", rel)
	}
	f, err := os.Open(filepath.Join(b.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", rel, err)
	}
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("audit: %s is larger than %d bytes", rel, maxRecordBytes)
	}
	return data, nil
}

// validRel reports whether rel is a clean relative path inside the bundle.
func validRel(rel string) bool {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") || path.Clean(rel) != rel {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}

// splitLines splits data into its lines, without the line feeds; a last
// line without one is kept.
func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i])
		data = data[i+1:]
	}
	return out
}
