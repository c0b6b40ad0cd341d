package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/contract"
)

// TestStreamManyClientsAndLateJoiner: every client, including one that
// joins after most events were published, receives every event in order,
// valid under seed 003, then a normal close when the session ends.
func TestStreamManyClientsAndLateJoiner(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	const n = 300
	var want []contract.StreamEvent
	publish := func(ev contract.StreamEvent) {
		t.Helper()
		if err := fs.bus.Publish(ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	started := contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: fs.id, Timestamp: stamp(0)}
	publish(started)
	early := []*websocket.Conn{mustDial(t, hs, srv, fs.id), mustDial(t, hs, srv, fs.id), mustDial(t, hs, srv, fs.id)}
	for i := 1; i < n; i++ {
		publish(actionEvent(i))
	}
	late := mustDial(t, hs, srv, fs.id)
	publish(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "done", Timestamp: stamp(n)})
	fs.bus.Close()

	var wg sync.WaitGroup
	for i, c := range append(early, late) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := readUntilClose(t, c)
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
				t.Errorf("client %d: ended with %v, want a normal close", i, err)
			}
			if len(got) != len(want) {
				t.Errorf("client %d: got %d events, want %d", i, len(got), len(want))
				return
			}
			for j := range want {
				if gb, wb := mustJSON(t, got[j]), mustJSON(t, want[j]); !bytes.Equal(gb, wb) {
					t.Errorf("client %d event %d: got %s, want %s", i, j, gb, wb)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAuthentication: the token is required on every connection, as a
// bearer header or as a subprotocol; the HTTP API wants it too.
func TestAuthentication(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"missing", http.Header{}, http.StatusUnauthorized},
		{"wrong bearer", http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 43)}}, http.StatusUnauthorized},
		{"token with another scheme", http.Header{"Authorization": {"Basic " + srv.Token()}}, http.StatusUnauthorized},
		{"token prefix only", http.Header{"Authorization": {"Bearer " + srv.Token()[:20]}}, http.StatusUnauthorized},
		{"wrong subprotocol token", http.Header{"Sec-Websocket-Protocol": {Subprotocol + ", " + TokenProtocolPrefix + "nope-nope-nope-nope"}}, http.StatusUnauthorized},
		{"bearer", http.Header{"Authorization": {"Bearer " + srv.Token()}}, http.StatusSwitchingProtocols},
		{"subprotocol", http.Header{"Sec-Websocket-Protocol": {Subprotocol + ", " + TokenProtocolPrefix + srv.Token()}}, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, resp, err := dial(t, hs, fs.id, "", tt.header)
			if c != nil {
				defer c.Close()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if got := resp.StatusCode; got != tt.want {
				t.Fatalf("status %d, want %d (%v)", got, tt.want, err)
			}
			if tt.want == http.StatusUnauthorized {
				body, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(body), `"unauthorized"`) {
					t.Errorf("body %s does not name the error", body)
				}
			}
			if strings.HasPrefix(tt.name, "subprotocol") {
				if got := c.Subprotocol(); got != Subprotocol {
					t.Errorf("subprotocol %q, want %q", got, Subprotocol)
				}
			}
		})
	}
	for _, path := range []string{"/v1/sessions", "/v1/sessions/" + fs.id + "/artifacts/x.png"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusUnauthorized; got != want {
			t.Errorf("GET %s without token: %d, want %d", path, got, want)
		}
	}
	req, _ := http.NewRequest("GET", hs.URL+"/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Sessions []SessionInfo }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].ID != fs.id {
		t.Errorf("sessions %+v, want the one session %s", list.Sessions, fs.id)
	}
}

