package witness

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/evidence"
)

// serve starts a witness server over real HTTP on loopback, keeping its
// checkpoints in a directory of its own.
func serve(t *testing.T) (*httptest.Server, Witness) {
	t.Helper()
	srv := httptest.NewServer(Server{Log: NewLog(DirStore{Dir: t.TempDir()})})
	t.Cleanup(srv.Close)
	w, err := Open(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return srv, w
}

func anchor(t *testing.T, w Witness, signer evidence.Signer) *Anchor {
	t.Helper()
	a, err := NewAnchor(w, signer)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func wantMismatch(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	var me *MismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrNotAnchored) {
		t.Fatalf("%s: err = %v, want a *MismatchError", what, err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestAnchoredOverHTTP: a bundle checkpointed to a witness server verifies
// against it; a truncated, a rewritten, and a re-signed copy of it, each
// a valid bundle on its own, do not.
func TestAnchoredOverHTTP(t *testing.T) {
	ctx := context.Background()
	_, w := serve(t)
	k := testSigner(1)
	a := anchor(t, w, k)
	rep := session{id: "s-anchored", events: 20, changed: -1, signer: k, cp: a, every: 4}.write(t, t.TempDir())
	got, err := Verify(ctx, w, rep)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != uint64(rep.Entries) || got.KeyID != k.KeyID() || got.Origin != "aegis-evidence/1/s-anchored" {
		t.Errorf("Verify = %+v, report %d entries", got, rep.Entries)
	}
	if r, want := got.Range(), "entries 0..21 of 22"; r != want {
		t.Errorf("Range() = %q, want %q", r, want)
	}
	if r := a.Report(); r.Failed != 0 || !r.Sealed || r.Size != uint64(rep.Entries) || r.Taken < 1 {
		t.Errorf("anchor report %+v", r)
	}

	truncated := session{id: "s-anchored", events: 12, changed: -1, signer: k}.write(t, t.TempDir())
	_, err = Verify(ctx, w, truncated)
	wantMismatch(t, "truncated", err, "truncated", "holds a checkpoint of 22 entries, the bundle has 14")

	rewritten := session{id: "s-anchored", events: 20, changed: 9, signer: k}.write(t, t.TempDir())
	_, err = Verify(ctx, w, rewritten)
	wantMismatch(t, "rewritten and re-signed", err, "rewritten", "root of the bundle's first 22 entries")

	resigned := session{id: "s-anchored", events: 20, changed: -1, signer: testSigner(2)}.write(t, t.TempDir())
	_, err = Verify(ctx, w, resigned)
	wantMismatch(t, "re-signed with another key", err, "signed by "+k.KeyID(), "re-signed")

	// The key holder cannot replace the witness's copy either: the
	// rewritten ledger's checkpoints are refused.
	b := anchor(t, w, k)
	session{id: "s-anchored", events: 20, changed: 9, signer: k, cp: b, every: 4}.write(t, t.TempDir())
	if r := b.Report(); r.Taken != 0 || r.Failed == 0 || !strings.Contains(r.Err, "inconsistent") {
		t.Errorf("the rewrite's checkpoints: %+v, want every one refused as inconsistent", r)
	}
	if _, err := Verify(ctx, w, rep); err != nil {
		t.Errorf("the original after the attempt: %v", err)
	}
}

// TestWitnessUnreachable: a run whose witness is down records the
// checkpoints not taken in its bundle and reports them; verify against it
// fails as unavailable, never as anchored.
func TestWitnessUnreachable(t *testing.T) {
	srv, w := serve(t)
	srv.Close()
	a := anchor(t, w, nil)
	root := t.TempDir()
	rep := session{id: "s-down", events: 10, changed: -1, cp: a, every: 4}.write(t, root)
	if r := a.Report(); r.Taken != 0 || r.Failed == 0 || r.Sealed || r.Err == "" {
		t.Errorf("anchor report %+v", r)
	}
	events, err := os.ReadFile(filepath.Join(root, "s-down", evidence.FileEvents))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(events), evidence.CodeWitnessFailed) {
		t.Errorf("events.jsonl does not record the failed checkpoints")
	}
	if _, err := Verify(context.Background(), w, rep); !errors.Is(err, ErrUnavailable) {
		t.Errorf("verify against a closed witness: %v, want ErrUnavailable", err)
	}
}

// TestWitnessOfAnotherLog: a witness that never saw the session, or that
// answers with another session's checkpoint, anchors nothing.
func TestWitnessOfAnotherLog(t *testing.T) {
	ctx := context.Background()
	_, w := serve(t)
	k := testSigner(1)
	session{id: "s-other", events: 5, changed: -1, signer: k, cp: anchor(t, w, k), every: 4}.write(t, t.TempDir())
	rep := session{id: "s-mine", events: 5, changed: -1, signer: k}.write(t, t.TempDir())
	_, err := Verify(ctx, w, rep)
	wantMismatch(t, "never sent there", err, "holds no checkpoint of this session")

	// A witness that answers every origin with the other session's note.
	other, err := w.Latest(ctx, Origin("s-other"))
	if err != nil {
		t.Fatal(err)
	}
	liar := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { rw.Write(other.Note) }))
	defer liar.Close()
	lw, _ := Open(liar.URL)
	if _, err := Verify(ctx, lw, rep); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "s-other") {
		t.Errorf("a witness answering with another origin: %v", err)
	}
}

