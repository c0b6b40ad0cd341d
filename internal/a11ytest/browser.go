package a11ytest

import (
	"context"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/setup"
)

// Launch starts headless Chromium through the Playwright driver that
// `aegis setup` installed (setup.Locate), for a test that opens pages a
// person sees; both are stopped when the test ends.
func Launch(t testing.TB) playwright.Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	loc, err := setup.Locate(ctx, setup.Options{})
	if err != nil {
		t.Fatalf("a11ytest: find the browser (run make setup): %v", err)
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: loc.Driver.Dir, SkipInstallBrowsers: true})
	if err != nil {
		t.Fatalf("a11ytest: start the Playwright driver: %v", err)
	}
	t.Cleanup(func() { pw.Stop() })
	b, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(loc.Browser.Path),
		Args:           []string{"--disable-gpu", "--no-first-run", "--disable-background-networking"},
	})
	if err != nil {
		t.Fatalf("a11ytest: launch Chromium: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
