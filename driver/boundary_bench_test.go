package driver_test

import (
	"context"
	"testing"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// The boundary's cost: the same navigation and the same form POST with the
// boundary (allowed origins, every state-changing request judged by an
// Effects that allows everything), without it (playwright mode with no
// allowed origins) and with plain playwright-go, in one run.
//
//	go test ./driver/ -run '^$' -bench BenchmarkBoundary -benchtime 40x

// benchPay is a page whose form posts to itself: every click is one held,
// judged POST and one navigation.
const benchPay = `<!doctype html><title>pay</title><form method="POST" action="/pay"><input name="card" value="4111"><input name="amount" value="1"><button id="pay">Pay</button></form>`

func boundaryBenchModes() []struct {
	name   string
	mutate func(*driver.Config)
} {
	return []struct {
		name   string
		mutate func(*driver.Config)
	}{
		{"boundary", func(c *driver.Config) { c.Effects = allowAll{} }},
		{"none", func(c *driver.Config) { c.AllowedOrigins = nil }},
	}
}

func BenchmarkBoundaryNavigate(b *testing.B) {
	site := newRecorder(b, map[string]string{"/a": benchPay, "/b": benchPay})
	paths := []string{"/a", "/b"}
	for _, m := range boundaryBenchModes() {
		b.Run(m.name, func(b *testing.B) {
			d := open(b, contract.ModePlaywright, site.URL, m.mutate)
			b.Cleanup(func() { _ = d.Close(context.Background()) })
			timed(b, func(i int) {
				actOK(b, d, contract.Action{ID: "n", Type: contract.ActNavigate, URL: site.URL + paths[i%2]})
			})
		})
	}
	b.Run("plain", func(b *testing.B) {
		p := plainPageAt(b, site.URL+"/a")
		timed(b, func(i int) {
			_, err := p.Goto(site.URL+paths[i%2], playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad})
			must(b, err)
		})
	})
}

func BenchmarkBoundaryClickPost(b *testing.B) {
	site := newRecorder(b, map[string]string{"/checkout": benchPay, "/pay": benchPay})
	for _, m := range boundaryBenchModes() {
		b.Run(m.name, func(b *testing.B) {
			d := open(b, contract.ModePlaywright, site.URL, m.mutate)
			b.Cleanup(func() { _ = d.Close(context.Background()) })
			actOK(b, d, contract.Action{ID: "n", Type: contract.ActNavigate, URL: site.URL + "/checkout"})
			timed(b, func(int) {
				actOK(b, d, contract.Action{ID: "c", Type: contract.ActClick, Selector: "#pay"})
			})
		})
	}
	b.Run("plain", func(b *testing.B) {
		p := plainPageAt(b, site.URL+"/checkout")
		timed(b, func(int) {
			must(b, p.Locator("#pay").Click())
			must(b, p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad}))
		})
	})
}

// plainPageAt opens a plain playwright-go page at u in a context of its
// own in the shared browser.
func plainPageAt(b *testing.B, u string) playwright.Page {
	b.Helper()
	bctx, err := driver.PlaywrightBrowser(browser(b)).NewContext(playwright.BrowserNewContextOptions{
		Viewport: &playwright.Size{Width: 1280, Height: 720},
	})
	must(b, err)
	b.Cleanup(func() { _ = bctx.Close() })
	p, err := bctx.NewPage()
	must(b, err)
	_, err = p.Goto(u)
	must(b, err)
	return p
}
