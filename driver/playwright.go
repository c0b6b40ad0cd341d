package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/internal/text"
)

// pwDriver is the Playwright driver, serving the modes "playwright" and
// "sandbox". Each session is one ephemeral browser context; the observer
// is injected into every frame as an init script under a random global
// name.
type pwDriver struct {
	cfg     Config
	browser *Browser
	own     bool // the session launched the browser and stops it on Close
	bctx    playwright.BrowserContext
	global  string
	script  string
	expr    string          // callExprFor(global)
	allowed map[string]bool // the boundary runs when it is not empty (effects.go)
	proxy   *filterProxy    // the boundary with a local browser: every request goes through it

	// life ends when the session closes: the Judge calls of held requests
	// run in it.
	life    context.Context
	endLife context.CancelFunc
	judging atomic.Int64 // Judge calls in flight
	markKey []byte       // signs the requests request routing judged (heldMark)

	mu sync.Mutex // serializes Observe, Describe and Act

	stateMu        sync.Mutex // guards everything below
	page           playwright.Page
	pages          []playwright.Page
	seen           map[playwright.Page]bool // pages whose first navigation committed (guarded by stateMu)
	closed         bool
	blocked        []BlockedRequest
	blockedDropped int

	arts artifactLog

	targets targetMemory // what Describe reported, per selector (guarded by mu)

	navSeq    atomic.Int64 // main-frame navigations committed, or refused by the boundary
	lastStats atomic.Pointer[pageStats]
}

// callExprFor is the expression that calls one function of the observer
// installed as global, or returns null when the observer is not installed
// in the document. It runs in the page's main world, where page scripts
// run too, so it takes one string (the JSON of [function, [arguments]])
// and hands it to the observer's invoke, which parses and applies it with
// builtins it took at install; it reads the observer through window, which
// no page script can replace or shadow (globalThis can be), and never
// spreads or destructures an array (a page may replace the array
// iterator).
func callExprFor(global string) string {
	return `(s) => { const api = window[` + strconv.Quote(global) + `]; if (!api) return null; return api.invoke(s); }`
}

