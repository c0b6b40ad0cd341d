package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// MaxWait is the longest wait action the driver carries out (the schema's
// bound on durationMs).
const MaxWait = 60 * time.Second

// latencies are what Act measured, and the note an action left for its
// result (ToolResult.Note).
type latencies struct {
	input   *float64
	capture *float64
	note    string
}

// Act carries out one action.
func (d *pwDriver) Act(ctx context.Context, a contract.Action) (contract.ToolResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	run := func(lat *latencies) ([]string, error) { return d.act(ctx, a, lat) }
	url := func() string {
		if p, err := d.active(); err == nil {
			return boundURL(p.URL())
		}
		return ""
	}
	return actResult(a, contract.ToolResult{SessionID: d.cfg.SessionID}, run, url)
}

// actResult runs action a (run) and makes its ToolResult, as every driver
// reports one: res holds what the driver knows of it beforehand (session,
// tab, window), url reads the active page's URL after it. The error is
// the run's as an *Error holding no typed text (asError), nil on success.
func actResult(a contract.Action, res contract.ToolResult, run func(*latencies) ([]string, error), url func() string) (contract.ToolResult, error) {
	res.ActionID, res.Action, res.RiskTag = a.ID, a.PolicyName(), DefaultRisk(a.Type)
	res.StartedAt = timestamp(time.Now())
	var lat latencies
	ids, err := run(&lat)
	res.EndedAt = timestamp(time.Now())
	res.InputLatencyMs = lat.input
	res.CaptureLatencyMs = lat.capture
	if len(ids) > 0 {
		res.ArtifactIDs = ids
	}
	if err == nil {
		res.Note = resultNote(lat.note)
	}
	res.URL = url()
	if err != nil {
		e := asError(err, a)
		res.OK = false
		res.Error = e.ToolError()
		return res, e
	}
	res.OK = true
	return res, nil
}

// maxNote bounds ToolResult.Note (the schema's bound, in characters).
const maxNote = 2048

// resultNote is note as ToolResult.Note takes it: valid UTF-8 within
// maxNote characters.
func resultNote(note string) string {
	return text.CutRunes(strings.ToValidUTF8(note, "\uFFFD"), maxNote)
}

// asError makes err an *Error and makes sure that no text a type action
// typed is in it.
func asError(err error, a contract.Action) *Error {
	var e *Error
	if !errors.As(err, &e) {
		e = newErr(contract.CodeInternal, a.Selector, "action failed", err)
	} else if e.Selector == "" && a.Selector != "" {
		c := *e
		c.Selector = a.Selector
		e = &c
	}
	if a.Type == contract.ActType && a.Text != "" && strings.Contains(e.Error(), a.Text) {
		c := *e
		c.Err = nil
		c.Msg = strings.ReplaceAll(c.Msg, a.Text, "[redacted]")
		c.Selector = strings.ReplaceAll(c.Selector, a.Text, "[redacted]")
		e = &c
	}
	return e
}

func (d *pwDriver) act(ctx context.Context, a contract.Action, lat *latencies) ([]string, error) {
	switch a.Type {
	case contract.ActWait:
		return nil, d.wait(ctx, a)
	case contract.ActNavigate, contract.ActClick, contract.ActType, contract.ActSelect, contract.ActScroll, contract.ActExtract:
	default:
		return nil, newErr(contract.CodeUnsupported, "", fmt.Sprintf("unknown action type %q", text.CutRunes(string(a.Type), 32)), nil)
	}
	if a.Selector != "" {
		if _, err := ParseSelector(a.Selector); err != nil {
			return nil, err
		}
	}
	p, err := d.active()
	if err != nil {
		return nil, err
	}
	switch a.Type {
	case contract.ActNavigate:
		return nil, d.navigate(ctx, p, a)
	case contract.ActClick:
		return nil, d.click(ctx, p, a, lat)
	case contract.ActType:
		return nil, d.typeText(ctx, p, a, lat)
	case contract.ActSelect:
		return nil, d.selectOption(ctx, p, a, lat)
	case contract.ActScroll:
		return nil, d.scroll(ctx, p, a, lat)
	default:
		return d.extract(ctx, p, a, lat)
	}
}

func needSelector(a contract.Action) error {
	if a.Selector == "" {
		return newErr(contract.CodeElementNotFound, "", fmt.Sprintf("a %s action needs a selector", a.Type), nil)
	}
	return nil
}

