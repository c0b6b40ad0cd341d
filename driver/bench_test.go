package driver_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
)

// The benchmarks time each driver call against the same work done with
// plain playwright-go calls in the same run, and report the median and the
// 95th percentile per call (med-ms, p95-ms) besides Go's mean (ns/op).
//
//	go test ./driver/ -run '^$' -bench . -benchtime 60x

var benchSite struct {
	s *demosite.Server
}

func benchURL(b *testing.B) string {
	b.Helper()
	if benchSite.s == nil {
		s, err := demosite.Start(context.Background(), "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		benchSite.s = s
	}
	return benchSite.s.URL()
}

// timed runs f b.N times and reports the median and p95 of its durations.
func timed(b *testing.B, f func(i int)) {
	b.Helper()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f(i)
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), "med-ms")
	b.ReportMetric(ms(ds[min(len(ds)-1, len(ds)*95/100)]), "p95-ms")
}

func benchDriver(b *testing.B, path string) driver.Driver {
	b.Helper()
	site := benchURL(b)
	d := open(b, contract.ModePlaywright, site)
	b.Cleanup(func() { _ = d.Close(context.Background()) })
	ctx := context.Background()
	if _, err := d.Act(ctx, contract.Action{ID: "nav", Type: contract.ActNavigate, URL: site + path}); err != nil {
		b.Fatal(err)
	}
	return d
}

func plainPage(b *testing.B, path string) playwright.Page {
	b.Helper()
	site := benchURL(b)
	bctx, err := driver.PlaywrightBrowser(browser(b)).NewContext(playwright.BrowserNewContextOptions{
		Viewport: &playwright.Size{Width: 1280, Height: 720},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bctx.Close() })
	p, err := bctx.NewPage()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Goto(site + path); err != nil {
		b.Fatal(err)
	}
	return p
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

func actOK(b *testing.B, d driver.Driver, a contract.Action) {
	if _, err := d.Act(context.Background(), a); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkObserve(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/big?n=2000")
		timed(b, func(int) {
			_, err := d.Observe(context.Background(), driver.ObserveOptions{})
			must(b, err)
		})
	})
	b.Run("aegis-huge", func(b *testing.B) {
		// 100,000 elements: the walk, the snapshot and the affordances
		// all hit their bounds (TestObserveHugePageIsBounded).
		d := benchDriver(b, "/big?n=100000")
		timed(b, func(int) {
			_, err := d.Observe(context.Background(), driver.ObserveOptions{})
			must(b, err)
		})
	})
	b.Run("plain", func(b *testing.B) {
		// The nearest plain equivalent: the serialized DOM and the visible text.
		p := plainPage(b, "/big?n=2000")
		timed(b, func(int) {
			_, err := p.Content()
			must(b, err)
			_, err = p.InnerText("body")
			must(b, err)
		})
	})
}

func BenchmarkClick(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/big?n=2000")
		timed(b, func(i int) {
			actOK(b, d, contract.Action{ID: "c", Type: contract.ActClick, Selector: fmt.Sprintf("#buy-%d", (i%4)*5)})
		})
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/big?n=2000")
		timed(b, func(i int) { must(b, p.Locator(fmt.Sprintf("#buy-%d", (i%4)*5)).Click()) })
	})
}

func BenchmarkType(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/form")
		timed(b, func(i int) {
			actOK(b, d, contract.Action{ID: "t", Type: contract.ActType, Selector: "#name", Text: fmt.Sprintf("Ada Lovelace %d", i), Redact: true})
		})
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/form")
		timed(b, func(i int) { must(b, p.Locator("#name").Fill(fmt.Sprintf("Ada Lovelace %d", i))) })
	})
}

func BenchmarkSelect(b *testing.B) {
	vals := []string{"express", "standard"}
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/form")
		timed(b, func(i int) {
			actOK(b, d, contract.Action{ID: "s", Type: contract.ActSelect, Selector: "#shipping", Value: vals[i%2]})
		})
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/form")
		timed(b, func(i int) {
			_, err := p.Locator("#shipping").SelectOption(playwright.SelectOptionValues{Values: &[]string{vals[i%2]}})
			must(b, err)
		})
	})
}

func BenchmarkScroll(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/long")
		timed(b, func(i int) {
			dir := contract.ScrollDown
			if i%2 == 1 {
				dir = contract.ScrollUp
			}
			actOK(b, d, contract.Action{ID: "s", Type: contract.ActScroll, Direction: dir, AmountPx: 400})
		})
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/long")
		timed(b, func(i int) {
			dy := 400
			if i%2 == 1 {
				dy = -400
			}
			_, err := p.Evaluate("dy => window.scrollBy(0, dy)", dy)
			must(b, err)
		})
	})
}

func BenchmarkNavigate(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/")
		site := benchURL(b)
		timed(b, func(int) { actOK(b, d, contract.Action{ID: "n", Type: contract.ActNavigate, URL: site + "/form"}) })
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/")
		site := benchURL(b)
		timed(b, func(int) {
			_, err := p.Goto(site+"/form", playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad})
			must(b, err)
		})
	})
}

func BenchmarkExtractText(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/orders")
		timed(b, func(int) {
			actOK(b, d, contract.Action{ID: "e", Type: contract.ActExtract, Extract: contract.ExtractText})
			d.TakeArtifacts()
		})
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/orders")
		timed(b, func(int) {
			_, err := p.InnerText("body")
			must(b, err)
		})
	})
}

func BenchmarkExtractTable(b *testing.B) {
	b.Run("aegis", func(b *testing.B) {
		d := benchDriver(b, "/orders")
		timed(b, func(int) {
			actOK(b, d, contract.Action{ID: "e", Type: contract.ActExtract, Extract: contract.ExtractTable, Selector: "#orders"})
			d.TakeArtifacts()
		})
	})
	b.Run("plain", func(b *testing.B) {
		p := plainPage(b, "/orders")
		timed(b, func(int) {
			_, err := p.Locator("#orders tr").AllInnerTexts()
			must(b, err)
		})
	})
}

// BenchmarkExtractScreenshot: a viewport screenshot of a page with
// nothing to mask (/orders) and of the sign-in page, whose password field
// is painted over in Go (decode, paint, re-encode), each against plain
// playwright-go's Screenshot of the same page.
func BenchmarkExtractScreenshot(b *testing.B) {
	for _, path := range []string{"/orders", "/login"} {
		b.Run("aegis"+path, func(b *testing.B) {
			d := benchDriver(b, path)
			timed(b, func(int) {
				actOK(b, d, contract.Action{ID: "e", Type: contract.ActExtract, Extract: contract.ExtractScreenshot})
				d.TakeArtifacts()
			})
		})
		b.Run("plain"+path, func(b *testing.B) {
			p := plainPage(b, path)
			timed(b, func(int) {
				_, err := p.Screenshot()
				must(b, err)
			})
		})
	}
}

func BenchmarkDescribe(b *testing.B) {
	d := benchDriver(b, "/big?n=2000")
	timed(b, func(int) {
		_, err := d.Describe(context.Background(), "#buy-0")
		must(b, err)
	})
}

func BenchmarkWait(b *testing.B) {
	d := benchDriver(b, "/")
	timed(b, func(int) { actOK(b, d, contract.Action{ID: "w", Type: contract.ActWait, DurationMs: 1}) })
}