// TestFileWitnessSignatureWrong: the file witness's copy with a signature
// changed does not verify; with the head changed and no signature to
// match, neither.
func TestFileWitnessSignatureWrong(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "elsewhere", "witness.log")
	os.MkdirAll(filepath.Dir(path), 0o755)
	w, err := Open("file:" + path)
	if err != nil {
		t.Fatal(err)
	}
	k := testSigner(1)
	rep := session{id: "s-file", events: 6, changed: -1, signer: k, cp: anchor(t, w, k), every: 4}.write(t, t.TempDir())
	if _, err := Verify(ctx, w, rep); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	// Flip a bit of the last signature (the last note's last line).
	bad := []byte(string(good))
	i := len(bad) - 10
	bad[i] ^= 0x01
	os.WriteFile(path, bad, 0o644)
	w2, _ := Open("file:" + path)
	if _, err := Verify(ctx, w2, rep); !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
		t.Errorf("signature changed: %v, want ErrSignature", err)
	}
	if errors.Is(err, ErrNotAnchored) {
		t.Errorf("a bad signature reported as a mismatch")
	}
}

// sealless takes every checkpoint but the seal's.
type sealless struct{ a *Anchor }

func (s sealless) Checkpoint(ctx context.Context, h evidence.Head) error {
	if h.Sealed {
		return nil
	}
	return s.a.Checkpoint(ctx, h)
}

// TestSealNotWitnessed: a sealed bundle whose witness holds only an
// intermediate checkpoint is not anchored, though its first entries match.
func TestSealNotWitnessed(t *testing.T) {
	_, w := serve(t)
	rep := session{id: "s-noseal", events: 9, changed: -1, cp: sealless{anchor(t, w, nil)}, every: 4}.write(t, t.TempDir())
	_, err := Verify(context.Background(), w, rep)
	wantMismatch(t, "seal not witnessed", err, "the seal was not witnessed", "anchored: entries 0..7 of 11 (they match the witness's latest checkpoint); entries 8..10 are not anchored")
}

// TestAnchorResumes: an Anchor that does not know what the witness holds
// (a restarted process) proves from the size the witness names.
func TestAnchorResumes(t *testing.T) {
	ctx := context.Background()
	_, w := serve(t)
	hs := ledger(30)
	head := func(n int, sealed bool) evidence.Head {
		root, _ := evidence.MerkleRoot(hs[:n])
		return evidence.Head{SessionID: "s-resume", Size: n, Root: root, Last: hs[n-1], Sealed: sealed, Hashes: hs[:n]}
	}
	k := testSigner(1)
	if err := anchor(t, w, k).Checkpoint(ctx, head(10, false)); err != nil {
		t.Fatal(err)
	}
	a := anchor(t, w, k)
	if err := a.Checkpoint(ctx, head(30, true)); err != nil {
		t.Fatal(err)
	}
	if r := a.Report(); r.Taken != 1 || r.Size != 30 || !r.Sealed {
		t.Errorf("report %+v", r)
	}
}

func TestOpenSpec(t *testing.T) {
	for _, bad := range []string{"", "file:", "ftp://x/", "http://", "http://u:p@h/", "http://h/?q=1", "127.0.0.1:8080"} {
		if _, err := Open(bad); err == nil {
			t.Errorf("Open(%q): no error", bad)
		}
	}
	w, err := Open("http://127.0.0.1:8744/base/")
	if err != nil || w.String() != "http://127.0.0.1:8744/base/checkpoint" {
		t.Errorf("Open: %v, %v", w, err)
	}
}
