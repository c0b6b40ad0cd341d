package driver_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/nativehost"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// BenchmarkExtensionVsPlaywright times the extension driver (through the
// native messaging host, the service worker and the content scripts) and
// the Playwright driver on the same pages of the demo site, in the same
// run:
//
//	go test ./driver/ -run '^$' -bench ExtensionVsPlaywright -benchtime 40x
func BenchmarkExtensionVsPlaywright(b *testing.B) {
	site := benchURL(b)
	br := nativehosttest.Start(b, nativehosttest.Options{Relay: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := br.ConnectDriver(ctx)
	if err != nil {
		b.Fatalf("%v\n%s", err, br.HostLog())
	}
	ext := func(b *testing.B, path string) driver.Driver {
		b.Helper()
		d, err := driver.OpenExtension(ctx, driver.Config{
			Mode: contract.ModeExtension, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second,
		}, driver.ExtensionTarget{Port: conn})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = d.Close(context.Background()) })
		actOK(b, d, contract.Action{ID: "nav", Type: contract.ActNavigate, URL: site + path})
		return d
	}
	drivers := []struct {
		name string
		open func(b *testing.B, path string) driver.Driver
	}{
		{"extension", ext},
		{"playwright", benchDriver},
	}
	ops := []struct {
		name string
		path string
		run  func(b *testing.B, d driver.Driver, i int)
	}{
		{"observe", "/big?n=2000", func(b *testing.B, d driver.Driver, i int) {
			_, err := d.Observe(context.Background(), driver.ObserveOptions{})
			must(b, err)
		}},
		{"click", "/big?n=2000", func(b *testing.B, d driver.Driver, i int) {
			actOK(b, d, contract.Action{ID: "c", Type: contract.ActClick, Selector: fmt.Sprintf("#buy-%d", (i%4)*5)})
		}},
		{"type", "/form", func(b *testing.B, d driver.Driver, i int) {
			actOK(b, d, contract.Action{ID: "t", Type: contract.ActType, Selector: "#name", Text: fmt.Sprintf("Ada Lovelace %d", i), Redact: true})
		}},
		{"select", "/form", func(b *testing.B, d driver.Driver, i int) {
			actOK(b, d, contract.Action{ID: "s", Type: contract.ActSelect, Selector: "#shipping", Value: []string{"express", "standard"}[i%2]})
		}},
		{"describe", "/big?n=2000", func(b *testing.B, d driver.Driver, i int) {
			_, err := d.Describe(context.Background(), "#buy-0")
			must(b, err)
		}},
		{"navigate", "/", func(b *testing.B, d driver.Driver, i int) {
			actOK(b, d, contract.Action{ID: "n", Type: contract.ActNavigate, URL: site + "/form"})
		}},
		{"extract-table", "/orders", func(b *testing.B, d driver.Driver, i int) {
			actOK(b, d, contract.Action{ID: "e", Type: contract.ActExtract, Extract: contract.ExtractTable, Selector: "#orders"})
			d.TakeArtifacts()
		}},
		{"screenshot", "/orders", func(b *testing.B, d driver.Driver, i int) {
			actOK(b, d, contract.Action{ID: "e", Type: contract.ActExtract, Extract: contract.ExtractScreenshot})
			d.TakeArtifacts()
		}},
	}
	for _, op := range ops {
		for _, dr := range drivers {
			b.Run(op.name+"/"+dr.name, func(b *testing.B) {
				d := dr.open(b, op.path)
				timed(b, func(i int) { op.run(b, d, i) })
			})
		}
	}
	// A screenshot on its own: Chrome allows the extension two captures a
	// second, so back-to-back screenshots (above) wait for their slot.
	b.Run("screenshot-spaced/extension", func(b *testing.B) {
		d := ext(b, "/orders")
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			time.Sleep(600 * time.Millisecond)
			t0 := time.Now()
			actOK(b, d, contract.Action{ID: "e", Type: contract.ActExtract, Extract: contract.ExtractScreenshot})
			ds = append(ds, time.Since(t0))
			d.TakeArtifacts()
		}
		report(b, ds)
	})
	// The native messaging round trip as the extension driver sees it:
	// test process → relay (aegis) → Chrome → service worker and back.
	for _, size := range []int{100, 500 << 10} {
		b.Run(fmt.Sprintf("ping-%dB/relay", size), func(b *testing.B) {
			payload := nativehost.PingParams{Data: fmt.Sprintf("%0*d", size, 0)}
			timed(b, func(int) {
				_, err := conn.Call(context.Background(), nativehost.MethodPing, payload)
				must(b, err)
			})
		})
	}
}

// report reports the median and p95 of ds.
func report(b *testing.B, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), "med-ms")
	b.ReportMetric(ms(ds[min(len(ds)-1, len(ds)*95/100)]), "p95-ms")
}
