package llm

import (
	"context"
	"time"
)

// RecordSleeps makes c record its backoff waits instead of sleeping, and
// its jitter fixed at 0.5.
func RecordSleeps(c *Client) *[]time.Duration {
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	c.jitter = func() float64 { return 0.5 }
	return &waits
}

// Backoff exposes the backoff computation.
func (c *Client) Backoff(n int, retryAfter time.Duration) time.Duration {
	return c.backoff(n, retryAfter)
}

// ParseRetryAfter exposes parseRetryAfter.
var ParseRetryAfter = parseRetryAfter
