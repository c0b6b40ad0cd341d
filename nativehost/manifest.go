package nativehost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// HostName is the name of the aegis native messaging host: the name the
// extension connects to and the manifest's file name (HostName + ".json").
const HostName = "run.aegis.host"

// HostManifest is a native messaging host manifest
// (https://developer.chrome.com/docs/extensions/develop/concepts/native-messaging).
type HostManifest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Path is the host executable's absolute path.
	Path string `json:"path"`
	// Type is always "stdio".
	Type string `json:"type"`
	// AllowedOrigins are the extensions allowed to start the host
	// ("chrome-extension://ID/"); Chrome allows no wildcard.
	AllowedOrigins []string `json:"allowed_origins"`
}

// NewManifest returns the manifest of the host at exe for the extensions
// ids.
func NewManifest(exe string, ids []string) HostManifest {
	m := HostManifest{
		Name:        HostName,
		Description: "aegis: a governed browser agent (native messaging host)",
		Path:        exe,
		Type:        "stdio",
	}
	for _, id := range ids {
		m.AllowedOrigins = append(m.AllowedOrigins, "chrome-extension://"+id+"/")
	}
	return m
}

var idRe = regexp.MustCompile(`^[a-p]{32}$`)

// ValidExtensionID reports whether id is a Chrome extension ID: 32 letters
// a to p.
func ValidExtensionID(id string) bool { return idRe.MatchString(id) }

// Validate checks a manifest as Chrome would, and as the host requires.
func (m HostManifest) Validate() error {
	switch {
	case m.Name != HostName:
		return fmt.Errorf("name %q is not %q", m.Name, HostName)
	case m.Type != "stdio":
		return fmt.Errorf("type %q is not stdio", m.Type)
	case !filepath.IsAbs(m.Path) && runtime.GOOS != "windows":
		return fmt.Errorf("path %q is not absolute", m.Path)
	case len(m.AllowedOrigins) == 0:
		return errors.New("no allowed_origins")
	}
	for _, o := range m.AllowedOrigins {
		if _, err := ParseOrigin(o); err != nil {
			return err
		}
	}
	return nil
}

// Browser is a Chromium-based browser the host can be installed for.
type Browser string

// The browsers.
const (
	Chrome   Browser = "chrome"
	Chromium Browser = "chromium"
	Edge     Browser = "edge"
	Brave    Browser = "brave"
)

// Browsers lists every browser.
var Browsers = []Browser{Chrome, Chromium, Edge, Brave}

