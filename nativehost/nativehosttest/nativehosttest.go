// Package nativehosttest starts real headless Chromium with the aegis
// extension loaded (unpacked, from the embedded files) and a freshly built
// aegis installed as its native messaging host in the browser's profile,
// for the tests and benchmarks of the extension driver and of host mode.
//
// Two ways to use it:
//
//   - Host mode as the person uses it: Start, open the demo page and the
//     popup (PopupURL) in tabs, and drive the popup with Playwright; the
//     extension starts aegis, which runs the session.
//   - The extension driver from the test process: Start with Relay, then
//     ConnectDriver. The host (built with the aegis_relay tag) checks the
//     caller's origin and relays the conversation, byte for byte, to a
//     socket of the test process, which gets the host's end of it: a
//     *nativehost.Conn to hand to driver.OpenExtension.
package nativehosttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/nativehost"
	"github.com/aegis-run/aegis/setup"
)

// Options configure Start.
type Options struct {
	// Binary is the aegis executable the host manifest points at; "" builds
	// one (Build) into the test's temporary directory.
	Binary string
	// Relay builds aegis with the aegis_relay tag and points the host at a
	// socket of this process (ConnectDriver).
	Relay bool
	// Config is the host configuration; its EvidenceDir defaults to a
	// temporary directory, and LogFile to host.log next to it.
	Config nativehost.Config
	// Headed shows the browser.
	Headed bool
}

// Browser is a running Chromium with the extension and the host.
type Browser struct {
	// Context is the persistent browser context (the profile).
	Context playwright.BrowserContext
	// Worker is the extension's service worker.
	Worker playwright.Worker
	// ExtensionID is the extension's ID.
	ExtensionID string
	// Binary is the aegis executable Chrome starts.
	Binary string
	// Dir is the temporary directory holding everything.
	Dir string
	// UserDataDir is the browser's profile.
	UserDataDir string
	// ConfigPath is the host configuration file.
	ConfigPath string
	// EvidenceDir is where the host writes evidence.
	EvidenceDir string
	// LogFile is the host's log.
	LogFile string

	pw   *playwright.Playwright
	ln   net.Listener
	once sync.Once
}

var builds sync.Map // tags → *buildResult

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// Build builds cmd/aegis with tags into dir (once per tags and dir in the
// process) and returns the executable's path.
func Build(tb testing.TB, dir string, tags ...string) string {
	tb.Helper()
	key := dir + "\x00" + strings.Join(tags, ",")
	v, _ := builds.LoadOrStore(key, &buildResult{})
	r := v.(*buildResult)
	r.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			r.err = err
			return
		}
		name := "aegis"
		if len(tags) > 0 {
			name += "-" + strings.Join(tags, "-")
		}
		out := filepath.Join(dir, name)
		args := []string{"build", "-o", out}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		args = append(args, "./cmd/aegis")
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			r.err = fmt.Errorf("go build aegis: %v\n%s", err, b)
			return
		}
		r.path = out
	})
	if r.err != nil {
		tb.Fatal(r.err)
	}
	return r.path
}

func moduleRoot() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(b))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not in a module")
	}
	return filepath.Dir(mod), nil
}

// Start launches Chromium with the extension and the host; the browser is
// closed when tb ends (or by Close).
func Start(tb testing.TB, o Options) *Browser {
	tb.Helper()
	dir := tb.TempDir()
	b := &Browser{Dir: dir, ExtensionID: extension.ID(), UserDataDir: filepath.Join(dir, "profile")}
	tb.Cleanup(b.Close)
	if o.Binary == "" {
		if o.Relay {
			o.Binary = Build(tb, dir, "aegis_relay")
		} else {
			o.Binary = Build(tb, dir)
		}
	}
	b.Binary = o.Binary
	extDir := filepath.Join(dir, "extension")
	if err := extension.Unpack(extDir); err != nil {
		tb.Fatal(err)
	}
	res, err := nativehost.Install(nativehost.InstallOptions{
		Dir: filepath.Join(b.UserDataDir, "NativeMessagingHosts"), ExtensionIDs: []string{b.ExtensionID}, Executable: b.Binary,
	})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := o.Config
	cfg.Manifests = append(cfg.Manifests, res.Path)
	if cfg.EvidenceDir == "" {
		cfg.EvidenceDir = filepath.Join(dir, "evidence")
	}
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(dir, "host.log")
	}
	b.EvidenceDir, b.LogFile = cfg.EvidenceDir, cfg.LogFile
	b.ConfigPath = filepath.Join(dir, "config", "host.json")
	if err := nativehost.SaveConfig(b.ConfigPath, cfg); err != nil {
		tb.Fatal(err)
	}

	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	env[nativehost.EnvConfig] = b.ConfigPath
	if o.Relay {
		sock := filepath.Join(dir, "relay.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			tb.Fatal(err)
		}
		b.ln = ln
		env["AEGIS_HOST_RELAY"] = sock
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	loc, err := setup.Locate(ctx, setup.Options{})
	if loc.Browser.Path == "" || loc.Driver.Dir == "" {
		tb.Fatalf("no Chromium or Playwright driver (run \"go run ./cmd/aegis setup\"): %v", err)
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: loc.Driver.Dir, SkipInstallBrowsers: true, Stdout: nil})
	if err != nil {
		tb.Fatalf("start Playwright: %v", err)
	}
	b.pw = pw
	headless := !o.Headed
	args := append(append([]string{}, driver.DefaultArgs...),
		"--disable-extensions-except="+extDir, "--load-extension="+extDir, "--window-size=1280,800")
	timeout := float64(60000)
	bctx, err := pw.Chromium.LaunchPersistentContext(b.UserDataDir, playwright.BrowserTypeLaunchPersistentContextOptions{
		ExecutablePath: &loc.Browser.Path, Headless: &headless, Args: args, Env: env, NoViewport: playwright.Bool(true), Timeout: &timeout,
	})
	if err != nil {
		tb.Fatalf("launch Chromium with the extension: %v", err)
	}
	b.Context = bctx
	// playwright-go appends a new service worker to the context's list
	// on its dispatcher goroutine without the lock ServiceWorkers takes,
	// so the list is read only on that goroutine: in the handler of a
	// page event this function causes, and from the "serviceworker" event
	// for a worker that starts later.
	found := make(chan playwright.Worker, 8)
	offer := func(w playwright.Worker) {
		if strings.HasPrefix(w.URL(), "chrome-extension://"+b.ExtensionID+"/") {
			select {
			case found <- w:
			default:
			}
		}
	}
	bctx.On("serviceworker", func(w playwright.Worker) { offer(w) })
	bctx.OnPage(func(playwright.Page) {
		for _, w := range bctx.ServiceWorkers() {
			offer(w)
		}
	})
	probe, err := bctx.NewPage()
	if err != nil {
		tb.Fatalf("open a page: %v", err)
	}
	select {
	case b.Worker = <-found:
	case <-time.After(guard):
		tb.Fatalf("the extension's service worker did not start (extension %s)", b.ExtensionID)
	}
	if err := probe.Close(); err != nil {
		tb.Fatalf("close the probe page: %v", err)
	}
	if _, err := b.Worker.Evaluate(whenReady(`true`)); err != nil {
		tb.Fatalf("the extension's service worker did not get ready: %v", err)
	}
	return b
}

