package llmtest

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// guard bounds how long Await and Clock.Await wait before they fail the
// test. It only stops a broken test from hanging: a passing test never
// waits for it, whatever the machine's load.
const guard = 2 * time.Minute

// Clock is an llm.Clock the test drives. Time jumps: a timer shorter than
// its hold fires at once (the client's backoff waits, say), and a timer of
// hold or longer (an attempt's timeout) fires only when the test says so,
// with Expire or a TimeOut reply. So a retry test decides when an attempt
// times out, instead of racing a wall clock.
type Clock struct {
	hold time.Duration

	mu      sync.Mutex
	pending map[*timer]struct{}
	started int           // held timers started so far
	changed chan struct{} // closed and replaced when started grows
}

type timer struct {
	c    *Clock
	f    func()
	once sync.Once
}

// NewClock returns a clock whose timers of hold or longer wait for the
// test; set the client's Config.Timeout to at least hold.
func NewClock(hold time.Duration) *Clock {
	return &Clock{hold: hold, pending: map[*timer]struct{}{}, changed: make(chan struct{})}
}

// AfterFunc starts a timer (llm.Clock).
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	t := &timer{c: c, f: f}
	if d < c.hold {
		go t.fire()
		return t.stop
	}
	c.mu.Lock()
	c.pending[t] = struct{}{}
	c.started++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return t.stop
}

// fire runs the timer's function unless it was stopped or has run.
func (t *timer) fire() bool {
	return t.settle(func() { go t.f() })
}

// stop prevents the call unless it has happened.
func (t *timer) stop() bool {
	return t.settle(func() {})
}

// settle ends the timer once, by firing or stopping it: it takes the timer
// off the pending list, runs then, and reports whether this call ended it.
func (t *timer) settle(then func()) bool {
	done := false
	t.once.Do(func() {
		done = true
		t.c.mu.Lock()
		delete(t.c.pending, t)
		t.c.mu.Unlock()
		then()
	})
	return done
}

// Expire fires every held timer that is pending, as if its time had come,
// and returns how many it fired.
func (c *Clock) Expire() int {
	c.mu.Lock()
	ts := make([]*timer, 0, len(c.pending))
	for t := range c.pending {
		ts = append(ts, t)
	}
	c.mu.Unlock()
	n := 0
	for _, t := range ts {
		if t.fire() {
			n++
		}
	}
	return n
}

// Await waits until n held timers have been started (counting those
// since stopped or fired). Call it from the test's goroutine.
func (c *Clock) Await(t testing.TB, n int) {
	t.Helper()
	deadline := time.NewTimer(guard)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		started, changed := c.started, c.changed
		c.mu.Unlock()
		if started >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("llmtest: %d held timers started, waited for %d", started, n)
		}
	}
}

// TimeOut replies to a request by timing it out: now that the server has
// the request, it fires the attempt's timeout on clock (Expire), then
// waits for the client to go away, answering nothing.
func TimeOut(clock *Clock) Reply {
	return func(w http.ResponseWriter, r *Request) {
		clock.Expire()
		<-r.Context.Done()
	}
}
