package witness

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/evidence"
)

// TestAdmission: a witness with a key list takes only checkpoints signed
// by those keys (a stranger cannot claim a session's origin first), and
// one with a bound on origins refuses the first checkpoint of one more,
// counted again from its store when it restarts; the logs it holds go on.
func TestAdmission(t *testing.T) {
	mine, stranger := testSigner(1), testSigner(2)
	for _, st := range []struct {
		name  string
		store func(t *testing.T) Store
	}{
		{"file store", func(t *testing.T) Store { return FileStore{Path: filepath.Join(t.TempDir(), "w.log")} }},
		{"dir store", func(t *testing.T) Store { return DirStore{Dir: t.TempDir()} }},
	} {
		t.Run(st.name, func(t *testing.T) {
			store := st.store(t)
			adm := Admission{Keys: map[string]bool{mine.KeyID(): true}, MaxOrigins: 2}
			l, err := NewAdmittingLog(store, adm)
			if err != nil {
				t.Fatal(err)
			}
			hs := ledger(8)
			add := func(l *Log, sid string, n int, k evidence.Signer, old uint64) error {
				var proof []evidence.Hash
				if old > 0 {
					if proof, err = evidence.ConsistencyProof(hs[:n], int(old)); err != nil {
						t.Fatal(err)
					}
				}
				return l.Add(old, proof, signedOf(t, sid, hs, n, k).Note)
			}
			for _, step := range []struct {
				name string
				err  error
			}{
				{"a stranger claims s1 first", add(l, "s1", 2, stranger, 0)},
				{"the session claims s1", add(l, "s1", 2, mine, 0)},
				{"s2", add(l, "s2", 2, mine, 0)},
				{"s3, one origin too many", add(l, "s3", 2, mine, 0)},
				{"s1 goes on", add(l, "s1", 4, mine, 2)},
			} {
				var want error
				switch step.name {
				case "a stranger claims s1 first":
					want = ErrSignature
				case "s3, one origin too many":
					want = ErrFull
				}
				if (want == nil) != (step.err == nil) || (want != nil && !errors.Is(step.err, want)) {
					t.Errorf("%s: %v, want %v", step.name, step.err, want)
				}
			}
			// Restarted: the origins are counted from the store.
			l2, err := NewAdmittingLog(store, adm)
			if err != nil {
				t.Fatal(err)
			}
			if err := add(l2, "s4", 2, mine, 0); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "it keeps 2 origins, its limit") {
				t.Errorf("s4 after a restart: %v, want ErrFull", err)
			}
			if err := add(l2, "s2", 6, mine, 2); err != nil {
				t.Errorf("s2 after a restart: %v", err)
			}
		})
	}
}

// TestAdmissionOverHTTP: the refusals reach the sender as what they are:
// 403 for a key the witness does not take, 507 for one origin too many.
func TestAdmissionOverHTTP(t *testing.T) {
	mine := testSigner(1)
	l, err := NewAdmittingLog(DirStore{Dir: t.TempDir()}, Admission{Keys: map[string]bool{mine.KeyID(): true}, MaxOrigins: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Server{Log: l})
	t.Cleanup(srv.Close)
	w, err := Open(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	hs := ledger(3)
	ctx := context.Background()
	if err := w.Add(ctx, 0, nil, signedOf(t, "s1", hs, 3, testSigner(2)).Note); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "a key this witness does not take (--keys)") {
		t.Errorf("a stranger's key: %v, want ErrSignature", err)
	}
	if err := w.Add(ctx, 0, nil, signedOf(t, "s1", hs, 3, mine).Note); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(ctx, 0, nil, signedOf(t, "s2", hs, 3, mine).Note); !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "it keeps 1 origins, its limit") {
		t.Errorf("one origin too many: %v, want ErrFull", err)
	}
}

// TestParseKeys: PEM public keys and key ids, comments and empty lines
// skipped; anything else, or no key, refused.
func TestParseKeys(t *testing.T) {
	a, b := testSigner(1), testSigner(2)
	pubB, err := evidence.ParsePublicKey([]byte(b.KeyID()))
	if err != nil {
		t.Fatal(err)
	}
	pemB, err := evidence.MarshalPublicKey(pubB)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseKeys([]byte("# the sessions' keys\n" + a.KeyID() + "\n\n" + string(pemB)))
	if err != nil || len(keys) != 2 || !keys[a.KeyID()] || !keys[b.KeyID()] {
		t.Fatalf("ParseKeys = %v, %v; want both keys", keys, err)
	}
	for _, bad := range []string{"", "# none\n", "ed25519:zz\n", a.KeyID() + "\nnot a key\n", "-----BEGIN PUBLIC KEY-----\nAAAA\n"} {
		if _, err := ParseKeys([]byte(bad)); err == nil {
			t.Errorf("ParseKeys(%q): no error", bad)
		}
	}
}
