// Command screenshots makes the README's screenshots from a real run, so
// that they show what aegis shows today:
//
//	go run ./scripts/screenshots            # every surface, into docs/img
//	go run ./scripts/screenshots -only report-summary -o /tmp/shots
//
// It builds aegis, runs `aegis demo` into a temporary directory (the
// embedded shop on loopback, real Chromium), then renders each surface in
// headless Chromium (the browser and Playwright driver `aegis setup`
// installed) and writes NAME.png for each. A surface is one function of
// the surfaces list: it gets the demo's bundle, the aegis binary, a
// scratch directory and the browser, and returns the PNG.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/setup"
)

// surfaces are the screenshots this script makes, in order. Add one by
// writing its function and listing it here.
var surfaces = []surface{
	{"report-summary", "the HTML report of the demo run: the integrity banner and the summary", reportSummary},
	{"popup-result", "the extension's popup at the end of a session: the result panel and the steps with thumbnails", popupResult},
}

// surface is one screenshot: its file name (without .png), what it shows,
// and how to make it.
type surface struct {
	name  string
	about string
	shoot func(ctx context.Context, e *env) ([]byte, error)
}

// env is what a surface's function gets.
type env struct {
	// Aegis is the aegis binary built from this tree.
	Aegis string
	// Bundle is the evidence bundle of the demo run.
	Bundle string
	// Work is a scratch directory, removed at the end.
	Work string
	// Browser is headless Chromium, for pages opened from files or from
	// loopback.
	Browser playwright.Browser
	// PW is the Playwright driver, ChromiumPath the Chromium it drives: for
	// a surface that needs a browser of its own (a persistent context with
	// the extension loaded).
	PW           *playwright.Playwright
	ChromiumPath string
}

func main() {
	out := flag.String("o", filepath.Join("docs", "img"), "write the screenshots to `DIR`")
	only := flag.String("only", "", "make only the surface `NAME`")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := run(ctx, *out, *only); err != nil {
		fmt.Fprintln(os.Stderr, "screenshots:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, only string) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository's root: go run ./scripts/screenshots")
	}
	var todo []surface
	for _, s := range surfaces {
		if only == "" || s.name == only {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 {
		names := make([]string, len(surfaces))
		for i, s := range surfaces {
			names[i] = s.name
		}
		return fmt.Errorf("no surface %q; the surfaces are %s", only, strings.Join(names, ", "))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "aegis-screenshots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	e := &env{Work: work, Aegis: filepath.Join(work, "aegis")}
	if err := command(ctx, "go", "build", "-o", e.Aegis, "./cmd/aegis"); err != nil {
		return err
	}
	evidence := filepath.Join(work, "evidence")
	if err := command(ctx, e.Aegis, "demo", "--evidence", evidence); err != nil {
		return err
	}
	bundles, err := filepath.Glob(filepath.Join(evidence, "*", "manifest.json"))
	if err != nil || len(bundles) != 1 {
		return fmt.Errorf("the demo left %d bundles in %s, want 1", len(bundles), evidence)
	}
	e.Bundle = filepath.Dir(bundles[0])

	loc, err := setup.Locate(ctx, setup.Options{})
	if err != nil {
		return fmt.Errorf("find Chromium and the Playwright driver (run make setup): %w", err)
	}
	e.ChromiumPath = loc.Browser.Path
	e.PW, err = playwright.Run(&playwright.RunOptions{DriverDirectory: loc.Driver.Dir, SkipInstallBrowsers: true, Stdout: os.Stderr})
	if err != nil {
		return fmt.Errorf("start the Playwright driver: %w", err)
	}
	defer e.PW.Stop()
	e.Browser, err = e.PW.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(e.ChromiumPath),
		Args:           []string{"--disable-gpu", "--no-first-run", "--disable-background-networking"},
	})
	if err != nil {
		return fmt.Errorf("launch Chromium: %w", err)
	}
	defer e.Browser.Close()

	for _, s := range todo {
		png, err := s.shoot(ctx, e)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		p := filepath.Join(out, s.name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %s (%d bytes)\n", p, s.about, len(png))
	}
	return nil
}

// command runs a command with its output on stderr.
func command(ctx context.Context, name string, args ...string) error {
	c := exec.CommandContext(ctx, name, args...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// reportSummary renders `aegis report` of the demo bundle and shoots its
// top, from the verification banner to the end of the summary, in the
// light scheme.
func reportSummary(ctx context.Context, e *env) ([]byte, error) {
	html := filepath.Join(e.Work, "report.html")
	if err := command(ctx, e.Aegis, "report", e.Bundle, "-o", html); err != nil {
		return nil, err
	}
	page, err := e.Browser.NewPage(playwright.BrowserNewPageOptions{
		Viewport:    &playwright.Size{Width: 1000, Height: 800},
		ColorScheme: playwright.ColorSchemeLight,
	})
	if err != nil {
		return nil, err
	}
	defer page.Close()
	if _, err := page.Goto("file://" + html); err != nil {
		return nil, err
	}
	bottom, err := page.Evaluate(`() => Math.ceil(document.getElementById('summary').getBoundingClientRect().bottom + window.scrollY) + 8`)
	if err != nil {
		return nil, fmt.Errorf("find the summary: %w", err)
	}
	h, ok := bottom.(int)
	if !ok || h <= 0 {
		return nil, fmt.Errorf("the summary ends at %v", bottom)
	}
	return page.Screenshot(playwright.PageScreenshotOptions{
		FullPage: playwright.Bool(true),
		Clip:     &playwright.Rect{X: 0, Y: 0, Width: 1000, Height: float64(h)},
	})
}
