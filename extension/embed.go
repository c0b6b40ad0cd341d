// Package extension holds the aegis Chrome extension (Manifest V3, plain
// JavaScript, no build step), embedded in the aegis binary: "aegis
// extension unpack DIR" writes it for Chrome's "Load unpacked" (Unpack),
// and its "key" pins its ID (ID). observer.js is the one page observer
// both drivers use: the extension runs it as a content script, and the
// Playwright driver injects it into every frame through ObserverScript.
// README.md says what each file does and why each permission is needed;
// the JavaScript files document themselves in their header comments.
package extension

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

//go:embed observer.js
var observer string

// files are the extension's files, as Chrome loads them.
//
//go:embed manifest.json background.js executor.js listeners.js observer.js popup.html popup.js popup.css
var files embed.FS

// DefaultGlobal is the name observer.js installs its API under when it runs
// unmodified (as the extension's content script, in an isolated world).
const DefaultGlobal = "__aegis"

// installCall is the last statement of observer.js: the call that installs
// the API under DefaultGlobal. ObserverScript rewrites it.
const installCall = `})(globalThis, "__aegis");`

var identRe = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,127}$`)

// Observer returns the source of observer.js as embedded, which installs the
// API under DefaultGlobal.
func Observer() string { return observer }

// ObserverScript returns observer.js rewritten to install its API under the
// global name global instead of DefaultGlobal. A driver that runs the
// observer in the page's main world uses a fresh random name per session,
// so that a page can neither predict nor pre-define it; the API object is
// frozen and its global property is non-writable and non-configurable, so
// a page cannot replace it once installed either. global must be a plain
// JavaScript identifier.
func ObserverScript(global string) (string, error) {
	if !identRe.MatchString(global) {
		return "", fmt.Errorf("extension: observer global %q is not a plain identifier", global)
	}
	if strings.Count(observer, installCall) != 1 {
		return "", fmt.Errorf("extension: observer.js must end with exactly one %q", installCall)
	}
	return strings.Replace(observer, installCall, `})(globalThis, "`+global+`");`, 1), nil
}

// Files returns the extension's files (manifest.json at the root), as
// Chrome loads them.
func Files() fs.FS { return files }

// FileNames returns the names of the extension's files, sorted.
func FileNames() []string {
	var out []string
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	return out
}

// Manifest is the part of manifest.json Go reads.
type Manifest struct {
	// Version is the extension's version.
	Version string `json:"version"`
	// Key is the base64 DER public key that pins the extension's ID.
	Key string `json:"key"`
	// Permissions are the API permissions.
	Permissions []string `json:"permissions"`
	// HostPermissions are the host permissions.
	HostPermissions []string `json:"host_permissions"`
}

// ReadManifest parses the embedded manifest.json.
func ReadManifest() (Manifest, error) {
	var m Manifest
	b, err := files.ReadFile("manifest.json")
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("extension: manifest.json: %w", err)
	}
	return m, nil
}

// IDFromKey returns the extension ID Chrome derives from a manifest key:
// the first 128 bits of the SHA-256 of the DER public key, in hex, with
// the digits 0-9a-f written as the letters a-p.
func IDFromKey(key string) (string, error) {
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	if err != nil || len(der) == 0 {
		return "", fmt.Errorf("extension: the manifest key is not base64: %v", err)
	}
	sum := sha256.Sum256(der)
	h := hex.EncodeToString(sum[:16])
	out := make([]byte, len(h))
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c <= '9' {
			out[i] = 'a' + (c - '0')
		} else {
			out[i] = 'a' + 10 + (c - 'a')
		}
	}
	return string(out), nil
}

// ID returns the extension's ID, fixed by the manifest's key.
func ID() string {
	m, err := ReadManifest()
	if err != nil {
		panic(err) // the embedded manifest is checked by the tests
	}
	id, err := IDFromKey(m.Key)
	if err != nil {
		panic(err)
	}
	return id
}

// Origin returns the extension's origin as Chrome names the caller of a
// native host: "chrome-extension://ID/".
func Origin() string { return "chrome-extension://" + ID() + "/" }

// Unpack writes the extension's files into dir (created if missing, 0755;
// files 0644), ready for Chrome's "Load unpacked". It refuses a dir that
// holds a manifest.json of another extension, so that it never overwrites
// something else; an earlier unpack of aegis is replaced.
func Unpack(dir string) error {
	if dir == "" {
		return errors.New("extension: no directory to unpack into")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil {
		var m Manifest
		if json.Unmarshal(b, &m) != nil || m.Key == "" {
			return fmt.Errorf("extension: %s already holds another extension's manifest.json", dir)
		}
		if id, err := IDFromKey(m.Key); err != nil || id != ID() {
			return fmt.Errorf("extension: %s already holds another extension (id %s)", dir, id)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("extension: %w", err)
	}
	for _, name := range FileNames() {
		b, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("extension: %w", err)
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return fmt.Errorf("extension: %w", err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			return fmt.Errorf("extension: %w", err)
		}
	}
	return nil
}
