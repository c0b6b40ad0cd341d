package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/witness"
)

// The evidence commands: verify, pack, unpack, prove and keygen. The format
// they read and write is specified in evidence/FORMAT.md.

func init() {
	register(command{name: "verify", summary: "verify an evidence bundle (directory or .tar.zst) or an inclusion proof", run: runVerify})
	register(command{name: "pack", summary: "pack an evidence bundle into a deterministic .tar.zst", run: runPack})
	register(command{name: "unpack", summary: "unpack a packed evidence bundle, refusing unsafe paths", run: runUnpack})
	register(command{name: "prove", summary: "print the inclusion proof of one ledger entry of a sealed bundle", run: runProve})
	register(command{name: "keygen", summary: "make an Ed25519 key pair to sign evidence seals", run: runKeygen})
}

// progressThreshold is the bundle size from which verify reports progress
// on stderr.
const progressThreshold = 64 << 20

// parseArgs parses flags that may come before, between or after the
// positional arguments (aegis pack BUNDLE -o FILE), which the flag package
// alone does not allow. "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

const verifyUsage = `[--pubkey FILE] [--allow-unsealed] [--witness URL|file:PATH] [--json] BUNDLE|FILE.tar.zst
       aegis verify --proof FILE [--pubkey FILE] [--json] [BUNDLE]
       aegis verify [--pubkey FILE] [--json] SUITE.json|SUITE-DIR

Verifies an evidence bundle, a directory or a packed .tar.zst: every file
against its schema and canonical form, every hash, the hash chain, the
Merkle root and the seal, the DSSE signature when there is one (against
--pubkey when given: then the bundle must be signed by that key), that
every executed action was preceded by an allow decision or a bound
approval, and that no file or line is missing or extra. The first failure
is named: file, line, ledger entry, and what was expected.

An unsealed bundle (a session still running, or a writer that was killed)
is reported as "unsealed, N intact entries", exit 1; with
--allow-unsealed it is exit 0 when its N entries all verify.

With --proof, verifies an inclusion proof made by aegis prove, without the
bundle: the entry, its audit path to the sealed manifest's Merkle root,
the record when the proof carries it, and the seal's signature (against
--pubkey when given). With a BUNDLE too, the bundle is verified and must
be the one the proof is about.

With --witness (an http(s):// witness, aegis witness serve, or file:PATH,
the log file the run was given), the bundle must also match the latest
checkpoint the witness holds for its session, signed by the bundle's
signer: of exactly its entries, Merkle root and head hash once sealed. A
truncated bundle, one rewritten and re-signed, one whose seal the witness
never saw, or a witness that cannot be asked, fails (exit 1).

With a suite's index (suite.json, from aegis suite, or the directory
holding it), verifies the suite whole: the index against its schema, and
every task's bundle, which must lie inside the index's directory (no ..,
no absolute path, no symbolic link), verify as above (against --pubkey
when given), and agree with its line: the end manifest's status, the
seal's head hash, and the actions, denials and approvals as aegis report
counts them. A bundle in the directory that the index does not list
fails too. One line per task: "ok" on stdout, "FAIL" and what differs on
stderr.

Exit status: 0 valid, 1 invalid or unsealed (the first failure named;
for a suite, any task), 2 usage or unreadable input, 3 interrupted
(Ctrl-C) before a verdict.`

// verifyResult is the --json output of verify.
type verifyResult struct {
	Path    string                `json:"path,omitempty"`
	Valid   bool                  `json:"valid"`
	Report  *evidence.Report      `json:"report,omitempty"`
	Proof   *evidence.ProofReport `json:"proof,omitempty"`
	Witness *witness.Anchored     `json:"witness,omitempty"`
	Failure *verifyFailure        `json:"failure,omitempty"`
}

