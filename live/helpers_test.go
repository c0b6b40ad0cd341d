package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/seedtest"
	"github.com/aegis-run/aegis/session"
)

// checkSeed fails the test unless raw is a valid seed 003 stream event.
func checkSeed(t testing.TB, raw []byte) {
	t.Helper()
	if err := seedtest.CheckEvent(raw); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
}

// fakeSession is a live.Session over a real bus.
type fakeSession struct {
	id  string
	bus *session.Bus

	mu      sync.Mutex
	aborted []string
}

func newFakeSession(id string) *fakeSession {
	return &fakeSession{id: id, bus: session.NewBus(0)}
}

func (f *fakeSession) ID() string        { return f.id }
func (f *fakeSession) Bus() *session.Bus { return f.bus }
func (f *fakeSession) Abort(reason string) {
	f.mu.Lock()
	f.aborted = append(f.aborted, reason)
	f.mu.Unlock()
}

func (f *fakeSession) aborts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.aborted...)
}

// stamp is a fixed-format timestamp for test events.
func stamp(i int) string {
	return time.Date(2026, 11, 21, 12, 0, 0, i*1000, time.UTC).Format(time.RFC3339Nano)
}

// actionEvent is the i-th test action event.
func actionEvent(i int) contract.StreamEvent {
	u := fmt.Sprintf("http://127.0.0.1/page/%d", i)
	return contract.StreamEvent{
		Type: contract.EventAction, ActionID: fmt.Sprintf("a%d", i), ActionType: contract.ActClick,
		RiskLevel: contract.RiskLow, URL: &u, Summary: fmt.Sprintf("click #b%d", i), Timestamp: stamp(i),
	}
}

// testServer starts a server with one fake session on an httptest
// server.
func testServer(t *testing.T, opts Options, so SessionOptions) (*Server, *fakeSession, *httptest.Server) {
	t.Helper()
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	fs := newFakeSession("s-test-1")
	srv.Add(fs, so)
	return srv, fs, serve(t, srv)
}

// serve serves srv on an httptest server closed with the test.
func serve(tb testing.TB, srv *Server) *httptest.Server {
	hs := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		hs.Close()
	})
	return hs
}

// streamURL is the ws:// address of a session's stream on hs.
func streamURL(hs *httptest.Server, id string) string {
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/sessions/" + id + "/stream"
}

// dial connects with the bearer token and the extra headers.
func dial(t *testing.T, hs *httptest.Server, id, token string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if hdr == nil {
		hdr = http.Header{}
	}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	return d.Dial(streamURL(hs, id), hdr)
}

// mustDial connects or fails the test.
func mustDial(t *testing.T, hs *httptest.Server, srv *Server, id string) *websocket.Conn {
	t.Helper()
	c, _, err := dial(t, hs, id, srv.Token(), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readEvent reads one event (within a generous deadline), checking it
// against seed 003.
func readEvent(t *testing.T, c *websocket.Conn) (contract.StreamEvent, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	kind, raw, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if kind != websocket.TextMessage {
		t.Fatalf("frame type %d, want text", kind)
	}
	checkSeed(t, raw)
	var ev contract.StreamEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return ev, raw
}

// readUntilClose reads events until the server closes the connection and
// returns them with the close error.
func readUntilClose(t *testing.T, c *websocket.Conn) ([]contract.StreamEvent, error) {
	t.Helper()
	var out []contract.StreamEvent
	for {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, raw, err := c.ReadMessage()
		if err != nil {
			return out, err
		}
		checkSeed(t, raw)
		var ev contract.StreamEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		out = append(out, ev)
	}
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clientCount is the number of connected clients.
func (s *Server) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients
}
