package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// The tamper suite: on a small signed bundle with a record of every kind,
// every single-byte change at every offset of every file, every deleted,
// duplicated, swapped and appended line, every truncation, an added file
// and every removed file must be detected, each by a *VerifyError whose
// message names the place.

// bundleFiles returns the bundle's files, sorted, with their bytes.
func bundleFiles(t testing.TB, dir string) ([]string, map[string][]byte) {
	t.Helper()
	var names []string
	data := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		names, data[rel] = append(names, rel), b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names, data
}

// tamperer verifies changed copies of a bundle held in memory.
type tamperer struct {
	t    *testing.T
	dir  string
	orig map[string][]byte
	opts VerifyOptions
}

func newTamperer(t *testing.T, opts VerifyOptions) *tamperer {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true})
	if _, err := Verify(context.Background(), dir, opts); err != nil {
		t.Fatalf("the untampered bundle does not verify: %v", err)
	}
	_, orig := bundleFiles(t, dir)
	tp := &tamperer{t: t, dir: dir, orig: orig, opts: opts}
	if msg := tp.try(mutation{desc: "no change"}); msg != "no change: not detected" {
		t.Fatalf("the in-memory copy does not verify: %s", msg)
	}
	return tp
}

// mutation is one change to a bundle: file gets content (nil removes it);
// want is what the failure message must name.
type mutation struct {
	desc, file string
	content    []byte
	want       string
}

// mapFS returns the bundle with one change.
func (tp *tamperer) mapFS(m mutation) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, b := range tp.orig {
		fsys[name] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	if m.file != "" {
		if m.content == nil {
			delete(fsys, m.file)
		} else {
			fsys[m.file] = &fstest.MapFile{Data: m.content, Mode: 0o644}
		}
	}
	return fsys
}

// try applies a mutation to a copy, verifies it, and returns what is wrong
// with the outcome ("" when it was detected and named).
func (tp *tamperer) try(m mutation) string {
	_, err := VerifyFS(context.Background(), tp.mapFS(m), tp.opts)
	var ve *VerifyError
	switch {
	case err == nil:
		return m.desc + ": not detected"
	case !errors.As(err, &ve):
		return fmt.Sprintf("%s: detected, but not as a VerifyError: %v", m.desc, err)
	case !strings.Contains(err.Error(), m.want):
		return fmt.Sprintf("%s: message %q does not name %q", m.desc, err, m.want)
	}
	return ""
}

// runMutations checks every mutation, with two workers.
func runMutations(t *testing.T, opts VerifyOptions, muts []mutation) {
	const workers = 2
	tp := newTamperer(t, opts)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(muts); i += workers {
				if msg := tp.try(muts[i]); msg != "" {
					mu.Lock()
					problems = append(problems, msg)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	sort.Strings(problems)
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
	t.Logf("%d changes, %d not detected or not named", len(muts), len(problems))
}

// TestTamperEveryByte changes every byte of every file (one bit, a
// different one from one offset to the next), once without and, for the
// manifest and the signature, once more with the trusted key.
func TestTamperEveryByte(t *testing.T) {
	tp := newTamperer(t, VerifyOptions{})
	names, _ := bundleFiles(t, tp.dir)
	var muts, signed []mutation
	for _, file := range names {
		orig := tp.orig[file]
		for off := range orig {
			for _, bit := range []int{off % 8} {
				b := bytes.Clone(orig)
				b[off] ^= 1 << bit
				muts = append(muts, mutation{fmt.Sprintf("%s byte %d ^ %#x", file, off, 1<<bit), file, b, file})
			}
			if file == FileManifest || file == FileSeal {
				b := bytes.Clone(orig)
				b[off] ^= 1 << ((off + 5) % 8)
				signed = append(signed, mutation{fmt.Sprintf("%s byte %d ^ %#x (trusted key)", file, off, 1<<((off+5)%8)), file, b, file})
			}
		}
	}
	runMutations(t, VerifyOptions{}, muts)
	runMutations(t, VerifyOptions{PubKey: testPub()}, signed)
}

// lines splits b into its lines, each with its line feed.
func lines(b []byte) [][]byte {
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func TestTamperLines(t *testing.T) {
	tp := newTamperer(t, VerifyOptions{})
	var muts []mutation
	check := func(desc, file string, content []byte, want string) {
		muts = append(muts, mutation{desc, file, content, want})
	}
	for _, file := range []string{FileActions, FileDecisions, FileEvents, FileModelCalls, FileLedger} {
		ls := lines(tp.orig[file])
		join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
		for i := range ls {
			others := append(append([][]byte{}, ls[:i]...), ls[i+1:]...)
			check(fmt.Sprintf("%s: line %d deleted", file, i+1), file, join(others...), file)
			dup := append(append(append([][]byte{}, ls[:i+1]...), ls[i]), ls[i+1:]...)
			check(fmt.Sprintf("%s: line %d duplicated", file, i+1), file, join(dup...), file)
			if i+1 < len(ls) {
				sw := append([][]byte{}, ls...)
				sw[i], sw[i+1] = sw[i+1], sw[i]
				check(fmt.Sprintf("%s: lines %d and %d swapped", file, i+1, i+2), file, join(sw...), file)
			}
		}
		check(file+": a copy of its last line appended", file, join(append(ls, ls[len(ls)-1])...), file)
		check(file+": a new line appended", file, join(append(ls, []byte("{}\n"))...), file)
		check(file+": a partial line appended", file, join(append(ls, []byte(`{"a":`))...), file)
		check(file+": an empty line appended", file, join(append(ls, []byte("\n"))...), file)
	}
	runMutations(t, VerifyOptions{}, muts)
}

func TestTamperTruncation(t *testing.T) {
	tp := newTamperer(t, VerifyOptions{})
	names, _ := bundleFiles(t, tp.dir)
	var muts []mutation
	for _, file := range names {
		orig := tp.orig[file]
		for n := 0; n < len(orig); n++ {
			muts = append(muts, mutation{fmt.Sprintf("%s truncated to %d bytes", file, n), file, orig[:n], file})
		}
	}
	runMutations(t, VerifyOptions{}, muts)
}

func TestTamperFiles(t *testing.T) {
	tp := newTamperer(t, VerifyOptions{})
	var muts []mutation
	check := func(desc, file string, content []byte, want string) {
		muts = append(muts, mutation{desc, file, content, want})
	}
	names, _ := bundleFiles(t, tp.dir)
	for _, file := range names {
		check(file+" removed", file, nil, file)
	}
	for _, file := range []string{"extra.txt", "artifacts/art-9.json", "dom/7.html", "dom/0.json.tmp", "plans/3.json",
		"manifest.json.tmp", "provenance/seal.dsse.json.tmp", "provenance/notes.json", "ARTIFACTS/art-1.json", "Actions.jsonl", "Model-calls.jsonl"} {
		check(file+" added", file, []byte("{}\n"), file)
	}
	// A copy of a committed file under another record's name.
	check("image copied", "artifacts/shot-2.png", tp.orig["artifacts/shot-1.png"], "artifacts/shot-2.png")
	runMutations(t, VerifyOptions{}, muts)
}
