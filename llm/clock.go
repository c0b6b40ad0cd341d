package llm

import (
	"context"
	"fmt"
	"time"
)

// Clock starts the timers of a Client: the timeout of each attempt
// (Config.Timeout) and the waits between attempts. The default is the
// system clock; a test hands in one it drives (llmtest.Clock), so that what
// it checks of retries does not depend on how fast the machine is.
type Clock interface {
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// stop is called first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// systemClock is the real clock.
type systemClock struct{}

// AfterFunc is time.AfterFunc.
func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// errAttemptTimedOut is the cause an attempt's context is cancelled with
// when Config.Timeout has passed.
var errAttemptTimedOut = fmt.Errorf("llm: attempt timed out: %w", context.DeadlineExceeded)

// attemptContext returns a context of ctx cancelled, with cause
// errAttemptTimedOut, once the client's clock says Config.Timeout has
// passed; release frees its timer.
func (c *Client) attemptContext(ctx context.Context) (actx context.Context, release func()) {
	actx, cancel := context.WithCancelCause(ctx)
	stop := c.cfg.Clock.AfterFunc(c.cfg.Timeout, func() { cancel(errAttemptTimedOut) })
	return actx, func() {
		stop()
		cancel(nil)
	}
}

// timedOut reports whether actx, made by attemptContext, ended because the
// attempt's time was up.
func timedOut(actx context.Context) bool {
	return context.Cause(actx) == errAttemptTimedOut
}

// wait waits d on the client's clock, or until ctx is done.
func (c *Client) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	stop := c.cfg.Clock.AfterFunc(d, func() { close(done) })
	defer stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
