package suite

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// IndexFile is the name of the index in a suite's directory.
const IndexFile = "suite.json"

// maxIndexBytes bounds an index read by ReadIndex: the schema's documents
// bound (100,000 tasks of a few hundred bytes fit well under it).
const maxIndexBytes = schemas.MaxDocumentBytes

// ErrInvalidIndex is wrapped by every error of ReadIndex about the
// index's content (not its file): it breaks the schema, is not JSON, or
// lists a bundle twice.
var ErrInvalidIndex = errors.New("invalid suite index")

// WriteIndex writes idx to DIR/suite.json atomically: to a temporary file
// in dir, synced, then renamed over suite.json, so that a reader sees the
// old index or the new one, never part of one. An index that breaks its
// schema is not written.
func WriteIndex(dir string, idx Index) error {
	b, err := contract.Encode(schemas.KindSuiteIndex, idx)
	if err != nil {
		return fmt.Errorf("suite: write index: %w", err)
	}
	if err := checkIndex(idx); err != nil {
		return fmt.Errorf("suite: write index: %w", err)
	}
	return writeAtomic(filepath.Join(dir, IndexFile), append(b, '\n'))
}

// writeAtomic writes data to a temporary file beside dst, syncs it and
// renames it to dst.
func writeAtomic(dst string, data []byte) error {
	dir := filepath.Dir(dst)
	tmp, err := os.CreateTemp(dir, ".aegis-"+filepath.Base(dst)+"-*")
	if err != nil {
		return fmt.Errorf("suite: write %s: %w", dst, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("suite: write %s: %w", dst, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("suite: write %s: %w", dst, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("suite: write %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("suite: write %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("suite: write %s: %w", dst, err)
	}
	if d, err := os.Open(dir); err == nil { // the rename itself, durable
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadIndex reads the index at path strictly: one JSON document, no
// duplicate or unknown members, valid under
// schemas/suite-index.schema.json, and no bundle listed twice. An error
// about the content wraps ErrInvalidIndex and, where the schema is broken,
// the *schemas.ValidationError naming every problem (or the
// *schemas.SyntaxError saying where the JSON breaks); an unreadable file
// is the os error, wrapped.
func ReadIndex(path string) (Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return Index{}, fmt.Errorf("suite: read index: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return Index{}, fmt.Errorf("suite: read index %s: %w", path, err)
	}
	idx, err := ParseIndex(data)
	if err != nil {
		return Index{}, fmt.Errorf("suite: %s: %w", path, err)
	}
	return idx, nil
}

// ParseIndex reads an index from its bytes, as ReadIndex does from a
// file.
func ParseIndex(data []byte) (Index, error) {
	var idx Index
	if len(data) > maxIndexBytes {
		return Index{}, fmt.Errorf("%w: %w", ErrInvalidIndex, schemas.ErrTooLarge)
	}
	if err := contract.Decode(schemas.KindSuiteIndex, data, &idx); err != nil {
		return Index{}, fmt.Errorf("%w: %w", ErrInvalidIndex, err)
	}
	if err := checkIndex(idx); err != nil {
		return Index{}, fmt.Errorf("%w: %w", ErrInvalidIndex, err)
	}
	return idx, nil
}

// checkIndex checks what the schema cannot say: each bundle is listed
// once (a task's, or an attempt's), and names a place inside the index's
// directory (the schema's pattern says so too; this is the same rule in
// Go, so that an index built in memory is held to it before it is
// written).
func checkIndex(idx Index) error {
	seen := map[string]string{}
	note := func(bundle, owner string) error {
		if bundle == "" {
			return nil
		}
		if !localBundle(bundle) {
			return fmt.Errorf("%s: bundle %q is not a path inside the index's directory", owner, bundle)
		}
		if prev, dup := seen[bundle]; dup {
			return fmt.Errorf("%s: bundle %q is also %s's", owner, bundle, prev)
		}
		seen[bundle] = owner
		return nil
	}
	for i, t := range idx.Tasks {
		owner := fmt.Sprintf("task %d (%q)", i+1, t.Name)
		if err := note(t.Bundle, owner); err != nil {
			return err
		}
		for j, r := range t.Retries {
			if err := note(r.Bundle, fmt.Sprintf("%s, attempt %d", owner, j+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// localBundle reports whether rel is a slash-separated relative path that
// stays inside its base: no leading slash, no backslash or NUL, and no
// empty, "." or ".." segment.
func localBundle(rel string) bool {
	if rel == "" || rel == "." || !filepath.IsLocal(filepath.FromSlash(rel)) || path.Clean(rel) != rel {
		return false
	}
	for i := 0; i < len(rel); i++ {
		if rel[i] == '\\' || rel[i] == 0 {
			return false
		}
	}
	return true
}

// ErrDirInUse is wrapped by CheckFreshDir's error for a directory that
// already holds a suite index or evidence bundles.
var ErrDirInUse = errors.New("already holds a suite or evidence bundles")

// CheckFreshDir checks that dir can be a new suite's directory: it does
// not exist, or holds neither a suite index nor any evidence bundle (at
// any depth). A suite's directory is verified whole (Verify): a bundle the
// index does not list, another run's or another suite's, fails it. A
// dir that is a symbolic link is checked where it leads (as the suite
// would write there).
func CheckFreshDir(dir string) error {
	root := dir // where the walk starts: WalkDir reads no link it starts at
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		root = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("suite directory %s: %w", dir, err)
	}
	if _, err := os.Lstat(filepath.Join(root, IndexFile)); err == nil {
		return fmt.Errorf("%s %w (its %s): give the suite a directory of its own", dir, ErrDirInUse, IndexFile)
	}
	var found string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if d.IsDir() && IsBundle(p) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("suite directory %s: %w", dir, err)
	}
	if found != "" {
		return fmt.Errorf("%s %w (%s is a bundle): give the suite a directory of its own", dir, ErrDirInUse, found)
	}
	return nil
}
