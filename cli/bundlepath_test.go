package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotABundle: verify, report, replay and prove on a path that is not
// an evidence bundle say so (exit 2), with the bundle the person likely
// meant: the one an evidence root holds, the one a directory is inside.
func TestNotABundle(t *testing.T) {
	bundle := copyBundle(t) // ROOT/cus_01HZX4K9
	root := filepath.Dir(bundle)
	empty := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(other, "notes.txt")
	inside := filepath.Join(bundle, "provenance")
	tests := []struct {
		name, path, want string
	}{
		{"empty directory", empty, "aegis: not an evidence bundle: no manifest.json in " + empty + "\n"},
		{"another directory", other, "aegis: not an evidence bundle: no manifest.json in " + other + "\n"},
		{"an evidence root", root, "aegis: not an evidence bundle: no manifest.json in " + root + " (did you mean " + bundle + "?)\n"},
		{"inside a bundle", inside, "aegis: not an evidence bundle: no manifest.json in " + inside + " (did you mean " + bundle + ", the bundle it is in?)\n"},
		{"a text file", text, "aegis: not an evidence bundle: " + text + " is a file but not a packed bundle (.tar.zst, from aegis pack)\n"},
	}
	commands := [][]string{{"verify"}, {"report", "-o", filepath.Join(t.TempDir(), "r.html")}, {"replay", "--evidence", t.TempDir()}, {"prove", "ENTRY"}}
	for _, tt := range tests {
		for _, c := range commands {
			t.Run(tt.name+"/"+c[0], func(t *testing.T) {
				args := append([]string{c[0], tt.path}, c[1:]...)
				if c[0] == "prove" {
					args = []string{"prove", tt.path, "0"}
				}
				code, out, errOut := run(t, "", args...)
				if got, want := code, ExitUsage; got != want {
					t.Errorf("exit %d, want %d", got, want)
				}
				if got, want := errOut, tt.want; got != want {
					t.Errorf("stderr\n got %q\nwant %q", got, want)
				}
				if out != "" {
					t.Errorf("stdout %q", out)
				}
			})
		}
	}
	// Several bundles in a root: the newest is meant.
	second := filepath.Join(root, "cus_second")
	if err := os.Rename(copyBundle(t), second); err != nil {
		t.Fatal(err)
	}
	_, _, errOut := run(t, "", "verify", root)
	if want := " (it holds 2 bundles; did you mean the newest, "; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}
	// A bundle is one, packed or not.
	if code, _, errOut := run(t, "", "verify", bundle); code != ExitOK {
		t.Errorf("verify %s: exit %d: %s", bundle, code, errOut)
	}
}
