package nativehost

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestManifestDir(t *testing.T) {
	tests := []struct {
		b      Browser
		system bool
		goos   string
		want   string
	}{
		{Chrome, false, "linux", "/home/u/.config/google-chrome/NativeMessagingHosts"},
		{Chrome, true, "linux", "/etc/opt/chrome/native-messaging-hosts"},
		{Chromium, false, "linux", "/home/u/.config/chromium/NativeMessagingHosts"},
		{Chromium, true, "linux", "/etc/chromium/native-messaging-hosts"},
		{Edge, false, "linux", "/home/u/.config/microsoft-edge/NativeMessagingHosts"},
		{Edge, true, "linux", "/etc/opt/edge/native-messaging-hosts"},
		{Brave, false, "linux", "/home/u/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts"},
		{Brave, true, "linux", "/etc/opt/brave/native-messaging-hosts"},
		{Chrome, false, "darwin", "/home/u/Library/Application Support/Google/Chrome/NativeMessagingHosts"},
		{Chrome, true, "darwin", "/Library/Google/Chrome/NativeMessagingHosts"},
		{Chromium, false, "darwin", "/home/u/Library/Application Support/Chromium/NativeMessagingHosts"},
		{Edge, false, "darwin", "/home/u/Library/Application Support/Microsoft Edge/NativeMessagingHosts"},
		{Brave, false, "darwin", "/home/u/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts"},
	}
	if runtime.GOOS == "windows" {
		t.Skip("Unix paths")
	}
	for _, tt := range tests {
		got, err := ManifestDir(tt.b, tt.system, tt.goos, "/home/u")
		if err != nil || got != tt.want {
			t.Errorf("ManifestDir(%s, %v, %s) = %q, %v; want %q", tt.b, tt.system, tt.goos, got, err, tt.want)
		}
	}
	if _, err := ManifestDir(Chrome, false, "plan9", "/home/u"); err == nil {
		t.Error("plan9 has a manifest directory")
	}
	if got := RegistryKey(Edge); got != `Software\Microsoft\Edge\NativeMessagingHosts\run.aegis.host` {
		t.Errorf("RegistryKey(edge) = %q", got)
	}
}

func TestParseBrowser(t *testing.T) {
	for _, s := range []string{"chrome", "Chromium", " edge ", "BRAVE"} {
		if _, err := ParseBrowser(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseBrowser("firefox"); err == nil {
		t.Error("firefox accepted")
	}
}

const testID = "pdnacjfflmmmdppgomabginbhddhhika"

func TestInstallUninstall(t *testing.T) {
	home := t.TempDir()
	exe := filepath.Join(home, "bin", "aegis")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	o := InstallOptions{Browser: Chromium, Home: home, GOOS: "linux", Executable: exe, ExtensionIDs: []string{testID}}
	if runtime.GOOS == "windows" {
		o.GOOS = "linux" // the file layout only; no registry
	}
	res, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".config", "chromium", "NativeMessagingHosts", HostName+".json"); res.Path != want {
		t.Fatalf("path %s, want %s", res.Path, want)
	}
	m, err := ReadManifest(res.Path)
	if err != nil || m.Validate() != nil || m.Path != exe || m.AllowedOrigins[0] != "chrome-extension://"+testID+"/" {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	if err := CheckOrigin("chrome-extension://"+testID+"/", exe, []string{res.Path}); err != nil {
		t.Errorf("CheckOrigin: %v", err)
	}
	removed, err := Uninstall(o)
	if err != nil || len(removed) != 1 || removed[0] != res.Path {
		t.Fatalf("Uninstall = %v, %v", removed, err)
	}
	// A manifest of another host under the same name is left alone.
	os.WriteFile(res.Path, []byte(`{"name":"com.other","path":"/x","type":"stdio"}`), 0o644)
	if _, err := Uninstall(o); err == nil {
		t.Error("removed another host's manifest")
	}
	// Bad ids are refused.
	o.ExtensionIDs = []string{"abc"}
	if _, err := Install(o); err == nil {
		t.Error("installed for a bad id")
	}
}

func TestCheckOriginFollowsSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "aegis")
	os.WriteFile(exe, []byte("x"), 0o755)
	link := filepath.Join(dir, "aegis-link")
	if err := os.Symlink(exe, link); err != nil {
		t.Skip(err)
	}
	res, err := Install(InstallOptions{Dir: dir, Executable: link, ExtensionIDs: []string{testID}})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckOrigin("chrome-extension://"+testID+"/", exe, []string{res.Path}); err != nil {
		t.Errorf("a manifest naming a link to the host: %v", err)
	}
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("y"), 0o755)
	err = CheckOrigin("chrome-extension://"+testID+"/", other, []string{res.Path})
	if !errors.Is(err, &Error{Code: CodeOriginRefused}) {
		t.Errorf("a manifest of another executable counted: %v", err)
	}
}

