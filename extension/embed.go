// Package extension holds the aegis Chrome extension's files. Today that is
// observer.js, the one page observer both drivers use: the extension loads
// it as a content script, and the Playwright driver injects it into every
// frame through ObserverScript. Go code gets the files through the
// accessors below; the JavaScript itself documents its API and selector
// syntax in its header comment.
package extension

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

//go:embed observer.js
var observer string

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
