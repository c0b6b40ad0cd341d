package session

import (
	"errors"
	"sync"
	"time"

	"github.com/aegis-run/aegis/evidence"
)

// writeQueue writes evidence records in a goroutine of its own, in the order
// they were queued, so that writing the bundle overlaps with the model
// call, the element lookup and the gate instead of adding to each step.
// The session stays fail-closed: it calls flush before every action it
// hands the driver (so the decision that allowed the action, and
// everything before it, is in the bundle first) and before sealing, and a
// failed write stops the session at the next record or flush.
type writeQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []func() error
	busy    bool
	err     error         // the first failure; sticky
	spent   time.Duration // time spent writing
	stopped bool
}

const maxQueued = 256

func newWriteQueue() *writeQueue {
	rc := &writeQueue{}
	rc.cond = sync.NewCond(&rc.mu)
	go rc.loop()
	return rc
}

func (rc *writeQueue) loop() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for {
		for len(rc.queue) == 0 && !rc.stopped {
			rc.cond.Wait()
		}
		if len(rc.queue) == 0 && rc.stopped {
			return
		}
		f := rc.queue[0]
		rc.queue[0] = nil
		rc.queue = rc.queue[1:]
		rc.busy = true
		failed := rc.err != nil
		rc.mu.Unlock()
		var err error
		var d time.Duration
		if !failed { // after a failure nothing more is written
			t0 := time.Now()
			err = f()
			d = time.Since(t0)
		}
		rc.mu.Lock()
		rc.busy = false
		rc.spent += d
		if err != nil && rc.err == nil && !errors.Is(err, evidence.ErrQuarantined) {
			rc.err = err
		}
		rc.cond.Broadcast()
	}
}

// add queues f and returns the error that already stopped the recorder,
// if any. It blocks while maxQueued records wait.
func (rc *writeQueue) add(f func() error) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for len(rc.queue) >= maxQueued && rc.err == nil {
		rc.cond.Wait()
	}
	if rc.err != nil {
		return rc.err
	}
	rc.queue = append(rc.queue, f)
	rc.cond.Broadcast()
	return nil
}

// flush waits until every queued record is written and returns the first
// failure.
func (rc *writeQueue) flush() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for len(rc.queue) > 0 || rc.busy {
		rc.cond.Wait()
	}
	return rc.err
}

// stop flushes and ends the goroutine; it returns the time spent writing
// and the first failure.
func (rc *writeQueue) stop() (time.Duration, error) {
	err := rc.flush()
	rc.mu.Lock()
	rc.stopped = true
	rc.cond.Broadcast()
	d := rc.spent
	rc.mu.Unlock()
	return d, err
}