// remaining returns the time left before ctx's deadline, or def, whichever
// is shorter.
func remaining(ctx context.Context, def time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if r := time.Until(dl); r < def {
			return max(r, 0)
		}
	}
	return def
}

func millis(d time.Duration) *float64 {
	ms := float64(max(d, time.Millisecond).Milliseconds())
	return &ms
}

func (d *pwDriver) navigate(ctx context.Context, p playwright.Page, a contract.Action) error {
	u, err := navigationTarget(a.URL)
	if err != nil {
		return err
	}
	if d.bounded() && !d.allowedURL(a.URL) {
		d.refuse(a.URL, effectFor(contract.EffectNavigation, "GET", a.URL, "document"), reasonOrigin)
		o, _ := originOf(u)
		return newErr(contract.CodeNavigationBlocked, "", fmt.Sprintf("origin %s is not in the session's allowlist", o), nil)
	}
	t := remaining(ctx, d.cfg.NavigationTimeout)
	if t <= 0 {
		return ctxErr(ctx)
	}
	ms := float64(t.Milliseconds())
	_, err = runCtx(ctx, func() (playwright.Response, error) {
		return p.Goto(a.URL, playwright.PageGotoOptions{Timeout: &ms, WaitUntil: playwright.WaitUntilStateLoad})
	})
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, playwright.ErrTimeout):
		return newErr(contract.CodeTimeout, "", fmt.Sprintf("the page did not load within %v", t.Round(time.Millisecond)), err)
	case strings.Contains(msg, "net::ERR_"):
		code := msg[strings.Index(msg, "net::ERR_"):]
		if i := strings.IndexAny(code, " \n"); i > 0 {
			code = code[:i]
		}
		return newErr(contract.CodeNavigationBlocked, "", "the browser did not load the page: "+code, nil)
	}
	return classify(err, "")
}

// untilReady calls prepare until the element is there and interactable
// or the wait is over: the action's own bound or ctx's deadline, whichever
// comes first. Only "not found" and "not interactable" are waited out, and
// only when the observer says waiting could cure them; an ambiguous or
// invalid selector fails at once. When the wait is over, the last element
// error is returned, saying how long it waited.
func (d *pwDriver) untilReady(ctx context.Context, wait time.Duration, sel string, prepare func() (pageResult, error)) (pageResult, error) {
	bound := remaining(ctx, wait)
	deadline := time.Now().Add(bound)
	backoff := 10 * time.Millisecond
	var last *Error
	for {
		r, err := prepare()
		if err == nil {
			return r, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return r, err
		}
		if e.Code == contract.CodeTimeout && ctx.Err() != nil && last != nil {
			// The deadline struck during a call: report what was waited for.
			e = last
			c := *e
			c.Msg += fmt.Sprintf(" (waited %v)", bound.Round(time.Millisecond))
			return r, &c
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return r, newErr(contract.CodeTimeout, sel, "the context was cancelled while waiting: "+e.Msg, ctx.Err())
		}
		race := e.Code == contract.CodeInternal && isNavigationRace(e.Err)
		retry := !e.final && (e.Code == contract.CodeNotInteractable || e.Code == contract.CodeElementNotFound || race)
		if !race {
			last = e
		}
		left := time.Until(deadline)
		if !retry || left <= 0 {
			if retry && !race {
				c := *e
				c.Msg += fmt.Sprintf(" (waited %v)", bound.Round(time.Millisecond))
				return r, &c
			}
			return r, err
		}
		select {
		case <-time.After(min(backoff, left)):
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return r, newErr(contract.CodeTimeout, sel, "the context was cancelled while waiting: "+e.Msg, ctx.Err())
			}
		}
		backoff = min(backoff*2, 100*time.Millisecond)
	}
}

func (d *pwDriver) actionWait(a contract.Action) time.Duration {
	if a.TimeoutMs > 0 {
		return time.Duration(a.TimeoutMs) * time.Millisecond
	}
	return d.cfg.ActionTimeout
}

