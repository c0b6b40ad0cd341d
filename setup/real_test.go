package setup

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// realEnsure runs the real Ensure on this machine: the real cache directory,
// real apt-get (as root on Debian, waiting for the lock if another apt runs)
// and the real npm registry.
func realEnsure(t *testing.T, ctx context.Context) Result {
	t.Helper()
	if testing.Short() {
		t.Skip("uses the real machine (apt-get, npm registry, chromium); skipped with -short")
	}
	res, err := Ensure(ctx, Options{}, logWriter{t})
	if err != nil {
		t.Fatalf("Ensure on this machine: %v (hint: %s)", err, Hint(err))
	}
	t.Logf("browser: %s", res.Browser)
	t.Logf("playwright driver: %s", res.Driver)
	return res
}

// TestSetupEnsureRealMachine checks the result with the real programs:
// chromium --version and node package/cli.js --version.
func TestSetupEnsureRealMachine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res := realEnsure(t, ctx)

	out, err := exec.CommandContext(ctx, res.Browser.Path, "--version").Output()
	if err != nil || !strings.Contains(string(out), res.Browser.Product+" "+res.Browser.Version) {
		t.Errorf("%s --version = %q, %v; want it to contain %q", res.Browser.Path, out, err, res.Browser.Product+" "+res.Browser.Version)
	}
	out, err = exec.CommandContext(ctx, res.Driver.Node, filepath.Join(res.Driver.Dir, "package", "cli.js"), "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "Version "+DriverVersion {
		t.Errorf("node cli.js --version = %q, %v; want %q", out, err, "Version "+DriverVersion)
	}

	// Idempotent: Locate now finds the same, from the stamps, quickly.
	start := time.Now()
	located, err := Locate(ctx, Options{})
	if err != nil {
		t.Fatalf("Locate after Ensure: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Locate took %s, want < 1s", d)
	}
	if located.Browser.Path != res.Browser.Path || located.Driver.Dir != res.Driver.Dir || located.Driver.Source != SourceCached && located.Driver.Source != SourceEnv {
		t.Errorf("Locate = %+v, want the paths of %+v", located, res)
	}
}

// TestSetupLaunchSmoke proves the setup result works end to end: the
// playwright-go driver starts from the driver directory without any
// download, launches the browser headless and opens about:blank.
func TestSetupLaunchSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res := realEnsure(t, ctx)

	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: res.Driver.Dir, SkipInstallBrowsers: true})
	if err != nil {
		t.Fatalf("playwright.Run: %v", err)
	}
	defer func() {
		if err := pw.Stop(); err != nil {
			t.Errorf("playwright Stop: %v", err)
		}
	}()
	browser, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(res.Browser.Path),
		Headless:       playwright.Bool(true),
		Args: []string{"--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run"},
		Timeout: playwright.Float(60_000),
	})
	if err != nil {
		t.Fatalf("launch %s: %v", res.Browser.Path, err)
	}
	defer browser.Close()
	if got := browser.Version(); got != res.Browser.Version {
		t.Errorf("browser.Version() = %q, want %q", got, res.Browser.Version)
	}
	page, err := browser.NewPage()
	if err != nil {
		t.Fatalf("new page: %v", err)
	}
	if _, err := page.Goto("about:blank"); err != nil {
		t.Fatalf("goto about:blank: %v", err)
	}
	if got, want := page.URL(), "about:blank"; got != want {
		t.Errorf("page URL %q, want %q", got, want)
	}
	v, err := page.Evaluate("() => 6 * 7")
	if err != nil || v != 42 {
		t.Errorf("evaluate 6*7 = %v, %v; want 42", v, err)
	}
	if err := browser.Close(); err != nil {
		t.Errorf("close browser: %v", err)
	}
}
