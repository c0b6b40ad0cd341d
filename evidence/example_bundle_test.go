package evidence

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/example from the fixture session")

// exampleDir is the committed example bundle that FORMAT.md walks through
// and the CLI tests use.
const exampleDir = "testdata/example"

// TestExampleBundle: the committed example bundle is exactly what the
// fixture session writes today (go test -run TestExampleBundle -update
// rewrites it), and it verifies against the committed public key.
func TestExampleBundle(t *testing.T) {
	root := t.TempDir()
	dir := buildBundle(t, root, fixture{sign: true})
	names, files := bundleFiles(t, dir)
	if *update {
		os.RemoveAll(exampleDir)
		for _, n := range names {
			p := filepath.Join(exampleDir, testSession, filepath.FromSlash(n))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, files[n], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pub, _ := MarshalPublicKey(testPub())
		os.WriteFile(filepath.Join(exampleDir, "example.pub"), pub, 0o644)
	}
	committed := filepath.Join(exampleDir, testSession)
	gotNames, got := bundleFiles(t, committed)
	if len(gotNames) != len(names) {
		t.Fatalf("testdata/example has %d files, the fixture writes %d: run go test -run TestExampleBundle -update", len(gotNames), len(names))
	}
	for _, n := range names {
		if !bytes.Equal(got[n], files[n]) {
			t.Errorf("testdata/example: %s differs from what the fixture writes: run go test -run TestExampleBundle -update", n)
		}
	}
	pub, err := LoadPublicKey(filepath.Join(exampleDir, "example.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), committed, VerifyOptions{PubKey: pub}); err != nil {
		t.Fatal(err)
	}
}