func openPlaywright(ctx context.Context, cfg Config) (Driver, error) {
	d := &pwDriver{cfg: cfg, allowed: map[string]bool{}}
	d.life, d.endLife = context.WithCancel(context.Background())
	d.markKey = make([]byte, 32)
	_, _ = rand.Read(d.markKey)
	for _, o := range cfg.AllowedOrigins {
		d.allowed[o] = true
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	d.global = "__aegis_" + hex.EncodeToString(nonce[:])
	script, err := extension.ObserverScript(d.global)
	if err != nil {
		return nil, err
	}
	d.script = script
	d.expr = callExprFor(d.global)
	if d.browser, d.own, err = sessionBrowser(ctx, cfg); err != nil {
		return nil, err
	}
	if err := d.start(ctx); err != nil {
		if d.bctx != nil {
			d.closeContext(context.Background())
		}
		if d.proxy != nil {
			_ = d.proxy.Close()
		}
		if d.own {
			_ = d.browser.Close(context.Background())
		}
		d.endLife()
		return nil, err
	}
	return d, nil
}

func (d *pwDriver) start(ctx context.Context) error {
	no := false
	opts := playwright.BrowserNewContextOptions{
		Viewport:          &playwright.Size{Width: d.cfg.Viewport.Width, Height: d.cfg.Viewport.Height},
		DeviceScaleFactor: &d.cfg.Viewport.DeviceScaleFactor,
		AcceptDownloads:   &no,
	}
	if d.bounded() {
		// Service workers could fetch behind the request routing's back,
		// and their requests would be neither filtered nor judged.
		opts.ServiceWorkers = playwright.ServiceWorkerPolicyBlock
		if !d.browser.remote {
			px, err := startFilterProxy(d.browser.listen, func(u *url.URL) bool { return d.allowedURL(u.String()) },
				func(hp string) bool { return hostPortAllowed(d.allowed, hp) }, d.recordBlocked)
			if err != nil {
				return fmt.Errorf("driver: boundary proxy: %w", err)
			}
			px.refused = d.reportRefused
			px.hold = d.holdProxied
			d.proxy = px
			opts.Proxy = &playwright.Proxy{Server: px.URL()}
		}
	} else if d.browser.Isolated() {
		// The browser's only way out is a proxy in its namespace; a
		// playwright session's passes every request on.
		px, err := startFilterProxy(d.browser.listen, func(*url.URL) bool { return true }, func(string) bool { return true }, d.recordBlocked)
		if err != nil {
			return fmt.Errorf("driver: proxy: %w", err)
		}
		d.proxy = px
		opts.Proxy = &playwright.Proxy{Server: px.URL()}
	}
	bctx, err := runCtxOwned(ctx, func() (playwright.BrowserContext, error) { return d.browser.browser.NewContext(opts) },
		func(c playwright.BrowserContext) { c.Close() })
	if err != nil {
		return fmt.Errorf("driver: new browser context: %w", err)
	}
	d.bctx = bctx
	if err := bctx.AddInitScript(playwright.Script{Content: &d.script}); err != nil {
		return fmt.Errorf("driver: install observer: %w", err)
	}
	if err := d.guardPeers(bctx); err != nil {
		return err
	}
	if d.bounded() {
		if err := bctx.Route("**/*", d.route); err != nil {
			return fmt.Errorf("driver: boundary request routing: %w", err)
		}
		if err := bctx.RouteWebSocket("**/*", d.routeWebSocket); err != nil {
			return fmt.Errorf("driver: boundary websocket routing: %w", err)
		}
	}
	bctx.OnPage(d.adopt)
	p, err := runCtxOwned(ctx, func() (playwright.Page, error) { return bctx.NewPage() }, func(p playwright.Page) { p.Close() })
	if err != nil {
		return fmt.Errorf("driver: new page: %w", err)
	}
	d.adopt(p)
	d.stateMu.Lock()
	d.page = p
	d.stateMu.Unlock()
	return nil
}

// adopt tracks a page of the context. A page opened later (a popup, a
// target=_blank link) becomes the active page when its first navigation
// commits: a popup whose navigation the boundary refused stays a blank
// page in the background, and the session stays on the page it was on.
func (d *pwDriver) adopt(p playwright.Page) {
	d.stateMu.Lock()
	for _, q := range d.pages {
		if q == p {
			d.stateMu.Unlock()
			return
		}
	}
	d.pages = append(d.pages, p)
	if d.seen == nil {
		d.seen = map[playwright.Page]bool{}
	}
	d.stateMu.Unlock()
	p.OnClose(func(p playwright.Page) {
		d.stateMu.Lock()
		defer d.stateMu.Unlock()
		for i, q := range d.pages {
			if q == p {
				d.pages = append(d.pages[:i], d.pages[i+1:]...)
				break
			}
		}
		delete(d.seen, p)
		if d.page == p {
			d.page = nil
			if n := len(d.pages); n > 0 {
				d.page = d.pages[n-1]
			}
		}
	})
	p.OnFrameNavigated(func(f playwright.Frame) {
		if f.ParentFrame() != nil {
			return
		}
		d.navSeq.Add(1)
		if f.URL() == "about:blank" {
			return
		}
		d.stateMu.Lock()
		defer d.stateMu.Unlock()
		if d.page != nil && d.page != p && !d.seen[p] {
			d.page = p
		}
		d.seen[p] = true
	})
	p.OnDownload(d.refuseDownload)
}

func (d *pwDriver) active() (playwright.Page, error) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if d.closed {
		return nil, newErr(contract.CodePageClosed, "", "the session is closed", nil)
	}
	// Not d.page.IsClosed(): the library sets that field on its dispatch
	// goroutine without a lock (a server that goes away closes every page
	// there). The page's close handler (adopt) takes d.page away under
	// d.stateMu instead.
	if d.page == nil {
		return nil, newErr(contract.CodePageClosed, "", "the page was closed", nil)
	}
	return d.page, nil
}

// isOpen reports whether p is one of the context's open pages, as the
// pages' close handlers (adopt) keep them under d.stateMu.
func (d *pwDriver) isOpen(p playwright.Page) bool {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return slices.Contains(d.pages, p)
}

// Mode returns playwright or sandbox.
func (d *pwDriver) Mode() contract.DriverMode { return d.cfg.Mode }

// Close discards the browser context and, if the session launched its own
// browser, stops it. In a browser it shares, a context it could not close
// (an error, or ctx ended first) marks that browser broken: its pages may
// still run there, so no later session is opened in it (Browsers
// launches another and closes this one when it closes).
func (d *pwDriver) Close(ctx context.Context) error {
	d.stateMu.Lock()
	if d.closed {
		d.stateMu.Unlock()
		return nil
	}
	d.closed = true
	d.stateMu.Unlock()
	d.endLife()
	err := d.closeContext(ctx)
	if d.proxy != nil {
		_ = d.proxy.Close()
	}
	if d.own {
		if berr := d.browser.Close(ctx); err == nil {
			err = berr
		}
	}
	if err != nil {
		return fmt.Errorf("driver: close session: %w", err)
	}
	return nil
}

// closeContext closes the session's browser context, bounded by ctx; when
// that fails in a browser the session does not own, it marks the browser
// broken (Browser.broken).
func (d *pwDriver) closeContext(ctx context.Context) error {
	_, err := runCtx(ctx, func() (struct{}, error) { return struct{}{}, d.bctx.Close() })
	if err != nil && errors.Is(err, playwright.ErrTargetClosed) {
		err = nil
	}
	if err != nil && !d.own {
		d.browser.broken.Store(true)
	}
	return err
}

