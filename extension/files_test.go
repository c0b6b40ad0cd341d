package extension

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wantID is the extension's ID, fixed by the key in manifest.json. It
// changes only with the key, and every installed host manifest names it.
const wantID = "pdnacjfflmmmdppgomabginbhddhhika"

func TestID(t *testing.T) {
	if got := ID(); got != wantID {
		t.Fatalf("ID() = %s, want %s", got, wantID)
	}
	if got := Origin(); got != "chrome-extension://"+wantID+"/" {
		t.Fatalf("Origin() = %s", got)
	}
	if _, err := IDFromKey("not base64!"); err == nil {
		t.Error("a bad key gave an id")
	}
}

// TestManifest pins the permissions: each is justified in README.md, and
// adding one must be a decision.
func TestManifest(t *testing.T) {
	b, err := ReadFile("manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ManifestVersion int      `json:"manifest_version"`
		Permissions     []string `json:"permissions"`
		HostPermissions []string `json:"host_permissions"`
		Background      struct {
			ServiceWorker string `json:"service_worker"`
		} `json:"background"`
		Action struct {
			DefaultPopup string `json:"default_popup"`
		} `json:"action"`
		CSP struct {
			ExtensionPages string `json:"extension_pages"`
		} `json:"content_security_policy"`
		ContentScripts         []any `json:"content_scripts"`
		ExternallyConnectable  any   `json:"externally_connectable"`
		WebAccessibleResources []any `json:"web_accessible_resources"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.ManifestVersion != 3 {
		t.Errorf("manifest_version %d", m.ManifestVersion)
	}
	if want := []string{"nativeMessaging", "scripting", "webNavigation", "declarativeNetRequest", "webRequest", "privacy", "storage"}; !slices.Equal(m.Permissions, want) {
		t.Errorf("permissions %v, want %v", m.Permissions, want)
	}
	if want := []string{"<all_urls>"}; !slices.Equal(m.HostPermissions, want) {
		t.Errorf("host_permissions %v, want %v", m.HostPermissions, want)
	}
	// No page may reach the extension: no static content scripts, nothing
	// exposed to pages, no external connections.
	if m.ContentScripts != nil || m.ExternallyConnectable != nil || m.WebAccessibleResources != nil {
		t.Errorf("the manifest exposes the extension to pages")
	}
	if strings.Contains(m.CSP.ExtensionPages, "unsafe") || !strings.Contains(m.CSP.ExtensionPages, "script-src 'self'") {
		t.Errorf("CSP %q", m.CSP.ExtensionPages)
	}
	for _, f := range []string{m.Background.ServiceWorker, m.Action.DefaultPopup, "observer.js", "executor.js", "listeners.js", "boundary.js", "settings.js", "popup.js", "popup.css", "options.html", "options.js", "options.css"} {
		if _, err := ReadFile(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(m.Permissions, m.HostPermissions...) {
		if !strings.Contains(string(readme), "`"+p+"`") {
			t.Errorf("README.md does not justify %s", p)
		}
	}
}

// TestNoExternalAssets: the popup loads nothing from outside the
// extension, and no page script uses innerHTML with page data.
func TestNoExternalAssets(t *testing.T) {
	for _, name := range FileNames() {
		b, err := ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, "http://") && name != "background.js" && name != "observer.js" && name != "popup.js" && name != "executor.js" {
			t.Errorf("%s refers to an http URL", name)
		}
		if (name == "popup.js" || name == "popup.html" || name == "options.js" || name == "options.html") && (strings.Contains(s, "innerHTML") || strings.Contains(s, "https://")) {
			t.Errorf("%s uses innerHTML or an external URL", name)
		}
	}
}

func TestUnpack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x")
	if err := Unpack(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range FileNames() {
		got, err := os.ReadFile(filepath.Join(dir, name))
		want, _ := ReadFile(name)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := Unpack(dir); err != nil {
		t.Errorf("unpack over an earlier unpack: %v", err)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "manifest.json"), []byte(`{"key":"AAAA"}`), 0o644)
	if err := Unpack(other); err == nil {
		t.Error("unpacked over another extension")
	}
}

// TestJavaScriptParses runs node --check on every script as Chrome loads
// it (observer.js assembled), when node is installed (it is wherever the
// Playwright driver is).
func TestJavaScriptParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	dir := t.TempDir()
	if err := Unpack(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range FileNames() {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		if out, err := exec.Command(node, "--check", filepath.Join(dir, name)).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}
