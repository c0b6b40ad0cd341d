package driver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/driver/drivertest"
	"github.com/aegis-run/aegis/setup"
)

// runServer starts "playwright-core run-server" from the aegis driver
// directory on loopback and returns its ws endpoint. The server launches
// Chromium itself from its own browser registry; the test points that
// registry (PLAYWRIGHT_BROWSERS_PATH) at the system Chromium, as a fleet
// machine would have Playwright's browsers installed.
func runServer(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the test's browser registry layout is Linux's")
	}
	ctx := context.Background()
	res, err := setup.Locate(ctx, setup.Options{})
	if err != nil || res.Driver.Dir == "" || res.Browser.Path == "" {
		t.Fatalf("setup.Locate (run \"go run ./cmd/aegis setup\"): %v", err)
	}
	pkg := filepath.Join(res.Driver.Dir, "package")
	reg := t.TempDir()
	var browsers struct {
		Browsers []struct{ Name, Revision string } `json:"browsers"`
	}
	b, err := os.ReadFile(filepath.Join(pkg, "browsers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &browsers); err != nil {
		t.Fatal(err)
	}
	for _, br := range browsers.Browsers {
		var exe string
		switch br.Name {
		case "chromium":
			exe = "chrome"
		case "chromium-headless-shell":
			exe = "headless_shell"
		default:
			continue
		}
		dir := filepath.Join(reg, strings.ReplaceAll(br.Name, "-", "_")+"-"+br.Revision, "chrome-linux")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(res.Browser.Path, filepath.Join(dir, exe)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(res.Driver.Dir, "node"), filepath.Join(pkg, "cli.js"), "run-server", "--port", "0", "--host", "127.0.0.1")
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_BROWSERS_PATH="+reg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the server exits when its stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "Listening on ") {
				lines <- strings.TrimPrefix(l, "Listening on ")
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case ep := <-lines:
		return ep
	case <-time.After(30 * time.Second):
		t.Fatal("run-server printed no endpoint")
	}
	return ""
}

func TestRemoteBrowser(t *testing.T) {
	endpoint := runServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := driver.Launch(ctx, driver.BrowserOptions{Endpoint: endpoint})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	defer b.Close(context.Background())
	if !b.Remote() {
		t.Fatal("Remote() = false for a connected browser")
	}
	for _, mode := range []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox} {
		t.Run(string(mode), func(t *testing.T) {
			drivertest.RunCore(t, func(t *testing.T, site string) driver.Driver {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				d, err := driver.Open(ctx, driver.Config{Mode: mode, Browser: b, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				return d
			})
		})
	}
	// Config.BrowserEndpoint: the session connects (and disconnects) itself.
	d, err := driver.Open(ctx, driver.Config{Mode: contract.ModePlaywright, BrowserEndpoint: endpoint})
	if err != nil {
		t.Fatalf("Open with BrowserEndpoint: %v", err)
	}
	if _, err := d.Observe(ctx, driver.ObserveOptions{}); err != nil {
		t.Errorf("observe through the endpoint: %v", err)
	}
	if err := d.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}