// BlockedRequests returns what the boundary refused (requests to origins
// outside the allowlist, downloads, held requests Effects.Judge refused),
// oldest first.
func (d *pwDriver) BlockedRequests() []BlockedRequest {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return append([]BlockedRequest(nil), d.blocked...)
}

func (d *pwDriver) recordBlocked(raw, resourceType, reason string) {
	origin := ""
	if u, err := url.Parse(raw); err == nil {
		if o, ok := originOf(u); ok {
			origin = o
		}
	}
	if len(raw) > MaxURL {
		raw = text.CutRunes(raw, MaxURL)
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if len(d.blocked) >= MaxBlocked {
		d.blockedDropped++
		return
	}
	d.blocked = append(d.blocked, BlockedRequest{URL: raw, Origin: origin, ResourceType: resourceType, Reason: reason, Time: time.Now().UTC()})
}

// allowedURL reports whether the boundary lets the browser fetch raw:
// http(s) and ws(s) URLs of an allowed origin, and the schemes that never
// reach the network (data, blob, about).
func (d *pwDriver) allowedURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "data", "blob", "about":
		return true
	}
	o, ok := originOf(u)
	return ok && d.allowed[o]
}

// TakeArtifacts returns and forgets the artifacts extracted so far.
func (d *pwDriver) TakeArtifacts() []Extracted { return d.arts.take() }

// ---------------------------------------------------------------------------
// Calling the observer.

type result[T any] struct {
	v   T
	err error
}

// runCtx runs f and returns its result, or gives up when ctx is done (f
// goes on in the background; playwright-go calls cannot be cancelled).
func runCtx[T any](ctx context.Context, f func() (T, error)) (T, error) {
	return runCtxOwned(ctx, f, nil)
}

// runCtxOwned is runCtx for a call that makes something its caller must
// release (a browser context): when ctx ends first, what f makes once it
// returns is released with release, so that nothing made after the caller
// gave up is left open. Releasing it from the goroutine that received it
// also orders playwright-go's own bookkeeping of the new object before its
// close event (which the library reads on its dispatch goroutine).
func runCtxOwned[T any](ctx context.Context, f func() (T, error), release func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, ctxErr(ctx)
	}
	ch := make(chan result[T], 1)
	go func() {
		v, err := f()
		ch <- result[T]{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if release != nil {
			go func() {
				if r := <-ch; r.err == nil {
					release(r.v)
				}
			}()
		}
		return zero, ctxErr(ctx)
	}
}

func ctxErr(ctx context.Context) error {
	return newErr(contract.CodeTimeout, "", "the context ended: "+ctx.Err().Error(), ctx.Err())
}

// call runs one observer function in the page's main frame and returns its
// JSON answer, installing the observer first in a document that lacks it.
func (d *pwDriver) call(ctx context.Context, p playwright.Page, fn string, args ...any) ([]byte, error) {
	if args == nil {
		args = []any{}
	}
	msg, err := json.Marshal([]any{fn, args})
	if err != nil {
		return nil, newErr(contract.CodeInternal, "", "the observer call does not encode", err)
	}
	for attempt := 0; ; attempt++ {
		v, err := runCtx(ctx, func() (any, error) { return p.Evaluate(d.expr, string(msg)) })
		if err != nil {
			return nil, classify(err, "")
		}
		if v == nil {
			if attempt > 0 {
				return nil, newErr(contract.CodeInternal, "", "the observer cannot be installed in this document", errNoObserver)
			}
			if _, err := runCtx(ctx, func() (any, error) { return p.Evaluate(d.script) }); err != nil {
				return nil, classify(err, "")
			}
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, newErr(contract.CodeInternal, "", fmt.Sprintf("observer returned %T, not a string", v), nil)
		}
		return []byte(s), nil
	}
}

// callResult is call followed by parseResult.
func (d *pwDriver) callResult(ctx context.Context, p playwright.Page, sel, fn string, args ...any) (pageResult, error) {
	raw, err := d.call(ctx, p, fn, args...)
	if err != nil {
		if e, ok := err.(*Error); ok && e.Selector == "" {
			e.Selector = sel
		}
		return pageResult{}, err
	}
	return parseResult(raw, sel)
}

// classify turns a playwright-go error into an *Error.
func classify(err error, sel string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, playwright.ErrTargetClosed) || strings.Contains(msg, "Target page, context or browser has been closed") || strings.Contains(msg, "has been closed"):
		return newErr(contract.CodePageClosed, sel, "the page, its context or the browser was closed", err)
	case errors.Is(err, playwright.ErrTimeout):
		return newErr(contract.CodeTimeout, sel, "timed out", err)
	case isNavigationRace(err):
		return newErr(contract.CodeInternal, sel, "the page navigated during the call", err)
	}
	return newErr(contract.CodeInternal, sel, "browser call failed", err)
}

