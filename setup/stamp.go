package setup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// stampFileName is the cache of version checks, in CacheDir/aegis.
const stampFileName = "setup-stamps.json"

// stampEntry is one cached version check: valid while Key (the checked
// files' paths, sizes and modification times) is unchanged.
type stampEntry struct {
	Key     string `json:"key"`
	Product string `json:"product,omitempty"`
	Version string `json:"version"`
}

// stamps caches version checks so that a second run starts no process.
type stamps struct {
	path    string
	entries map[string]stampEntry
	dirty   bool
}

// loadStamps reads the stamp file; a missing or corrupt one is empty.
func loadStamps(o Options) *stamps {
	s := &stamps{path: filepath.Join(o.aegisCacheDir(), stampFileName), entries: map[string]stampEntry{}}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return s
	}
	var f struct {
		Entries map[string]stampEntry `json:"entries"`
	}
	if json.Unmarshal(data, &f) == nil && f.Entries != nil {
		s.entries = f.Entries
	}
	return s
}

func (s *stamps) get(id, key string) (stampEntry, bool) {
	e, ok := s.entries[id]
	if !ok || e.Key != key {
		return stampEntry{}, false
	}
	return e, true
}

func (s *stamps) put(id string, e stampEntry) {
	if old, ok := s.entries[id]; ok && old == e {
		return
	}
	s.entries[id] = e
	s.dirty = true
}

// save writes the file atomically, and only when something changed.
func (s *stamps) save() error {
	if !s.dirty {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Comment string                `json:"comment"`
		Entries map[string]stampEntry `json:"entries"`
	}{"aegis setup: cached version checks; safe to delete", s.entries}); err != nil {
		return fmt.Errorf("encode stamps: %w", err)
	}
	data := buf.Bytes()
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("save stamps: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), "."+stampFileName+".tmp-")
	if err != nil {
		return fmt.Errorf("save stamps: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), s.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save stamps: %w", werr)
	}
	s.dirty = false
	return nil
}

// fileKey identifies the current content of path cheaply: its path, the
// file it resolves to, size and modification time.
func fileKey(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s>%s:%d:%d", path, resolved, fi.Size(), fi.ModTime().UnixNano()), nil
}

// filesKey joins the keys of several files.
func filesKey(paths ...string) (string, error) {
	keys := make([]string, 0, len(paths))
	for _, p := range paths {
		k, err := fileKey(p)
		if err != nil {
			return "", err
		}
		keys = append(keys, k)
	}
	return strings.Join(keys, "|"), nil
}

// saveStamps saves st, and says on progress when it could not.
func saveStamps(st *stamps, progress io.Writer) {
	if err := st.save(); err != nil {
		fmt.Fprintf(progress, "setup: warning: %v (the next run will check again)\n", err)
	}
}
