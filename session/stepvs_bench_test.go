package session_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/session"
	"github.com/aegis-run/aegis/setup"
)

// stepsPerTask is the number of Navigator steps in one benchmarked task.
const stepsPerTask = 40

// BenchmarkStepVsPlaywright measures what a person waits for: a whole task
// of 40 steps on the demo shop's order form (type, select, click, extract
// in turn), through aegis and through plain playwright-go, in the same run.
//
// aegis: a session in the sandbox driver with a model that answers at once
// (its time is subtracted): each step observes the page, builds the prompt,
// validates the answer, describes the target, asks the gate, acts and
// records everything in the evidence bundle, which is sealed at the end.
// playwright: a fresh context and page, then per step the same observer
// call (the same script, evaluated in the page) and the same action with
// plain Locator calls. Both figures cover the whole task, opening to close,
// divided by its steps; ratio is aegis over playwright. aegis-secret is
// aegis with a secret declared (the egress filter looks for it).
//
//	go test ./session/ -run '^$' -bench StepVsPlaywright -benchtime 5x
func BenchmarkStepVsPlaywright(b *testing.B) {
	s := newSite(b)
	url := s.URL + "/form"
	var aegisPer, plainPer time.Duration
	run := func(b *testing.B, withSecret bool) time.Duration {
		var total time.Duration
		var steps int
		for i := 0; i < b.N; i++ {
			cfg, m := benchConfig(b, url, stepsPerTask, formAction)
			if withSecret {
				// Every observation, event and report then passes the
				// egress filter with a secret to look for.
				cfg.Secrets = passwordSet(b)
			}
			res, err := session.Run(context.Background(), cfg)
			if err != nil || res.Status != contract.SessionCompleted {
				b.Fatalf("status %s err %v", res.Status, err)
			}
			total += res.Timings.Total - m.spent
			steps += res.Timings.Steps
		}
		per := total / time.Duration(steps)
		b.ReportMetric(float64(per.Microseconds())/1000, "ms/step")
		b.ReportMetric(float64(total.Milliseconds())/1000/float64(b.N), "s/task")
		return per
	}
	b.Run("aegis", func(b *testing.B) { aegisPer = run(b, false) })
	b.Run("aegis-secret", func(b *testing.B) { run(b, true) })
	b.Run("playwright", func(b *testing.B) {
		br := plainBrowser(b)
		script, err := extension.ObserverScript("__bench_observer")
		if err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			plainTask(b, br, script, url)
			total += time.Since(t0)
		}
		plainPer = total / time.Duration(b.N*stepsPerTask)
		b.ReportMetric(float64(plainPer.Microseconds())/1000, "ms/step")
		b.ReportMetric(float64(total.Milliseconds())/1000/float64(b.N), "s/task")
	})
	if aegisPer > 0 && plainPer > 0 {
		b.Logf("aegis %.2f ms/step, playwright %.2f ms/step, ratio %.2f",
			float64(aegisPer.Microseconds())/1000, float64(plainPer.Microseconds())/1000, float64(aegisPer)/float64(plainPer))
	}
}

// plainBrowser launches Chromium with playwright-go alone, from the paths
// "aegis setup" installed.
func plainBrowser(b *testing.B) playwright.Browser {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := setup.Locate(ctx, setup.Options{})
	if err != nil || res.Driver.Dir == "" || res.Browser.Path == "" {
		b.Skipf("needs Chromium and the Playwright driver (go run ./cmd/aegis setup): %v", err)
	}
	pw, err := playwright.Run(&playwright.RunOptions{DriverDirectory: res.Driver.Dir, SkipInstallBrowsers: true, Verbose: false})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pw.Stop() })
	br, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(res.Browser.Path),
		Args:           []string{"--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	return br
}

// plainTask is the playwright side of BenchmarkStepVsPlaywright: one task
// of stepsPerTask steps, each an observation and formAction's action.
func plainTask(b *testing.B, br playwright.Browser, script, url string) {
	bctx, err := br.NewContext(playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: 1280, Height: 720}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = bctx.Close() }()
	if err := bctx.AddInitScript(playwright.Script{Content: &script}); err != nil {
		b.Fatal(err)
	}
	p, err := bctx.NewPage()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Goto(url); err != nil {
		b.Fatal(err)
	}
	const observe = `() => globalThis.__bench_observer.observe({})`
	for i := 0; i < stepsPerTask; i++ {
		if _, err := p.Evaluate(observe); err != nil {
			b.Fatal(err)
		}
		switch i % 4 {
		case 0:
			err = p.Locator("#name").Fill(fmt.Sprintf("Customer %d", i))
		case 1:
			v := "express"
			if (i/4)%2 == 1 {
				v = "standard"
			}
			_, err = p.Locator("#shipping").SelectOption(playwright.SelectOptionValues{Values: &[]string{v}})
		case 2:
			err = p.Locator("#gift").Click()
		default:
			_, err = p.Locator("body").InnerText()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
