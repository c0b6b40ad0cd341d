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
	"slices"
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

// Step is one proposed action: every decision about it, and if it ran, the
// action and its result, with what was recorded until the next step.
type Step struct {
	// Index numbers the steps from 1.
	Index int
	// Decisions are the decisions about the action, in order: usually one;
	// a paused decision is followed by the approved (or refused) one; an
	// allowed one may be followed by the session's own denial.
	Decisions []contract.DecisionRecord
	// Action is the executed action (nil when it did not run: the bundle
	// then holds only its id and hash).
	Action *contract.Action
	// Result is the executed action's result; nil when it did not run.
	Result *contract.ToolResult
	// Before is the last observation recorded before the step; nil when
	// none was.
	Before *Observed
	// After are the observations recorded after the action, before the
	// next step.
	After []*Observed
	// Events are the stream events recorded from the step's first
	// decision to the next step.
	Events []contract.StreamEvent
	// Artifacts are the extracted artifacts recorded in the step.
	Artifacts []contract.Artifact
	// Images are the image artifacts (screenshots) recorded in the step.
	Images []contract.ImageArtifact
	// Effects are what the page did on the network while or after the
	// action ran (requests, navigations, downloads, peer channels), each
	// with the decisions about it, in order: the decision records whose
	// Effect is set and whose ActionID is the action's. They follow the
	// action's record in the bundle.
	Effects []*StepEffect
	// ActiveURL is the URL of the active page when the action was judged,
	// as the session tracks it: the last observation's or action result's
	// URL, about:blank at first.
	ActiveURL string
	// FirstEntry is the ledger index of the step's first record.
	FirstEntry int
}

// StepEffect is one effect of a step's action with the decisions about
// it, in order: usually one; a paused decision is followed by the approved
// or refused one.
type StepEffect struct {
	// Effect is the effect as the first decision records it.
	Effect contract.Effect
	// Decisions are the decisions about it.
	Decisions []contract.DecisionRecord
}

// Final returns the effect's last decision: whether it happened.
func (e *StepEffect) Final() contract.DecisionRecord {
	return e.Decisions[len(e.Decisions)-1]
}

// addEffect adds a decision about an effect of the step's action: to the
// last effect when it continues its pause (the same effect and hash),
// else as a new effect.
func (s *Step) addEffect(d contract.DecisionRecord) {
	if n := len(s.Effects); n > 0 {
		last := s.Effects[n-1]
		prev := last.Final()
		if prev.Result == contract.ResultPaused && prev.ActionHash == d.ActionHash && sameEffect(last.Effect, *d.Effect) {
			last.Decisions = append(last.Decisions, d)
			return
		}
	}
	s.Effects = append(s.Effects, &StepEffect{Effect: *d.Effect, Decisions: []contract.DecisionRecord{d}})
}

func sameEffect(a, b contract.Effect) bool {
	return a.Kind == b.Kind && a.Method == b.Method && a.Origin == b.Origin && a.Path == b.Path &&
		slices.Equal(a.Fields, b.Fields) && a.ResourceType == b.ResourceType && a.Refused == b.Refused
}

// Final returns the step's last decision: the one the session acted on.
func (s *Step) Final() contract.DecisionRecord {
	if len(s.Decisions) == 0 {
		return contract.DecisionRecord{}
	}
	return s.Decisions[len(s.Decisions)-1]
}

// Executed reports whether the step's action ran.
func (s *Step) Executed() bool { return s.Action != nil }

