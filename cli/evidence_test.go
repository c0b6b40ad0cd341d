package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/evidence"
	"github.com/klauspost/compress/zstd"
)

// The example bundle of evidence/FORMAT.md: a sealed, signed session with a
// record of every kind, and the public key it is signed with.
var (
	exampleBundle = filepath.Join("..", "evidence", "testdata", "example", "cus_01HZX4K9")
	examplePub    = filepath.Join("..", "evidence", "testdata", "example", "example.pub")
)

// copyBundle copies the example bundle into a temporary directory.
func copyBundle(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "cus_01HZX4K9")
	err := filepath.WalkDir(exampleBundle, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(exampleBundle, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// unseal turns a copy of the example into the bundle a writer killed just
// before its seal leaves: the manifest as it started, the ledger without
// its manifest-end entry.
func unseal(t *testing.T, dir string) {
	t.Helper()
	start, err := os.ReadFile(filepath.Join(dir, "provenance", "manifest-start.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), start, 0o644)
	os.Remove(filepath.Join(dir, "provenance", "manifest-end.json"))
	os.Remove(filepath.Join(dir, "provenance", "seal.dsse.json"))
	ledger, _ := os.ReadFile(filepath.Join(dir, "provenance", "ledger.json"))
	lines := bytes.SplitAfter(ledger, []byte("\n"))
	os.WriteFile(filepath.Join(dir, "provenance", "ledger.json"), bytes.Join(lines[:len(lines)-2], nil), 0o644)
}

func TestVerifyCommand(t *testing.T) {
	good := copyBundle(t)
	tampered := copyBundle(t)
	actions := filepath.Join(tampered, "actions.jsonl")
	b, _ := os.ReadFile(actions)
	os.WriteFile(actions, bytes.Replace(b, []byte(`"ok":false`), []byte(`"ok":true `), 1), 0o644)
	unsealed := copyBundle(t)
	unseal(t, unsealed)
	otherPub := filepath.Join(t.TempDir(), "other")
	if code, _, errOut := run(t, "", "keygen", "-o", otherPub); code != ExitOK {
		t.Fatal(errOut)
	}
	badKey := filepath.Join(t.TempDir(), "bad.pub")
	os.WriteFile(badKey, []byte("not a key"), 0o644)

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  []string
	}{
		{"valid", []string{"verify", good}, ExitOK, "valid: session cus_01HZX4K9 completed, sealed, 27 entries", nil},
		{"valid, not authenticated", []string{"verify", good}, ExitOK, "not authenticated: no --pubkey", nil},
		{"valid, approvals by channel", []string{"verify", good}, ExitOK, "; approvals: 1 live (1 MAC checked)", nil},
		{"valid and authenticated", []string{"verify", "--pubkey", examplePub, good}, ExitOK, "authenticated", nil},
		{"flag after the bundle", []string{"verify", good, "--pubkey", examplePub}, ExitOK, "authenticated", nil},
		{"another key", []string{"verify", "--pubkey", otherPub + ".pub", good}, ExitFailure, "", []string{"INVALID", "provenance/seal.dsse.json", "not by the trusted key"}},
		{"tampered names the line", []string{"verify", tampered}, ExitFailure, "", []string{"INVALID", "actions.jsonl line 3 (ledger entry 17): contentHash"}},
		{"unsealed", []string{"verify", unsealed}, ExitFailure, "", []string{"unsealed, 26 intact entries"}},
		{"unsealed allowed", []string{"verify", "--allow-unsealed", unsealed}, ExitOK, "unsealed, 26 intact entries, all verified", nil},
		{"unsealed with a key", []string{"verify", "--allow-unsealed", "--pubkey", examplePub, unsealed}, ExitFailure, "", []string{"unsealed, 26 intact entries"}},
		{"no bundle", []string{"verify"}, ExitUsage, "", []string{"verify takes one BUNDLE"}},
		{"two bundles", []string{"verify", good, good}, ExitUsage, "", []string{"got 2 arguments"}},
		{"missing bundle", []string{"verify", filepath.Join(good, "nope")}, ExitUsage, "", []string{"no such file"}},
		{"bad key file", []string{"verify", "--pubkey", badKey, good}, ExitUsage, "", []string{"PUBLIC KEY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q, want %q", errOut, w)
				}
			}
		})
	}
}

