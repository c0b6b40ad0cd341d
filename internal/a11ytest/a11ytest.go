// Package a11ytest checks pages a person sees (the popup, the options page,
// the live console, the HTML report) for accessibility in real Chromium,
// with axe-core, in the light and the dark colour scheme. axe-core comes
// from the npm registry through `make testdeps` (scripts/testdeps), pinned
// and cached outside the repository; Script finds it.
package a11ytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// AxeVersion is the axe-core release scripts/testdeps installs.
const AxeVersion = "4.14.1"

// EnvAxe names a variable that may point at axe.min.js, overriding the
// cached one.
const EnvAxe = "AEGIS_AXE"

// Script returns the source of axe.min.js: $AEGIS_AXE, else the copy
// scripts/testdeps keeps in the user's cache.
func Script() (string, error) {
	p := os.Getenv(EnvAxe)
	if p == "" {
		dir := os.Getenv("XDG_CACHE_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("a11ytest: no cache directory: %w", err)
			}
			dir = filepath.Join(home, ".cache")
		}
		p = filepath.Join(dir, "aegis", "axe-core-"+AxeVersion, "axe.min.js")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("a11ytest: axe-core is not installed (%w): run `make testdeps` (make test does it) or set %s=/path/to/axe.min.js", err, EnvAxe)
	}
	return string(b), nil
}

// Violation is one axe-core rule a page breaks, with the elements that
// break it.
type Violation struct {
	// ID is the axe rule, such as "color-contrast".
	ID string `json:"id"`
	// Impact is minor, moderate, serious or critical.
	Impact string `json:"impact"`
	// Help says what the rule asks, in words.
	Help string `json:"help"`
	// Nodes are the offending elements.
	Nodes []Node `json:"nodes"`
}

// Node is one element that breaks a rule.
type Node struct {
	// Target is the element's selector path.
	Target []any `json:"target"`
	// HTML is the element's opening markup.
	HTML string `json:"html"`
	// Summary says what is wrong with it (for contrast: the ratio and the
	// colours).
	Summary string `json:"failureSummary"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Help)
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "\n    %v %s\n      %s", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return b.String()
}

// Check runs axe-core on the page as it is now, with the WCAG 2 A and AA
// rules (contrast included), and returns the violations. It evaluates the
// script through the DevTools protocol, so a page's Content Security
// Policy does not stop it.
func Check(page playwright.Page) ([]Violation, error) {
	src, err := Script()
	if err != nil {
		return nil, err
	}
	if _, err := page.Evaluate(src + "\n;true"); err != nil {
		return nil, fmt.Errorf("a11ytest: load axe-core: %w", err)
	}
	raw, err := page.Evaluate(`async () => {
		const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']});
		return JSON.stringify(r.violations);
	}`)
	if err != nil {
		return nil, fmt.Errorf("a11ytest: run axe-core: %w", err)
	}
	s, ok := raw.(string)
	if !ok {
		return nil, errors.New("a11ytest: axe-core returned no result")
	}
	var out []Violation
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("a11ytest: axe-core's result: %w", err)
	}
	return out, nil
}

// Schemes are the colour schemes RequireClean checks.
var Schemes = []string{"light", "dark"}

// RequireClean checks the page in the light and the dark colour scheme
// (emulating prefers-color-scheme, so the page's CSS switches without a
// reload), reports every violation as a test error naming the page and
// the scheme, keeps a screenshot of each scheme in the test's artifact
// directory (name-light.png, name-dark.png), and leaves the page in the
// light scheme.
func RequireClean(t testing.TB, page playwright.Page, name string) {
	t.Helper()
	for _, scheme := range Schemes {
		cs := playwright.ColorSchemeLight
		if scheme == "dark" {
			cs = playwright.ColorSchemeDark
		}
		if err := page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: cs}); err != nil {
			t.Fatalf("%s: emulate the %s scheme: %v", name, scheme, err)
		}
		shot := filepath.Join(t.ArtifactDir(), name+"-"+scheme+".png")
		if _, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(shot), FullPage: playwright.Bool(true)}); err != nil {
			t.Errorf("%s: screenshot in the %s scheme: %v", name, scheme, err)
		} else {
			t.Logf("%s in the %s scheme: %s (keep it with go test -artifacts -outputdir DIR)", name, scheme, shot)
		}
		vs, err := Check(page)
		if err != nil {
			t.Fatalf("%s (%s scheme): %v", name, scheme, err)
		}
		for _, v := range vs {
			t.Errorf("%s (%s scheme) breaks %s", name, scheme, v)
		}
	}
	if err := page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}); err != nil {
		t.Fatalf("%s: back to the light scheme: %v", name, err)
	}
}
