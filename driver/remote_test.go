package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/driver/drivertest"
)

func TestRemoteBrowser(t *testing.T) {
	endpoint := drivertest.RunServer(t).Endpoint
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := driver.Launch(ctx, driver.BrowserOptions{Endpoint: endpoint})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	defer b.Close(context.Background())
	if !b.Remote() {
		t.Fatal("Remote() = false for a connected browser")
	}
	for _, mode := range []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox} {
		t.Run(string(mode), func(t *testing.T) {
			drivertest.RunCore(t, func(t *testing.T, site string) driver.Driver {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				d, err := driver.Open(ctx, driver.Config{Mode: mode, Browser: b, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				return d
			})
		})
	}
	// Config.BrowserEndpoint: the session connects (and disconnects) itself.
	d, err := driver.Open(ctx, driver.Config{Mode: contract.ModePlaywright, BrowserEndpoint: endpoint})
	if err != nil {
		t.Fatalf("Open with BrowserEndpoint: %v", err)
	}
	if _, err := d.Observe(ctx, driver.ObserveOptions{}); err != nil {
		t.Errorf("observe through the endpoint: %v", err)
	}
	if err := d.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}
