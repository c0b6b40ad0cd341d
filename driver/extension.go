package driver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"net/url"
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
// decision and the action is never acted on.

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

type extClip struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

type extCaptureParams struct {
	TabID   int      `json:"tabId"`
	Format  string   `json:"format"`
	Quality int      `json:"quality,omitempty"`
	Clip    *extClip `json:"clip,omitempty"`
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
	tab := d.tabID
	obs := observation(d.cfg, po, r.URL, &tab, captured)
	obs.ExtractedArtifacts = d.arts.records()
	return obs, nil
}

// Describe resolves selector to its one element.
func (d *extDriver) Describe(ctx context.Context, selector string) (contract.Element, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return contract.Element{}, err
	}
	if _, err := ParseSelector(selector); err != nil {
		return contract.Element{}, err
	}
	r, err := d.callResult(ctx, selector, "describe", selector, map[string]any{"sensitive": nonNil(d.cfg.SensitiveSelectors)})
	if err != nil {
		return contract.Element{}, err
	}
	if r.Element == nil {
		return contract.Element{}, newErr(contract.CodeInternal, selector, "observer described nothing", nil)
	}
	el, err := describedElement(selector, *r.Element, d.cfg.SensitiveSelectors)
	if err == nil {
		d.remember(selector, *r.Element)
	}
	return el, err
}

