package nativehost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aegis-run/aegis/secrets"
)

// Handler answers what the other side of a Conn sends on its own: its
// requests and its events. Both run on the Conn's reading goroutine, one at
// a time and in order, so they must not block, and must never wait for a
// Call on the same Conn (start a goroutine for that).
type Handler interface {
	// HandleRequest answers one request. A returned *Error goes back as
	// is; any other error as CodeInternal.
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error)
	// HandleEvent takes one event.
	HandleEvent(ctx context.Context, name string, data json.RawMessage)
}

// ConnOptions configure a Conn.
type ConnOptions struct {
	// MaxInbound caps an inbound frame; 0 means DefaultMaxInbound.
	MaxInbound int
	// Handler answers requests and takes events; nil answers every request
	// with CodeUnknownMethod and drops events.
	Handler Handler
	// OnViolation is called (on the reading goroutine) with every message
	// of the other side that breaks the protocol: a malformed message, a
	// frame over the cap, a response to no request in flight. The Conn has
	// already refused it (an error event to the other side).
	OnViolation func(*Error)
}

// ErrDisconnected ends every call in flight when the conversation ends.
var ErrDisconnected = &Error{Code: CodeShuttingDown, Message: "the extension disconnected"}

// maxAbandoned bounds the ids of calls whose callers gave up, kept so that
// their late answers are dropped quietly rather than taken as violations.
const maxAbandoned = 4096

type reply struct {
	result json.RawMessage
	err    *Error
}

// Conn is one end of a protocol conversation over a framed stream: it
// sends requests and matches their responses (Call), sends events
// (Notify), and hands the other side's requests and events to its
// Handler. Serve runs the reading loop. Call and Notify may be used from
// any goroutine.
//
// Nothing that arrives is trusted: a response is accepted only for a
// request this side sent and has not seen answered; anything else is
// refused with an error event and reported to OnViolation.
type Conn struct {
	r    *Reader
	w    *Writer
	opts ConnOptions

	mu        sync.Mutex
	lastID    int64
	pending   map[int64]chan reply
	abandoned map[int64]struct{}
	abandonQ  []int64
	closed    bool
	closeErr  *Error
	done      chan struct{}
	subs      map[int]func(name string, data json.RawMessage)
	lastSub   int
	filter    *secrets.Set // SetFilter; nil: none
}

// NewConn returns a Conn reading frames from r and writing them to w.
func NewConn(r io.Reader, w io.Writer, opts ConnOptions) *Conn {
	return &Conn{
		r:         NewReader(r, opts.MaxInbound),
		w:         NewWriter(w),
		opts:      opts,
		pending:   map[int64]chan reply{},
		abandoned: map[int64]struct{}{},
		done:      make(chan struct{}),
	}
}

// Done is closed when the conversation has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Serve reads and dispatches messages until the stream ends or ctx is
// done. It returns nil at a clean end of the stream (the other side
// disconnected), else why it stopped. Either way every call in flight
// fails with ErrDisconnected and the Conn is closed.
func (c *Conn) Serve(ctx context.Context) error {
	defer c.close(ErrDisconnected)
	frames := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		for {
			b, err := c.r.ReadFrame()
			if err != nil {
				errc <- err
				return
			}
			select {
			case frames <- b:
			case <-c.done:
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrEmptyFrame) {
				code := CodeFrameTooLarge
				if errors.Is(err, ErrEmptyFrame) {
					code = CodeBadMessage
				}
				v := &Error{Code: code, Message: err.Error()}
				c.violation(v)
			}
			return err
		case b := <-frames:
			c.dispatch(ctx, b)
		}
	}
}

func (c *Conn) violation(e *Error) {
	_ = c.Notify(EventError, e.Wire())
	if c.opts.OnViolation != nil {
		c.opts.OnViolation(e)
	}
}

func (c *Conn) dispatch(ctx context.Context, b []byte) {
	m, err := DecodeMessage(b)
	if err != nil {
		e := asError(err)
		if m.Kind == KindRequest && m.ID > 0 {
			_ = c.respond(m.ID, nil, e)
		}
		c.violation(e)
		return
	}
	switch m.Kind {
	case KindResponse:
		c.mu.Lock()
		ch, ok := c.pending[m.ID]
		if ok {
			delete(c.pending, m.ID)
		}
		_, late := c.abandoned[m.ID]
		last := c.lastID
		c.mu.Unlock()
		switch {
		case ok:
			r := reply{result: m.Result}
			if m.Error != nil {
				r.err = m.Error.Err()
			}
			ch <- r
		case late:
			// The caller gave up on it (its context ended): drop it.
		case m.ID > last:
			c.violation(errorf(CodeUnexpectedResponse, "a response to request %d, which this side never sent: refused", m.ID))
		default:
			c.violation(errorf(CodeUnexpectedResponse, "a second response to request %d, which was already answered: refused", m.ID))
		}
	case KindRequest:
		var res any
		var err error
		if c.opts.Handler == nil {
			err = errorf(CodeUnknownMethod, "this side takes no requests")
		} else {
			res, err = c.opts.Handler.HandleRequest(ctx, m.Method, m.Params)
		}
		if err != nil {
			_ = c.respond(m.ID, nil, asError(err))
			return
		}
		_ = c.respond(m.ID, res, nil)
	case KindEvent:
		c.mu.Lock()
		subs := make([]func(string, json.RawMessage), 0, len(c.subs))
		for _, fn := range c.subs {
			subs = append(subs, fn)
		}
		c.mu.Unlock()
		for _, fn := range subs {
			fn(m.Event, m.Params)
		}
		if c.opts.Handler != nil {
			c.opts.Handler.HandleEvent(ctx, m.Event, m.Params)
		}
	}
}