func (d *pwDriver) click(ctx context.Context, p playwright.Page, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	r, err := d.prepareTarget(ctx, p, sel, d.actionWait(a), "prepareClick")
	if err != nil {
		return err
	}
	navBefore := d.navSeq.Load()
	t0 := time.Now()
	_, err = runCtx(ctx, func() (struct{}, error) { return struct{}{}, p.Mouse().Click(r.X, r.Y) })
	lat.input = millis(time.Since(t0))
	if err != nil {
		return classify(err, sel)
	}
	// A press that reached the element is a success whatever the page did
	// next; when the page covered or removed the element after it, the rest
	// of the click was stopped where it landed, and the note says so.
	fin, ferr := d.callResult(ctx, p, sel, "finishClick")
	lat.note = fin.Note
	navigating := fin.Navigating
	if ferr != nil {
		var e *Error
		switch {
		case errors.As(ferr, &e) && e.Code == contract.CodeNotInteractable:
			return ferr
		case errors.As(ferr, &e) && isNavigationRace(e.Err):
			navigating = true
		case errors.As(ferr, &e) && e.Code == contract.CodePageClosed:
			// The click closed the page (window.close): it was carried out.
			return nil
		default:
			return ferr
		}
	} else if !fin.Seen {
		// The guard saw no event of the click: it went elsewhere (a frame
		// put over the element as the pointer arrived, or a page listener
		// that ran before the guard's), so it did not reach the element
		// the gate judged.
		return newErr(contract.CodeNotInteractable, sel, "the click did not reach the element (it went elsewhere, e.g. a frame put over it)", nil)
	}
	if navigating && !fin.Download {
		d.awaitNavigation(ctx, p, navBefore)
	}
	return nil
}

// awaitNavigation waits for a navigation the click started to commit and
// load, within the action timeout; a navigation that never commits (a
// cancelled or refused one) is not an error of the click. The timeout does
// not run while Effects.Judge holds a request (an approval may take
// minutes): it starts again when the last answer comes.
func (d *pwDriver) awaitNavigation(ctx context.Context, p playwright.Page, before int64) {
	wait := remaining(ctx, d.cfg.ActionTimeout)
	deadline := time.Now().Add(wait)
	for d.navSeq.Load() == before {
		if d.judging.Load() > 0 {
			deadline = time.Now().Add(wait)
		}
		if time.Now().After(deadline) || ctx.Err() != nil || !d.isOpen(p) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t := remaining(ctx, d.cfg.NavigationTimeout)
	if t <= 0 {
		return
	}
	ms := float64(t.Milliseconds())
	_, _ = runCtx(ctx, func() (struct{}, error) {
		return struct{}{}, p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad, Timeout: &ms})
	})
}

func (d *pwDriver) typeText(ctx context.Context, p playwright.Page, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	r, err := d.prepareTarget(ctx, p, sel, d.cfg.ActionTimeout, "prepareType")
	if err != nil {
		return err
	}
	if r.Mode != "value" {
		if err := d.focusStill(ctx, p, sel, r, a.Redact); err != nil {
			return err
		}
	}
	t0 := time.Now()
	switch {
	case r.Mode == "value":
		// With Redact, the observer taints the element before it sets it.
		_, err = d.callResult(ctx, p, sel, "setValue", sel, a.Text, r.expect, a.Redact)
	case a.Text == "":
		_, err = runCtx(ctx, func() (struct{}, error) { return struct{}{}, p.Keyboard().Press("Delete") })
	default:
		_, err = runCtx(ctx, func() (struct{}, error) { return struct{}{}, p.Keyboard().InsertText(a.Text) })
	}
	lat.input = millis(time.Since(t0))
	if err != nil {
		// Never pass on the browser's message: it could quote the text.
		return newErr(CodeOf(classify(err, sel)), sel, "typing failed", nil)
	}
	if a.Redact && r.Mode != "value" && a.Text != "" {
		// The keys were sent in a step of their own: the observer tainted
		// every element a trusted input event went to, and fails if one
		// neither was nor held the checked element (target_changed).
		if _, err := d.callResult(ctx, p, sel, "typed", sel, r.expect); err != nil {
			return err
		}
	}
	return nil
}

func (d *pwDriver) selectOption(ctx context.Context, p playwright.Page, a contract.Action, lat *latencies) error {
	if err := needSelector(a); err != nil {
		return err
	}
	sel := a.Selector
	exp, err := d.expectation(p, sel)
	if err != nil {
		return err
	}
	var took time.Duration
	_, err = d.untilReady(ctx, d.cfg.ActionTimeout, sel, func() (pageResult, error) {
		t0 := time.Now()
		r, err := d.callResult(ctx, p, sel, "select", sel, a.Value, exp)
		took = time.Since(t0)
		return r, err
	})
	lat.input = millis(took)
	return err
}

