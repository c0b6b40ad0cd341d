package witness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/evidence"
)

// ledger returns n made-up entry hashes.
func ledger(n int) []evidence.Hash {
	hs := make([]evidence.Hash, n)
	for i := range hs {
		hs[i][0], hs[i][1] = byte(i), byte(i>>8)
	}
	return hs
}

// signedOf returns the signed checkpoint of the first n hashes.
func signedOf(t *testing.T, sid string, hs []evidence.Hash, n int, signer evidence.Signer) *Signed {
	t.Helper()
	root, _ := evidence.MerkleRoot(hs[:n])
	s, err := Sign(context.Background(), Checkpoint{Origin: Origin(sid), Size: uint64(n), Root: root, Head: hs[n-1]}, signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLogAdd: the witness accepts a first checkpoint, then only those
// that extend its latest, signed by the same key.
func TestLogAdd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.log")
	l := NewLog(FileStore{Path: path})
	hs := ledger(40)
	other := ledger(40)
	other[5][2] = 1 // another ledger from entry 5 on
	k := testSigner(1)
	proof := func(m, n int, hs []evidence.Hash) []evidence.Hash {
		p, err := evidence.ConsistencyProof(hs[:n], m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var conflict *ConflictError
	steps := []struct {
		name  string
		old   uint64
		proof []evidence.Hash
		note  *Signed
		check func(error) bool
	}{
		{"first, claiming an old size", 3, nil, signedOf(t, "s1", hs, 8, k), func(err error) bool { return errors.As(err, &conflict) && conflict.Size == 0 }},
		{"first", 0, nil, signedOf(t, "s1", hs, 8, k), func(err error) bool { return err == nil }},
		{"same again", 8, nil, signedOf(t, "s1", hs, 8, k), func(err error) bool { return err == nil }},
		{"extends, proof from 8", 8, proof(8, 20, hs), signedOf(t, "s1", hs, 20, k), func(err error) bool { return err == nil }},
		{"stale old size", 8, proof(8, 30, hs), signedOf(t, "s1", hs, 30, k), func(err error) bool { return errors.As(err, &conflict) && conflict.Size == 20 }},
		{"smaller", 20, nil, signedOf(t, "s1", hs, 10, k), func(err error) bool { return errors.Is(err, ErrInconsistent) }},
		{"same size, another root", 20, nil, signedOf(t, "s1", other, 20, k), func(err error) bool { return errors.Is(err, ErrInconsistent) }},
		{"another ledger, its own proof", 20, proof(20, 30, other), signedOf(t, "s1", other, 30, k), func(err error) bool { return errors.Is(err, ErrInconsistent) }},
		{"no proof", 20, nil, signedOf(t, "s1", hs, 30, k), func(err error) bool { return errors.Is(err, ErrInconsistent) }},
		{"another key", 20, proof(20, 30, hs), signedOf(t, "s1", hs, 30, testSigner(2)), func(err error) bool { return errors.Is(err, ErrSignature) }},
		{"too long a proof", 20, make([]evidence.Hash, MaxProofHashes+1), signedOf(t, "s1", hs, 30, k), func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"extends", 20, proof(20, 40, hs), signedOf(t, "s1", hs, 40, k), func(err error) bool { return err == nil }},
		{"another origin, another key", 0, nil, signedOf(t, "s2", other, 30, testSigner(2)), func(err error) bool { return err == nil }},
	}
	for _, st := range steps {
		if err := l.Add(st.old, st.proof, st.note.Note); !st.check(err) {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	// What is stored is what a new Log over the same file reads.
	l2 := NewLog(FileStore{Path: path})
	for sid, size := range map[string]uint64{"s1": 40, "s2": 30} {
		s, err := l2.Latest(Origin(sid))
		if err != nil || s.Size != size {
			t.Errorf("%s: latest %+v, %v; want size %d", sid, s, err, size)
		}
	}
	if _, err := l2.Latest(Origin("s3")); !errors.Is(err, ErrNotFound) {
		t.Errorf("s3: %v, want ErrNotFound", err)
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n\u2014 "); n != 4 {
		t.Errorf("the log holds %d notes, want 4 (8, 20, 40 of s1; 30 of s2)", n)
	}
	// The key is pinned across Logs too.
	if err := l2.Add(40, nil, signedOf(t, "s1", hs, 40, testSigner(3)).Note); !errors.Is(err, ErrSignature) {
		t.Errorf("another key after a restart: %v", err)
	}
}

// TestLogFileTorn: a log file whose last note was cut short is refused,
// not read past.
func TestLogFileTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.log")
	s := signedOf(t, "s1", ledger(3), 3, testSigner(1))
	if err := os.WriteFile(path, append(append([]byte{}, s.Note...), s.Note[:20]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLog(FileStore{Path: path}).Latest(Origin("s1")); !errors.Is(err, ErrMalformed) {
		t.Errorf("torn log: %v, want ErrMalformed", err)
	}
}

func TestDirStore(t *testing.T) {
	dir := t.TempDir()
	l := NewLog(DirStore{Dir: dir})
	for _, sid := range []string{"a", "b"} {
		if err := l.Add(0, nil, signedOf(t, sid, ledger(2), 2, testSigner(1)).Note); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(files) != 2 {
		t.Errorf("files %v, want one per origin", files)
	}
}

func TestAddRequest(t *testing.T) {
	note := signedOf(t, "s1", ledger(5), 5, testSigner(1)).Note
	proof := ledger(3)
	body := EncodeAdd(2, proof, note)
	old, gotProof, gotNote, err := ParseAdd(body)
	if err != nil || old != 2 || len(gotProof) != 3 || gotProof[2] != proof[2] || string(gotNote) != string(note) {
		t.Fatalf("ParseAdd(EncodeAdd()) = %d, %v, %q, %v", old, gotProof, gotNote, err)
	}
	for _, bad := range []string{"", "old 1\n", "old 01\n\n" + string(note), "new 1\n\n", "old 1\nAAAA\n\n", "old x\n\n"} {
		if _, _, _, err := ParseAdd([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseAdd(%q): %v, want ErrMalformed", bad, err)
		}
	}
}
