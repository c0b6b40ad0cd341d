package cli

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aegis-run/aegis/driver"
)

// TestMain shares the browsers of every command the tests run
// (sharedBrowsers): one Chromium of each kind (isolated for sandbox, plain
// for playwright) for the whole test binary, each session in a context of
// its own, instead of one launch per command.
func TestMain(m *testing.M) {
	sharedBrowsers = &driver.Browsers{}
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := sharedBrowsers.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "close browsers:", err)
	}
	cancel()
	os.Exit(code)
}
