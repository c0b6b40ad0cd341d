package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/strictjson"
	"github.com/aegis-run/aegis/schemas"
)

// ProofFormat is the format of an inclusion proof file.
const ProofFormat = "aegis-inclusion-proof/1"

// Proof proves that one ledger entry (and, optionally, its record) is part
// of a sealed bundle, without the rest of the bundle: the entry, its RFC
// 6962 audit path, and the sealed manifest whose merkleRoot the path leads
// to, with the seal's DSSE envelope when the bundle is signed.
type Proof struct {
	// Format is ProofFormat.
	Format string `json:"format"`
	// Entry is the ledger entry proven.
	Entry contract.LedgerEntry `json:"entry"`
	// TreeSize is the number of ledger entries (the seal's entries).
	TreeSize int `json:"treeSize"`
	// Path is the audit path, from the leaf up, in hex.
	Path []string `json:"path"`
	// Manifest is the sealed manifest.json.
	Manifest json.RawMessage `json:"manifest"`
	// Envelope is provenance/seal.dsse.json when the bundle is signed.
	Envelope json.RawMessage `json:"envelope,omitempty"`
	// Content is the record's bytes in standard base64; "" when left out.
	Content string `json:"content,omitempty"`
}

// Prove verifies the sealed bundle at path (a directory or an archive)
// and returns the inclusion proof of one entry, named by its index ("7"),
// by its file ("dom/2.json") or by file and line ("actions.jsonl:3").
// withContent includes the record's bytes.
func Prove(ctx context.Context, path, ref string, withContent bool) (*Proof, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: prove: %w", err)
	}
	dir := path
	if !fi.IsDir() {
		tmp, err := os.MkdirTemp("", "aegis-prove-")
		if err != nil {
			return nil, fmt.Errorf("evidence: prove: %w", err)
		}
		defer os.RemoveAll(tmp)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("evidence: prove: %w", err)
		}
		defer f.Close()
		dir = filepath.Join(tmp, "bundle")
		if err := Unpack(ctx, f, dir, UnpackOptions{}); err != nil {
			return nil, fmt.Errorf("evidence: prove: %w", err)
		}
	}
	if _, err := Verify(ctx, dir, VerifyOptions{}); err != nil {
		return nil, fmt.Errorf("evidence: prove: the bundle does not verify: %w", err)
	}
	read := func(f string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, filepath.FromSlash(f))) }
	ledger, err := read(FileLedger)
	if err != nil {
		return nil, fmt.Errorf("evidence: prove: %w", err)
	}
	var entries []contract.LedgerEntry
	var hashes []Hash
	for _, line := range bytes.Split(bytes.TrimSuffix(ledger, []byte("\n")), []byte("\n")) {
		var e contract.LedgerEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("evidence: prove: %w", err)
		}
		h, err := ParseHash(e.EntryHash)
		if err != nil {
			return nil, fmt.Errorf("evidence: prove: %w", err)
		}
		entries, hashes = append(entries, e), append(hashes, h)
	}
	idx, err := findEntry(entries, ref)
	if err != nil {
		return nil, fmt.Errorf("evidence: prove: %w", err)
	}
	path6962, err := InclusionProof(hashes, idx)
	if err != nil {
		return nil, fmt.Errorf("evidence: prove: %w", err)
	}
	p := &Proof{Format: ProofFormat, Entry: entries[idx], TreeSize: len(entries)}
	for _, h := range path6962 {
		p.Path = append(p.Path, h.String())
	}
	m, err := read(FileManifest)
	if err != nil {
		return nil, fmt.Errorf("evidence: prove: %w", err)
	}
	p.Manifest = bytes.TrimSuffix(m, []byte("\n"))
	if env, err := read(FileSeal); err == nil {
		p.Envelope = bytes.TrimSuffix(env, []byte("\n"))
	}
	if withContent {
		c, err := recordBytes(read, entries[idx])
		if err != nil {
			return nil, fmt.Errorf("evidence: prove: %w", err)
		}
		p.Content = base64.StdEncoding.EncodeToString(c)
	}
	return p, nil
}

