package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// launches counts the browsers Launch started or connected to.
var launches atomic.Int64

// Launches returns how many browsers this process has launched or
// connected to (Launch, whoever called it): a process whose sessions
// share a browser (Config.Browsers) sees one per kind of browser they
// needed, one that launches per session one per session.
func Launches() int64 { return launches.Load() }

// ErrBrowsersClosed is the error of Browsers.For after Browsers.Close.
var ErrBrowsersClosed = errors.New("driver: the shared browsers are closed")

// Browsers shares running browsers among the sessions of a process (a
// command that replays several bundles, a test binary): the first session
// that needs a browser launches it, as a session launching its own would
// (Open: in a network namespace of its own for sandbox mode, connected to
// Config.BrowserEndpoint, headed with Config.Headed), and every later
// session that needs the same kind of browser opens its own context in
// that one instead of launching another. Sessions in a shared browser are
// kept apart as sessions in browsers of their own are: each has its own
// ephemeral context (cookies, storage, cache, permissions, proxy), and
// closing one leaves the others running.
//
// A browser that went away (crashed, closed), or that a session marked
// broken (its context could not be closed, so its pages may still run
// there), is replaced by a fresh launch for the next session and retired:
// one that went away is closed at once, a broken one (other sessions may
// still run in it) by Close.
//
// The zero value is ready to use; it may be used from several goroutines.
// Close closes every browser it launched, the retired ones too.
type Browsers struct {
	mu      sync.Mutex
	slots   map[browserKind]*browserSlot
	retired []*retiredBrowser
	closed  bool
}

// retiredBrowser is a browser Browsers replaced: closing is closed when
// the close begun at retirement ended (nil when it is left to Close).
type retiredBrowser struct {
	b       *Browser
	closing chan struct{}
}

// retireTimeout bounds the close of a browser that went away, begun when
// it is replaced.
const retireTimeout = 30 * time.Second

// browserKind is what makes two sessions need different browsers.
type browserKind struct {
	endpoint string
	headed   bool
	isolate  bool
}

// browserSlot is one shared browser, launched once: done is closed when
// the launch ended, with b or err set.
type browserSlot struct {
	done chan struct{}
	b    *Browser
	err  error
}

// For returns the running browser a session of cfg opens its context in,
// launching it when no session needed that kind before (or the one
// launched is gone). The browser stays Browsers': the session must not
// close it. An error says why the browser could not be had; a launch that
// failed is tried again by the next call. cfg.Browser is not looked at.
func (bs *Browsers) For(ctx context.Context, cfg Config) (*Browser, error) {
	return launchFor(ctx, cfg, bs.get)
}

// get returns the shared browser of o's kind, launching it on first need.
// The launch runs on its own, bounded by o.Timeout rather than by ctx:
// a caller that gives up (ctx) leaves it to serve the next session, and
// Close closes it.
func (bs *Browsers) get(ctx context.Context, o BrowserOptions) (*Browser, error) {
	k := browserKind{endpoint: o.Endpoint, headed: o.Headed, isolate: o.Isolate}
	bs.mu.Lock()
	if bs.closed {
		bs.mu.Unlock()
		return nil, ErrBrowsersClosed
	}
	s := bs.slots[k]
	if s != nil && s.launched() && (s.err != nil || !s.b.browser.IsConnected() || s.b.broken.Load()) {
		// Failed, the browser went away (crashed, or closed by someone),
		// or a session left it broken: launch again, and retire the old one.
		if s.b != nil {
			bs.retire(s.b)
		}
		s = nil
	}
	if s == nil {
		s = &browserSlot{done: make(chan struct{})}
		if bs.slots == nil {
			bs.slots = map[browserKind]*browserSlot{}
		}
		bs.slots[k] = s
		lctx := context.WithoutCancel(ctx)
		go func() {
			s.b, s.err = Launch(lctx, o)
			close(s.done)
		}()
	}
	bs.mu.Unlock()
	select {
	case <-s.done:
		return s.b, s.err
	case <-ctx.Done():
		return nil, fmt.Errorf("driver: launch: %w", ctx.Err())
	}
}

