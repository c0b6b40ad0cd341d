package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/session"
)

// Error codes of the error events the server sends one client about its
// own control requests (PROTOCOL.md). Append-only: a code, once
// published, keeps its meaning.
const (
	// CodeBadRequest: the frame is not a control request valid under the
	// schema (not JSON, binary, an unknown action, a missing field).
	CodeBadRequest = "bad_request"
	// CodeWrongSession: the request names another session than the
	// stream's.
	CodeWrongSession = "wrong_session"
	// CodeApprovalsElsewhere: this session's approvals are not answered on
	// the live channel (the run's --approve chose another approver).
	CodeApprovalsElsewhere = "approvals_elsewhere"
	// CodeNotShown: the decision names an action whose approval_required
	// event this connection was not sent last.
	CodeNotShown = "approval_not_shown"
	// CodeNoPending: no approval is pending (answered, timed out, or
	// never asked).
	CodeNoPending = "no_pending_approval"
	// CodeStale: a later approval request replaced the one decided.
	CodeStale = "approval_stale"
	// CodeAlreadyDecided: another client decided first; the message
	// names it and its decision.
	CodeAlreadyDecided = "already_decided"
	// CodeTooManyRequests: the client sent requests faster than its
	// answers could be written; the connection is closed.
	CodeTooManyRequests = "too_many_requests"
)

// client is one WebSocket connection watching one session.
type client struct {
	srv  *Server
	e    *entry
	conn *websocket.Conn
	name string
	// decisions: the client asked for the session's decisions
	// (?decisions=1), sent as DecisionFrame frames.
	decisions bool

	replies chan contract.StreamEvent // error events for this client only

	mu       sync.Mutex
	shownSeq int    // approval_required events written to this client
	shownID  string // the action id of the last one
}

func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		httpError(w, http.StatusUnauthorized, "unauthorized", "a bearer token is required (Authorization: Bearer TOKEN, or the subprotocol "+TokenProtocolPrefix+"TOKEN)")
		return
	}
	e := s.session(r.PathValue("id"))
	if e == nil {
		httpError(w, http.StatusNotFound, "unknown_session", "no such session")
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "closing", "the server is closing")
		return
	}
	if s.clients >= s.opts.MaxClients {
		s.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "too_many_clients", fmt.Sprintf("at most %d clients at once", s.opts.MaxClients))
		return
	}
	s.clients++
	s.seq++
	n := s.seq
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.clients--
		s.mu.Unlock()
		s.wg.Done()
	}()
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	s.mu.Lock()
	s.conns[conn] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	name := fmt.Sprintf("live client %d (%s)", n, r.RemoteAddr)
	if v := clientLabel(r.URL.Query().Get("client")); v != "" {
		name = fmt.Sprintf("live client %d %q (%s)", n, v, r.RemoteAddr)
	}
	c := &client{srv: s, e: e, conn: conn, name: name, replies: make(chan contract.StreamEvent, 8)}
	c.decisions = r.URL.Query().Get("decisions") == "1" && e.decisions != nil
	s.logf("%s joined session %s", name, e.s.ID())
	why := c.run(r.Context())
	s.logf("%s left: %s", name, why)
}

// clientLabel keeps a client's self-chosen label printable and short.
func clientLabel(v string) string {
	v = session.Sanitize(v, 64)
	return strings.TrimSpace(v)
}

// endedNormally is why a connection whose session ended ends.
const endedNormally = "the session ended"

// run serves the connection until it ends and says why.
func (c *client) run(parent context.Context) string {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()
	sub := c.e.s.Bus().Subscribe(ctx, session.SubscribeOptions{FromStart: true, Buffer: c.srv.opts.ClientBuffer})
	why := make(chan string, 2)
	go func() { why <- c.write(ctx, sub) }()
	go func() { why <- c.read(ctx) }()
	first := <-why
	if first == endedNormally {
		// Let the client answer the close frame, so that closing the
		// socket cannot reset the connection before it read everything.
		select {
		case <-why:
			cancel()
			return first
		case <-time.After(2 * time.Second):
		}
	}
	cancel()
	c.conn.Close() // unblocks the other side
	<-why
	return first
}

