package driver

import (
	"context"
	"net/url"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
)

// Time of check = time of use. The gate judges an action on what Describe
// reported; the driver remembers it and, when it acts, has the page
// re-resolve the element and compare its facts and the page's origin with
// what it remembered, in the same page-side step that finds the element to
// act on. Any difference fails the action with target_changed before
// anything is done.

// maxDescribed bounds how many selectors a session remembers; the oldest
// is forgotten first. The session describes each target right before it
// acts on it, so only the last few are ever used.
const maxDescribed = 256

// described is what Describe reported for one selector.
type described struct {
	el contract.Element
	// pageOrigin is the top-level page's origin as the page's observer read
	// it (its captured origin getter); the observer compares it.
	pageOrigin string
	// browserOrigin is the origin of the page's URL as the browser reported
	// it (Playwright's page URL); the driver compares it.
	browserOrigin string
}

// targetMemory is what Describe reported per selector. Its driver's mutex
// guards it (Describe and Act are serialized).
type targetMemory struct {
	m     map[string]described
	order []string
}

// remember records what Describe reported for sel.
func (t *targetMemory) remember(sel string, d described) {
	if t.m == nil {
		t.m = map[string]described{}
	}
	if _, ok := t.m[sel]; !ok {
		if len(t.order) >= maxDescribed {
			delete(t.m, t.order[0])
			t.order = t.order[1:]
		}
		t.order = append(t.order, sel)
	}
	t.m[sel] = d
}

// recall returns what Describe last reported for sel.
func (t *targetMemory) recall(sel string) (described, bool) {
	d, ok := t.m[sel]
	return d, ok
}

// pageURLOrigin is the origin of a page URL, or the URL itself (bounded)
// when it has no http(s) origin (about:blank, data:), so that two pages
// compare equal only when they are at the same origin or the same such URL.
func pageURLOrigin(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if o, ok := originOf(u); ok {
			return o
		}
	}
	return boundURL(raw)
}

// rememberTarget records what Describe reported for sel on page p: the
// element, the page's origin as the observer read it, and the page's
// origin as the browser reports it.
func (d *pwDriver) rememberTarget(p playwright.Page, sel string, el contract.Element, pageOrigin string) {
	d.targets.remember(sel, described{el: el, pageOrigin: pageOrigin, browserOrigin: pageURLOrigin(p.URL())})
}

// expectation returns what the observer compares the element sel
// addresses with when it acts (the argument "expect" of prepareClick,
// prepareType, checkFocus, setValue and select): nil, which checks
// nothing, when sel was never described (a plain nil, which reaches the
// page as null). It fails with target_changed when the browser says the
// page is no longer at the origin it had then.
func (d *pwDriver) expectation(p playwright.Page, sel string) (any, error) {
	t, ok := d.targets.recall(sel)
	if !ok {
		return nil, nil
	}
	if err := t.samePage(p, sel); err != nil {
		return nil, err
	}
	e := t.el
	return map[string]any{
		"element": map[string]any{
			"tag": e.Tag, "type": e.Type, "name": e.Name, "id": e.ID, "autocomplete": e.Autocomplete,
			"role": e.Role, "label": e.Label, "text": e.Text, "sensitiveSelector": e.SensitiveSelector,
			"origin": e.Origin,
		},
		"pageOrigin": t.pageOrigin,
		"sensitive":  nonNil(d.cfg.SensitiveSelectors),
	}, nil
}

// samePage fails with target_changed when the browser says p is at
// another origin than when sel was described.
func (t described) samePage(p playwright.Page, sel string) error {
	if got := pageURLOrigin(p.URL()); got != t.browserOrigin {
		return newErr(contract.CodeTargetChanged, sel, "the page is at "+quoteBounded(got, 200)+", not at "+quoteBounded(t.browserOrigin, 200)+" where the element was described", nil)
	}
	return nil
}

// stillThere is the driver's last check before it sends input to the
// element a prepare step found and checked (exp non-nil): no main-frame
// navigation since navAt, and the page still at the described origin.
// Between it and the input there is one browser round trip; the click's
// guard in the page re-checks at the first event that reaches the element.
func (d *pwDriver) stillThere(p playwright.Page, sel string, exp any, navAt int64) error {
	if exp == nil {
		return nil
	}
	if d.navSeq.Load() != navAt {
		return newErr(contract.CodeTargetChanged, sel, "the page navigated after the element was checked", nil)
	}
	if t, ok := d.targets.recall(sel); ok {
		return t.samePage(p, sel)
	}
	return nil
}

// prepared is what a prepare step found: the observer's answer, what it
// was checked against (nil: nothing) and the main-frame navigation count
// when it was found.
type prepared struct {
	pageResult
	expect any
	navAt  int64
}

// prepareTarget is the element step of click and type: it calls the
// observer's prepare function fn for sel until the element is ready (see
// untilReady), handing it what Describe reported so that the observer
// resolves and checks the element in one step, then makes the driver's
// own last check (stillThere). A click whose check fails after the guard
// was armed is disarmed.
func (d *pwDriver) prepareTarget(ctx context.Context, p playwright.Page, sel string, wait time.Duration, fn string) (prepared, error) {
	exp, err := d.expectation(p, sel)
	if err != nil {
		return prepared{}, err
	}
	var navAt int64
	r, err := d.untilReady(ctx, wait, sel, func() (pageResult, error) {
		navAt = d.navSeq.Load()
		return d.callResult(ctx, p, sel, fn, sel, exp)
	})
	if err != nil {
		return prepared{}, err
	}
	if err := d.stillThere(p, sel, exp, navAt); err != nil {
		if fn == "prepareClick" {
			_, _ = d.callResult(ctx, p, sel, "finishClick")
		}
		return prepared{}, err
	}
	return prepared{pageResult: r, expect: exp, navAt: navAt}, nil
}

// focusStill is type's last check before the text is inserted: the focus
// is still on the described element, in a document of the described
// origin, and the page has not moved (nothing to check for a selector
// that was never described, unless secret). With secret (the text is a
// secret: the action has Redact), the observer taints the element once
// its checks passed, so that every later observation and screenshot
// masks it.
func (d *pwDriver) focusStill(ctx context.Context, p playwright.Page, sel string, r prepared, secret bool) error {
	if r.expect == nil && !secret {
		return nil
	}
	if _, err := d.callResult(ctx, p, sel, "checkFocus", sel, r.expect, secret); err != nil {
		return err
	}
	return d.stillThere(p, sel, r.expect, r.navAt)
}
