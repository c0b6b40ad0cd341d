package session_test

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/session"
	"github.com/aegis-run/aegis/setup"
)

// firstObservation is a Planner that notes when it was first called: the
// moment the session hands the model its first observation of the page.
type firstObservation struct {
	planner.Planner
	once sync.Once
	at   time.Time
}

func (p *firstObservation) Plan(ctx context.Context, req planner.Request) (contract.Plan, []llm.CallRecord, error) {
	p.once.Do(func() { p.at = time.Now() })
	return p.Planner.Plan(ctx, req)
}

// BenchmarkSessionStart times starting a session in a browser launched for
// it against one in a running browser that earlier sessions used, in both
// Playwright modes:
//   - fresh: the session launches its own browser and stops it as it ends
//     (Config.Driver without Browser or Browsers; "aegis run" until issue
//     17);
//   - per-run: the session takes its browser from a driver.Browsers of its
//     own, closed after the session's result ("aegis run" now): close-ms
//     is that close, after the result;
//   - reused: the session opens a context in the browser of a
//     driver.Browsers that earlier sessions launched (a process of many
//     sessions: "aegis replay A B", a test binary).
//
// first-obs-ms is the time from session.Run to the first observation
// reaching the Planner (launch, open the context, navigate to the task's
// first URL, observe), med-ms the whole short session (that, then 3
// Navigator steps on the demo shop's order form answered at once by an
// in-process model, and the seal). The bases, in the same run, are plain
// playwright-go doing what a session does before its first observation:
// launch Chromium, open a context and a page, and load the page
// (launch+context), or the same in a running browser (context).
//
//	go test ./session/ -run '^$' -bench SessionStart -benchtime 10x
func BenchmarkSessionStart(b *testing.B) {
	s := newSite(b)
	url := s.URL + "/form"
	b.Run("playwright-go/launch+context", func(b *testing.B) {
		timedStart(b, func() time.Duration {
			t0 := time.Now()
			pw, br := plainLaunch(b)
			plainPage(b, br, url)
			d := time.Since(t0)
			_ = br.Close()
			_ = pw.Stop()
			return d
		})
	})
	b.Run("playwright-go/context", func(b *testing.B) {
		pw, br := plainLaunch(b)
		b.Cleanup(func() { _ = br.Close(); _ = pw.Stop() })
		timedStart(b, func() time.Duration { return plainPage(b, br, url) })
	})
	for _, mode := range []contract.DriverMode{contract.ModeSandbox, contract.ModePlaywright} {
		b.Run("fresh/"+string(mode), func(b *testing.B) {
			benchStart(b, url, mode, func() (*driver.Browsers, func()) { return nil, func() {} })
		})
		b.Run("per-run/"+string(mode), func(b *testing.B) {
			var closing []float64
			benchStart(b, url, mode, func() (*driver.Browsers, func()) {
				bs := &driver.Browsers{}
				return bs, func() {
					t0 := time.Now()
					if err := bs.Close(context.Background()); err != nil {
						b.Fatal(err)
					}
					closing = append(closing, msOf(time.Since(t0)))
				}
			})
			b.ReportMetric(median(closing), "close-ms")
		})
		b.Run("reused/"+string(mode), func(b *testing.B) {
			var bs driver.Browsers
			b.Cleanup(func() { _ = bs.Close(context.Background()) })
			if _, err := bs.For(context.Background(), driver.Config{Mode: mode}); err != nil {
				b.Fatal(err)
			}
			benchStart(b, url, mode, func() (*driver.Browsers, func()) { return &bs, func() {} })
		})
	}
}

// benchStart runs b.N short sessions in mode on url, each with the
// browsers browsers returns (nil: the session launches its own), and
// calls done after each session's result.
func benchStart(b *testing.B, url string, mode contract.DriverMode, browsers func() (bs *driver.Browsers, done func())) {
	var first []float64
	timedStart(b, func() time.Duration {
		cfg, _ := benchConfig(b, url, 3, formAction)
		bs, done := browsers()
		defer done()
		cfg.Driver = driver.Config{Mode: mode, Browsers: bs, ActionTimeout: 2 * time.Second}
		fo := &firstObservation{Planner: cfg.Planner}
		cfg.Planner = fo
		t0 := time.Now()
		res, err := session.Run(context.Background(), cfg)
		d := time.Since(t0)
		if err != nil || res.Status != contract.SessionCompleted {
			b.Fatalf("status %s err %v", res.Status, err)
		}
		first = append(first, msOf(fo.at.Sub(t0)))
		return d
	})
	b.ReportMetric(median(first), "first-obs-ms")
}

// plainLaunch launches Chromium (the one "aegis setup" installed, with
// the flags aegis launches it with) with plain playwright-go.
func plainLaunch(b *testing.B) (*playwright.Playwright, playwright.Browser) {
	b.Helper()
	res, err := setup.Locate(context.Background(), setup.Options{})
	if res.Driver.Dir == "" || res.Browser.Path == "" {
		b.Fatalf("no Playwright driver or browser (run \"aegis setup\"): %v", err)
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: res.Driver.Dir, SkipInstallBrowsers: true, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	headless := true
	br, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{ExecutablePath: &res.Browser.Path, Headless: &headless, Args: driver.DefaultArgs})
	if err != nil {
		_ = pw.Stop()
		b.Fatal(err)
	}
	return pw, br
}

// plainPage opens a context and a page in br with plain playwright-go,
// loads url, closes the context, and returns the time to the loaded page.
func plainPage(b *testing.B, br playwright.Browser, url string) time.Duration {
	b.Helper()
	t0 := time.Now()
	bctx, err := br.NewContext(playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: 1280, Height: 720}})
	if err != nil {
		b.Fatal(err)
	}
	defer bctx.Close()
	p, err := bctx.NewPage()
	if err == nil {
		_, err = p.Goto(url)
	}
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(t0)
}

// timedStart runs f b.N times and reports the median and p95 of the
// durations it returns.
func timedStart(b *testing.B, f func() time.Duration) {
	b.Helper()
	var ms []float64
	for b.Loop() {
		ms = append(ms, msOf(f()))
	}
	b.ReportMetric(median(ms), "med-ms")
	slices.Sort(ms)
	b.ReportMetric(ms[min(len(ms)-1, len(ms)*95/100)], "p95-ms")
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