// Act carries out one action.
func (d *extDriver) Act(ctx context.Context, a contract.Action) (contract.ToolResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := time.Now()
	tab := d.tabID
	res := contract.ToolResult{
		ActionID:  a.ID,
		Action:    a.PolicyName(),
		RiskTag:   DefaultRisk(a.Type),
		SessionID: d.cfg.SessionID,
		TabID:     &tab,
		StartedAt: timestamp(start),
	}
	d.stateMu.Lock()
	if d.windowID > 0 {
		w := d.windowID
		res.WindowID = &w
	}
	d.stateMu.Unlock()
	var lat latencies
	ids, err := d.act(ctx, a, &lat)
	res.EndedAt = timestamp(time.Now())
	res.InputLatencyMs = lat.input
	res.CaptureLatencyMs = lat.capture
	if len(ids) > 0 {
		res.ArtifactIDs = ids
	}
	res.URL = d.currentURL()
	if err != nil {
		e := asError(err, a)
		res.OK = false
		res.Error = e.ToolError()
		return res, e
	}
	res.OK = true
	return res, nil
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

// allowedURL reports whether raw's origin is one of the session's (every
// http(s) URL when the session names none).
func (d *extDriver) allowedURL(u *url.URL) bool {
	if len(d.origins) == 0 {
		return true
	}
	o, ok := originOf(u)
	if !ok {
		return false
	}
	for _, a := range d.origins {
		if a == o {
			return true
		}
	}
	return false
}

func (d *extDriver) navigate(ctx context.Context, a contract.Action) error {
	u, err := url.Parse(a.URL)
	if err != nil || !u.IsAbs() {
		return newErr(contract.CodeNavigationBlocked, "", "the URL is not absolute", nil)
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return newErr(contract.CodeNavigationBlocked, "", fmt.Sprintf("scheme %q is refused: only http and https are navigated", text.CutRunes(s, 32)), nil)
	}
	if u.Host == "" {
		return newErr(contract.CodeNavigationBlocked, "", "the URL has no host", nil)
	}
	if !d.allowedURL(u) {
		o, _ := originOf(u)
		return newErr(contract.CodeNavigationBlocked, "", fmt.Sprintf("origin %s is not one of the session's allowed origins", o), nil)
	}
	t := remaining(ctx, d.cfg.NavigationTimeout)
	if t <= 0 {
		return ctxErr(ctx)
	}
	var info extTabInfo
	err = d.callJSON(ctx, extTabNavigate, extNavigateParams{TabID: d.tabID, URL: a.URL, TimeoutMs: t.Milliseconds(), Origins: d.origins}, &info)
	if info.URL != "" {
		d.stateMu.Lock()
		d.lastURL = boundURL(info.URL)
		d.stateMu.Unlock()
	}
	var e *Error
	if errors.As(err, &e) && e.Code == contract.CodeTimeout && ctx.Err() != nil {
		return newErr(contract.CodeTimeout, "", fmt.Sprintf("the page did not load within %v", t.Round(time.Millisecond)), e.Err)
	}
	return err
}

// untilReady waits for the element as the Playwright driver does (see
// pwDriver.untilReady, which uses none of its receiver's state).
func (d *extDriver) untilReady(ctx context.Context, wait time.Duration, sel string, prepare func() (pageResult, error)) (pageResult, error) {
	return (&pwDriver{}).untilReady(ctx, wait, sel, func() (pageResult, error) {
		r, err := prepare()
		if err != nil && retryable(err) {
			// A document being replaced: as the Playwright driver's
			// navigation race, worth another attempt.
			var e *Error
			if errors.As(err, &e) {
				c := *e
				c.Err = fmt.Errorf("navigation race (execution context was destroyed): %w", e.Err)
				return r, &c
			}
		}
		return r, err
	})
}

func (d *extDriver) actionWait(a contract.Action) time.Duration {
	if a.TimeoutMs > 0 {
		return time.Duration(a.TimeoutMs) * time.Millisecond
	}
	return d.cfg.ActionTimeout
}

func (d *extDriver) click(ctx context.Context, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	nav := &extNavWait{
		CommitMs: remaining(ctx, d.cfg.ActionTimeout).Milliseconds(),
		LoadMs:   remaining(ctx, d.cfg.NavigationTimeout).Milliseconds(),
	}
	expect := d.expect(sel)
	var judged judgedSubmit
	var took time.Duration
	_, err := d.untilReady(ctx, d.actionWait(a), sel, func() (pageResult, error) {
		args := []any{sel, expect}
		var allow *extAllow
		if d.bound.hold {
			// Judge the form submission the click would cause before
			// anything is dispatched; the click re-checks it.
			submit, al, err := d.judgeSubmission(ctx, sel, &judged)
			if err != nil {
				return pageResult{}, err
			}
			args = append(args, submit)
			allow = al
		}
		t0 := time.Now()
		r, err := d.callAllowing(ctx, sel, "click", nav, allow, args...)
		took = time.Since(t0)
		if err != nil {
			return pageResult{}, err
		}
		return parseResult([]byte(r.Value), sel)
	})
	lat.input = millis(took)
	return err
}

func (d *extDriver) typeText(ctx context.Context, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	expect := d.expect(sel)
	var took time.Duration
	_, err := d.untilReady(ctx, d.cfg.ActionTimeout, sel, func() (pageResult, error) {
		t0 := time.Now()
		r, err := d.call(ctx, sel, "type", nil, sel, a.Text, expect)
		took = time.Since(t0)
		if err != nil {
			if retryable(err) || ctx.Err() != nil || CodeOf(err) == contract.CodeTargetChanged {
				return pageResult{}, err
			}
			// Never pass on a message that could quote the text.
			return pageResult{}, newErr(CodeOf(err), sel, "typing failed", nil)
		}
		return parseResult([]byte(r.Value), sel)
	})
	lat.input = millis(took)
	return err
}

func (d *extDriver) selectOption(ctx context.Context, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	expect := d.expect(sel)
	var took time.Duration
	_, err := d.untilReady(ctx, d.cfg.ActionTimeout, sel, func() (pageResult, error) {
		t0 := time.Now()
		r, err := d.callResult(ctx, sel, "select", sel, a.Value, expect)
		took = time.Since(t0)
		return r, err
	})
	lat.input = millis(took)
	return err
}

func (d *extDriver) scroll(ctx context.Context, a contract.Action, lat *latencies) error {
	switch a.Direction {
	case contract.ScrollDown, contract.ScrollUp:
	default:
		return newErr(contract.CodeUnsupported, "", fmt.Sprintf("unknown scroll direction %q", text.CutRunes(string(a.Direction), 16)), nil)
	}
	t0 := time.Now()
	// An amount of 0 scrolls one viewport (the window's height).
	_, err := d.callResult(ctx, "", "scrollPage", string(a.Direction), float64(max(a.AmountPx, 0)))
	lat.input = millis(time.Since(t0))
	return err
}

func (d *extDriver) extract(ctx context.Context, a contract.Action, lat *latencies) ([]string, error) {
	t0 := time.Now()
	var ex Extracted
	switch a.Extract {
	case contract.ExtractText, contract.ExtractTable, contract.ExtractLink:
		opts := map[string]any{"sensitive": nonNil(d.cfg.SensitiveSelectors), "maxTextChars": MaxTextChars, "maxElements": DefaultMaxElements}
		r, err := d.callResult(ctx, a.Selector, "extract", string(a.Extract), a.Selector, opts)
		if err != nil {
			return nil, err
		}
		v := boundText(r.Value, MaxTextChars)
		ex.Artifact = contract.Artifact{Type: contract.ArtifactType(a.Extract), Value: v, Hash: sha(v)}
	case contract.ExtractScreenshot:
		img, err := d.screenshot(ctx, a)
		if err != nil {
			return nil, err
		}
		ex = img
	default:
		return nil, newErr(contract.CodeUnsupported, "", fmt.Sprintf("unknown extraction %q", text.CutRunes(string(a.Extract), 32)), nil)
	}
	lat.capture = millis(time.Since(t0))
	return d.arts.add(ex, a, d.currentURL()), nil
}

// maxCaptureBase64 bounds the base64 of a screenshot the driver decodes.
var maxCaptureBase64 = base64.StdEncoding.EncodedLen(contract.MaxImageBytes)

func (d *extDriver) screenshot(ctx context.Context, a contract.Action) (Extracted, error) {
	var clip *extClip
	if a.Selector != "" {
		r, err := d.callResult(ctx, a.Selector, "rect", a.Selector)
		if err != nil {
			return Extracted{}, err
		}
		clip = &extClip{X: r.X, Y: r.Y, Width: r.Width, Height: r.Height}
	}
	shoot := func(format string, quality int) ([]byte, string, error) {
		var r extCaptureResult
		if err := d.callJSON(ctx, extTabCapture, extCaptureParams{TabID: d.tabID, Format: format, Quality: quality, Clip: clip, Origins: d.origins}, &r); err != nil {
			if e, ok := err.(*Error); ok && e.Selector == "" {
				e.Selector = a.Selector
			}
			return nil, "", err
		}
		if len(r.Data) > maxCaptureBase64 {
			return nil, "", newErr(contract.CodeInternal, a.Selector, fmt.Sprintf("screenshot of more than %d bytes", contract.MaxImageBytes), nil)
		}
		b, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			return nil, "", newErr(contract.CodeInternal, a.Selector, "the extension sent a screenshot that is not base64", err)
		}
		if r.URL != "" {
			d.stateMu.Lock()
			d.lastURL = boundURL(r.URL)
			d.stateMu.Unlock()
		}
		return b, r.MIME, nil
	}
	data, mime, err := shoot("png", 0)
	if err == nil && len(data) > contract.MaxImageBytes {
		data, mime, err = shoot("jpeg", 70)
	}
	if err != nil {
		return Extracted{}, err
	}
	if len(data) == 0 || len(data) > contract.MaxImageBytes {
		return Extracted{}, newErr(contract.CodeInternal, a.Selector, fmt.Sprintf("screenshot of %d bytes is outside 1..%d", len(data), contract.MaxImageBytes), nil)
	}
	// The bytes must be what they claim: decode the header.
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil:
		return Extracted{}, newErr(contract.CodeInternal, a.Selector, "the extension sent a screenshot that is not an image", err)
	case format == "png" && mime == contract.MIMEPNG, format == "jpeg" && mime == contract.MIMEJPEG:
	default:
		return Extracted{}, newErr(contract.CodeInternal, a.Selector, fmt.Sprintf("the extension sent a %s image labelled %q", format, text.CutRunes(mime, 32)), nil)
	}
	h := sha256.Sum256(data)
	img := &contract.ImageArtifact{MIMEType: mime, ByteSize: int64(len(data)), ContentHash: hex.EncodeToString(h[:])}
	if cfg.Width > 0 && cfg.Height > 0 && cfg.Width <= 65535 && cfg.Height <= 65535 {
		img.Width, img.Height = cfg.Width, cfg.Height
	}
	return Extracted{
		Artifact: contract.Artifact{Type: contract.ArtifactScreenshot, Hash: img.ContentHash},
		Image:    img,
		Data:     data,
	}, nil
}
