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

// shared is one browser for the whole test binary, isolated (sandbox
// sessions need it): each test opens its own context in it.
var shared struct {
	once sync.Once
	b    *driver.Browser
	err  error
}

func browser(tb testing.TB) *driver.Browser {
	tb.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		shared.b, shared.err = driver.Launch(ctx, driver.BrowserOptions{Isolate: true})
	})
	if shared.err != nil {
		tb.Fatalf("launch Chromium (run \"go run ./cmd/aegis setup\"): %v", shared.err)
	}
	return shared.b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := shared.b.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "close browser:", err)
		}
		cancel()
	}
	os.Exit(code)
}

// open opens a session of mode in the shared browser.
func open(tb testing.TB, mode contract.DriverMode, site string, mutate ...func(*driver.Config)) driver.Driver {
	tb.Helper()
	cfg := driver.Config{
		Mode:           mode,
		Browser:        browser(tb),
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
