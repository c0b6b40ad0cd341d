package driver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// The extension driver's actions: navigate, click (with the judged form
// submission), type, select, scroll, extract and screenshot. Each runs in
// the tab through tab.call (or tab.navigate, tab.capture); see
// extension.go for the transport and extension_boundary.go for the
// boundary.

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
	u, err := navigationTarget(a.URL)
	if err != nil {
		return err
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
	// The executor's answer carries the note of a click whose press reached
	// the element and whose rest it withheld (see pwDriver.click).
	r, err := d.untilReady(ctx, d.actionWait(a), sel, func() (pageResult, error) {
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
	lat.note = r.Note
	return err
}

func (d *extDriver) typeText(ctx context.Context, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	expect := d.expect(sel)
	return d.input(ctx, sel, lat, func() (pageResult, error) {
		// With Redact, the executor has the observer taint the element
		// right before the text goes in.
		r, err := d.call(ctx, sel, "type", nil, sel, a.Text, expect, a.Redact)
		if err != nil {
			if retryable(err) || ctx.Err() != nil || CodeOf(err) == contract.CodeTargetChanged {
				return pageResult{}, err
			}
			// Never pass on a message that could quote the text.
			return pageResult{}, newErr(CodeOf(err), sel, "typing failed", nil)
		}
		return parseResult([]byte(r.Value), sel)
	})
}

func (d *extDriver) selectOption(ctx context.Context, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	expect := d.expect(sel)
	return d.input(ctx, sel, lat, func() (pageResult, error) {
		return d.callResult(ctx, sel, "select", sel, a.Value, expect)
	})
}

// input runs call, one input on the element sel addresses, until the
// element is ready or the action's time runs out, and records how long
// the last try took.
func (d *extDriver) input(ctx context.Context, sel string, lat *latencies, call func() (pageResult, error)) error {
	var took time.Duration
	_, err := d.untilReady(ctx, d.cfg.ActionTimeout, sel, func() (pageResult, error) {
		t0 := time.Now()
		r, err := call()
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
		opts := extractOptions(d.cfg.SensitiveSelectors)
		r, err := d.callResult(ctx, a.Selector, "extract", string(a.Extract), a.Selector, opts)
		if err != nil {
			return nil, err
		}
		ex = textExtracted(a, r.Value)
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

// screenshot captures the tab's viewport (chrome.tabs.captureVisibleTab)
// and masks it, cropped to the box of a.Selector when it has one, as the
// Playwright driver does (mask.go's shootMasked).
func (d *extDriver) screenshot(ctx context.Context, a contract.Action) (Extracted, error) {
	shoot := func(ctx context.Context, format string, quality int) ([]byte, string, error) {
		var r extCaptureResult
		if err := d.callJSON(ctx, extTabCapture, extCaptureParams{TabID: d.tabID, Format: format, Quality: quality, Origins: d.origins}, &r); err != nil {
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
	capture := func(ctx context.Context) ([]byte, string, error) {
		data, mime, err := shoot(ctx, "png", 0)
		if err == nil && len(data) > contract.MaxImageBytes {
			data, mime, err = shoot(ctx, "jpeg", maskJPEGQuality)
		}
		return data, mime, err
	}
	return shootMasked(ctx, a.Selector, d.cfg.SensitiveSelectors, d.callResult, capture)
}