// guard bounds the waits for the browser, the worker and the host. It only
// stops a broken test from hanging: every wait ends on an event, and a
// passing test never waits for the guard, however loaded the machine.
const guard = 90 * time.Second

// whenReady wraps the JavaScript expression expr so that it is evaluated
// once the service worker's script has run to its end: the worker sets
// self.aegisReady and fires 'aegisready' there (extension/background.js).
// Playwright can reach a worker whose script has not run yet; this waits
// for the extension's signal, not for time to pass.
func whenReady(expr string) string {
	return `(async () => {
  if (!self.aegisReady) await new Promise((r) => self.addEventListener('aegisready', r, { once: true }));
  return ` + expr + `;
})()`
}

// Close closes the browser and the Playwright driver.
func (b *Browser) Close() {
	b.once.Do(func() {
		if b.ln != nil {
			_ = b.ln.Close()
		}
		if b.Context != nil {
			_ = b.Context.Close()
		}
		if b.pw != nil {
			_ = b.pw.Stop()
		}
	})
}

// PopupURL returns the popup's page, targeting tab tabID.
func (b *Browser) PopupURL(tabID int) string {
	return fmt.Sprintf("chrome-extension://%s/popup.html?tab=%d", b.ExtensionID, tabID)
}

// TabID returns the Chrome tab id of a page, found by its URL.
func (b *Browser) TabID(tb testing.TB, p playwright.Page) int {
	tb.Helper()
	v, err := b.Worker.Evaluate(`async (url) => (await chrome.tabs.query({})).filter((t) => t.url === url).map((t) => t.id)`, p.URL())
	if err != nil {
		tb.Fatalf("find the tab of %s: %v", p.URL(), err)
	}
	ids, _ := v.([]any)
	if len(ids) != 1 {
		tb.Fatalf("%d tabs show %s", len(ids), p.URL())
	}
	switch id := ids[0].(type) {
	case int:
		return id
	case float64:
		return int(id)
	}
	tb.Fatalf("tab id %v", ids[0])
	return 0
}

// hello answers the extension's hello, and nothing else.
type hello struct{}

// HandleRequest answers hello.
func (hello) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == nativehost.MethodHello {
		return nativehost.HelloResult{Protocol: nativehost.Version, Host: "test", Origin: "chrome-extension://" + extension.ID() + "/"}, nil
	}
	return nil, &nativehost.Error{Code: nativehost.CodeUnknownMethod, Message: "the test takes no requests"}
}

// HandleEvent drops the event.
func (hello) HandleEvent(context.Context, string, json.RawMessage) {}

// ConnectDriver makes the extension open a native port (through the relay
// build of aegis) and returns the host's end of it, served until ctx
// ends: the port the extension driver calls (driver.OpenExtension).
func (b *Browser) ConnectDriver(ctx context.Context) (*nativehost.Conn, error) {
	if b.ln == nil {
		return nil, errors.New("nativehosttest: ConnectDriver needs Options.Relay")
	}
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := b.ln.Accept()
		ch <- accepted{c, err}
	}()
	evalErr := make(chan error, 1)
	go func() {
		_, err := b.Worker.Evaluate(whenReady(`connectDriverPort()`))
		evalErr <- err
	}()
	var a accepted
	select {
	case a = <-ch:
	case err := <-evalErr:
		if err != nil {
			return nil, fmt.Errorf("connectDriverPort: %w", err)
		}
		a = <-ch
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(guard):
		return nil, errors.New("the host never connected to the relay socket (see the host log)")
	}
	if a.err != nil {
		return nil, a.err
	}
	conn := nativehost.NewConn(a.c, a.c, nativehost.ConnOptions{Handler: hello{}})
	go func() {
		_ = conn.Serve(ctx)
		a.c.Close()
	}()
	select {
	case err := <-evalErr:
		if err != nil {
			return nil, fmt.Errorf("connectDriverPort: %w", err)
		}
	case <-time.After(guard):
		return nil, errors.New("the extension did not finish its hello")
	}
	return conn, nil
}

// HostLog returns the host's log so far (for failure messages).
func (b *Browser) HostLog() string {
	data, _ := os.ReadFile(b.LogFile)
	return string(data)
}
