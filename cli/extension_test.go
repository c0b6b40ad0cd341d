package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/extension"
)

func TestExtensionUnpackAndID(t *testing.T) {
	code, out, _ := run(t, "", "extension", "id")
	if code != ExitOK || strings.TrimSpace(out) != extension.ID() {
		t.Fatalf("id: %d %q", code, out)
	}
	dir := filepath.Join(t.TempDir(), "ext")
	code, out, errOut := run(t, "", "extension", "unpack", dir)
	if code != ExitOK || strings.TrimSpace(out) != dir {
		t.Fatalf("unpack: %d %q %q", code, out, errOut)
	}
	for _, name := range extension.FileNames() {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	// Again: replaces the earlier unpack.
	if code, _, errOut := run(t, "", "extension", "unpack", dir); code != ExitOK {
		t.Fatalf("second unpack: %s", errOut)
	}
	// Another extension's directory is left alone.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "manifest.json"), []byte(`{"name":"other","manifest_version":3}`), 0o644)
	if code, _, errOut := run(t, "", "extension", "unpack", other); code != ExitFailure || !strings.Contains(errOut, "another extension") {
		t.Fatalf("unpack over another extension: %d %q", code, errOut)
	}
	if code, _, _ := run(t, "", "extension"); code != ExitUsage {
		t.Errorf("no subcommand: exit %d", code)
	}
}
