package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/witness"
)

// startWitness runs "aegis witness serve" on a free loopback port and
// returns its base URL; the server stops with the test.
func startWitness(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"witness", "serve", "--dir", dir, "--listen", "127.0.0.1:0"}, flags...), Stdio{Err: pw})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read the witness's address: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("witness serve exited %d", code)
		}
	})
	url, _, ok := strings.Cut(strings.TrimPrefix(line, "aegis: witness serving "), " ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the witness's URL", line)
	}
	return url
}

// runCommand runs aegis and returns its exit code, stdout and stderr.
func runCommand(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := Run(ctx, args, Stdio{Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestRunWithWitness: a run sends its checkpoints to "aegis witness
// serve"; verify --witness accepts its bundle and refuses the bundle cut
// short; a required witness that cannot be reached fails the run.
func TestRunWithWitness(t *testing.T) {
	site := demoSite(t)
	task := writeFile(t, "task.json", `{"goal":"Type a name","urls":["`+site+`/login"],"hints":{"steps":["type \"bob\" into \"Username\""]}}`, 0o644)
	key := filepath.Join(t.TempDir(), "sign")
	if code, _, errs := runCommand("keygen", "-o", key); code != ExitOK {
		t.Fatalf("keygen: %s", errs)
	}
	url := startWitness(t, t.TempDir())
	ev := t.TempDir()
	code, o, stderr := runOutput(t, "run", "--evidence", ev, "--approve", "low-and-medium-only", "--preset", "developer",
		"--sign-key", key+".key", "--witness", url, "--checkpoint-every", "4", task)
	if code != ExitOK || !strings.Contains(stderr, "checkpoints taken, the last of the sealed bundle") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	bundle := verifyOutput(t, o)

	code, out, errs := runCommand("verify", "--pubkey", key+".pub", "--witness", url, bundle)
	if code != ExitOK || !strings.Contains(out, "witness: anchored: entries 0..") || !strings.Contains(out, ": "+url+"checkpoint holds a checkpoint of aegis-evidence/1/") {
		t.Fatalf("verify --witness: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCommand("verify", "--json", "--witness", url, bundle)
	if code != ExitOK || !strings.Contains(out, `"witness": {`) {
		t.Errorf("verify --json --witness: exit %d\n%s", code, out)
	}

	// The bundle without its last entry (as a writer killed before the
	// seal leaves it): its entries verify, but the witness holds more.
	cut := filepath.Join(t.TempDir(), filepath.Base(bundle))
	if err := os.CopyFS(cut, os.DirFS(bundle)); err != nil {
		t.Fatal(err)
	}
	unseal(t, cut)
	code, _, errs = runCommand("verify", "--allow-unsealed", "--witness", url, cut)
	if code != ExitFailure || !strings.Contains(errs, "witness: NOT ANCHORED") || !strings.Contains(errs, "truncated") {
		t.Errorf("truncated bundle: exit %d\n%s", code, errs)
	}

	// A required witness that cannot be reached: the run fails, its
	// bundle sealed and saying why.
	code, o, stderr = runOutput(t, "run", "--evidence", ev, "--approve", "low-and-medium-only", "--preset", "developer",
		"--witness", "http://127.0.0.1:1", "--witness-required", "--checkpoint-every", "2", task)
	if code != ExitSessionFailed || !strings.Contains(stderr, "the bundle is not anchored") {
		t.Fatalf("required witness down: exit %d\n%s", code, stderr)
	}
	failed := verifyOutput(t, o)
	if events, _ := os.ReadFile(filepath.Join(failed, "events.jsonl")); !bytes.Contains(events, []byte("evidence.witness_failed")) {
		t.Errorf("the bundle does not record the checkpoints not taken")
	}
}

// TestVerifyWitnessCommand: verify --witness against a witness that never
// saw the bundle, one that cannot be reached, and bad flags.
func TestVerifyWitnessCommand(t *testing.T) {
	log := "file:" + filepath.Join(t.TempDir(), "witness.log")
	code, _, errs := runCommand("verify", "--witness", log, exampleBundle)
	if code != ExitFailure || !strings.Contains(errs, "holds no checkpoint of this session") {
		t.Errorf("a witness that never saw the bundle: exit %d\n%s", code, errs)
	}
	code, _, errs = runCommand("verify", "--witness", "http://127.0.0.1:1", exampleBundle)
	if code != ExitFailure || !strings.Contains(errs, "witness unavailable") {
		t.Errorf("an unreachable witness: exit %d\n%s", code, errs)
	}
	for _, args := range [][]string{
		{"verify", "--witness", "ftp://x", exampleBundle},
		{"verify", "--witness", log, "--proof", "p.json"},
		{"run", "--witness-required", "--goal", "g", "--url", "https://example.com/"},
		{"run", "--witness", "nowhere", "--goal", "g", "--url", "https://example.com/"},
		{"witness"},
		{"witness", "serve"},
		{"witness", "serve", "--dir", t.TempDir(), "--max-origins", "0"},
		{"witness", "serve", "--dir", t.TempDir(), "--keys", filepath.Join(t.TempDir(), "missing")},
		{"witness", "serve", "--dir", t.TempDir(), "--keys", writeFile(t, "keys", "# no key\n", 0o644)},
	} {
		if code, _, errs := runCommand(args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, ExitUsage, errs)
		}
	}
}

// TestPrintWitnessRange: verify --witness says which entries the witness
// anchors: all of a sealed bundle's, or the first ones of an unsealed
// bundle and which are not.
func TestPrintWitnessRange(t *testing.T) {
	for _, tt := range []struct {
		a    witness.Anchored
		want string
	}{
		{witness.Anchored{Witness: "file:w.log", Origin: "aegis-evidence/1/s", Size: 27, Entries: 27, KeyID: "ed25519:k"},
			"witness: anchored: entries 0..26 of 27: file:w.log holds a checkpoint of aegis-evidence/1/s with 27 entries, signed by ed25519:k\n"},
		{witness.Anchored{Witness: "file:w.log", Origin: "aegis-evidence/1/s", Size: 8, Entries: 11, KeyID: "ed25519:k"},
			"witness: anchored: entries 0..7 of 11; entries 8..10 are not: file:w.log holds a checkpoint of aegis-evidence/1/s with 8 entries, signed by ed25519:k\n"},
	} {
		var out bytes.Buffer
		printWitness(Stdio{Out: &out, Err: &out}, &tt.a, nil)
		if got := out.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestWitnessServeKeys: "aegis witness serve --keys FILE" takes the
// checkpoints of the keys FILE names and refuses another key's, so that a
// stranger cannot claim a session's log first; --max-origins bounds the
// logs it starts.
func TestWitnessServeKeys(t *testing.T) {
	key := filepath.Join(t.TempDir(), "sign")
	if code, _, errs := runCommand("keygen", "-o", key); code != ExitOK {
		t.Fatalf("keygen: %s", errs)
	}
	url := startWitness(t, t.TempDir(), "--keys", key+".pub", "--max-origins", "1")
	w, err := witness.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := evidence.LoadSigner(key + ".key")
	if err != nil {
		t.Fatal(err)
	}
	hs := []evidence.Hash{{1}, {2}}
	head := func(sid string) evidence.Head {
		root, _ := evidence.MerkleRoot(hs)
		return evidence.Head{SessionID: sid, Size: 2, Root: root, Last: hs[1], Hashes: hs}
	}
	ctx := context.Background()
	stranger, err := witness.NewAnchor(w, nil) // a key of its own
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Checkpoint(ctx, head("s1")); !errors.Is(err, witness.ErrSignature) {
		t.Errorf("a stranger's checkpoint: %v, want ErrSignature", err)
	}
	mine, err := witness.NewAnchor(w, signer)
	if err != nil {
		t.Fatal(err)
	}
	if err := mine.Checkpoint(ctx, head("s1")); err != nil {
		t.Errorf("the session's checkpoint: %v", err)
	}
	if err := mine.Checkpoint(ctx, head("s2")); !errors.Is(err, witness.ErrFull) {
		t.Errorf("one origin too many: %v, want ErrFull", err)
	}
}
