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
func TestConformanceExtension(t *testing.T) { conformanceExtension(t, nil) }

// allowAll judges every effect allowed and ignores refusals: the
// extension driver then holds state-changing requests and lets the
// predicted form submissions through, as it does in a session.
type allowAll struct{}

func (allowAll) Judge(context.Context, contract.Effect) error { return nil }
func (allowAll) Refused(contract.Effect)                      {}

// TestConformanceExtensionJudged runs the suite with the driver holding
// state-changing requests (Config.Effects set, as sessions do): the demo
// site's form posts go through as judged submissions.
func TestConformanceExtensionJudged(t *testing.T) { conformanceExtension(t, allowAll{}) }

func conformanceExtension(t *testing.T, eff driver.Effects) {
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
			Mode: contract.ModeExtension, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second, Effects: eff,
		}, driver.ExtensionTarget{Port: conn})
		if err != nil {
			t.Fatalf("open the extension driver: %v", err)
		}
		return d
	})
}