// write sends the session's events, this client's error events and pings,
// one writer at a time as the connection requires.
func (c *client) write(ctx context.Context, sub *session.Subscription) string {
	o := c.srv.opts
	ping := time.NewTicker(o.PingInterval)
	defer ping.Stop()
	events, sent := 0, 0 // session events and decisions written
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				switch err := sub.Err(); {
				case errors.Is(err, session.ErrLagged):
					c.close(websocket.ClosePolicyViolation, "too slow: the client fell behind the session's event history")
					return "dropped: fell behind the event history"
				case err != nil:
					return "closed"
				}
				c.close(websocket.CloseNormalClosure, "the session ended")
				return endedNormally
			}
			if ev.Type == contract.EventApprovalRequired {
				// Counted before it is written: the client may answer as
				// soon as it reads it.
				c.mu.Lock()
				c.shownSeq++
				c.shownID = ev.ActionID
				c.mu.Unlock()
			}
			if c.decisions {
				// The decisions recorded before this event, first.
				if ds, ok := c.e.decisions.upTo(events); ok {
					for ; sent < len(ds); sent++ {
						if err := c.sendJSON(ds[sent]); err != nil {
							return "dropped: " + err.Error()
						}
					}
				}
			}
			events++
			if err := c.send(ev); err != nil {
				return "dropped: " + err.Error()
			}
		case ev := <-c.replies:
			if err := c.send(ev); err != nil {
				return "dropped: " + err.Error()
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteTimeout)); err != nil {
				return "dropped: ping: " + err.Error()
			}
		case <-ctx.Done():
			return "closed"
		}
	}
}

// send writes one event as canonical JSON (the bytes of its events.jsonl
// line), within the write timeout.
func (c *client) send(ev contract.StreamEvent) error {
	b, err := canonjson.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return c.write1(b)
}

// sendJSON writes one frame of the server's own (a decision).
func (c *client) sendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return c.write1(b)
}

// write1 writes one text frame within the write timeout.
func (c *client) write1(b []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
	if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func (c *client) close(code int, text string) {
	msg := websocket.FormatCloseMessage(code, text)
	_ = c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
}

// read takes the client's control requests until the connection ends.
func (c *client) read(ctx context.Context) string {
	o := c.srv.opts
	c.conn.SetReadLimit(o.ReadLimit)
	extend := func() { c.conn.SetReadDeadline(time.Now().Add(2 * o.PingInterval)) }
	extend()
	c.conn.SetPongHandler(func(string) error { extend(); return nil })
	for {
		kind, data, err := c.conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			switch {
			case errors.As(err, &ce):
				return fmt.Sprintf("closed by the client (%d)", ce.Code)
			case errors.Is(err, websocket.ErrReadLimit):
				// The close frame (1009) is on its way; the rest of the
				// frame may still be arriving.
				c.linger()
				return fmt.Sprintf("dropped: a frame over %d bytes", o.ReadLimit)
			}
			return "connection ended: " + err.Error()
		}
		extend()
		var reply *contract.StreamEvent
		if kind != websocket.TextMessage {
			reply = errorEvent(CodeBadRequest, "control requests are JSON text frames")
		} else {
			reply = c.control(ctx, data)
		}
		if reply == nil {
			continue
		}
		c.srv.logf("%s: control request refused: %s: %s", c.name, reply.Code, reply.Message)
		select {
		case c.replies <- *reply:
		default:
			c.close(websocket.ClosePolicyViolation, CodeTooManyRequests)
			c.linger()
			return "dropped: " + CodeTooManyRequests
		}
	}
}

