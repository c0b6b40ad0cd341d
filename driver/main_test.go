package driver_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// shared holds one browser for the whole test binary, and one isolated
// (BrowserOptions.Isolate) for its sandbox sessions: each test opens its
// own context in them.
var shared, sharedIsolated sharedBrowser

type sharedBrowser struct {
	once sync.Once
	b    *driver.Browser
	err  error
}

func browser(tb testing.TB) *driver.Browser {
	tb.Helper()
	return launchShared(tb, &shared, false)
}

func isolatedBrowser(tb testing.TB) *driver.Browser {
	tb.Helper()
	return launchShared(tb, &sharedIsolated, true)
}

func launchShared(tb testing.TB, s *sharedBrowser, isolate bool) *driver.Browser {
	tb.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s.b, s.err = driver.Launch(ctx, driver.BrowserOptions{Isolate: isolate})
	})
	if s.err != nil {
		tb.Fatalf("launch Chromium (run \"go run ./cmd/aegis setup\"): %v", s.err)
	}
	return s.b
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []*driver.Browser{shared.b, sharedIsolated.b} {
		if b == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := b.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "close browser:", err)
		}
		cancel()
	}
	os.Exit(code)
}

// open opens a session of mode in the shared browser (the isolated one
// for sandbox).
func open(tb testing.TB, mode contract.DriverMode, site string, mutate ...func(*driver.Config)) driver.Driver {
	tb.Helper()
	b := browser
	if mode == contract.ModeSandbox {
		b = isolatedBrowser
	}
	cfg := driver.Config{
		Mode:           mode,
		Browser:        b(tb),
		AllowedOrigins: []string{site},
		ActionTimeout:  3 * time.Second,
	}
	for _, f := range mutate {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := driver.Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("open %s driver: %v", mode, err)
	}
	return d
}
