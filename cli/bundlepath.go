package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/suite"
)

// zstdMagic starts every zstd frame, hence every packed bundle.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// notBundle returns a usage error when path exists but is not an evidence
// bundle (a directory with manifest.json or provenance/ledger.json, or a
// zstd file): "not an evidence bundle: no manifest.json in DIR", with the
// bundle the person likely meant (the newest bundle DIR holds, or the
// bundle DIR is inside). A path that cannot be read is left for the
// command to report.
func notBundle(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		head := make([]byte, len(zstdMagic))
		if _, err := io.ReadFull(f, head); err == nil && bytes.Equal(head, zstdMagic) {
			return nil
		}
		return usageError("not an evidence bundle: %s is a file but not a packed bundle (.tar.zst, from aegis pack)%s", path, meant(filepath.Dir(path), path))
	}
	if suite.IsBundle(path) {
		return nil
	}
	return usageError("not an evidence bundle: no manifest.json in %s%s", path, meant(path, path))
}

// meant names the bundle a person likely meant by path: the bundle it is
// inside of, or the newest bundle dir holds (an evidence root such as
// aegis-evidence), as " (did you mean X?)"; "" when there is none.
func meant(dir, path string) string {
	for d := filepath.Clean(path); ; {
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		if suite.IsBundle(parent) {
			return fmt.Sprintf(" (did you mean %s, the bundle it is in?)", parent)
		}
		d = parent
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var newest string
	var newestAt time.Time
	n := 0
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || !suite.IsBundle(p) {
			continue
		}
		n++
		at := time.Time{}
		if fi, err := os.Stat(filepath.Join(p, evidence.FileManifest)); err == nil {
			at = fi.ModTime()
		}
		if newest == "" || at.After(newestAt) {
			newest, newestAt = p, at
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (did you mean %s?)", newest)
	}
	return fmt.Sprintf(" (it holds %d bundles; did you mean the newest, %s?)", n, newest)
}