func (d *pwDriver) scroll(ctx context.Context, p playwright.Page, a contract.Action, lat *latencies) error {
	amount := a.AmountPx
	if amount <= 0 {
		amount = d.viewportHeight(p)
	}
	switch a.Direction {
	case contract.ScrollDown:
	case contract.ScrollUp:
		amount = -amount
	default:
		return newErr(contract.CodeUnsupported, "", fmt.Sprintf("unknown scroll direction %q", text.CutRunes(string(a.Direction), 16)), nil)
	}
	t0 := time.Now()
	_, err := d.callResult(ctx, p, "", "scroll", float64(amount))
	lat.input = millis(time.Since(t0))
	return err
}

func (d *pwDriver) viewportHeight(p playwright.Page) int {
	if s := p.ViewportSize(); s != nil && s.Height > 0 {
		return s.Height
	}
	return d.cfg.Viewport.Height
}

func (d *pwDriver) wait(ctx context.Context, a contract.Action) error {
	dur := time.Duration(a.DurationMs) * time.Millisecond
	if dur < 0 {
		dur = 0
	}
	if dur > MaxWait {
		return newErr(contract.CodeUnsupported, "", fmt.Sprintf("a wait of %v is longer than the %v maximum", dur, MaxWait), nil)
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctxErr(ctx)
	}
}

// extractOptions are the observer's options for a text, table or links
// extract.
func extractOptions(sensitive []string) map[string]any {
	return map[string]any{"sensitive": nonNil(sensitive), "maxTextChars": MaxTextChars, "maxElements": DefaultMaxElements}
}

// textExtracted is the artifact of a text, table or links extract a,
// from what the observer answered (bounded to MaxTextChars, hashed).
func textExtracted(a contract.Action, value string) Extracted {
	v := boundText(value, MaxTextChars)
	return Extracted{Artifact: contract.Artifact{Type: contract.ArtifactType(a.Extract), Value: v, Hash: sha(v)}}
}

func (d *pwDriver) extract(ctx context.Context, p playwright.Page, a contract.Action, lat *latencies) ([]string, error) {
	t0 := time.Now()
	var ex Extracted
	switch a.Extract {
	case contract.ExtractText, contract.ExtractTable, contract.ExtractLink:
		opts := extractOptions(d.cfg.SensitiveSelectors)
		var r pageResult
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			r, err = d.callResult(ctx, p, a.Selector, "extract", string(a.Extract), a.Selector, opts)
			var e *Error
			if err == nil || !errors.As(err, &e) || !isNavigationRace(e.Err) {
				break
			}
			d.settle(ctx, p)
		}
		if err != nil {
			return nil, err
		}
		ex = textExtracted(a, r.Value)
	case contract.ExtractScreenshot:
		img, err := d.screenshot(ctx, p, a)
		if err != nil {
			return nil, err
		}
		ex = img
	default:
		return nil, newErr(contract.CodeUnsupported, "", fmt.Sprintf("unknown extraction %q", text.CutRunes(string(a.Extract), 32)), nil)
	}
	lat.capture = millis(time.Since(t0))
	return d.arts.add(ex, a, boundURL(p.URL())), nil
}

func extFor(mime string) string {
	if mime == contract.MIMEJPEG {
		return ".jpg"
	}
	return ".png"
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// screenshot captures the viewport and masks it, cropped to the box of
// a.Selector when it has one (mask.go's shootMasked).
func (d *pwDriver) screenshot(ctx context.Context, p playwright.Page, a contract.Action) (Extracted, error) {
	call := func(ctx context.Context, sel, fn string, args ...any) (pageResult, error) {
		return d.callResult(ctx, p, sel, fn, args...)
	}
	capture := func(ctx context.Context) ([]byte, string, error) {
		t := remaining(ctx, d.cfg.NavigationTimeout)
		ms := float64(t.Milliseconds())
		data, err := runCtx(ctx, func() ([]byte, error) {
			// Caret initial: Playwright would otherwise hide the caret by
			// setting the focused field's style during the capture, which
			// the observer's watch on tainted fields counts as a move.
			return p.Screenshot(playwright.PageScreenshotOptions{Type: playwright.ScreenshotTypePng, Caret: playwright.ScreenshotCaretInitial, Timeout: &ms})
		})
		if err != nil {
			return nil, "", classify(err, a.Selector)
		}
		return data, contract.MIMEPNG, nil
	}
	return shootMasked(ctx, a.Selector, d.cfg.SensitiveSelectors, call, capture)
}