// Observed is one recorded observation.
type Observed struct {
	// Seq is the {step} of its files, dom/{Seq}.json and .html.
	Seq int
	// Observation is the observation, its DOMSnapshot filled from the .html.
	Observation contract.Observation
	// Entry is the ledger index of its observation record.
	Entry int
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

// sessionRules are the rules the session adds to decisions it writes
// itself (package session): a refused approval, a refused secret.
var sessionRules = map[string]bool{
	"approval_denied": true, "approval_timeout": true, "approval_unavailable": true,
	"secret_target_not_sensitive": true, "secret_unknown": true, "secret_unjudged": true,
}

// IsSessionDenial reports whether d is a denial the session wrote itself
// (an approval refused, a secret refused) rather than the gate's.
func IsSessionDenial(d contract.DecisionRecord) bool {
	if d.Allow || len(d.Reasons) == 0 {
		return false
	}
	for _, r := range d.Reasons {
		if !sessionRules[r.Rule] {
			return false
		}
	}
	return true
}

// reader groups the records into steps as it reads them.
type reader struct {
	b    *Bundle
	cur  string    // the active URL as the session tracks it
	last *Observed // the last observation
	step *Step     // the current step
}

func (r *reader) add(e contract.LedgerEntry, rec []byte) error {
	b := r.b
	switch e.Kind {
	case contract.LedgerManifestStart:
		return json.Unmarshal(rec, &b.Manifest)
	case contract.LedgerManifestEnd:
		var m contract.Manifest
		if err := json.Unmarshal(rec, &m); err != nil {
			return err
		}
		b.End = &m
	case contract.LedgerPlan:
		var p contract.Plan
		if err := json.Unmarshal(rec, &p); err != nil {
			return err
		}
		b.Plans = append(b.Plans, p)
	case contract.LedgerDecision:
		var d contract.DecisionRecord
		if err := json.Unmarshal(rec, &d); err != nil {
			return err
		}
		if d.Effect != nil {
			// About an effect of an action that ran: under that action.
			s := b.executed(d.ActionID)
			if s == nil {
				// The verifier refuses a bundle in which it precedes its
				// action (and Open reads no further); keep it anyway.
				s = r.step
			}
			if s != nil {
				s.addEffect(d)
			}
			return nil
		}
		if s := r.step; s != nil && s.Action == nil && len(s.Decisions) > 0 && continues(s.Final(), d) {
			s.Decisions = append(s.Decisions, d)
			return nil
		}
		r.step = &Step{Index: len(b.Steps) + 1, Decisions: []contract.DecisionRecord{d}, Before: r.last, ActiveURL: r.cur, FirstEntry: e.Index}
		b.Steps = append(b.Steps, r.step)
	case contract.LedgerAction:
		var line struct {
			Action contract.Action     `json:"action"`
			Result contract.ToolResult `json:"result"`
		}
		if err := json.Unmarshal(rec, &line); err != nil {
			return err
		}
		s := r.step
		if s == nil || s.Action != nil || s.Final().ActionID != line.Action.ID {
			// A verified bundle has an allow decision before every action;
			// keep the action anyway, as a step of its own.
			s = &Step{Index: len(b.Steps) + 1, Before: r.last, ActiveURL: r.cur, FirstEntry: e.Index}
			b.Steps = append(b.Steps, s)
			r.step = s
		}
		s.Action, s.Result = &line.Action, &line.Result
		if line.Result.URL != "" {
			r.cur = line.Result.URL
		}
	case contract.LedgerEvent:
		var ev contract.StreamEvent
		if err := json.Unmarshal(rec, &ev); err != nil {
			return err
		}
		b.Events = append(b.Events, ev)
		if r.step != nil {
			r.step.Events = append(r.step.Events, ev)
		}
	case contract.LedgerObservation:
		var o contract.Observation
		if err := json.Unmarshal(rec, &o); err != nil {
			return err
		}
		seq, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.File, "dom/"), ".json"))
		if err != nil {
			return fmt.Errorf("not an observation file")
		}
		html, err := b.file("dom/" + strconv.Itoa(seq) + ".html")
		if err != nil {
			return err
		}
		o.DOMSnapshot = string(html)
		ob := &Observed{Seq: seq, Observation: o, Entry: e.Index}
		if r.step == nil {
			b.Initial = append(b.Initial, ob)
		} else {
			r.step.After = append(r.step.After, ob)
		}
		r.last = ob
		if o.State.ActiveURL != "" {
			r.cur = o.State.ActiveURL
		}
	case contract.LedgerImageArtifact:
		var im contract.ImageArtifact
		if err := json.Unmarshal(rec, &im); err != nil {
			return err
		}
		if validRel(im.URI) {
			b.images[im.URI] = filepath.Join(b.Dir, filepath.FromSlash(im.URI))
		}
		if r.step != nil {
			r.step.Images = append(r.step.Images, im)
		}
	case contract.LedgerArtifact:
		var a contract.Artifact
		if err := json.Unmarshal(rec, &a); err != nil {
			return err
		}
		if r.step != nil {
			r.step.Artifacts = append(r.step.Artifacts, a)
		}
	case contract.LedgerModelCall:
		var mc contract.ModelCall
		if err := json.Unmarshal(rec, &mc); err != nil {
			return err
		}
		b.ModelCalls = append(b.ModelCalls, mc)
	}
	return nil
}

// executed returns the last step whose action, of id id, ran; nil when
// none.
func (b *Bundle) executed(id string) *Step {
	for i := len(b.Steps) - 1; i >= 0; i-- {
		if s := b.Steps[i]; s.Action != nil && s.Action.ID == id {
			return s
		}
	}
	return nil
}

// continues reports whether decision d is about the same proposal as prev,
// the last decision of a step whose action has not run: the approved or
// refused decision after a pause, or the session's own denial after an
// allow. A denied action proposed again is a new step.
func continues(prev, d contract.DecisionRecord) bool {
	if prev.ActionHash != d.ActionHash || prev.StepIndex != d.StepIndex || prev.ActionID != d.ActionID {
		return false
	}
	switch {
	case prev.Result == contract.ResultPaused:
		return true
	case prev.Allow && IsSessionDenial(d):
		return true
	}
	return false
}