func TestParseOrigin(t *testing.T) {
	good := "chrome-extension://" + testID + "/"
	if id, err := ParseOrigin(good); err != nil || id != testID {
		t.Fatalf("ParseOrigin(%q) = %q, %v", good, id, err)
	}
	for _, bad := range []string{
		"", "chrome-extension://" + testID, "chrome-extension://" + strings.ToUpper(testID) + "/",
		"chrome-extension://" + testID + "/x", "moz-extension://" + testID + "/", "chrome-extension://zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz/",
	} {
		if _, err := ParseOrigin(bad); err == nil {
			t.Errorf("ParseOrigin(%q) accepted", bad)
		}
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "host.json")
	c, err := LoadConfig(p)
	if err != nil || c.Model != nil {
		t.Fatalf("missing file: %+v, %v", c, err)
	}
	want := Config{Model: &ModelConfig{Model: "m", APIKey: "sk-secret"}, Secrets: map[string]Secret{"PASSWORD": {Value: "hunter2", Origins: []string{"http://127.0.0.1:8080"}}, "SHOP": {Value: "shop-pw-1", Origins: []string{"https://shop.example"}}}, EvidenceDir: dir}
	if err := SaveConfig(p, want); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		st, _ := os.Stat(p)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode().Perm())
		}
		dst, _ := os.Stat(filepath.Dir(p))
		if dst.Mode().Perm() != 0o700 {
			t.Errorf("directory mode %v", dst.Mode().Perm())
		}
	}
	got, err := LoadConfig(p)
	if err != nil || got.Model.APIKey != "sk-secret" || !reflect.DeepEqual(got.Secrets, want.Secrets) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), `"value": "hunter2"`) || !strings.Contains(string(b), `"origins": [`) {
		t.Errorf("file:\n%s", b)
	}
	if runtime.GOOS != "windows" {
		os.Chmod(p, 0o640)
		if _, err := LoadConfig(p); !errors.Is(err, ErrConfigPermissions) {
			t.Errorf("group-readable file: %v", err)
		}
		os.Chmod(p, 0o600)
	}
	for name, body := range map[string]string{
		"unknown member": `{"modle":{}}`,
		"not JSON":       `{"secrets": {"PASSWORD": "hunter2"`,
		"relative path":  `{"evidenceDir":"evidence"}`,
		"model no id":    `{"model":{"apiKey":"hunter2"}}`,
		"secret number":  `{"secrets": {"PASSWORD": 12}}`,
		"secret member":  `{"secrets": {"PASSWORD": {"value": "hunter2", "origin": "https://a.example"}}}`,
		"secret origin":  `{"secrets": {"PASSWORD": {"value": "hunter2", "origins": ["https://a.example/login"]}}}`,
		"secret scheme":  `{"secrets": {"PASSWORD": {"value": "hunter2", "origins": ["a.example"]}}}`,
		"secret string":  `{"secrets": {"PASSWORD": "hunter2"}}`,
		"secret unbound": `{"secrets": {"PASSWORD": {"value": "hunter2", "origins": []}}}`,
		"secret short":   `{"secrets": {"PASSWORD": {"value": "abc", "origins": ["https://a.example"]}}}`,
	} {
		os.WriteFile(p, []byte(body), 0o600)
		_, err := LoadConfig(p)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
	os.WriteFile(p, []byte(strings.Repeat(" ", MaxConfigBytes+1)), 0o600)
	if _, err := LoadConfig(p); err == nil {
		t.Error("an oversized file was read")
	}
}

// TestConfigSecretSet: a secret given as a string is read but refused
// (the host never guesses where it may go: the extension's task starts on
// whatever tab is open), saying what to write; one given with origins is
// bound to them, normalized.
func TestConfigSecretSet(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"secrets": {"OLD": "old-value", "NEW": {"value": "new-value", "origins": ["HTTPS://Shop.Example/"]}}}`), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `secrets.OLD: no origins: write {"value"`) || strings.Contains(err.Error(), "old-value") {
		t.Fatalf("Validate: %v, want secrets.OLD refused without its value", err)
	}
	c.Secrets["OLD"] = Secret{Value: "old-value", Origins: []string{"http://127.0.0.1:9"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	set, err := c.SecretSet()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := set.Origins("OLD"), []string{"http://127.0.0.1:9"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OLD bound to %v, want %v", got, want)
	}
	if got, want := set.Origins("NEW"), []string{"https://shop.example"}; !reflect.DeepEqual(got, want) {
		t.Errorf("NEW bound to %v, want %v", got, want)
	}
	if v, _ := set.Resolve("{{secret:OLD}}/{{secret:NEW}}"); v != "old-value/new-value" {
		t.Errorf("values %q", v)
	}
}
