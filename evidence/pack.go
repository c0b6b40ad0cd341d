package evidence

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/klauspost/compress/zstd"
)

// A packed bundle is a tar archive (POSIX pax format) compressed with
// zstd. It is deterministic: the same bundle always packs to the same
// bytes (for one version of the zstd library): regular files only, sorted
// by path in byte order, paths relative to the bundle root, mode 0644,
// uid and gid 0, no user or group names, modification time 0 (1970-01-01),
// no directory entries; one zstd frame, written single-threaded at a fixed
// level with a content checksum.

// The limits Unpack applies by default.
const (
	DefaultMaxFiles     = 100000
	DefaultMaxFileBytes = 256 << 20
	DefaultMaxTotal     = 8 << 30
	maxZstdWindow       = 64 << 20
)

// packLevel is the zstd level of Pack: fixed, so that output is stable.
const packLevel = zstd.SpeedDefault

// Pack writes the bundle in dir to w as a deterministic .tar.zst. It
// refuses anything but regular files and directories, an empty directory,
// and paths that Unpack would refuse.
func Pack(ctx context.Context, dir string, w io.Writer) error {
	var files []string
	dirs := map[string]bool{} // directory -> holds a file, at any depth
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			dirs[rel] = false
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("evidence: pack: %s: only regular files are packed (%v)", rel, d.Type())
		}
		if !validBundlePath(rel) {
			return fmt.Errorf("evidence: pack: %s: not a valid bundle path", rel)
		}
		files = append(files, rel)
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("evidence: pack: %w", err)
	}
	// An archive holds files only: an empty directory would be lost, and
	// the archive would verify where the directory does not.
	var empty []string
	for d, full := range dirs {
		if !full {
			empty = append(empty, d)
		}
	}
	if len(empty) > 0 {
		sort.Strings(empty)
		return fmt.Errorf("evidence: pack: %s: an empty directory (a bundle holds none)", empty[0])
	}
	sort.Strings(files)
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(packLevel), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(true), zstd.WithWindowSize(8<<20))
	if err != nil {
		return fmt.Errorf("evidence: pack: %w", err)
	}
	tw := tar.NewWriter(zw)
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			zw.Close()
			return err
		}
		if err := packFile(tw, dir, rel); err != nil {
			zw.Close()
			return fmt.Errorf("evidence: pack: %s: %w", rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		zw.Close()
		return fmt.Errorf("evidence: pack: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("evidence: pack: %w", err)
	}
	return nil
}

func packFile(tw *tar.Writer, dir, rel string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     rel,
		Mode:     0o644,
		Size:     fi.Size(),
		ModTime:  time.Unix(0, 0),
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("changed while packed: %d bytes, then %d", fi.Size(), n)
	}
	return err
}

// UnpackOptions bound what Unpack accepts; zero fields take the defaults.
type UnpackOptions struct {
	// MaxFiles is the most files (DefaultMaxFiles).
	MaxFiles int
	// MaxFileBytes is the largest file (DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxTotalBytes is the most bytes in all (DefaultMaxTotal).
	MaxTotalBytes int64
}

// UnpackError says why an archive was refused.
type UnpackError struct {
	// Name is the archive member at fault ("" for the archive itself).
	Name string
	// Reason says what is wrong.
	Reason string
}

// Error names the member refused and why.
func (e *UnpackError) Error() string {
	if e.Name == "" {
		return "unpack: " + e.Reason
	}
	return fmt.Sprintf("unpack: %q: %s", e.Name, e.Reason)
}

// Unpack extracts a packed bundle read from r into dir, which must not
// exist or be empty. It refuses (with an *UnpackError, removing what it
// extracted) anything but regular files, paths that are absolute, contain
// "..", "." or empty segments, backslashes or a leading dot, duplicate
// paths (also under case folding), a path beneath another file, oversized
// files, too many files or bytes, and bytes after the archive.
func Unpack(ctx context.Context, r io.Reader, dir string, opts UnpackOptions) (err error) {
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = DefaultMaxTotal
	}
	created, err := prepareDir(dir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			cleanDir(dir, created)
		}
	}()
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow),
		zstd.WithDecoderMaxMemory(uint64(opts.MaxTotalBytes)+1<<20))
	if err != nil {
		return &UnpackError{Reason: err.Error()}
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	seen := map[string]string{} // folded path -> path
	isDir := map[string]bool{}  // folded directories made
	var total int64
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &UnpackError{Reason: err.Error()}
		}
		name := hdr.Name
		switch {
		case n >= opts.MaxFiles:
			return &UnpackError{Name: name, Reason: fmt.Sprintf("more than %d files", opts.MaxFiles)}
		case hdr.Typeflag != tar.TypeReg:
			return &UnpackError{Name: name, Reason: fmt.Sprintf("not a regular file (type %q): links, directories and devices are refused", hdr.Typeflag)}
		case !validBundlePath(name):
			return &UnpackError{Name: name, Reason: "path escapes the bundle or is not a bundle path"}
		case hdr.Size < 0 || hdr.Size > opts.MaxFileBytes:
			return &UnpackError{Name: name, Reason: fmt.Sprintf("file of %d bytes, at most %d allowed", hdr.Size, opts.MaxFileBytes)}
		case total+hdr.Size > opts.MaxTotalBytes:
			return &UnpackError{Name: name, Reason: fmt.Sprintf("more than %d bytes in all", opts.MaxTotalBytes)}
		}
		folded := foldPath(name)
		if prev, dup := seen[folded]; dup {
			return &UnpackError{Name: name, Reason: "duplicate of " + prev}
		}
		if isDir[folded] {
			return &UnpackError{Name: name, Reason: "a file where another member needs a directory"}
		}
		for d := filepath.ToSlash(filepath.Dir(name)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			if _, clash := seen[foldPath(d)]; clash {
				return &UnpackError{Name: name, Reason: "beneath the file " + d}
			}
			isDir[foldPath(d)] = true
		}
		seen[folded] = name
		total += hdr.Size
		if err := extract(tr, dir, name, hdr.Size); err != nil {
			return &UnpackError{Name: name, Reason: err.Error()}
		}
	}
	// Nothing may follow the archive in the stream.
	var one [1]byte
	if k, _ := io.ReadFull(zr, one[:]); k > 0 {
		return &UnpackError{Reason: "data after the end of the archive"}
	}
	return nil
}

// prepareDir makes dir, or checks it is an empty directory. It reports
// whether it created it.
func prepareDir(dir string) (bool, error) {
	err := os.Mkdir(dir, 0o755)
	if err == nil {
		return true, nil
	}
	if !os.IsExist(err) {
		return false, fmt.Errorf("evidence: unpack: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return false, fmt.Errorf("evidence: unpack: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("evidence: unpack: %s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("evidence: unpack: %w", err)
	}
	if len(entries) > 0 {
		return false, fmt.Errorf("evidence: unpack: %s is not empty", dir)
	}
	return false, nil
}

// cleanDir undoes a failed extraction.
func cleanDir(dir string, created bool) {
	if created {
		os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// extract writes one member. The directories on its path were made by
// Unpack itself inside a directory it made or found empty, and the file is
// created exclusively, so nothing outside dir can be reached.
func extract(r io.Reader, dir, name string, size int64) error {
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("truncated: %d of %d bytes", n, size)
	}
	return err
}