// Lingering bounds: after a close frame sent because of what the client
// sent, its bytes are read and discarded until it pauses for lingerIdle
// or lingerMax passes.
const (
	lingerIdle = 100 * time.Millisecond
	lingerMax  = time.Second
)

// linger reads and discards what the client is still sending after the
// server sent a close frame because of its input, and returns when the
// client pauses. Closing a socket with unread input resets the connection,
// and a reset can destroy the close frame before the client reads it: the
// client would see "connection reset" instead of the close code that
// says why.
func (c *client) linger() {
	nc := c.conn.UnderlyingConn()
	defer nc.SetReadDeadline(time.Time{})
	buf := make([]byte, 4096)
	end := time.Now().Add(lingerMax)
	for time.Now().Before(end) {
		dl := time.Now().Add(lingerIdle)
		if dl.After(end) {
			dl = end
		}
		nc.SetReadDeadline(dl)
		if _, err := nc.Read(buf); err != nil {
			return
		}
	}
}

// errorEvent is an error event for one client.
func errorEvent(code, msg string) *contract.StreamEvent {
	return &contract.StreamEvent{Type: contract.EventError, Code: code, Message: msg, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
}

// control carries out one control request and returns the error event to
// answer it with, or nil when it was carried out (its effect shows in the
// session's own events: approval_resolved, session.ended).
func (c *client) control(ctx context.Context, data []byte) *contract.StreamEvent {
	if err := schemas.Validate(schemas.KindControl, data); err != nil {
		return errorEvent(CodeBadRequest, "not a control request: "+session.Sanitize(err.Error(), 500))
	}
	var req contract.ControlRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return errorEvent(CodeBadRequest, "not a control request: "+session.Sanitize(err.Error(), 500))
	}
	id := c.e.s.ID()
	if req.ComputerUseSessionID != id {
		return errorEvent(CodeWrongSession, fmt.Sprintf("this stream is session %s, not %q", id, session.Sanitize(req.ComputerUseSessionID, 80)))
	}
	switch req.Action {
	case contract.ControlAbort:
		reason := "aborted by " + c.name
		if req.Reason != nil && strings.TrimSpace(*req.Reason) != "" {
			reason += ": " + session.Sanitize(*req.Reason, 300)
		}
		c.srv.logf("%s aborts session %s", c.name, id)
		c.e.s.Abort(reason)
		return nil
	case contract.ControlDecision:
		ap := c.e.opts.Approver
		if ap == nil {
			return errorEvent(CodeApprovalsElsewhere, "this session's approvals are not answered on the live channel")
		}
		c.mu.Lock()
		seq, shown := c.shownSeq, c.shownID
		c.mu.Unlock()
		if seq == 0 || shown != req.ActionID {
			return errorEvent(CodeNotShown, fmt.Sprintf("no approval_required event for action %q was the last one sent on this connection", session.Sanitize(req.ActionID, 128)))
		}
		dctx, cancel := context.WithTimeout(ctx, c.srv.opts.DecideWait)
		defer cancel()
		err := ap.Decide(dctx, seq, req.Decision, c.name)
		var de *DecidedError
		switch {
		case err == nil:
			c.srv.logf("%s decided %s for action %s of session %s", c.name, req.Decision, session.Sanitize(req.ActionID, 128), id)
			return nil
		case errors.As(err, &de):
			return errorEvent(CodeAlreadyDecided, fmt.Sprintf("%s decided %s first", de.By, de.Decision))
		case errors.Is(err, ErrStale):
			return errorEvent(CodeStale, "a later approval request replaced this one")
		case errors.Is(err, ErrNoPending):
			return errorEvent(CodeNoPending, "no approval is pending for this action (answered, or timed out)")
		}
		return errorEvent(CodeBadRequest, session.Sanitize(err.Error(), 500))
	}
	return errorEvent(CodeBadRequest, fmt.Sprintf("unknown action %q", req.Action))
}
