package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aegis-run/aegis/driver"
)

// sharedBrowsers, when set, are the browsers the sessions of every
// command take theirs from (driver.Browsers), left running when a command
// returns: the package's tests set it in TestMain, so that the test binary
// launches one browser of each kind for all the commands it runs.
var sharedBrowsers *driver.Browsers

// commandBrowsers returns the browsers the sessions of one command share
// (one launched on the first session's need, and reused by every later
// one: the sessions of "aegis replay A B" run in one browser, each in a
// fresh context) and the function that closes them when the command is
// done, or earlier (before a run lingers): it closes them once, however
// often it is called.
func commandBrowsers(stdio Stdio) (*driver.Browsers, func()) {
	if sharedBrowsers != nil {
		return sharedBrowsers, func() {}
	}
	bs := &driver.Browsers{}
	return bs, sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := bs.Close(ctx); err != nil {
			fmt.Fprintf(stdio.Err, "aegis: %v\n", err)
		}
	})
}