// isNavigationRace reports an evaluation that lost its document to a
// navigation; the call is worth repeating once the new document is there.
func isNavigationRace(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "navigation") && strings.Contains(msg, "context")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---------------------------------------------------------------------------
// Observe and Describe.

// Observe captures the active page.
func (d *pwDriver) Observe(ctx context.Context, o ObserveOptions) (contract.Observation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	opts := o.merged(d.cfg.Observe, d.cfg.SensitiveSelectors)
	var raw []byte
	var p playwright.Page
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if p, err = d.active(); err != nil {
			return contract.Observation{}, err
		}
		raw, err = d.call(ctx, p, "observePacked", observerOptions(opts))
		var e *Error
		if err == nil || !errors.As(err, &e) || !isNavigationRace(e.Err) {
			break
		}
		d.settle(ctx, p)
	}
	if err != nil {
		return contract.Observation{}, err
	}
	captured := time.Now()
	if raw, err = unpack(raw); err != nil {
		return contract.Observation{}, err
	}
	po, err := parsePage(raw, opts)
	if err != nil {
		return contract.Observation{}, err
	}
	d.lastStats.Store(&po.Stats)
	reportPeers(d.cfg.Effects, po.Stats.PeerRefused)
	obs := observation(d.cfg, po, p.URL(), nil, captured)
	obs.ExtractedArtifacts = d.arts.records()
	return obs, nil
}

// settle waits briefly for a navigating page to have a document again.
func (d *pwDriver) settle(ctx context.Context, p playwright.Page) {
	t := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		t = min(t, time.Until(dl))
	}
	if t <= 0 {
		return
	}
	ms := float64(t.Milliseconds())
	_, _ = runCtx(ctx, func() (struct{}, error) {
		return struct{}{}, p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateDomcontentloaded, Timeout: &ms})
	})
}

// Describe resolves selector to its one element.
func (d *pwDriver) Describe(ctx context.Context, selector string) (contract.Element, error) {
	el, _, err := d.DescribeObserved(ctx, selector)
	return el, err
}

// DescribeObserved is Describe, and what the element is to the last
// Observe.
func (d *pwDriver) DescribeObserved(ctx context.Context, selector string) (contract.Element, Observed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := ParseSelector(selector); err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	p, err := d.active()
	if err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	sens := map[string]any{"sensitive": nonNil(d.cfg.SensitiveSelectors)}
	var r pageResult
	for attempt := 0; attempt < 3; attempt++ {
		r, err = d.callResult(ctx, p, selector, "describe", selector, sens)
		var e *Error
		if err == nil || !errors.As(err, &e) || !isNavigationRace(e.Err) {
			break
		}
		d.settle(ctx, p)
	}
	if err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	el, err := describedOf(selector, r.Element, d.cfg.SensitiveSelectors)
	if err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	d.rememberTarget(p, selector, el, r.PageOrigin)
	return el, observedOf(r.Observed), nil
}

// describedOf is the element the observer's describe answered for
// selector (e), as describedElement makes it; an internal error when it
// described nothing.
func describedOf(selector string, e *contract.Element, sensitive []string) (contract.Element, error) {
	if e == nil {
		return contract.Element{}, newErr(contract.CodeInternal, selector, "observer described nothing", nil)
	}
	return describedElement(selector, *e, sensitive)
}

// describedElement makes every page-controlled field of e valid UTF-8
// within its contract bound, and checks that the sensitive selector the
// observer reported is one of sensitive (the driver's own list, which the
// gate trusts it to have matched); anything else is an internal error, so
// the action is not judged on a fact the driver cannot vouch for.
func describedElement(selector string, e contract.Element, sensitive []string) (contract.Element, error) {
	if e.SensitiveSelector != "" && !slices.Contains(sensitive, e.SensitiveSelector) {
		return contract.Element{}, newErr(contract.CodeInternal, selector, "observer reported a sensitive selector the session does not have", nil)
	}
	b := func(s string, n int) string { return text.CutRunes(strings.ToValidUTF8(s, "\uFFFD"), n) }
	return contract.Element{
		Tag:               b(e.Tag, contract.MaxElementTag),
		Type:              b(e.Type, contract.MaxElementType),
		Name:              b(e.Name, contract.MaxElementName),
		ID:                b(e.ID, contract.MaxElementID),
		Autocomplete:      b(e.Autocomplete, contract.MaxElementAutocomplete),
		Role:              b(e.Role, contract.MaxElementRole),
		Label:             b(e.Label, contract.MaxElementLabel),
		Text:              b(e.Text, contract.MaxElementText),
		SensitiveSelector: e.SensitiveSelector,
		Origin:            b(e.Origin, contract.MaxElementOrigin),
	}, nil
}
