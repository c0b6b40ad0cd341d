package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

func TestWriteAndVerify(t *testing.T) {
	for _, sign := range []bool{false, true} {
		dir := buildBundle(t, t.TempDir(), fixture{sign: sign})
		opts := VerifyOptions{}
		if sign {
			opts.PubKey = testPub()
		}
		r, err := Verify(context.Background(), dir, opts)
		if err != nil {
			t.Fatalf("sign=%v: %v", sign, err)
		}
		if !r.Sealed || r.Entries < 20 || r.Authenticated != sign {
			t.Errorf("report %+v", r)
		}
	}
}

// TestUnsealedTails: what a kill can leave after the last complete entry
// (a partial ledger line, one uncommitted record, the seal's temporary
// files) verifies as unsealed with the complete entries; two uncommitted
// records, or a stray file, do not.
func TestUnsealedTails(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{})
	w.Close()
	_, files := bundleFiles(t, w.Dir())
	ledger := files[FileLedger]
	n := bytes.Count(ledger, []byte("\n"))
	tests := []struct {
		name    string
		change  map[string][]byte
		entries int
		wantErr string
	}{
		{"clean", nil, n, ""},
		{"partial ledger line", map[string][]byte{FileLedger: append(bytes.Clone(ledger), `{"contentHash":"ab`...)}, n, ""},
		{"uncommitted event line", map[string][]byte{FileEvents: append(bytes.Clone(files[FileEvents]), `{"type":"err`...)}, n, ""},
		{"uncommitted complete line", map[string][]byte{FileActions: append(bytes.Clone(files[FileActions]), "{}\n"...)}, n, ""},
		{"uncommitted file", map[string][]byte{"dom/9.html": []byte("<p>")}, n, ""},
		{"partial line and uncommitted file", map[string][]byte{FileLedger: append(bytes.Clone(ledger), '{'), "artifacts/x.png": {0x89}}, n, ""},
		{"two uncommitted records", map[string][]byte{"dom/9.html": nil, "artifacts/x.png": {0x89}}, 0, "at most one record"},
		{"two uncommitted lines", map[string][]byte{FileEvents: append(bytes.Clone(files[FileEvents]), "{}\n{}\n"...)}, 0, "more than one line"},
		{"a stray file", map[string][]byte{"notes.txt": []byte("x")}, 0, "not record"},
		{"seal files before the seal began", map[string][]byte{FileSeal: []byte("{}\n")}, 0, "not record"},
		{"manifest changed", map[string][]byte{FileManifest: files[FileManifestStart][:10]}, 0, "manifest.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, b := range files {
				fsys[name] = &fstest.MapFile{Data: b}
			}
			for name, b := range tt.change {
				if b == nil {
					b = []byte("x")
				}
				fsys[name] = &fstest.MapFile{Data: b}
			}
			r, err := VerifyFS(context.Background(), fsys, VerifyOptions{AllowUnsealed: true})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || r.Sealed || r.Entries != tt.entries {
				t.Fatalf("got %v, %+v; want unsealed with %d entries", err, r, tt.entries)
			}
			if _, err := VerifyFS(context.Background(), fsys, VerifyOptions{}); !errors.Is(err, ErrUnsealed) || !strings.Contains(err.Error(), fmt.Sprintf("unsealed, %d intact entries", tt.entries)) {
				t.Errorf("without AllowUnsealed: %v", err)
			}
		})
	}
}
