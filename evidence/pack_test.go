package evidence

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func packDir(t testing.TB, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Pack(context.Background(), dir, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPackDeterministic(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true})
	a := packDir(t, dir)
	// Same bundle, other mtimes and modes: the same bytes.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		os.Chtimes(p, time.Now(), time.Now().Add(-time.Hour))
		if !d.IsDir() {
			os.Chmod(p, 0o600)
		}
		return nil
	})
	if b := packDir(t, dir); !bytes.Equal(a, b) {
		t.Fatal("packing twice gave different bytes")
	}
	// A bundle written again from scratch: the same bytes.
	if b := packDir(t, buildBundle(t, t.TempDir(), fixture{sign: true})); !bytes.Equal(a, b) {
		t.Fatal("the same session written twice packs differently")
	}
	// Pack, unpack, pack: the same bytes, and the unpacked bundle verifies.
	out := filepath.Join(t.TempDir(), "unpacked")
	if err := Unpack(context.Background(), bytes.NewReader(a), out, UnpackOptions{}); err != nil {
		t.Fatal(err)
	}
	if b := packDir(t, out); !bytes.Equal(a, b) {
		t.Fatal("pack, unpack, pack changed the bytes")
	}
	if _, err := Verify(context.Background(), out, VerifyOptions{PubKey: testPub()}); err != nil {
		t.Fatal(err)
	}
	// Verify reads the archive itself.
	archive := filepath.Join(t.TempDir(), "b.tar.zst")
	os.WriteFile(archive, a, 0o644)
	r, err := Verify(context.Background(), archive, VerifyOptions{PubKey: testPub()})
	if err != nil || !r.Sealed || r.Path != archive {
		t.Fatalf("verify the archive: %v %+v", err, r)
	}
	// The archive's members: sorted regular files, fixed metadata.
	zr, _ := zstd.NewReader(bytes.NewReader(a))
	defer zr.Close()
	tr := tar.NewReader(zr)
	prev := ""
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Name <= prev || h.Typeflag != tar.TypeReg || h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("member %+v", h)
		}
		prev = h.Name
	}
}

// archive builds a .tar.zst from raw tar headers and contents.
func archive(t *testing.T, members ...any) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for i := 0; i < len(members); i += 2 {
		h := members[i].(*tar.Header)
		body, _ := members[i+1].(string)
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	var zb bytes.Buffer
	zw, _ := zstd.NewWriter(&zb)
	zw.Write(tb.Bytes())
	zw.Close()
	return zb.Bytes()
}

func reg(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg} }

func TestUnpackRefuses(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		opts    UnpackOptions
		wantErr string
	}{
		{"dot-dot", archive(t, reg("../evil"), "x"), UnpackOptions{}, "escapes"},
		{"dot-dot inside", archive(t, reg("a/../../evil"), "x"), UnpackOptions{}, "escapes"},
		{"absolute", archive(t, reg("/etc/evil"), "x"), UnpackOptions{}, "escapes"},
		{"backslash", archive(t, reg(`a\..\evil`), "x"), UnpackOptions{}, "escapes"},
		{"dot file", archive(t, reg(".evil"), "x"), UnpackOptions{}, "escapes"},
		{"empty segment", archive(t, reg("a//b"), "x"), UnpackOptions{}, "escapes"},
		{"symlink", archive(t, &tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, nil), UnpackOptions{}, "not a regular file"},
		{"hard link", archive(t, &tar.Header{Name: "link", Typeflag: tar.TypeLink, Linkname: "manifest.json"}, nil), UnpackOptions{}, "not a regular file"},
		{"character device", archive(t, &tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}, nil), UnpackOptions{}, "not a regular file"},
		{"fifo", archive(t, &tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}, nil), UnpackOptions{}, "not a regular file"},
		{"directory", archive(t, &tar.Header{Name: "dom/", Typeflag: tar.TypeDir, Mode: 0o755}, nil), UnpackOptions{}, "not a regular file"},
		{"duplicate", archive(t, reg("a.json"), "1", reg("a.json"), "2"), UnpackOptions{}, "duplicate"},
		{"duplicate by case", archive(t, reg("a.json"), "1", reg("A.json"), "2"), UnpackOptions{}, "duplicate"},
		{"file beneath a file", archive(t, reg("a"), "1", reg("a/b"), "2"), UnpackOptions{}, "beneath the file"},
		{"file where a directory is", archive(t, reg("a/b"), "1", reg("a"), "2"), UnpackOptions{}, "needs a directory"},
		{"oversized file", archive(t, reg("a"), "12345"), UnpackOptions{MaxFileBytes: 4}, "at most 4"},
		{"too many files", archive(t, reg("a"), "1", reg("b"), "2", reg("c"), "3"), UnpackOptions{MaxFiles: 2}, "more than 2 files"},
		{"too many bytes", archive(t, reg("a"), "123", reg("b"), "456"), UnpackOptions{MaxTotalBytes: 5}, "more than 5 bytes"},
		{"not zstd", []byte("not an archive at all"), UnpackOptions{}, "unpack"},
		{"data after the archive", append(archive(t, reg("a"), "1"), archive(t, reg("b"), "2")...), UnpackOptions{}, "after the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			err := Unpack(context.Background(), bytes.NewReader(tt.data), dir, tt.opts)
			var ue *UnpackError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an UnpackError containing %q", err, tt.wantErr)
			}
			// Nothing is left behind, inside or outside.
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the target directory is left: %v", err)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("files outside the target: %v", entries)
			}
		})
	}
	// The target must be new or empty.
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	if err := Unpack(context.Background(), bytes.NewReader(archive(t, reg("a"), "1")), full, UnpackOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("unpack into a non-empty directory: %v", err)
	}
}

func TestPackRefusesSymlinks(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "artifacts", "evil.json")); err != nil {
		t.Skip(err)
	}
	if err := Pack(context.Background(), dir, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "only regular files") {
		t.Errorf("pack with a symlink: %v", err)
	}
	_, err := Verify(context.Background(), dir, VerifyOptions{})
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.File != "artifacts/evil.json" || ve.Check != "file type" {
		t.Errorf("verify with a symlink: %v", err)
	}
}
