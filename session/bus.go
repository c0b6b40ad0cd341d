package session

import (
	"context"
	"errors"
	"sync"

	"github.com/aegis-run/aegis/contract"
)

// Defaults of the event bus.
const (
	// DefaultHistory is how many events a Bus keeps for replay: far more
	// than one session emits (a session of 200 actions emits about 1,000).
	DefaultHistory = 16384
	// DefaultSubscriberBuffer is the channel buffer of a subscription.
	DefaultSubscriberBuffer = 64
)

// Errors of a Subscription.
var (
	// ErrLagged ends a subscription whose reader fell so far behind that
	// the events it had not read yet left the bus's history. Subscribe
	// again with FromStart to read what the history still holds.
	ErrLagged = errors.New("session: subscriber lagged behind the event history")
	// ErrBusClosed is returned by Publish after Close.
	ErrBusClosed = errors.New("session: event bus closed")
)

// Bus is the in-process stream of a session's events (seed 003's
// ComputerUseStreamEvent): the session publishes every event on it, in the
// order it writes them to the evidence (events.jsonl), and any number of
// subscribers (the CLI, tests, the live console) read them.
//
// Publish never blocks: events go into a bounded history (DefaultHistory
// events), and each subscription has a goroutine that copies events from
// the history into the subscription's bounded channel. A subscriber that
// stops reading only stalls its own goroutine; when it falls behind the
// history it is ended with ErrLagged. A subscription made with FromStart
// replays the history from the first event, so a subscriber that comes late
// (a browser tab opened mid-session) sees the whole session. The session
// closes the bus after session.ended; subscriptions then deliver what is
// left and close their channels.
type Bus struct {
	mu     sync.Mutex
	events []contract.StreamEvent
	first  int           // sequence number of events[0]
	max    int           // history bound
	notify chan struct{} // closed and replaced at every publish and at close
	closed bool
}

// NewBus returns a bus that keeps the last history events for replay (0
// or less: DefaultHistory).
func NewBus(history int) *Bus {
	if history <= 0 {
		history = DefaultHistory
	}
	return &Bus{max: history, notify: make(chan struct{})}
}

// Publish appends ev to the stream. It never blocks; after Close it
// returns ErrBusClosed and drops ev.
func (b *Bus) Publish(ev contract.StreamEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrBusClosed
	}
	if len(b.events) == b.max {
		// Drop the oldest; copy down rather than reslice so that the
		// backing array does not grow without bound.
		copy(b.events, b.events[1:])
		b.events = b.events[:len(b.events)-1]
		b.first++
	}
	b.events = append(b.events, ev)
	close(b.notify)
	b.notify = make(chan struct{})
	return nil
}

// Close ends the stream: subscriptions deliver the events they have not
// delivered yet, then close their channels. Closing twice does nothing.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.notify)
}

// Closed reports whether Close was called.
func (b *Bus) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// History returns a copy of the events the bus still holds, oldest first.
func (b *Bus) History() []contract.StreamEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]contract.StreamEvent(nil), b.events...)
}

// SubscribeOptions configure a subscription.
type SubscribeOptions struct {
	// FromStart replays the history from its first event; otherwise the
	// subscription starts with the next event published.
	FromStart bool
	// Buffer is the subscription channel's buffer (0 or less:
	// DefaultSubscriberBuffer).
	Buffer int
}

// Subscription is one reader of a Bus.
type Subscription struct {
	ch   chan contract.StreamEvent
	done chan struct{}
	err  error
}

// Events returns the channel the events arrive on, in order. It is closed
// when the bus is closed and every event was delivered, when the
// subscription's context ends, or when the subscriber lagged; Err then
// says which.
func (s *Subscription) Events() <-chan contract.StreamEvent { return s.ch }

// Err returns, once Events is closed, why: nil when the bus was closed and
// everything delivered, ErrLagged, or the context's error. Before that it
// returns nil.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Subscribe starts a subscription that lasts until ctx ends or the bus is
// closed and drained.
func (b *Bus) Subscribe(ctx context.Context, opts SubscribeOptions) *Subscription {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultSubscriberBuffer
	}
	s := &Subscription{ch: make(chan contract.StreamEvent, opts.Buffer), done: make(chan struct{})}
	b.mu.Lock()
	next := b.first + len(b.events)
	if opts.FromStart {
		next = b.first
	}
	b.mu.Unlock()
	go s.pump(ctx, b, next)
	return s
}

// pump copies events from the history to the channel, from sequence
// number next on.
func (s *Subscription) pump(ctx context.Context, b *Bus, next int) {
	defer func() {
		close(s.done)
		close(s.ch)
	}()
	for {
		b.mu.Lock()
		switch {
		case next < b.first:
			b.mu.Unlock()
			s.err = ErrLagged
			return
		case next < b.first+len(b.events):
			ev := b.events[next-b.first]
			b.mu.Unlock()
			select {
			case s.ch <- ev:
				next++
			case <-ctx.Done():
				s.err = ctx.Err()
				return
			}
			continue
		case b.closed:
			b.mu.Unlock()
			return
		}
		wait := b.notify
		b.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			s.err = ctx.Err()
			return
		}
	}
}
