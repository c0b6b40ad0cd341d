package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// The extension driver serves mode "extension": the browser is the
// person's own Chrome, and the page is reached through the aegis
// extension. Every call goes over an ExtensionPort (the native messaging
// port between the aegis host and the extension's service worker, see
// nativehost/PROTOCOL.md) to the service worker, which runs the shared
// observer (extension/observer/, joined into one script) and the action executor
// (extension/executor.js) in the tab as content scripts, in an isolated
// world. Selectors, observations, masking and errors are those of the
// Playwright driver: the same observer computes them and the same Go code
// checks them.
//
// Differences from the Playwright driver, all inherent to running inside
// the person's browser: clicks and typing are DOM events dispatched by the
// content script (isTrusted is false; a page that ignores untrusted events
// does not react), the viewport is the window's (Config.Viewport is
// ignored), downloads are the browser's business, and a screenshot
// captures the visible tab (the tab is brought to the front first).
//
// The extension refuses to touch a tab that shows a page outside
// Config.AllowedOrigins (navigation_blocked), checked in the page in the
// same task as the call, so a page that navigated away between the gate's
// decision and the action is never acted on. The element an action was
// judged on (the last Describe of its selector) is re-checked there too,
// in the same turn as the action: a change fails it with target_changed,
// and nothing is done.
//
// While the driver is open, the tab is under the extension's network
// boundary (extension_boundary.go): the browser blocks every request of
// the tab outside the allowed origins and, when Config.Effects is set,
// every state-changing request but the form submission Effects.Judge
// allowed for the click that causes it; refusals go to Effects.Refused
// and BlockedRequests.

// ExtensionPort carries the extension driver's requests to the extension.
// nativehost.Conn implements it.
type ExtensionPort interface {
	// Call sends one request and waits for its result, ctx's end or the
	// end of the connection. An error the extension answered with should
	// implement DriverCode() contract.ErrorCode (nativehost.Error does), so
	// that the action fails with the right code; any other error is
	// internal, and ctx's end is a timeout.
	Call(ctx context.Context, method string, params any) (json.RawMessage, error)
}

// ExtensionTarget tells the extension driver where to act: the port to
// the extension, and the tab.
type ExtensionTarget struct {
	// Port is the connection to the extension. Required.
	Port ExtensionPort
	// TabID is the tab to act on (the person's tab), which Close leaves
	// open. 0 opens a new tab, which Close closes.
	TabID int
}

// Extension protocol methods (nativehost/PROTOCOL.md).
const (
	extTabOpen     = "tab.open"
	extTabClose    = "tab.close"
	extTabInfoM    = "tab.info"
	extTabNavigate = "tab.navigate"
	extTabCall     = "tab.call"
	extTabCapture  = "tab.capture"
)

type extTabRef struct {
	TabID int `json:"tabId"`
}

type extTabOpenParams struct {
	URL string `json:"url"`
}

