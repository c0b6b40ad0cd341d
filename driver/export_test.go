package driver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/canonjson"
)

// CallObserver calls one function of the observer's API on d's active page
// (a Playwright driver) and returns its JSON answer; for tests.
func CallObserver(ctx context.Context, d Driver, fn string, args ...any) ([]byte, error) {
	pd := d.(*pwDriver)
	p, err := pd.active()
	if err != nil {
		return nil, err
	}
	return pd.call(ctx, p, fn, args...)
}

// LastStats returns the observer's counters of d's last observation.
func LastStats(d Driver) map[string]any {
	s := d.(*pwDriver).lastStats.Load()
	if s == nil {
		return nil
	}
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// PlaywrightBrowser returns the playwright-go browser behind b, so that
// benchmarks can time plain playwright-go calls against the driver's.
func PlaywrightBrowser(b *Browser) playwright.Browser { return b.browser }

// Unpack is unpack, for tests.
func Unpack(data []byte) ([]byte, error) { return unpack(data) }

// IsCanonical reports whether a snapshot takes canonicalSnapshot's fast
// path (canonjson.Check at snapshotMaxDepth), for tests.
func IsCanonical(doc []byte) bool { return canonjson.Check(doc, snapshotMaxDepth) == nil }

// failingContext is a browser context whose Close fails (and leaves it
// open), as a context that cannot be closed would.
type failingContext struct {
	playwright.BrowserContext
}

func (failingContext) Close(...playwright.BrowserContextCloseOptions) error {
	return errors.New("test: the context does not close")
}

// FailContextClose makes closing d's browser context fail (a Playwright
// driver), leaving the context open; for tests.
func FailContextClose(d Driver) {
	pd := d.(*pwDriver)
	pd.bctx = failingContext{pd.bctx}
}
