package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/setup"
)

// Browser is a running browser that sessions open fresh contexts in: a
// Chromium that Launch started with playwright-go, or a connection to a
// remote Playwright server. One Browser may serve many sessions at once;
// each session gets its own ephemeral context.
type Browser struct {
	pw      *playwright.Playwright
	browser playwright.Browser
	remote  bool
	ns      *netns // the browser's own network namespace; nil when not isolated

	// broken is set by a session whose context could not be closed: its
	// pages may still run in this browser, so Browsers launches another
	// for the next session (pwDriver.closeContext).
	broken atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// BrowserOptions configures Launch.
type BrowserOptions struct {
	// Endpoint, when set, connects to a Playwright server (ws://host:port/
	// path as "playwright run-server" prints it) instead of launching a
	// browser. The server launches its own Chromium; a CI fleet points many
	// sessions at a few such servers.
	Endpoint string
	// Headed shows the browser window; the default is headless.
	Headed bool
	// ExecutablePath is the Chrome or Chromium to launch; default the one
	// setup.Locate finds.
	ExecutablePath string
	// DriverDir is the Playwright driver directory (package/cli.js and
	// node); default the one setup.Locate finds.
	DriverDir string
	// Args are extra browser command-line flags.
	Args []string
	// Timeout bounds launching or connecting; default 60s.
	Timeout time.Duration
	// Log receives the Playwright driver's own output; default discarded.
	Log io.Writer
	// Isolate launches the browser in a network namespace of its own
	// (Linux): its only network is a loopback interface, on which the
	// filtering proxy of each of its contexts listens, and the proxy is its
	// only way out. UDP (WebRTC, QUIC), DNS and anything that is not HTTP
	// cannot leave it. Sandbox sessions need an isolated browser; playwright
	// sessions in one get a proxy that passes every request on. Launch fails
	// with ErrNoNetworkIsolation where no namespace can be made (not Linux,
	// or no CAP_SYS_ADMIN). Not with Endpoint.
	Isolate bool
}

// ErrNoNetworkIsolation is the error of a launch that needed a network
// namespace where none can be made: not Linux, or the process may not
// unshare its network namespace (not root and no CAP_SYS_ADMIN, as in an
// unprivileged container).
var ErrNoNetworkIsolation = errors.New("driver: no network isolation for the browser")

// DefaultArgs are the flags every launched browser gets: quiet on a closed
// network (no background requests, no component updates, no sync), no GPU,
// WebRTC restricted to proxied UDP (both the policy and its forced form:
// with no UDP-capable proxy no WebRTC packet leaves by UDP) and no QUIC
// (so neither HTTP/3 nor WebTransport speaks UDP), so that nothing reaches
// around the request filter over UDP. The sessions' init script turns
// WebRTC off in the page as well (Config.AllowWebRTC).
var DefaultArgs = []string{
	"--disable-gpu",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-default-apps",
	"--no-first-run",
	"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
	"--webrtc-ip-handling-policy=disable_non_proxied_udp",
	"--disable-quic",
	"--disable-features=AutofillServerCommunication,OptimizationHints,MediaRouter",
}

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// Launch starts the Playwright driver and launches Chromium headless (or
// connects to o.Endpoint). It never downloads anything: the driver and the
// browser come from "aegis setup" (setup.Locate).
func Launch(ctx context.Context, o BrowserOptions) (*Browser, error) {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("driver: browser endpoint %q is not a ws:// or wss:// URL", o.Endpoint)
		}
		if o.Isolate {
			return nil, fmt.Errorf("driver: a remote browser (%s) cannot be isolated by aegis: its network is the remote machine's", o.Endpoint)
		}
	}
	if o.DriverDir == "" || (o.ExecutablePath == "" && o.Endpoint == "") {
		res, err := setup.Locate(ctx, setup.Options{})
		if o.DriverDir == "" {
			if res.Driver.Dir == "" {
				return nil, fmt.Errorf("driver: no Playwright driver (run \"aegis setup\"): %w", err)
			}
			o.DriverDir = res.Driver.Dir
		}
		if o.ExecutablePath == "" && o.Endpoint == "" {
			if res.Browser.Path == "" {
				return nil, fmt.Errorf("driver: no browser (run \"aegis setup\"): %w", err)
			}
			o.ExecutablePath = res.Browser.Path
		}
	}
	var ns *netns
	if o.Isolate {
		var err error
		if ns, err = newNetns(); err != nil {
			return nil, err
		}
	}
	ch := make(chan launched, 1)
	go func() {
		b, err := launch(o, ns)
		if err != nil && ns != nil {
			_ = ns.close()
		}
		ch <- launched{b, err}
	}()
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	select {
	case s := <-ch:
		return s.b, s.err
	case <-ctx.Done():
		go closeLate(ch)
		return nil, fmt.Errorf("driver: launch: %w", ctx.Err())
	case <-timer.C:
		go closeLate(ch)
		return nil, fmt.Errorf("driver: launch: no browser after %v", o.Timeout)
	}
}

