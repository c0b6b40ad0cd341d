package evidence

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"testing/fstest"
)

// Fuzz tests: the ledger reader, verify with any one file replaced by
// arbitrary bytes, and unpack of arbitrary bytes never panic, and never
// accept what they must not. Their corpora are committed under
// testdata/fuzz.

var (
	fuzzOnce  sync.Once
	fuzzFiles map[string][]byte
	fuzzNames []string
)

// fuzzBundle returns the files of a small signed bundle, built once.
func fuzzBundle(f *testing.F) (map[string][]byte, []string) {
	fuzzOnce.Do(func() {
		dir := buildBundle(f, f.TempDir(), fixture{sign: true})
		fuzzNames, fuzzFiles = bundleFiles(f, dir)
	})
	return fuzzFiles, fuzzNames
}

func withFile(files map[string][]byte, name string, data []byte) fstest.MapFS {
	fsys := fstest.MapFS{}
	for n, b := range files {
		fsys[n] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	return fsys
}

// FuzzLedger feeds arbitrary bytes as provenance/ledger.json. Only the
// original ledger may verify.
func FuzzLedger(f *testing.F) {
	files, _ := fuzzBundle(f)
	orig := files[FileLedger]
	f.Add(orig)
	f.Add(orig[:len(orig)/2])
	ls := lines(orig)
	f.Add(bytes.Join(append([][]byte{ls[1], ls[0]}, ls[2:]...), nil))
	f.Add([]byte("{}\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []VerifyOptions{{}, {AllowUnsealed: true}} {
			_, err := VerifyFS(context.Background(), withFile(files, FileLedger, data), opts)
			if err == nil && !bytes.Equal(data, orig) {
				t.Fatalf("a different ledger verifies:\n%s", data)
			}
		}
	})
}

// FuzzVerifyFile replaces one file of the bundle by arbitrary bytes.
// Nothing but the original bytes may verify.
func FuzzVerifyFile(f *testing.F) {
	files, names := fuzzBundle(f)
	for i, n := range names {
		b := files[n]
		f.Add(uint8(i), b)
		if len(b) > 2 {
			f.Add(uint8(i), b[:len(b)-2])
			c := bytes.Clone(b)
			c[len(c)/2] ^= 0x20
			f.Add(uint8(i), c)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		name := names[int(which)%len(names)]
		_, err := VerifyFS(context.Background(), withFile(files, name, data), VerifyOptions{PubKey: testPub()})
		if err == nil && !bytes.Equal(data, files[name]) {
			t.Fatalf("%s replaced by other bytes verifies:\n%q", name, data)
		}
	})
}

// FuzzUnpack feeds arbitrary bytes to Unpack: no panic, and whatever it
// accepts lands as regular files inside the target, at bundle paths.
func FuzzUnpack(f *testing.F) {
	files, _ := fuzzBundle(f)
	dir := f.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, b, 0o644)
	}
	var packed bytes.Buffer
	if err := Pack(context.Background(), dir, &packed); err != nil {
		f.Fatal(err)
	}
	f.Add(packed.Bytes())
	f.Add(packed.Bytes()[:packed.Len()/2])
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		out := filepath.Join(parent, "out")
		err := Unpack(context.Background(), bytes.NewReader(data), out, UnpackOptions{MaxFiles: 64, MaxFileBytes: 1 << 20, MaxTotalBytes: 4 << 20})
		if err != nil {
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Fatalf("a refused archive left %s behind", out)
			}
			return
		}
		var names []string
		filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(out, p)
			if p != parent && p != out && !d.IsDir() {
				if !d.Type().IsRegular() || !validBundlePath(filepath.ToSlash(rel)) {
					t.Fatalf("unpacked %s (%v)", p, d.Type())
				}
				names = append(names, rel)
			}
			return nil
		})
		sort.Strings(names)
	})
}
