package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/nativehost"
)

func TestInstallUninstallDir(t *testing.T) {
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "config", "host.json")
	t.Setenv(nativehost.EnvConfig, cfgPath)
	dir := filepath.Join(tmp, "profile", "NativeMessagingHosts")
	code, out, errOut := run(t, "", "install", "--dir", dir, "--extension-id", strings.Repeat("c", 32), "--extension-id", extension.ID())
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	path := strings.TrimSpace(out)
	if path != filepath.Join(dir, nativehost.HostName+".json") {
		t.Fatalf("printed %q", path)
	}
	m, err := nativehost.ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := nativehost.Executable()
	want := []string{"chrome-extension://" + strings.Repeat("c", 32) + "/", extension.Origin()}
	if m.Path != exe || m.Type != "stdio" || m.Name != nativehost.HostName || strings.Join(m.AllowedOrigins, ",") != strings.Join(want, ",") {
		t.Fatalf("manifest = %+v", m)
	}
	st, err := os.Stat(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("configuration mode %v, want 0600", st.Mode().Perm())
	}
	cfg, err := nativehost.LoadConfig(cfgPath)
	if err != nil || len(cfg.Manifests) != 1 || cfg.Manifests[0] != path {
		t.Fatalf("configuration %+v, %v", cfg, err)
	}
	// The host's origin check now finds it.
	if err := nativehost.CheckOrigin(extension.Origin(), exe, nativehost.ManifestSearchPath(cfg)); err != nil {
		t.Errorf("origin check: %v", err)
	}
	// Installing again changes nothing in the configuration.
	if code, _, errOut := run(t, "", "install", "--dir", dir); code != ExitOK {
		t.Fatalf("second install: %s", errOut)
	}
	cfg, _ = nativehost.LoadConfig(cfgPath)
	if len(cfg.Manifests) != 1 {
		t.Errorf("manifests %v", cfg.Manifests)
	}

	code, out, errOut = run(t, "", "uninstall", "--dir", dir, "--json")
	if code != ExitOK {
		t.Fatalf("uninstall: exit %d: %s", code, errOut)
	}
	var res struct{ Removed []string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Removed) != 1 || res.Removed[0] != path {
		t.Fatalf("uninstall printed %q (%v)", out, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("manifest still there: %v", err)
	}
	cfg, _ = nativehost.LoadConfig(cfgPath)
	if len(cfg.Manifests) != 0 {
		t.Errorf("configuration still lists %v", cfg.Manifests)
	}
	if code, _, errOut := run(t, "", "uninstall", "--dir", dir); code != ExitOK || !strings.Contains(errOut, "nothing to remove") {
		t.Errorf("second uninstall: %d %q", code, errOut)
	}
}

func TestInstallBrowserLocation(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the browsers' directories are checked on Linux and macOS")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(nativehost.EnvConfig, filepath.Join(home, "host.json"))
	for _, b := range []string{"chrome", "chromium", "edge", "brave"} {
		code, out, errOut := run(t, "", "install", "--browser", b, "--json")
		if code != ExitOK {
			t.Fatalf("%s: %s", b, errOut)
		}
		var res struct{ Manifest string }
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		want, _ := nativehost.ManifestDir(nativehost.Browser(b), false, runtime.GOOS, home)
		if filepath.Dir(res.Manifest) != want || !strings.HasPrefix(res.Manifest, home) {
			t.Errorf("%s: manifest at %s, want in %s", b, res.Manifest, want)
		}
		if code, _, _ := run(t, "", "uninstall", "--browser", b); code != ExitOK {
			t.Errorf("%s: uninstall failed", b)
		}
	}
}

func TestInstallUsage(t *testing.T) {
	t.Setenv(nativehost.EnvConfig, filepath.Join(t.TempDir(), "host.json"))
	for _, args := range [][]string{
		{"install", "--browser", "netscape"},
		{"install", "--extension-id", "not-an-id"},
		{"install", "extra"},
		{"uninstall", "--browser", "safari"},
	} {
		if code, _, _ := run(t, "", args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
