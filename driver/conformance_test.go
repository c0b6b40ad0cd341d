package driver_test

import (
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/driver/drivertest"
)

func TestConformancePlaywright(t *testing.T) {
	drivertest.Run(t, func(t *testing.T, site string) driver.Driver {
		return open(t, contract.ModePlaywright, site)
	})
}

func TestConformanceSandbox(t *testing.T) {
	drivertest.Run(t, func(t *testing.T, site string) driver.Driver {
		return open(t, contract.ModeSandbox, site)
	})
}