// TestOriginAndHost: a page of another origin cannot connect, nor can a
// request whose Host is not loopback (DNS rebinding).
func TestOriginAndHost(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	host := strings.TrimPrefix(hs.URL, "http://")
	tests := []struct {
		name string
		hdr  http.Header
		want int
	}{
		{"foreign origin", http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"foreign port", http.Header{"Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		{"https origin", http.Header{"Origin": {"https://" + host}}, http.StatusForbidden},
		{"null origin", http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{"extension origin", http.Header{"Origin": {"chrome-extension://abcdefghijklmnop"}}, http.StatusForbidden},
		{"same origin", http.Header{"Origin": {"http://" + host}}, http.StatusSwitchingProtocols},
		{"no origin", http.Header{}, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, resp, err := dial(t, hs, fs.id, srv.Token(), tt.hdr)
			if c != nil {
				c.Close()
			}
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if got := resp.StatusCode; got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
	// A DNS-rebinding page reaches the loopback port under its own name.
	req, _ := http.NewRequest("GET", hs.URL+"/", nil)
	req.Host = "rebind.evil.example:" + strings.Split(host, ":")[1]
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusMisdirectedRequest; got != want {
		t.Errorf("foreign Host: %d, want %d", got, want)
	}
}

// TestBadFramesKeepTheConnection: each bad control request gets an error
// event with its code, and the connection goes on receiving events.
func TestBadFramesKeepTheConnection(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	c := mustDial(t, hs, srv, fs.id)
	tests := []struct {
		name  string
		kind  int
		frame string
		code  string
	}{
		{"garbage", websocket.TextMessage, "\x00\x01garbage{", CodeBadRequest},
		{"not utf-8", websocket.TextMessage, "\xff\xfe", CodeBadRequest},
		{"binary", websocket.BinaryMessage, `{"action":"abort","computerUseSessionId":"s-test-1"}`, CodeBadRequest},
		{"unknown action", websocket.TextMessage, `{"action":"shutdown","computerUseSessionId":"s-test-1"}`, CodeBadRequest},
		{"extra field", websocket.TextMessage, `{"action":"abort","computerUseSessionId":"s-test-1","force":true}`, CodeBadRequest},
		{"missing session", websocket.TextMessage, `{"action":"abort"}`, CodeBadRequest},
		{"bad decision", websocket.TextMessage, `{"action":"decision","computerUseSessionId":"s-test-1","actionId":"a1","decision":"maybe"}`, CodeBadRequest},
		{"duplicate key", websocket.TextMessage, `{"action":"decision","action":"abort","computerUseSessionId":"s-test-1"}`, CodeBadRequest},
		{"array", websocket.TextMessage, `[]`, CodeBadRequest},
		{"wrong session", websocket.TextMessage, `{"action":"abort","computerUseSessionId":"s-other"}`, CodeWrongSession},
		{"decision without live approvals", websocket.TextMessage, `{"action":"decision","computerUseSessionId":"s-test-1","actionId":"a1","decision":"approve"}`, CodeApprovalsElsewhere},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.WriteMessage(tt.kind, []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			ev, _ := readEvent(t, c)
			if ev.Type != contract.EventError || ev.Code != tt.code {
				t.Fatalf("got %s %q (%s), want error %q", ev.Type, ev.Code, ev.Message, tt.code)
			}
			if ev.Message == "" {
				t.Error("error event without a message")
			}
			// The connection stays: the next session event arrives.
			if err := fs.bus.Publish(actionEvent(i)); err != nil {
				t.Fatal(err)
			}
			got, _ := readEvent(t, c)
			if got.Type != contract.EventAction || got.ActionID != actionEvent(i).ActionID {
				t.Fatalf("after the bad frame got %+v, want action %s", got, actionEvent(i).ActionID)
			}
		})
	}
	if got := fs.aborts(); len(got) != 0 {
		t.Errorf("bad frames aborted the session: %q", got)
	}
}

// TestOversizedFrameDropsOnlyThatClient: a frame over the read limit
// closes its connection with 1009; the other clients and the bus go on.
func TestOversizedFrameDropsOnlyThatClient(t *testing.T) {
	srv, fs, hs := testServer(t, Options{ReadLimit: 1024}, SessionOptions{})
	bad := mustDial(t, hs, srv, fs.id)
	good := mustDial(t, hs, srv, fs.id)
	big := `{"action":"abort","computerUseSessionId":"s-test-1","reason":"` + strings.Repeat("x", 4096) + `"}`
	if err := bad.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
		t.Fatal(err)
	}
	_, err := readUntilClose(t, bad)
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("oversized frame: %v, want close 1009", err)
	}
	if err := fs.bus.Publish(actionEvent(1)); err != nil {
		t.Fatal(err)
	}
	if ev, _ := readEvent(t, good); ev.ActionID != "a1" {
		t.Fatalf("good client got %+v", ev)
	}
	if got := fs.aborts(); len(got) != 0 {
		t.Errorf("an oversized abort request aborted the session: %q", got)
	}
}

// TestSlowClientIsDropped: a client that never reads is dropped when its
// buffer overflows, while Publish never waits for it and a reading client
// gets every event.
func TestSlowClientIsDropped(t *testing.T) {
	var log lockedBuffer
	srv, fs, hs := testServer(t, Options{WriteTimeout: 300 * time.Millisecond, ClientBuffer: 16, Log: &log}, SessionOptions{})
	stalled := mustDial(t, hs, srv, fs.id) // never reads
	reader := mustDial(t, hs, srv, fs.id)
	const n = 4000
	got := make(chan int, 1)
	go func() {
		count := 0
		for {
			reader.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, _, err := reader.ReadMessage(); err != nil {
				got <- count
				return
			}
			count++
		}
	}()
	pad := strings.Repeat("p", 4000) // 16 MB in all: more than any socket buffers
	for i := range n {
		ev := actionEvent(i)
		ev.Summary += pad
		if err := fs.bus.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
	fs.bus.Close()
	if c := <-got; c != n {
		t.Errorf("the reading client got %d events, want %d", c, n)
	}
	waitFor(t, "the stalled client to be dropped", func() bool { return srv.clientCount() == 0 })
	if !strings.Contains(log.String(), "dropped") {
		t.Errorf("log does not say the client was dropped:\n%s", log.String())
	}
	stalled.Close()
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAbort: an abort request aborts the session, naming the client.
func TestAbort(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	hdr := http.Header{"Authorization": {"Bearer " + srv.Token()}}
	c, _, err := websocket.DefaultDialer.Dial(streamURL(hs, fs.id)+"?client=ci-bot", hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteJSON(contract.ControlRequest{Action: contract.ControlAbort, ComputerUseSessionID: fs.id, Reason: ptr("enough\x1b[2J")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the abort", func() bool { return len(fs.aborts()) == 1 })
	got := fs.aborts()[0]
	if !strings.Contains(got, `"ci-bot"`) || !strings.Contains(got, "enough") || strings.Contains(got, "\x1b") {
		t.Errorf("abort reason %q: want the client's name and its sanitized reason", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestUnknownSession: a stream of a session the server does not have is
// a 404.
func TestUnknownSession(t *testing.T) {
	srv, _, hs := testServer(t, Options{}, SessionOptions{})
	_, resp, err := dial(t, hs, "s-nope", srv.Token(), nil)
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown session: %v %v, want 404", resp, err)
	}
}

// TestTooManyClients: connections past MaxClients are refused; the
// others stay.
func TestTooManyClients(t *testing.T) {
	srv, fs, hs := testServer(t, Options{MaxClients: 2}, SessionOptions{})
	mustDial(t, hs, srv, fs.id)
	mustDial(t, hs, srv, fs.id)
	_, resp, _ := dial(t, hs, fs.id, srv.Token(), nil)
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third client: %v, want 503", resp)
	}
}

// TestNewServerToken: tokens are random and well-formed; a weak one is
// refused.
func TestNewServerToken(t *testing.T) {
	a, err := NewServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewServer(Options{})
	if a.Token() == b.Token() || len(a.Token()) < 40 {
		t.Errorf("tokens %q and %q: want distinct random tokens", a.Token(), b.Token())
	}
	for _, bad := range []string{"short", "has space in it 1234", strings.Repeat("x", 300), "tok\x00en-0123456789abc"} {
		if _, err := NewServer(Options{Token: bad}); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
}

// TestListen: a bare port means loopback.
func TestListen(t *testing.T) {
	for _, addr := range []string{"0", ":0", "127.0.0.1:0", "localhost:0"} {
		l, loop, err := Listen(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		l.Close()
		if !loop {
			t.Errorf("%s: not loopback (%s)", addr, l.Addr())
		}
	}
	if _, _, err := Listen("nonsense"); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("bad address: %v", err)
	}
}

// TestCloseWaitsForClients: Close lets connected clients finish reading
// a session that has ended.
func TestCloseWaitsForClients(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	c := mustDial(t, hs, srv, fs.id)
	for i := range 50 {
		_ = fs.bus.Publish(actionEvent(i))
	}
	fs.bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Close(ctx) }()
	got, _ := readUntilClose(t, c)
	if len(got) != 50 {
		t.Errorf("got %d events before the close, want 50", len(got))
	}
	if err := <-done; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestReconnect: a client that drops mid-session and connects again first
// receives the whole session so far, then what comes next.
func TestReconnect(t *testing.T) {
	srv, fs, hs := testServer(t, Options{}, SessionOptions{})
	c := mustDial(t, hs, srv, fs.id)
	for i := range 10 {
		_ = fs.bus.Publish(actionEvent(i))
	}
	for range 5 {
		readEvent(t, c)
	}
	c.Close()
	waitFor(t, "the server to see the client go", func() bool { return srv.clientCount() == 0 })
	for i := 10; i < 15; i++ {
		_ = fs.bus.Publish(actionEvent(i))
	}
	c = mustDial(t, hs, srv, fs.id)
	_ = fs.bus.Publish(actionEvent(15))
	fs.bus.Close()
	got, _ := readUntilClose(t, c)
	if len(got) != 16 {
		t.Fatalf("after reconnecting got %d events, want 16", len(got))
	}
	for i, ev := range got {
		if want := actionEvent(i).ActionID; ev.ActionID != want {
			t.Errorf("event %d is %s, want %s", i, ev.ActionID, want)
		}
	}
}