// retire takes b out of service (bs.mu held): a browser that went away is
// closed now, in the background and bounded by retireTimeout; a broken one
// still connected, where other sessions may still run, is left to Close.
func (bs *Browsers) retire(b *Browser) {
	r := &retiredBrowser{b: b}
	if !b.browser.IsConnected() {
		r.closing = make(chan struct{})
		go func() {
			defer close(r.closing)
			ctx, cancel := context.WithTimeout(context.Background(), retireTimeout)
			defer cancel()
			_ = b.Close(ctx)
		}()
	}
	bs.retired = append(bs.retired, r)
}

// launched reports whether the slot's launch ended.
func (s *browserSlot) launched() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Close closes every browser Browsers launched, the retired ones too,
// after waiting for the launches under way; For fails from then on.
// Sessions still open in them fail with ErrPageClosed. A launch that
// outlives ctx is closed when it ends.
func (bs *Browsers) Close(ctx context.Context) error {
	bs.mu.Lock()
	bs.closed = true
	slots := bs.slots
	bs.slots = nil
	retired := bs.retired
	bs.retired = nil
	bs.mu.Unlock()
	var errs []error
	for _, r := range retired {
		if r.closing == nil {
			// Broken but still running: its close counts.
			errs = append(errs, r.b.Close(ctx))
			continue
		}
		// Gone already: only waiting for its close to end.
		select {
		case <-r.closing:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("driver: close a retired browser: %w", ctx.Err()))
		}
	}
	for _, s := range slots {
		select {
		case <-s.done:
		case <-ctx.Done():
			go func() {
				<-s.done
				if s.b != nil {
					_ = s.b.Close(context.Background())
				}
			}()
			errs = append(errs, fmt.Errorf("driver: close browser: %w", ctx.Err()))
			continue
		}
		if s.b != nil {
			errs = append(errs, s.b.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

// sessionBrowser returns the browser a session of cfg runs in and whether
// the session launched it (and stops it on Close): cfg.Browser, else one
// of cfg.Browsers, else one launched for the session alone. A sandbox
// session that launches its own browser launches an isolated one; one
// given a shared browser needs it isolated. Either fails closed where
// isolation is not to be had, unless cfg.AllowNoNetworkIsolation. Remote
// browsers are taken as they are: their network is the remote machine's.
func sessionBrowser(ctx context.Context, cfg Config) (*Browser, bool, error) {
	sandbox := cfg.Mode == contract.ModeSandbox
	if b := cfg.Browser; b != nil {
		if sandbox && !b.remote && b.ns == nil && !cfg.AllowNoNetworkIsolation {
			return nil, false, fmt.Errorf("%w: sandbox mode needs a browser in a network namespace of its own and Config.Browser was launched without one: "+
				"launch it with BrowserOptions{Isolate: true}, leave Config.Browser nil, or set Config.AllowNoNetworkIsolation to accept the proxy and request routing alone", ErrNoNetworkIsolation)
		}
		return b, false, nil
	}
	if cfg.Browsers != nil {
		b, err := cfg.Browsers.For(ctx, cfg)
		return b, false, err
	}
	b, err := launchFor(ctx, cfg, Launch)
	return b, err == nil, err
}

// launchFor launches, through launch (Launch, or Browsers' shared one),
// the browser a session of cfg needs: headless unless cfg.Headed, the
// Playwright server at cfg.BrowserEndpoint if set, and for sandbox mode
// in a network namespace of its own, or where none can be made and
// cfg.AllowNoNetworkIsolation, without.
func launchFor(ctx context.Context, cfg Config, launch func(context.Context, BrowserOptions) (*Browser, error)) (*Browser, error) {
	sandbox := cfg.Mode == contract.ModeSandbox
	o := BrowserOptions{Endpoint: cfg.BrowserEndpoint, Headed: cfg.Headed, Isolate: sandbox && cfg.BrowserEndpoint == ""}
	b, err := launch(ctx, o)
	if err != nil && o.Isolate && errors.Is(err, ErrNoNetworkIsolation) {
		if !cfg.AllowNoNetworkIsolation {
			return nil, fmt.Errorf("%w; sandbox mode runs the browser where its only way out is the aegis proxy: "+
				"run aegis as root or with CAP_SYS_ADMIN on Linux, use mode playwright, or set Config.AllowNoNetworkIsolation (aegis run --no-network-isolation) to accept the proxy and request routing alone", err)
		}
		o.Isolate = false
		b, err = launch(ctx, o)
	}
	return b, err
}