type verifyFailure struct {
	Message string `json:"message"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Entry   *int   `json:"entry,omitempty"`
	Check   string `json:"check,omitempty"`
	Want    string `json:"want,omitempty"`
	Got     string `json:"got,omitempty"`
	// Unsealed is set for an unsealed bundle whose entries verify.
	Unsealed bool `json:"unsealed,omitempty"`
}

func failureOf(err error) *verifyFailure {
	f := &verifyFailure{Message: err.Error()}
	var ve *evidence.VerifyError
	if errors.As(err, &ve) {
		f.File, f.Line, f.Check, f.Want, f.Got = ve.File, ve.Line, ve.Check, ve.Want, ve.Got
		if ve.Entry >= 0 {
			e := ve.Entry
			f.Entry = &e
		}
	}
	f.Unsealed = errors.Is(err, evidence.ErrUnsealed)
	return f
}

func runVerify(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("verify", verifyUsage, stdio)
	pubFile := fs.String("pubkey", "", "trusted public key (PEM from aegis keygen, or an ed25519: key id): the seal must be signed by it")
	proofFile := fs.String("proof", "", "verify this inclusion proof (from aegis prove)")
	allowUnsealed := fs.Bool("allow-unsealed", false, "accept an unsealed bundle whose entries all verify (exit 0)")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	witnessSpec := fs.String("witness", "", "the bundle must match the latest checkpoint of the witness at `URL` or file:PATH")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || len(pos) == 0 && *proofFile == "" {
		fs.Usage()
		return usageError("verify takes one BUNDLE (or --proof FILE), got %d arguments", len(pos))
	}
	var pub ed25519.PublicKey
	if *pubFile != "" {
		if pub, err = evidence.LoadPublicKey(*pubFile); err != nil {
			return usageError("%v", err)
		}
	}
	res := verifyResult{Valid: true}
	if *witnessSpec != "" && len(pos) == 0 {
		return usageError("--witness needs a BUNDLE")
	}
	var bundleErr, proofErr, witnessErr error
	if len(pos) == 1 {
		if index, ok := suiteIndexPath(pos[0]); ok {
			if *proofFile != "" || *witnessSpec != "" || *allowUnsealed {
				return usageError("--proof, --witness and --allow-unsealed are about one bundle, not a suite (%s)", index)
			}
			return verifySuite(ctx, index, pub, *asJSON, stdio)
		}
		if err := notBundle(pos[0]); err != nil {
			return err
		}
		res.Path = pos[0]
		opts := evidence.VerifyOptions{PubKey: pub, AllowUnsealed: *allowUnsealed}
		opts.Progress = progressPrinter(stdio.Err, "verify")
		rep, err := evidence.Verify(ctx, pos[0], opts)
		if rep == nil { // unreadable path
			return usageError("%v", err)
		}
		res.Report, bundleErr = rep, err
	}
	if *proofFile != "" && bundleErr == nil {
		data, err := readInput(*proofFile, stdio)
		if err != nil {
			return usageError("read %s: %v", *proofFile, err)
		}
		p, err := evidence.ParseProof(data)
		if err != nil {
			return usageError("%s: %v", *proofFile, err)
		}
		pr, err := evidence.VerifyProof(p, pub)
		res.Proof, proofErr = pr, err
		if err == nil && res.Report != nil && (pr.MerkleRoot != res.Report.MerkleRoot || pr.SessionID != res.Report.SessionID) {
			proofErr = fmt.Errorf("the proof is about session %s (root %s), not about %s (session %s, root %s)",
				pr.SessionID, pr.MerkleRoot, res.Path, res.Report.SessionID, res.Report.MerkleRoot)
		}
	}
	if *witnessSpec != "" && bundleErr == nil {
		res.Witness, witnessErr = verifyWitness(ctx, *witnessSpec, res.Report)
		var ee *exitError
		if errors.As(witnessErr, &ee) {
			return witnessErr // a usage error
		}
	}
	failure := bundleErr
	if failure == nil {
		failure = proofErr
	}
	if failure == nil {
		failure = witnessErr
	}
	if failure != nil {
		if errors.Is(context.Cause(ctx), ErrInterrupted) {
			// No verdict: the verification did not end.
			return asInterrupted(ctx, strings.TrimSpace("verify "+strings.Join(pos, " ")), failure)
		}
		res.Valid = false
		res.Failure = failureOf(failure)
	}
	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printVerify(stdio, res, bundleErr, proofErr, *proofFile != "")
		if *witnessSpec != "" && bundleErr == nil {
			printWitness(stdio, res.Witness, witnessErr)
		}
	}
	if failure != nil {
		return exitCode(ExitFailure, nil)
	}
	return nil
}

// effectsNote says how many effects of actions the bundle judged, when
// any: "; 3 effects judged (2 denied, 1 approved)".
func effectsNote(c evidence.EffectCounts) string {
	if c.Decisions == 0 {
		return ""
	}
	return fmt.Sprintf("; %d effect decisions (%d denied, %d approved)", c.Decisions, c.Denied, c.Approved)
}

// approvalsNote says, for a verified bundle, how many approvals it holds by
// channel and how many MACs were checked (evidence/FORMAT.md, section 8,
// rule 16), such as "; approvals: 1 live (1 MAC checked)"; "" when none.
func approvalsNote(c evidence.ApprovalCounts) string {
	var parts []string
	for _, ch := range []contract.ApprovalChannel{contract.ApprovalChannelTerminal, contract.ApprovalChannelPopup,
		contract.ApprovalChannelLive, contract.ApprovalChannelRule, contract.ApprovalChannelProgram} {
		if n := c.Channels[ch]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, ch))
		}
	}
	if c.Unnamed > 0 {
		parts = append(parts, fmt.Sprintf("%d without a channel", c.Unnamed))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("; approvals: %s (%d MAC checked)", strings.Join(parts, ", "), c.MACs)
}

// printVerify writes the human-readable verdict: successes on stdout,
// failures on stderr.
func printVerify(stdio Stdio, res verifyResult, bundleErr, proofErr error, proofGiven bool) {
	if r := res.Report; r != nil {
		switch {
		case errors.Is(bundleErr, evidence.ErrUnsealed):
			fmt.Fprintf(stdio.Err, "%s: %v\n", res.Path, bundleErr)
			return
		case bundleErr != nil:
			fmt.Fprintf(stdio.Err, "%s: INVALID: %v\n", res.Path, bundleErr)
			return
		case r.Sealed:
			sig := "unsigned"
			if r.Signer != "" {
				sig = "signed by " + r.Signer + " (not authenticated: no --pubkey)"
				if r.Authenticated {
					sig = "signed by " + r.Signer + ", authenticated"
				}
			}
			fmt.Fprintf(stdio.Out, "%s: valid: session %s %s, sealed, %d entries, merkle root %s, %s%s%s\n",
				res.Path, r.SessionID, r.Status, r.Entries, r.MerkleRoot, sig, effectsNote(r.Effects), approvalsNote(r.Approvals))
		default:
			msg := fmt.Sprintf("%s: unsealed, %d intact entries, all verified", res.Path, r.Entries)
			if r.Incomplete != "" {
				msg += "; incomplete: " + r.Incomplete
			}
			fmt.Fprintln(stdio.Out, msg)
		}
		for _, u := range r.Unchecked { // what the bundle's format did not let verify check: never silent
			fmt.Fprintf(stdio.Out, "%s: note: %s\n", res.Path, u)
		}
	}
	if !proofGiven {
		return
	}
	if proofErr != nil {
		fmt.Fprintf(stdio.Err, "proof: INVALID: %v\n", proofErr)
		return
	}
	p := res.Proof
	what := p.Entry.File
	if p.Entry.Line > 0 {
		what = fmt.Sprintf("%s line %d", p.Entry.File, p.Entry.Line)
	}
	auth := "root not authenticated: compare it with a trusted copy, or pass --pubkey"
	if p.Authenticated {
		auth = "seal signed by " + p.Signer + ", authenticated"
	}
	content := "record not included"
	if p.ContentVerified {
		content = "record verified"
	}
	fmt.Fprintf(stdio.Out, "proof: valid: entry %d (%s %s) of session %s is in the sealed ledger of %d entries, merkle root %s; %s; %s\n",
		p.Entry.Index, p.Entry.Kind, what, p.SessionID, p.TreeSize, p.MerkleRoot, content, auth)
}

// progressPrinter returns a progress callback that reports on w once the
// bundle is large enough for it to matter.
func progressPrinter(w io.Writer, what string) func(done, total int64) {
	return func(done, total int64) {
		if total < progressThreshold {
			return
		}
		fmt.Fprintf(w, "\r%s: %d/%d MiB", what, done>>20, total>>20)
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}

const packUsage = `BUNDLE -o FILE.tar.zst

Packs the evidence bundle in directory BUNDLE into one file: a tar archive
compressed with zstd, deterministic (the same bundle always packs to the
same bytes): regular files sorted by path, fixed modes, owners and times.
Pack does not judge the bundle: run aegis verify on the result. It refuses
to overwrite FILE. "-o -" writes to stdout.

Exit status: 0 packed, 2 usage or unreadable bundle.`

func runPack(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("pack", packUsage, stdio)
	out := fs.String("o", "", "the archive to write (required; - for stdout)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *out == "" {
		fs.Usage()
		return usageError("pack takes BUNDLE and -o FILE")
	}
	if fi, err := os.Stat(pos[0]); err != nil || !fi.IsDir() {
		return usageError("pack: %s is not a bundle directory", pos[0])
	}
	if *out == "-" {
		if err := evidence.Pack(ctx, pos[0], stdio.Out); err != nil {
			return usageError("%v", err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".aegis-pack-*")
	if err != nil {
		return usageError("pack: %v", err)
	}
	defer os.Remove(tmp.Name())
	cw := &countingWriter{w: tmp}
	if err := evidence.Pack(ctx, pos[0], cw); err != nil {
		tmp.Close()
		return usageError("%v", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return usageError("pack: %v", err)
	}
	if err := tmp.Close(); err != nil {
		return usageError("pack: %v", err)
	}
	// Link rather than rename: it fails when the target exists.
	if err := os.Link(tmp.Name(), *out); err != nil {
		return usageError("pack: %v (not overwritten)", err)
	}
	fmt.Fprintf(stdio.Out, "%s: %d bytes\n", *out, cw.n)
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

// Write writes p and counts it.
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

const unpackUsage = `FILE.tar.zst -C DIR

Unpacks a packed evidence bundle into DIR, which must not exist or be
empty. Refuses, and removes what it extracted, any archive with a path
that is absolute or climbs out (..), a link, device or directory entry, a
duplicate path, a file larger than 256 MiB, more than 100000 files or
8 GiB in all. "-" reads stdin.

Exit status: 0 unpacked, 1 the archive was refused, 2 usage.`

func runUnpack(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("unpack", unpackUsage, stdio)
	dir := fs.String("C", "", "the directory to unpack into (required)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *dir == "" {
		fs.Usage()
		return usageError("unpack takes FILE.tar.zst and -C DIR")
	}
	var r io.Reader = stdio.In
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return usageError("unpack: %v", err)
		}
		defer f.Close()
		r = f
	}
	if err := evidence.Unpack(ctx, r, *dir, evidence.UnpackOptions{}); err != nil {
		var ue *evidence.UnpackError
		if errors.As(err, &ue) {
			return exitCode(ExitFailure, fmt.Errorf("%s: %w", pos[0], err))
		}
		return usageError("%v", err)
	}
	fmt.Fprintf(stdio.Out, "%s: unpacked into %s\n", pos[0], *dir)
	return nil
}

const proveUsage = `[--no-content] [-o FILE] BUNDLE ENTRY

Prints, as JSON, the inclusion proof of one entry of a sealed bundle (a
directory or a .tar.zst), after verifying the bundle: the ledger entry, its
RFC 6962 audit path, the sealed manifest (whose merkleRoot the path leads
to) and its DSSE signature when signed, and the record itself unless
--no-content. ENTRY is an entry index (7), a file (dom/2.json) or a file
and line (actions.jsonl:3). Check it with: aegis verify --proof FILE.

Exit status: 0 printed, 1 the bundle does not verify or has no such entry,
2 usage.`

func runProve(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("prove", proveUsage, stdio)
	noContent := fs.Bool("no-content", false, "leave the record out of the proof (prove only that the entry is in the ledger)")
	out := fs.String("o", "", "write the proof to FILE instead of stdout")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return usageError("prove takes BUNDLE and ENTRY, got %d arguments", len(pos))
	}
	if _, err := os.Stat(pos[0]); err != nil {
		return usageError("prove: %v", err)
	}
	if err := notBundle(pos[0]); err != nil {
		return err
	}
	p, err := evidence.Prove(ctx, pos[0], pos[1], !*noContent)
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *out == "" {
		_, err = stdio.Out.Write(b)
		return err
	}
	if err := writeNew(*out, b, 0o644); err != nil {
		return usageError("prove: %v", err)
	}
	return nil
}

const keygenUsage = `-o PREFIX

Makes an Ed25519 key pair for signing evidence seals: PREFIX.key, the
private key (PEM, PKCS #8, mode 0600), and PREFIX.pub, the public key
(PEM) that auditors pass to aegis verify --pubkey. Refuses to overwrite
either file. Prints the key id the seal signatures will carry.

Exit status: 0 written, 2 usage or a file exists.`

func runKeygen(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("keygen", keygenUsage, stdio)
	prefix := fs.String("o", "", "the path prefix of the key files (required)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *prefix == "" {
		fs.Usage()
		return usageError("keygen takes -o PREFIX and no arguments")
	}
	keyPath, pubPath := *prefix+".key", *prefix+".pub"
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Lstat(p); err == nil {
			return usageError("keygen: %s exists; not overwritten", p)
		}
	}
	pub, priv, err := evidence.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	kb, err := evidence.MarshalPrivateKey(priv)
	if err != nil {
		return err
	}
	pb, err := evidence.MarshalPublicKey(pub)
	if err != nil {
		return err
	}
	if err := writeNew(keyPath, kb, 0o600); err != nil {
		return usageError("keygen: %v", err)
	}
	if err := writeNew(pubPath, pb, 0o644); err != nil {
		os.Remove(keyPath)
		return usageError("keygen: %v", err)
	}
	fmt.Fprintf(stdio.Out, "%s (private, keep it secret)\n%s (public)\nkey id %s\n", keyPath, pubPath, evidence.KeyID(pub))
	return nil
}

// writeNew writes a file that must not exist yet, with mode perm.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
