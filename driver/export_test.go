package driver

import (
	"context"
	"encoding/json"

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
