package evidence

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aegis-run/aegis/contract"
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
	// Effects counts the decision records about effects of actions (also
	// in Counts.Decisions); see FORMAT.md, "Effects".
	Effects EffectCounts `json:"effects"`
	// Approvals counts the approvals the decisions carry (FORMAT.md,
	// section 8, rule 16).
	Approvals ApprovalCounts `json:"approvals"`
	// HeadHash and MerkleRoot are the seal's (recomputed), or those of the
	// intact entries of an unsealed bundle.
	HeadHash   string `json:"headHash,omitempty"`
	MerkleRoot string `json:"merkleRoot,omitempty"`
	// EntryHashes are the entry hashes of the entries that verified, in
	// order: a witness's checkpoint is checked against them (package
	// witness). Not in the JSON report.
	EntryHashes []Hash `json:"-"`
	// Signer is the key id of the seal signature ("" when unsigned); the
	// signature verified under the key the id names.
	Signer string `json:"signer,omitempty"`
	// Authenticated says the signature verified under VerifyOptions.PubKey.
	Authenticated bool `json:"authenticated"`
	// Files and Bytes count the files and bytes verified.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// FormatVersion is the bundle's formatVersion (manifest-start's).
	FormatVersion string `json:"formatVersion,omitempty"`
	// Unchecked says, one sentence each, what the bundle's format did not
	// let Verify check (nil when it checked everything the current format
	// promises): an aegis-evidence/1 bundle's decisions need not record the
	// action they judged, so decided = executed (FORMAT.md, section 8,
	// rule 15) is checked only where they do; the approvals of a bundle
	// without an approval key name no channel and carry no MAC (rule 16).
	// aegis verify prints them.
	Unchecked []string `json:"unchecked,omitempty"`
}

// unchecked lists what the bundle's format, or a bundle without an
// approval key, did not let the verifier check.
func (v *verifier) unchecked() []string {
	var notes []string
	if v.format != "" && !v.strict {
		notes = append(notes, fmt.Sprintf("decided = executed not checked: format %s does not require a decision to record the action it judged (%s does), so an executed action rewritten with its decision's action removed would verify; %d of %d executed actions had no decided action to compare with",
			v.format, contract.ManifestFormatVersion, v.uncompared, v.counts.Actions))
	}
	if n := v.report.Approvals.Unnamed; v.keyHash == "" && n > 0 {
		notes = append(notes, fmt.Sprintf("approval channels not checked: the manifest commits to no approval key (approvalKeyHash), so the bundle's %d approval(s) name no channel and carry no MAC: nothing shows where they were given or that the session's process wrote them (a rewrite that drops the key with every channel and MAC reads so too)", n))
	}
	return notes
}

// ApprovalCounts counts the approvals the decisions of a bundle carry.
type ApprovalCounts struct {
	// Channels counts them by the channel they name.
	Channels map[contract.ApprovalChannel]int `json:"channels,omitempty"`
	// Unnamed counts those that name no channel (a bundle without an
	// approval key).
	Unnamed int `json:"unnamed,omitempty"`
	// MACs counts the MACs checked under the revealed approval key: all
	// of them in a sealed bundle with a key, none in an unsealed one
	// (whose key was never revealed).
	MACs int `json:"macs"`
}

func (c *ApprovalCounts) add(channel string) {
	if channel == "" {
		c.Unnamed++
		return
	}
	if c.Channels == nil {
		c.Channels = map[contract.ApprovalChannel]int{}
	}
	c.Channels[contract.ApprovalChannel(channel)]++
}

// EffectCounts counts the decision records about effects of actions.
type EffectCounts struct {
	// Decisions counts them all; Denied those that denied an effect, and
	// Approved those that allowed one with a person's approval.
	Decisions int `json:"decisions"`
	Denied    int `json:"denied"`
	Approved  int `json:"approved"`
}

func (c *EffectCounts) add(d decisionFacts) {
	c.Decisions++
	switch d.Result {
	case string(contract.ResultDenied):
		c.Denied++
	case string(contract.ResultApproved):
		c.Approved++
	}
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
	// Rule names the place of FORMAT.md that states the rule the check
	// enforces, such as "section 8, rule 12"; when empty, RuleRef looks
	// Check up in the table of FORMAT.md, section 9.
	Rule string
	// Err is the underlying error, if any.
	Err error
}

// checkRules maps each check Verify names to the place of FORMAT.md that
// states its rule (the table of FORMAT.md, section 9, which a test keeps
// equal to this one).
var checkRules = map[string]string{
	"archive":         "section 12",
	"file type":       "section 2",
	"empty directory": "section 8, rule 14",
	"extra":           "section 9, step 4",
	"line feed":       "section 1, records",
	"canonical":       "section 1, canonical JSON",
	"schema":          "section 4",
	"index":           "section 5, rule 2",
	"chain: prevHash": "section 5, rule 2",
	"entryHash":       "section 5, rule 2",
	"time":            "section 8, rule 11",
	"order":           "section 5, rule 4",
	"line":            "section 5, rule 5",
	"duplicate":       "section 5, rule 5",
	"missing":         "section 5, rule 6",
	"manifest":        "section 6",
	"seal":            "section 6",
	"signature":       "section 7",
	"DSSE envelope":   "section 7",
	"event":           "section 8, rule 1",
	"model call":      "section 8, rule 1",
	"action line":     "section 8, rules 1 to 3",
	"decision":        "section 8, rules 1, 2 and 15, and Effects",
	"authorization":   "section 8, rule 2",
	"observation":     "section 8, rule 4",
	"dom snapshot":    "section 8, rule 4",
	"artifact":        "section 8, rule 5",
	"image":           "section 8, rule 6",
	"image record":    "section 8, rule 6",
	"action event":    "section 8, rule 12",
	"artifact copy":   "section 8, rule 13",
	"model images":    "section 8, rule 17",
	"decided action":  "section 8, rule 15",
	"contentHash (the record does not match its ledger entry)": "section 5, rule 6",
}

// RuleRef returns the place of FORMAT.md that states the rule the failed
// check enforces ("section 8, rule 12"), "" when there is none (a file
// that could not be read).
func (e *VerifyError) RuleRef() string {
	if e.Rule != "" {
		return e.Rule
	}
	return checkRules[e.Check]
}

// Error names the place (file, line, ledger entry), the check and the rule
// of FORMAT.md it enforces, and what was expected and found.
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
	if r := e.RuleRef(); r != "" {
		b.WriteString(" (FORMAT.md " + r + ")")
	}
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
// allow decision that judged exactly that action (FORMAT.md, section 8,
// rule 15; Report.Unchecked says what an older format did not let it
// check), and no missing or extra file or line. A valid sealed
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
