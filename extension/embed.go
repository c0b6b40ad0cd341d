// Package extension holds the aegis Chrome extension (Manifest V3, plain
// JavaScript, no build step), embedded in the aegis binary: "aegis
// extension unpack DIR" writes it for Chrome's "Load unpacked" (Unpack),
// and its "key" pins its ID (ID). The observer is the one page observer
// both drivers use: the extension runs it as a content script (observer.js
// in the unpacked extension), and the Playwright driver injects it into
// every frame through ObserverScript. Likewise the WebRTC guard
// (webrtc.js, ReadFile) is the one both drivers run in the page's main
// world: the extension registers it, the Playwright driver adds it as an
// init script. The observer is one JavaScript function written
// in the files of observer/, one responsibility each, which this package
// joins in a fixed order (Observer). README.md says what each file does
// and why each permission is needed; the JavaScript files document
// themselves in their header comments.
package extension

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aegis-run/aegis/palette"
)

// observerParts are the files of observer/, in the order Observer joins
// them. head.js opens the observer's function and api.js closes and calls
// it; every other part is a run of whole statements of its body, so what a
// part declares is local to the observer and visible to all its parts. A
// new part goes into this list where its statements belong.
var observerParts = []string{
	"head.js",           // the header comment, the function's opening, constants and limits
	"clicklisteners.js", // the click listeners page scripts add
	"helpers.js",        // options, Fail and result, small DOM helpers
	"resolve.js",        // selector syntax: split, resolve, frame offsets
	"names.js",          // roles, accessible names, sensitive fields
	"selectors.js",      // unique selector generation
	"observe.js",        // observe (text, snapshot with masking, affordances)
	"describe.js",       // describe (the facts the gate judges an element on), check (time of check = time of use)
	"identity.js",       // is a selector's element the one the last observe listed, as listed?
	"actionability.js",  // the actionability check, hit test, click, type, select, scroll
	"extract.js",        // extract: text, table rows, links
	"mask.js",           // taint (elements a secret was typed into) and screenshot masks
	"api.js",            // rect, split, packing, the API object and its install
}

//go:embed observer/*.js
var observerFS embed.FS

// observer is the observer's script: its parts joined in order.
var observer = joinObserver()

// joinObserver joins the observer's parts in order, with a blank line
// between two parts.
func joinObserver() string {
	parts := make([]string, len(observerParts))
	for i, name := range observerParts {
		b, err := observerFS.ReadFile("observer/" + name)
		if err != nil {
			panic(err) // the list names embedded files: TestObserverParts checks it
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, "\n")
}

// observerFile is the name the observer has among the extension's files.
const observerFile = "observer.js"

// static are the extension's files other than the observer, as Chrome
// loads them.
//
//go:embed manifest.json background.js navigation.js port.js tabs.js session.js boundary.js settings.js executor.js listeners.js webrtc.js popup.html popup.js popup.css options.html options.js options.css
var static embed.FS

// DefaultGlobal is the name the observer installs its API under when it
// runs unmodified (as the extension's content script, in an isolated world).
const DefaultGlobal = "__aegis"

// installCall is the observer's last statement (the end of api.js): the
// call that installs the API under DefaultGlobal. ObserverScript rewrites it.
const installCall = `})(globalThis, "__aegis");`

var identRe = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,127}$`)

// Observer returns the observer's script, its parts joined in order, which
// installs the API under DefaultGlobal. The extension ships it as
// observer.js.
func Observer() string { return observer }

// ObserverScript returns the observer's script rewritten to install its
// API under the global name global instead of DefaultGlobal. A driver that
// runs the observer in the page's main world uses a fresh random name per
// session, so that a page can neither predict nor pre-define it; the API
// object is frozen and its global property is non-writable and
// non-configurable, so a page cannot replace it once installed either.
// global must be a plain JavaScript identifier.
func ObserverScript(global string) (string, error) {
	if !identRe.MatchString(global) {
		return "", fmt.Errorf("extension: observer global %q is not a plain identifier", global)
	}
	if strings.Count(observer, installCall) != 1 {
		return "", fmt.Errorf("extension: the observer must end with exactly one %q", installCall)
	}
	return strings.Replace(observer, installCall, `})(globalThis, "`+global+`");`, 1), nil
}

// FileNames returns the names of the extension's files, as Chrome loads
// them, sorted. palette.css is package palette's CSS, the colours every
// surface shares.
func FileNames() []string {
	out := []string{observerFile, palette.FileName}
	entries, _ := static.ReadDir(".")
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// ReadFile returns the content of the extension's file name (one of
// FileNames), as Chrome loads it: observer.js is Observer's script.
func ReadFile(name string) ([]byte, error) {
	if name == observerFile {
		return []byte(observer), nil
	}
	if name == palette.FileName {
		return []byte(palette.CSS), nil
	}
	b, err := static.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("extension: %w", err)
	}
	return b, nil
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
	b, err := static.ReadFile("manifest.json")
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
		b, err := ReadFile(name)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, name)
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