type launched struct {
	b   *Browser
	err error
}

// closeLate stops a browser whose launch finished after the caller gave up.
func closeLate(ch <-chan launched) {
	if s := <-ch; s.b != nil {
		_ = s.b.Close(context.Background())
	}
}

// runMu serializes playwright.Run: playwright-go v0.5200.1 writes a
// package variable while it prepares the driver (transformRunOptions), so
// two Launches at once race.
var runMu sync.Mutex

// launch starts the Playwright driver, inside ns when it is not nil (so
// that the browser it launches, its child, is in ns too), and launches or
// connects to the browser.
func launch(o BrowserOptions, ns *netns) (*Browser, error) {
	var pw *playwright.Playwright
	run := func() (err error) {
		pw, err = playwright.Run(&playwright.RunOptions{
			DriverDirectory:     o.DriverDir,
			SkipInstallBrowsers: true,
			Verbose:             false,
			Stdout:              o.Log,
			Stderr:              o.Log,
			Logger:              quietLogger,
		})
		return err
	}
	runMu.Lock()
	var err error
	if ns != nil {
		err = ns.do(run)
	} else {
		err = run()
	}
	runMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("driver: start Playwright driver in %s: %w", o.DriverDir, err)
	}
	args := append(append([]string{}, DefaultArgs...), o.Args...)
	headless := !o.Headed
	timeout := float64(o.Timeout.Milliseconds())
	var br playwright.Browser
	if o.Endpoint != "" {
		lo, _ := json.Marshal(map[string]any{"headless": headless, "args": args})
		br, err = pw.Chromium.Connect(o.Endpoint, playwright.BrowserTypeConnectOptions{
			Headers: map[string]string{"x-playwright-launch-options": string(lo)},
			Timeout: &timeout,
		})
		if err != nil {
			_ = pw.Stop()
			return nil, fmt.Errorf("driver: connect to %s: %w", o.Endpoint, err)
		}
	} else {
		br, err = pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
			ExecutablePath: &o.ExecutablePath,
			Headless:       &headless,
			Args:           args,
			Timeout:        &timeout,
		})
		if err != nil {
			_ = pw.Stop()
			return nil, fmt.Errorf("driver: launch %s: %w", o.ExecutablePath, err)
		}
	}
	launches.Add(1)
	return &Browser{pw: pw, browser: br, remote: o.Endpoint != "", ns: ns}, nil
}

// Remote reports whether the browser is a connection to a Playwright server.
func (b *Browser) Remote() bool { return b.remote }

// Isolated reports whether the browser runs in a network namespace of its
// own (BrowserOptions.Isolate).
func (b *Browser) Isolated() bool { return b.ns != nil }

// listen opens a loopback listener where the browser's network is: in its
// namespace when it is isolated, else in the host's.
func (b *Browser) listen() (net.Listener, error) {
	if b.ns == nil {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var ln net.Listener
	err := b.ns.do(func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	return ln, err
}

// Version returns the browser's version.
func (b *Browser) Version() string { return b.browser.Version() }

// Close closes the browser (or the connection to the server) and stops the
// Playwright driver. Sessions still open in it fail with ErrPageClosed.
func (b *Browser) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		done := make(chan error, 1)
		go func() {
			err := b.browser.Close()
			if serr := b.pw.Stop(); serr != nil && err == nil {
				err = serr
			}
			if b.ns != nil {
				_ = b.ns.close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, playwright.ErrTargetClosed) {
				b.closeErr = fmt.Errorf("driver: close browser: %w", err)
			}
		case <-ctx.Done():
			b.closeErr = fmt.Errorf("driver: close browser: %w", ctx.Err())
		}
	})
	return b.closeErr
}