// findEntry resolves an entry reference.
func findEntry(entries []contract.LedgerEntry, ref string) (int, error) {
	if i, err := strconv.Atoi(ref); err == nil {
		if i < 0 || i >= len(entries) {
			return 0, fmt.Errorf("entry %d is not in a ledger of %d entries", i, len(entries))
		}
		return i, nil
	}
	file, lineText, hasLine := strings.Cut(ref, ":")
	line := 0
	if hasLine {
		n, err := strconv.Atoi(lineText)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("entry %q: want INDEX, FILE or FILE:LINE", ref)
		}
		line = n
	}
	for i, e := range entries {
		if e.File == file && e.Line == line {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no ledger entry records %s", ref)
}

// recordBytes returns the bytes an entry commits to.
func recordBytes(read func(string) ([]byte, error), e contract.LedgerEntry) ([]byte, error) {
	b, err := read(e.File)
	if err != nil {
		return nil, err
	}
	if e.Line > 0 {
		lines := bytes.SplitAfter(b, []byte("\n"))
		if e.Line > len(lines) {
			return nil, fmt.Errorf("%s has no line %d", e.File, e.Line)
		}
		return bytes.TrimSuffix(lines[e.Line-1], []byte("\n")), nil
	}
	switch e.Kind {
	case contract.LedgerImage, contract.LedgerDOMSnapshot:
		return b, nil
	}
	return bytes.TrimSuffix(b, []byte("\n")), nil
}

// ProofReport is what VerifyProof established.
type ProofReport struct {
	// SessionID is the session of the bundle.
	SessionID string `json:"sessionId"`
	// Entry is the entry proven.
	Entry contract.LedgerEntry `json:"entry"`
	// TreeSize and MerkleRoot are the seal's.
	TreeSize   int    `json:"treeSize"`
	MerkleRoot string `json:"merkleRoot"`
	// ContentVerified says the proof carried the record and it matched.
	ContentVerified bool `json:"contentVerified"`
	// Signer is the key id of the seal's signature, "" when unsigned.
	Signer string `json:"signer,omitempty"`
	// Authenticated says the signature verified under the trusted key.
	Authenticated bool `json:"authenticated"`
}

// proofMembers are the members of a proof file, and whether each is
// required (FORMAT.md, section 11).
var proofMembers = map[string]bool{
	"format": true, "entry": true, "treeSize": true, "path": true, "manifest": true,
	"envelope": false, "content": false,
}

// ParseProof decodes a proof file strictly (FORMAT.md, section 11): one
// JSON object without duplicate members or data after it, of exactly the
// proof's members, named exactly, with the required ones present and none
// null; its format ProofFormat; and its entry a valid ledger entry, held
// as its ledger line holds it.
func ParseProof(data []byte) (*Proof, error) {
	// The manifest nests one level below the proof: a manifest of the
	// deepest nesting canonical JSON allows (section 1) has its place.
	tree, err := strictjson.Parse(data, canonjson.MaxDepth+1)
	if err != nil {
		return nil, fmt.Errorf("evidence: proof: %w", err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return nil, errors.New("evidence: proof: not a JSON object")
	}
	for k, v := range m {
		if _, known := proofMembers[k]; !known {
			return nil, fmt.Errorf("evidence: proof: unknown member %q", k)
		}
		if v == nil {
			return nil, fmt.Errorf("evidence: proof: member %q is null", k)
		}
	}
	for k, required := range proofMembers {
		if _, ok := m[k]; required && !ok {
			return nil, fmt.Errorf("evidence: proof: member %q missing", k)
		}
	}
	if err := schemas.ValidateValue(schemas.KindLedgerEntry, m["entry"]); err != nil {
		return nil, fmt.Errorf("evidence: proof: entry: %w", err)
	}
	canon, err := canonjson.EncodeValue(tree)
	if err != nil {
		return nil, fmt.Errorf("evidence: proof: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(canon))
	d.DisallowUnknownFields()
	var p Proof
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("evidence: proof: %w", err)
	}
	if p.Format != ProofFormat {
		return nil, fmt.Errorf("evidence: proof: format %q, want %q", p.Format, ProofFormat)
	}
	// The entry decoded is the entry given: nothing was dropped or
	// renamed on the way (its entryHash is computed over the decoded one).
	given, err := canonjson.EncodeValue(m["entry"])
	if err != nil {
		return nil, fmt.Errorf("evidence: proof: entry: %w", err)
	}
	if decoded, err := canonjson.Marshal(p.Entry); err != nil || !bytes.Equal(decoded, given) {
		return nil, errors.New("evidence: proof: entry: not a ledger entry as its line holds it")
	}
	return &p, nil
}

// VerifyProof checks an inclusion proof: the entry is well formed and its
// entryHash recomputes, its audit path leads to the merkleRoot of the
// sealed manifest it carries, the record (when carried) matches the
// entry's contentHash, and the seal's signature (when carried) verifies
// under the key it names and, when pub is given, under pub, which then is
// required. Without pub the root is only as trustworthy as the copy of the
// manifest: compare its merkleRoot with one you trust.
func VerifyProof(p *Proof, pub ed25519.PublicKey) (*ProofReport, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("evidence: proof of entry %d: %s", p.Entry.Index, fmt.Sprintf(format, args...))
	}
	// The entry.
	entryJSON, err := canonjson.Marshal(p.Entry)
	if err != nil {
		return nil, fail("%v", err)
	}
	tree, err := canonjson.ParseCanonical(entryJSON)
	if err != nil {
		return nil, fail("%v", err)
	}
	if err := schemas.ValidateValue(schemas.KindLedgerEntry, tree); err != nil {
		return nil, fail("entry: %v", err)
	}
	unhashed, err := encodeEntry(p.Entry, false)
	if err != nil {
		return nil, fail("%v", err)
	}
	eh := entryHash(unhashed)
	if eh.String() != p.Entry.EntryHash {
		return nil, fail("entryHash %s, recomputed %s", p.Entry.EntryHash, eh)
	}
	// The sealed manifest.
	manifest, err := canonjson.Transform(p.Manifest)
	if err != nil {
		return nil, fail("manifest: %v", err)
	}
	mt, err := canonjson.ParseCanonical(manifest)
	if err != nil {
		return nil, fail("manifest: %v", err)
	}
	if err := schemas.ValidateValue(schemas.KindManifest, mt); err != nil {
		return nil, fail("manifest: %v", err)
	}
	seal := member(mt, "seal")
	if seal == nil {
		return nil, fail("the manifest is not sealed")
	}
	root, err := ParseHash(strMember(seal, "merkleRoot"))
	if err != nil {
		return nil, fail("manifest: merkleRoot: %v", err)
	}
	if n := intMember(seal, "entries"); n != int64(p.TreeSize) {
		return nil, fail("treeSize %d, but the seal says %d entries", p.TreeSize, n)
	}
	if p.Entry.Index == p.TreeSize-1 && strMember(seal, "headHash") != p.Entry.EntryHash {
		return nil, fail("the last entry's hash is not the seal's headHash")
	}
	path := make([]Hash, len(p.Path))
	for i, s := range p.Path {
		if path[i], err = ParseHash(s); err != nil {
			return nil, fail("path[%d]: %v", i, err)
		}
	}
	if err := VerifyInclusion(uint64(p.Entry.Index), uint64(p.TreeSize), eh, path, root); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	r := &ProofReport{SessionID: strMember(mt, "sessionId"), Entry: p.Entry, TreeSize: p.TreeSize, MerkleRoot: root.String()}
	// The record.
	if p.Content != "" {
		c, err := strictBase64(p.Content)
		if err != nil {
			return nil, fail("content: %v", err)
		}
		if got := ContentHash(p.Entry.Kind, sha256.Sum256(c)).String(); got != p.Entry.ContentHash {
			return nil, fail("content does not match contentHash %s (got %s)", p.Entry.ContentHash, got)
		}
		r.ContentVerified = true
	}
	// The signature.
	signer := strMember(mt, "signer")
	switch {
	case signer != "" && len(p.Envelope) == 0:
		return nil, fail("the manifest names signer %s but the proof carries no envelope", signer)
	case signer == "" && len(p.Envelope) > 0:
		return nil, fail("an envelope, but the manifest names no signer")
	case signer == "" && pub != nil:
		return nil, fail("the bundle is not signed, but a trusted key was given")
	case signer != "":
		env, err := canonjson.Transform(p.Envelope)
		if err != nil {
			return nil, fail("envelope: %v", err)
		}
		et, err := canonjson.ParseCanonical(env)
		if err != nil {
			return nil, fail("envelope: %v", err)
		}
		auth, err := openEnvelope(et, signer, manifest, pub)
		if err != nil {
			return nil, fail("%v", err)
		}
		r.Signer, r.Authenticated = signer, auth
	}
	return r, nil
}