func TestVerifyJSON(t *testing.T) {
	tampered := copyBundle(t)
	os.WriteFile(filepath.Join(tampered, "artifacts", "extra.json"), []byte("{}\n"), 0o644)
	code, out, _ := run(t, "", "verify", "--json", tampered)
	if code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
	var res struct {
		Valid   bool
		Failure struct {
			File, Check, Message string
			Entry                *int
		}
		Report evidence.Report
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Valid || res.Failure.File != "artifacts/extra.json" || res.Failure.Check != "extra" || res.Failure.Entry != nil || res.Report.Entries != 27 {
		t.Errorf("got %+v", res)
	}
	code, out, _ = run(t, "", "verify", "--json", "--pubkey", examplePub, copyBundle(t))
	if code != ExitOK || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"authenticated": true`) {
		t.Errorf("exit %d: %s", code, out)
	}
}

func TestPackAndUnpackCommands(t *testing.T) {
	dir := copyBundle(t)
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a.tar.zst"), filepath.Join(tmp, "b.tar.zst")
	for _, out := range []string{a, b} {
		if code, _, errOut := run(t, "", "pack", dir, "-o", out); code != ExitOK {
			t.Fatalf("pack: %s", errOut)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) || len(ab) == 0 {
		t.Fatal("two packs of one bundle differ")
	}
	if code, _, errOut := run(t, "", "pack", dir, "-o", a); code != ExitUsage || !strings.Contains(errOut, "not overwritten") {
		t.Errorf("pack over an existing file: exit %d %q", code, errOut)
	}
	if code, out, errOut := run(t, "", "verify", "--pubkey", examplePub, a); code != ExitOK || !strings.Contains(out, "authenticated") {
		t.Errorf("verify the archive: exit %d %q %q", code, out, errOut)
	}
	out := filepath.Join(tmp, "unpacked")
	if code, _, errOut := run(t, "", "unpack", a, "-C", out); code != ExitOK {
		t.Fatalf("unpack: %s", errOut)
	}
	if code, _, errOut := run(t, "", "verify", out); code != ExitOK {
		t.Errorf("verify the unpacked bundle: %s", errOut)
	}
	// Pack, unpack, pack: the same bytes.
	c := filepath.Join(tmp, "c.tar.zst")
	run(t, "", "pack", "-o", c, out)
	if cb, _ := os.ReadFile(c); !bytes.Equal(cb, ab) {
		t.Error("pack, unpack, pack changed the bytes")
	}
	if code, _, errOut := run(t, "", "unpack", a, "-C", out); code != ExitUsage || !strings.Contains(errOut, "not empty") {
		t.Errorf("unpack into a full directory: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{{"pack", dir}, {"pack", "-o", c}, {"unpack", a}, {"unpack", "-C", out}, {"pack", filepath.Join(dir, "nope"), "-o", filepath.Join(tmp, "d")}} {
		if code, _, _ := run(t, "", args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// An archive that climbs out of the target is refused, exit 1.
	evil := filepath.Join(tmp, "evil.tar.zst")
	os.WriteFile(evil, evilArchive(t), 0o644)
	if code, _, errOut := run(t, "", "unpack", evil, "-C", filepath.Join(tmp, "e")); code != ExitFailure || !strings.Contains(errOut, "escapes") {
		t.Errorf("unpack an escaping archive: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(tmp, "escaped")); !os.IsNotExist(err) {
		t.Error("a file escaped")
	}
}

// evilArchive is a .tar.zst whose one member is ../escaped.
func evilArchive(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	raw := rawTar("../escaped", "x")
	zw := zstdWriter(t, &b)
	zw.Write(raw)
	zw.Close()
	return b.Bytes()
}

func TestProveCommand(t *testing.T) {
	dir := copyBundle(t)
	tmp := t.TempDir()
	proof := filepath.Join(tmp, "proof.json")
	if code, _, errOut := run(t, "", "prove", dir, "actions.jsonl:2", "-o", proof); code != ExitOK {
		t.Fatalf("prove: %s", errOut)
	}
	code, out, errOut := run(t, "", "verify", "--proof", proof, "--pubkey", examplePub)
	if code != ExitOK || !strings.Contains(out, "proof: valid: entry 11 (action actions.jsonl line 2)") || !strings.Contains(out, "record verified") || !strings.Contains(out, "authenticated") {
		t.Errorf("verify --proof: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, "", "verify", "--proof", proof, dir); code != ExitOK || !strings.Contains(out, "proof: valid") {
		t.Errorf("verify --proof with its bundle: exit %d %q", code, out)
	}
	if code, out, _ := run(t, "", "verify", "--proof", proof); code != ExitOK || !strings.Contains(out, "root not authenticated") {
		t.Errorf("verify --proof without a key: exit %d %q", code, out)
	}
	// To stdout, without the record.
	code, out, _ = run(t, "", "prove", "--no-content", dir, "7")
	if code != ExitOK || strings.Contains(out, `"content"`) || !strings.Contains(out, `"format": "aegis-inclusion-proof/1"`) {
		t.Errorf("prove to stdout: exit %d %s", code, out)
	}
	// A proof with one path element changed fails.
	p, _ := os.ReadFile(proof)
	var pj map[string]any
	json.Unmarshal(p, &pj)
	path := pj["path"].([]any)
	h := []byte(path[0].(string))
	// Another hex digit (flipping a bit may leave the hex digits: 'a'
	// becomes '`'), so that what fails is the root.
	if h[0] = '0'; path[0].(string)[0] == '0' {
		h[0] = '1'
	}
	path[0] = string(h)
	bad, _ := json.Marshal(pj)
	badFile := filepath.Join(tmp, "bad.json")
	os.WriteFile(badFile, bad, 0o644)
	if code, _, errOut := run(t, "", "verify", "--proof", badFile); code != ExitFailure || !strings.Contains(errOut, "root mismatch") {
		t.Errorf("tampered proof: exit %d %q", code, errOut)
	}
	// Against another bundle: refused.
	other := copyBundle(t)
	unseal(t, other)
	if code, _, errOut := run(t, "", "prove", other, "1"); code != ExitFailure || !strings.Contains(errOut, "unsealed") {
		t.Errorf("prove in an unsealed bundle: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{{"prove", dir}, {"prove", dir, "1", "2"}, {"prove", filepath.Join(dir, "nope"), "1"}} {
		if code, _, _ := run(t, "", args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := run(t, "", "prove", dir, "nope.json"); code != ExitFailure {
		t.Errorf("prove an entry that does not exist: exit %d, want 1", code)
	}
}

func TestKeygenCommand(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "seal")
	code, out, errOut := run(t, "", "keygen", "-o", prefix)
	if code != ExitOK {
		t.Fatal(errOut)
	}
	fi, err := os.Stat(prefix + ".key")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key: %v %v", err, fi)
	}
	signer, err := evidence.LoadSigner(prefix + ".key")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := evidence.LoadPublicKey(prefix + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if signer.KeyID() != evidence.KeyID(pub) || !strings.Contains(out, "key id "+signer.KeyID()) {
		t.Errorf("the key pair does not match: %s", out)
	}
	if code, _, errOut := run(t, "", "keygen", "-o", prefix); code != ExitUsage || !strings.Contains(errOut, "exists; not overwritten") {
		t.Errorf("keygen over existing files: exit %d %q", code, errOut)
	}
	if code, _, _ := run(t, "", "keygen"); code != ExitUsage {
		t.Errorf("keygen without -o: exit %d", code)
	}
	// A key others may read is refused for signing.
	os.Chmod(prefix+".key", 0o644)
	if _, err := evidence.LoadSigner(prefix + ".key"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key: %v", err)
	}
}

func TestVerifyHelp(t *testing.T) {
	for _, c := range []string{"verify", "pack", "unpack", "prove", "keygen"} {
		code, out, _ := run(t, "", c, "-h")
		if code != ExitOK || !strings.Contains(out, "Usage: aegis "+c) || !strings.Contains(out, "Exit status") {
			t.Errorf("%s -h: exit %d, stdout %q", c, code, out)
		}
	}
}

// rawTar returns a tar archive of one regular file, name unchecked.
func rawTar(name, body string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	tw.Write([]byte(body))
	tw.Close()
	return b.Bytes()
}

func zstdWriter(t *testing.T, w io.Writer) *zstd.Encoder {
	t.Helper()
	zw, err := zstd.NewWriter(w)
	if err != nil {
		t.Fatal(err)
	}
	return zw
}

// TestInterruptedWithoutVerdict: Ctrl-C (a context cancelled with
// ErrInterrupted as its cause) during verify, report or pack is said as
// an interruption, exit 3: never "INVALID: context canceled" and no
// report saying the bundle is tampered.
func TestInterruptedWithoutVerdict(t *testing.T) {
	bundle := copyBundle(t)
	packed := filepath.Join(t.TempDir(), "b.tar.zst")
	if code, _, errOut := run(t, "", "pack", bundle, "-o", packed); code != ExitOK {
		t.Fatalf("pack: %s", errOut)
	}
	report := filepath.Join(t.TempDir(), "r.html")
	tests := []struct {
		args []string
		want string // stderr
	}{
		{[]string{"verify", bundle}, "aegis: verify " + bundle + ": interrupted (Ctrl-C)\n"},
		{[]string{"verify", "--json", packed}, "aegis: verify " + packed + ": interrupted (Ctrl-C)\n"},
		{[]string{"report", bundle, "-o", report}, "aegis: report " + bundle + ": interrupted (Ctrl-C)\n"},
		{[]string{"report", packed, "-o", report}, "aegis: report " + packed + ": interrupted (Ctrl-C)\n"},
		{[]string{"pack", bundle, "-o", filepath.Join(t.TempDir(), "p.tar.zst")}, "aegis: pack: interrupted (Ctrl-C)\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(fmt.Errorf("%w (Ctrl-C)", ErrInterrupted))
			var out, errb bytes.Buffer
			code := Run(ctx, tt.args, Stdio{Out: &out, Err: &errb})
			if got, want := code, ExitAborted; got != want {
				t.Errorf("exit %d, want %d; stderr %q", got, want, errb.String())
			}
			if got := errb.String(); !strings.HasSuffix(got, tt.want) || strings.Contains(got, "INVALID") {
				t.Errorf("stderr %q, want it to end with %q", got, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
	if _, err := os.Stat(report); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted report was written: %v", err)
	}
}