// extTabInfo is the answer of tab.open and tab.info.
type extTabInfo struct {
	TabID    int    `json:"tabId"`
	WindowID int    `json:"windowId"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	Active   bool   `json:"active"`
	Status   string `json:"status"`
}

type extNavigateParams struct {
	TabID     int      `json:"tabId"`
	URL       string   `json:"url"`
	TimeoutMs int64    `json:"timeoutMs"`
	Origins   []string `json:"origins"`
}

type extNavWait struct {
	CommitMs int64 `json:"commitMs"`
	LoadMs   int64 `json:"loadMs"`
}

type extCallParams struct {
	TabID      int         `json:"tabId"`
	Fn         string      `json:"fn"`
	Args       []any       `json:"args"`
	Origins    []string    `json:"origins"`
	Navigation *extNavWait `json:"navigation,omitempty"`
	Allow      *extAllow   `json:"allow,omitempty"`
}

type extCallResult struct {
	Value     string `json:"value"`
	URL       string `json:"url"`
	Navigated bool   `json:"navigated"`
}

type extCaptureParams struct {
	TabID   int      `json:"tabId"`
	Format  string   `json:"format"`
	Quality int      `json:"quality,omitempty"`
	Origins []string `json:"origins"`
}

type extCaptureResult struct {
	Data string `json:"data"` // base64
	MIME string `json:"mime"`
	URL  string `json:"url"`
}

// extDriver is the extension driver.
type extDriver struct {
	cfg     Config
	port    ExtensionPort
	tabID   int
	own     bool // opened the tab, closes it on Close
	origins []string

	mu sync.Mutex // serializes Observe, Describe and Act

	stateMu  sync.Mutex
	closed   bool
	windowID int
	lastURL  string

	arts artifactLog

	bound *boundary // the tab's boundary, refusals, remembered targets
}

// OpenExtension opens the extension driver on target (the port to the
// extension and the tab), after validating cfg and filling in its defaults;
// cfg.Mode must be extension or empty.
func OpenExtension(ctx context.Context, cfg Config, target ExtensionTarget) (Driver, error) {
	if cfg.Mode == "" {
		cfg.Mode = contract.ModeExtension
	}
	if cfg.Mode != contract.ModeExtension {
		return nil, fmt.Errorf("driver: OpenExtension with mode %q", cfg.Mode)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return openExtension(ctx, cfg, target)
}

func openExtension(ctx context.Context, cfg Config, t ExtensionTarget) (Driver, error) {
	if t.Port == nil {
		return nil, newErr(contract.CodeUnsupported, "", "the extension driver needs a connection to the aegis extension (run aegis from the extension's popup)", nil)
	}
	d := &extDriver{cfg: cfg, port: t.Port, tabID: t.TabID, origins: nonNil(cfg.AllowedOrigins)}
	var info extTabInfo
	var err error
	if t.TabID == 0 {
		err = d.callJSON(ctx, extTabOpen, extTabOpenParams{URL: "about:blank"}, &info)
		d.own = true
	} else {
		err = d.callJSON(ctx, extTabInfoM, extTabRef{TabID: t.TabID}, &info)
	}
	if err != nil {
		return nil, err
	}
	if info.TabID <= 0 || (t.TabID != 0 && info.TabID != t.TabID) {
		return nil, newErr(contract.CodeInternal, "", fmt.Sprintf("the extension answered with tab %d", info.TabID), nil)
	}
	d.tabID = info.TabID
	d.windowID = info.WindowID
	d.lastURL = boundURL(info.URL)
	if err := d.startBoundary(ctx); err != nil {
		// Fail closed: no session runs on a tab without its boundary.
		if d.own {
			_, _ = d.port.Call(ctx, extTabClose, extTabRef{TabID: d.tabID})
		}
		return nil, err
	}
	return d, nil
}

// Mode returns extension.
func (d *extDriver) Mode() contract.DriverMode { return d.cfg.Mode }

// TabID returns the tab the driver acts on.
func (d *extDriver) TabID() int { return d.tabID }

// Close ends the session: a tab the driver opened is closed; the person's
// tab is left as it is.
func (d *extDriver) Close(ctx context.Context) error {
	d.stateMu.Lock()
	if d.closed {
		d.stateMu.Unlock()
		return nil
	}
	d.closed = true
	d.stateMu.Unlock()
	berr := d.stopBoundary(ctx)
	if !d.own {
		return berr
	}
	_, err := d.port.Call(ctx, extTabClose, extTabRef{TabID: d.tabID})
	if err != nil && ctx.Err() == nil {
		if c := codeOfExt(err); c == contract.CodePageClosed {
			return nil // already gone (or the extension is)
		}
		return fmt.Errorf("driver: close tab %d: %w", d.tabID, err)
	}
	return nil
}

func (d *extDriver) check() error {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if d.closed {
		return newErr(contract.CodePageClosed, "", "the session is closed", nil)
	}
	return nil
}

// TakeArtifacts returns and forgets the artifacts extracted so far.
func (d *extDriver) TakeArtifacts() []Extracted { return d.arts.take() }

// codeOfExt returns the driver code an error of the port maps to.
func codeOfExt(err error) contract.ErrorCode {
	var dc interface{ DriverCode() contract.ErrorCode }
	if errors.As(err, &dc) {
		return dc.DriverCode()
	}
	return contract.CodeInternal
}

// portErr turns an error of the port into an *Error.
func portErr(ctx context.Context, err error, sel string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if ctx.Err() != nil {
		c := ctxErr(ctx)
		c.(*Error).Selector = sel
		return c
	}
	code := codeOfExt(err)
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "nativehost: ")
	return newErr(code, sel, "the extension: "+text.CutRunes(msg, 512), err)
}

// retryable reports an error of the extension that a new attempt may cure
// (the content script could not run because the document was being
// replaced): one whose chain holds an error with Retryable() true, as
// nativehost.Error has for script_failed.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	return errors.As(err, &r) && r.Retryable()
}

func (d *extDriver) callJSON(ctx context.Context, method string, params, out any) error {
	raw, err := d.port.Call(ctx, method, params)
	if err != nil {
		return portErr(ctx, err, "")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return newErr(contract.CodeInternal, "", "the extension answered "+method+" with a malformed result", err)
	}
	return nil
}

// call runs one function of the content script in the tab and returns its
// JSON answer and the tab's URL after it.
func (d *extDriver) call(ctx context.Context, sel, fn string, nav *extNavWait, args ...any) (extCallResult, error) {
	return d.callAllowing(ctx, sel, fn, nav, nil, args...)
}

// callAllowing is call with the judged form submission allow let through
// the tab's boundary for the length of the call.
func (d *extDriver) callAllowing(ctx context.Context, sel, fn string, nav *extNavWait, allow *extAllow, args ...any) (extCallResult, error) {
	if args == nil {
		args = []any{}
	}
	var r extCallResult
	if err := d.callJSON(ctx, extTabCall, extCallParams{TabID: d.tabID, Fn: fn, Args: args, Origins: d.origins, Navigation: nav, Allow: allow}, &r); err != nil {
		if e, ok := err.(*Error); ok && e.Selector == "" {
			e.Selector = sel
		}
		return r, err
	}
	if r.URL != "" {
		d.stateMu.Lock()
		d.lastURL = boundURL(r.URL)
		d.stateMu.Unlock()
	}
	return r, nil
}

// callResult is call followed by parseResult, retrying a call that met a
// document being replaced (up to 3 attempts, 100 ms apart).
func (d *extDriver) callResult(ctx context.Context, sel, fn string, args ...any) (pageResult, error) {
	var r extCallResult
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		r, err = d.call(ctx, sel, fn, nil, args...)
		if err == nil || !retryable(err) {
			break
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			break
		}
	}
	if err != nil {
		return pageResult{}, err
	}
	return parseResult([]byte(r.Value), sel)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (d *extDriver) currentURL() string {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return d.lastURL
}

// Observe captures the tab's page.
func (d *extDriver) Observe(ctx context.Context, o ObserveOptions) (contract.Observation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return contract.Observation{}, err
	}
	opts := o.merged(d.cfg.Observe, d.cfg.SensitiveSelectors)
	var r extCallResult
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		r, err = d.call(ctx, "", "observe", nil, observerOptions(opts))
		if err == nil || !retryable(err) {
			break
		}
		if !sleepCtx(ctx, 150*time.Millisecond) {
			break
		}
	}
	if err != nil {
		return contract.Observation{}, err
	}
	captured := time.Now()
	po, err := parsePage([]byte(r.Value), opts)
	if err != nil {
		return contract.Observation{}, err
	}
	reportPeers(d.cfg.Effects, po.Stats.PeerRefused)
	tab := d.tabID
	obs := observation(d.cfg, po, r.URL, &tab, captured)
	obs.ExtractedArtifacts = d.arts.records()
	return obs, nil
}

// Describe resolves selector to its one element.
func (d *extDriver) Describe(ctx context.Context, selector string) (contract.Element, error) {
	el, _, err := d.DescribeObserved(ctx, selector)
	return el, err
}

// DescribeObserved is Describe, and what the element is to the last
// Observe.
func (d *extDriver) DescribeObserved(ctx context.Context, selector string) (contract.Element, Observed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	if _, err := ParseSelector(selector); err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	r, err := d.callResult(ctx, selector, "describe", selector, map[string]any{"sensitive": nonNil(d.cfg.SensitiveSelectors)})
	if err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	el, err := describedOf(selector, r.Element, d.cfg.SensitiveSelectors)
	if err != nil {
		return contract.Element{}, ObservedUnknown, err
	}
	d.remember(selector, *r.Element)
	return el, observedOf(r.Observed), nil
}

// Act carries out one action.
func (d *extDriver) Act(ctx context.Context, a contract.Action) (contract.ToolResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	tab := d.tabID
	res := contract.ToolResult{SessionID: d.cfg.SessionID, TabID: &tab}
	d.stateMu.Lock()
	if d.windowID > 0 {
		w := d.windowID
		res.WindowID = &w
	}
	d.stateMu.Unlock()
	run := func(lat *latencies) ([]string, error) { return d.act(ctx, a, lat) }
	return actResult(a, res, run, d.currentURL)
}

func (d *extDriver) act(ctx context.Context, a contract.Action, lat *latencies) ([]string, error) {
	switch a.Type {
	case contract.ActNavigate, contract.ActClick, contract.ActType, contract.ActSelect, contract.ActScroll, contract.ActExtract, contract.ActWait:
	default:
		return nil, newErr(contract.CodeUnsupported, "", fmt.Sprintf("unknown action type %q", text.CutRunes(string(a.Type), 32)), nil)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if a.Selector != "" {
		if _, err := ParseSelector(a.Selector); err != nil {
			return nil, err
		}
	}
	switch a.Type {
	case contract.ActWait:
		return nil, (&pwDriver{}).wait(ctx, a)
	case contract.ActNavigate:
		return nil, d.navigate(ctx, a)
	case contract.ActClick:
		return nil, d.click(ctx, a, lat)
	case contract.ActType:
		return nil, d.typeText(ctx, a, lat)
	case contract.ActSelect:
		return nil, d.selectOption(ctx, a, lat)
	case contract.ActScroll:
		return nil, d.scroll(ctx, a, lat)
	default:
		return d.extract(ctx, a, lat)
	}
}
