package attack

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/setup"
)

// BaselineDriver names the rows of the runs without aegis: plain
// playwright-go, no policy, the model's actions carried out as they come.
const BaselineDriver = "no-gate"

// baselineSettle bounds the baseline's wait for a page's own requests
// after the last action (reached only by an attack that failed anyway).
const baselineSettle = 2 * time.Second

// baseline is a plain Chromium driven by playwright-go, with none of
// aegis's flags, routes or checks.
type baseline struct {
	world  *world
	secret string
	pw     *playwright.Playwright
	br     playwright.Browser
}

func launchBaseline(ctx context.Context, w *world, secret string) (*baseline, error) {
	loc, err := setup.Locate(ctx, setup.Options{})
	if loc.Browser.Path == "" || loc.Driver.Dir == "" {
		return nil, fmt.Errorf("attack: no Chromium or Playwright driver for the baseline (run \"aegis setup\"): %w", err)
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: loc.Driver.Dir, SkipInstallBrowsers: true,
		Stdout: io.Discard, Stderr: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, fmt.Errorf("attack: start the Playwright driver: %w", err)
	}
	br, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{ExecutablePath: &loc.Browser.Path, Headless: playwright.Bool(true)})
	if err != nil {
		_ = pw.Stop()
		return nil, fmt.Errorf("attack: launch Chromium for the baseline: %w", err)
	}
	return &baseline{world: w, secret: secret, pw: pw, br: br}, nil
}

func (b *baseline) close() {
	_ = b.br.Close()
	_ = b.pw.Stop()
}

// run carries out the scenario's actions on a fresh context: open the
// start page, then each step; a TOCTOU page changes right before the
// first action that aegis would have asked the person about. Failed steps
// are noted and skipped, as a model would go on.
func (b *baseline) run(ctx context.Context, r *runState) sessionOutcome {
	var out sessionOutcome
	bctx, err := b.br.NewContext()
	if err != nil {
		out.err = err.Error()
		return out
	}
	defer bctx.Close()
	bctx.SetDefaultTimeout(float64(actionTimeout.Milliseconds()))
	bctx.SetDefaultNavigationTimeout(10000)
	page, err := bctx.NewPage()
	if err != nil {
		out.err = err.Error()
		return out
	}
	if _, err := page.Goto(b.world.startURL(r)); err != nil {
		out.stopped = append(out.stopped, "open: "+firstLine(err))
	}
	flipped := false
	for _, s := range r.sc.Steps {
		if r.sc.Class != ClassPrecision {
			if violated, _ := judge(r.sc, b.world.truth(r), b.secret); violated {
				break // the attack has succeeded: the rest would only wait
			}
		}
		if r.sc.Flip && !flipped && s.Type == "type" {
			flipped = true
			b.world.flipAndWait(ctx, r)
		}
		switch s.Type {
		case "navigate":
			_, err = page.Goto(strings.ReplaceAll(expand(s.URL, b.world.data(r)), secretPlaceholder, b.secret))
		case "click":
			err = page.Locator(s.Selector).Click()
		case "type":
			err = page.Locator(s.Selector).Fill(strings.ReplaceAll(s.Text, secretPlaceholder, b.secret))
		case "select":
			err = b.selectValue(page, s.Selector, strings.ReplaceAll(s.Value, secretPlaceholder, b.secret))
		}
		if err != nil {
			out.stopped = append(out.stopped, s.Type+" "+s.Selector+": "+firstLine(err))
		}
	}
	// A session observes the page after its last action; here nothing
	// does, so give the page's own requests (a beacon, an image) the time
	// to land before the context goes: wait until the outcome is decided,
	// briefly.
	_ = page.WaitForLoadState()
	b.world.settle(ctx, r, b.secret, baselineSettle)
	out.status = "completed"
	return out
}

// selectValue chooses value in the select, adding the option first when the
// page has none of that value: without aegis the model's choice is carried
// out as it comes, and the page sends on what was chosen.
func (b *baseline) selectValue(page playwright.Page, sel, value string) error {
	if _, err := page.Locator(sel).Evaluate(`(el, v) => { if (![...el.options].some(o => o.value === v)) el.add(new Option(v, v)) }`, value); err != nil {
		return err
	}
	_, err := page.Locator(sel).SelectOption(playwright.SelectOptionValues{Values: &[]string{value}})
	return err
}

func firstLine(err error) string {
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}
