package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/driver/drivertest"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// TestConformanceExtension runs the whole conformance suite against the
// extension driver, in real headless Chromium: the unpacked extension is
// loaded, a freshly built aegis (relay build) is its native messaging host,
// installed in the browser's profile, and the test process drives the
// extension through it. Each test opens its own tab.
func TestConformanceExtension(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	b := nativehosttest.Start(t, nativehosttest.Options{Relay: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := b.ConnectDriver(ctx)
	if err != nil {
		t.Fatalf("%v\nhost log:\n%s", err, b.HostLog())
	}
	drivertest.Run(t, func(t *testing.T, site string) driver.Driver {
		octx, ocancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ocancel()
		d, err := driver.OpenExtension(octx, driver.Config{
			Mode: contract.ModeExtension, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second,
		}, driver.ExtensionTarget{Port: conn})
		if err != nil {
			t.Fatalf("open the extension driver: %v", err)
		}
		return d
	})
}