// ParseBrowser parses a --browser value.
func ParseBrowser(s string) (Browser, error) {
	b := Browser(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(Browsers, b) {
		return b, nil
	}
	return "", fmt.Errorf("unknown browser %q (want chrome, chromium, edge or brave)", s)
}

// ManifestDir returns the directory browser b reads host manifests from,
// for the user or (system) for every user, on goos with home as the
// user's home directory. On Windows it is where aegis keeps the manifest
// file, which the registry key names (RegistryKey).
func ManifestDir(b Browser, system bool, goos, home string) (string, error) {
	type loc struct{ linuxUser, linuxSystem, macUser, macSystem string }
	locs := map[Browser]loc{
		Chrome:   {".config/google-chrome", "/etc/opt/chrome", "Library/Application Support/Google/Chrome", "/Library/Google/Chrome"},
		Chromium: {".config/chromium", "/etc/chromium", "Library/Application Support/Chromium", "/Library/Application Support/Chromium"},
		Edge:     {".config/microsoft-edge", "/etc/opt/edge", "Library/Application Support/Microsoft Edge", "/Library/Microsoft/Edge"},
		Brave:    {".config/BraveSoftware/Brave-Browser", "/etc/opt/brave", "Library/Application Support/BraveSoftware/Brave-Browser", "/Library/Application Support/BraveSoftware/Brave-Browser"},
	}
	l, ok := locs[b]
	if !ok {
		return "", fmt.Errorf("unknown browser %q", b)
	}
	switch goos {
	case "linux", "freebsd", "openbsd", "netbsd":
		if system {
			return filepath.Join(l.linuxSystem, "native-messaging-hosts"), nil
		}
		return filepath.Join(home, filepath.FromSlash(l.linuxUser), "NativeMessagingHosts"), nil
	case "darwin":
		if system {
			return filepath.Join(l.macSystem, "NativeMessagingHosts"), nil
		}
		return filepath.Join(home, filepath.FromSlash(l.macUser), "NativeMessagingHosts"), nil
	case "windows":
		base := os.Getenv("LOCALAPPDATA")
		if system {
			base = os.Getenv("ProgramData")
		}
		if base == "" {
			base = filepath.Join(home, "AppData", "Local")
		}
		return filepath.Join(base, "aegis", "NativeMessagingHosts", string(b)), nil
	}
	return "", fmt.Errorf("native messaging is not supported on %s", goos)
}

// RegistryKey returns the Windows registry key (under HKEY_CURRENT_USER,
// or HKEY_LOCAL_MACHINE for system) whose default value names browser b's
// manifest of the host.
func RegistryKey(b Browser) string {
	vendor := map[Browser]string{
		Chrome:   `Software\Google\Chrome`,
		Chromium: `Software\Chromium`,
		Edge:     `Software\Microsoft\Edge`,
		Brave:    `Software\BraveSoftware\Brave-Browser`,
	}[b]
	return vendor + `\NativeMessagingHosts\` + HostName
}

// InstallOptions configure Install and Uninstall.
type InstallOptions struct {
	// Browser is the browser to install for; "" means Chrome.
	Browser Browser
	// System installs for every user (needs root or administrator).
	System bool
	// Dir, when set, writes the manifest into this directory instead of
	// the browser's (such as <user-data-dir>/NativeMessagingHosts of a
	// browser started with --user-data-dir).
	Dir string
	// ExtensionIDs are the extensions allowed to start the host; at least
	// one.
	ExtensionIDs []string
	// Executable is the host's absolute path; "" means this executable.
	Executable string
	// Home is the user's home directory; "" means os.UserHomeDir.
	Home string
	// GOOS is the operating system; "" means runtime.GOOS (tests set it).
	GOOS string
}

// InstallResult says what Install wrote.
type InstallResult struct {
	// Path is the manifest file.
	Path string
	// Registry is the registry key written (Windows), "" elsewhere.
	Registry string
	// Manifest is what was written.
	Manifest HostManifest
}

func (o *InstallOptions) defaults() error {
	if o.Browser == "" {
		o.Browser = Chrome
	}
	if o.GOOS == "" {
		o.GOOS = runtime.GOOS
	}
	if o.Home == "" && o.Dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("nativehost: no home directory: %w", err)
		}
		o.Home = h
	}
	if o.Executable == "" {
		exe, err := Executable()
		if err != nil {
			return err
		}
		o.Executable = exe
	}
	return nil
}

// Executable returns this executable's absolute path with symbolic links
// resolved: what a manifest's path must name.
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("nativehost: cannot find this executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Abs(exe)
}

// ManifestPath returns where Install writes the manifest for o.
func ManifestPath(o InstallOptions) (string, error) {
	if err := o.defaults(); err != nil {
		return "", err
	}
	dir := o.Dir
	if dir == "" {
		d, err := ManifestDir(o.Browser, o.System, o.GOOS, o.Home)
		if err != nil {
			return "", err
		}
		dir = d
	}
	return filepath.Join(dir, HostName+".json"), nil
}

// Install writes the host manifest where the browser looks for it (and, on
// Windows, the registry key naming it) and returns its path.
func Install(o InstallOptions) (InstallResult, error) {
	var res InstallResult
	if err := o.defaults(); err != nil {
		return res, err
	}
	if len(o.ExtensionIDs) == 0 {
		return res, errors.New("nativehost: no extension id")
	}
	for _, id := range o.ExtensionIDs {
		if !ValidExtensionID(id) {
			return res, fmt.Errorf("nativehost: %q is not an extension id (32 letters a-p)", id)
		}
	}
	m := NewManifest(o.Executable, o.ExtensionIDs)
	if err := m.Validate(); err != nil {
		return res, fmt.Errorf("nativehost: manifest: %w", err)
	}
	path, err := ManifestPath(o)
	if err != nil {
		return res, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return res, err
	}
	b = append(b, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return res, fmt.Errorf("nativehost: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return res, fmt.Errorf("nativehost: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("nativehost: %w", err)
	}
	res.Path, res.Manifest = path, m
	if o.GOOS == "windows" && o.Dir == "" {
		key, err := registerManifest(o.Browser, o.System, path)
		if err != nil {
			return res, err
		}
		res.Registry = key
	}
	return res, nil
}

// Uninstall removes the manifest Install wrote (and the registry key) and
// returns what it removed. A manifest that is not aegis's is left alone.
func Uninstall(o InstallOptions) ([]string, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	path, err := ManifestPath(o)
	if err != nil {
		return nil, err
	}
	var removed []string
	if m, err := ReadManifest(path); err == nil {
		if m.Name != HostName {
			return nil, fmt.Errorf("nativehost: %s is not the aegis manifest: left alone", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("nativehost: %w", err)
		}
		removed = append(removed, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if o.GOOS == "windows" && o.Dir == "" {
		key, err := unregisterManifest(o.Browser, o.System)
		if err != nil {
			return removed, err
		}
		if key != "" {
			removed = append(removed, key)
		}
	}
	return removed, nil
}

// MaxManifestBytes bounds a manifest file the host reads.
const MaxManifestBytes = 64 << 10

// ReadManifest reads and parses a host manifest file.
func ReadManifest(path string) (HostManifest, error) {
	var m HostManifest
	st, err := os.Stat(path)
	if err != nil {
		return m, err
	}
	if !st.Mode().IsRegular() || st.Size() > MaxManifestBytes {
		return m, fmt.Errorf("nativehost: %s is not a manifest file", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("nativehost: %s: %w", path, err)
	}
	return m, nil
}

// KnownManifestPaths returns every place a browser may read this host's
// manifest from on this machine: each browser's user and system directory,
// and on Windows the files the registry keys name.
func KnownManifestPaths() []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, b := range Browsers {
		for _, system := range []bool{false, true} {
			if runtime.GOOS == "windows" {
				if p := registeredManifest(b, system); p != "" {
					out = append(out, p)
				}
				continue
			}
			if d, err := ManifestDir(b, system, runtime.GOOS, home); err == nil {
				out = append(out, filepath.Join(d, HostName+".json"))
			}
		}
	}
	return out
}