// Subscribe calls fn with the name and data of every event the other
// side sends, on the reading goroutine (so fn must not block), before the
// Handler sees it, until the returned cancel is called. The extension
// driver takes its tab's boundary.refused events this way.
func (c *Conn) Subscribe(fn func(name string, data json.RawMessage)) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs == nil {
		c.subs = map[int]func(string, json.RawMessage){}
	}
	c.lastSub++
	id := c.lastSub
	c.subs[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs, id)
	}
}

// respond sends the response to the other side's request id. A result
// too large for one frame is replaced by an error saying so.
func (c *Conn) respond(id int64, result any, e *Error) error {
	m := Message{Kind: KindResponse, ID: id}
	if e != nil {
		m.Error = e.Wire()
	} else {
		raw, err := json.Marshal(result)
		if err != nil {
			m.Error = errorf(CodeInternal, "cannot encode the result: %v", err).Wire()
		} else {
			m.Result = raw
		}
	}
	err := c.send(m)
	if errors.Is(err, ErrFrameTooLarge) && m.Error == nil {
		m.Result = nil
		m.Error = errorf(CodeInternal, "the result is over the %d-byte frame limit: refused", MaxOutbound).Wire()
		err = c.send(m)
	}
	return err
}

// SetFilter makes every frame sent from now on pass the egress filter of
// set, by what it is. A response or an event (what the extension and its
// popup show: results, errors, steps, approvals) is masked: every string
// of its params, result and error message, object keys included, is
// replaced by set.Redact of it (see filterFrame). A request (a driver's
// call: selectors, URLs, scripts' arguments) is not rewritten, which
// would make the browser act on something else than what was judged: one
// whose params hold a secret's value (set.HoldingWhole) is refused with
// an error wrapping ErrSecretInRequest and not sent, but those of
// CallUnfiltered. The host sets the session's secrets; nil removes the
// filter.
func (c *Conn) SetFilter(set *secrets.Set) {
	c.mu.Lock()
	c.filter = set
	c.mu.Unlock()
}

// ErrSecretInRequest is wrapped by the error of a Call whose params hold
// a secret's value: the request was refused, not sent.
var ErrSecretInRequest = errors.New("nativehost: a request to the browser holds a secret's value")

func (c *Conn) send(m Message) error { return c.sendFiltered(m, true) }

func (c *Conn) sendFiltered(m Message, filtered bool) error {
	c.mu.Lock()
	closed, set := c.closed, c.filter
	c.mu.Unlock()
	if closed {
		return ErrDisconnected
	}
	if set.Len() > 0 && filtered {
		if m.Kind == KindRequest {
			if name := heldIn(m.Params, set.HoldingWhole); name != "" {
				return fmt.Errorf("nativehost: the %s request was refused and not sent: its params hold the value of secret %s: %w", bound(m.Method, 64), name, ErrSecretInRequest)
			}
		} else {
			m = filterFrame(m, set.Redact)
		}
	}
	b, err := m.Encode()
	if err != nil {
		return fmt.Errorf("nativehost: encode message: %w", err)
	}
	return c.w.WriteFrame(b)
}

// Notify sends an event. An event over the frame limit is refused with a
// *FrameSizeError and nothing is sent.
func (c *Conn) Notify(event string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("nativehost: encode event %s: %w", event, err)
	}
	return c.send(Message{Kind: KindEvent, Event: event, Params: raw})
}

// Call sends a request and waits for its response, ctx's end, or the end
// of the conversation. A failed response is returned as an *Error; the
// end of the conversation as ErrDisconnected; ctx's end as ctx.Err(). A
// request over the frame limit is refused with a *FrameSizeError, and
// nothing is sent.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.call(ctx, method, params, true)
}

// CallUnfiltered is Call without the check of SetFilter, for the one
// request that must carry a secret's value: the driver's call that types
// a resolved type action into the page.
func (c *Conn) CallUnfiltered(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.call(ctx, method, params, false)
}

func (c *Conn) call(ctx context.Context, method string, params any, filtered bool) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("nativehost: encode %s params: %w", method, err)
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.closed {
		e := c.closeErr
		c.mu.Unlock()
		return nil, e
	}
	c.lastID++
	id := c.lastID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.sendFiltered(Message{Kind: KindRequest, ID: id, Method: method, Params: raw}, filtered); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return r.result, nil
	case <-ctx.Done():
		c.abandon(id)
		return nil, ctx.Err()
	case <-c.done:
		c.mu.Lock()
		e := c.closeErr
		c.mu.Unlock()
		// The answer may have come just before the end.
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, r.err
			}
			return r.result, nil
		default:
		}
		return nil, e
	}
}

func (c *Conn) abandon(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; !ok {
		return
	}
	delete(c.pending, id)
	c.abandoned[id] = struct{}{}
	c.abandonQ = append(c.abandonQ, id)
	if len(c.abandonQ) > maxAbandoned {
		delete(c.abandoned, c.abandonQ[0])
		c.abandonQ = c.abandonQ[1:]
	}
}

// Close ends the conversation from this side: every call in flight fails
// with ErrDisconnected. It does not close the underlying streams.
func (c *Conn) Close() { c.close(ErrDisconnected) }

func (c *Conn) close(e *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.closeErr = e
	close(c.done)
	c.pending = map[int64]chan reply{}
}
