package nativehost

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// echo answers ping and nothing else.
type echo struct{}

func (echo) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == MethodPing {
		var p PingParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		return p, nil
	}
	if method == "slow" {
		time.Sleep(100 * time.Millisecond) // the caller gives up first
		return PingParams{Data: "late"}, nil
	}
	return nil, errorf(CodeUnknownMethod, "%s", method)
}

func (echo) HandleEvent(context.Context, string, json.RawMessage) {}

// pair returns two connected Conns (a calls b) and the raw writer into a.
type pairT struct {
	a, b       *Conn
	rawToA     *Writer
	violations chan *Error
	served     chan error
}

func pair(t testing.TB, bHandler Handler) *pairT {
	return pairCap(t, bHandler, 1<<16)
}

func pairCap(t testing.TB, bHandler Handler, aCap int) *pairT {
	t.Helper()
	abR, abW := io.Pipe() // a writes, b reads
	baR, baW := io.Pipe() // b writes, a reads
	p := &pairT{violations: make(chan *Error, 16), served: make(chan error, 1)}
	p.a = NewConn(baR, abW, ConnOptions{OnViolation: func(e *Error) { p.violations <- e }, MaxInbound: aCap})
	p.b = NewConn(abR, baW, ConnOptions{Handler: bHandler})
	p.rawToA = NewWriter(baW)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); abW.Close(); baW.Close() })
	go func() { p.served <- p.a.Serve(ctx) }()
	go func() { _ = p.b.Serve(ctx) }()
	return p
}

func TestConnCall(t *testing.T) {
	p := pair(t, echo{})
	ctx := context.Background()
	raw, err := p.a.Call(ctx, MethodPing, PingParams{Data: "hi"})
	if err != nil || string(raw) != `{"data":"hi"}` {
		t.Fatalf("ping = %s, %v", raw, err)
	}
	_, err = p.a.Call(ctx, "nope", nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnknownMethod {
		t.Fatalf("unknown method: %v", err)
	}
	// Concurrent calls are matched to their own answers.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := strings.Repeat("x", i)
			raw, err := p.a.Call(ctx, MethodPing, PingParams{Data: want})
			var got PingParams
			if err != nil || json.Unmarshal(raw, &got) != nil || got.Data != want {
				t.Errorf("call %d: %s %v", i, raw, err)
			}
		}(i)
	}
	wg.Wait()
}

func TestConnOversizedCallRefused(t *testing.T) {
	p := pair(t, echo{})
	_, err := p.a.Call(context.Background(), MethodPing, PingParams{Data: strings.Repeat("x", MaxOutbound)})
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("error = %v, want ErrFrameTooLarge", err)
	}
	// The conversation goes on.
	if _, err := p.a.Call(context.Background(), MethodPing, PingParams{Data: "ok"}); err != nil {
		t.Fatal(err)
	}
}

func TestConnUnexpectedResponses(t *testing.T) {
	p := pair(t, echo{})
	ctx := context.Background()
	if _, err := p.a.Call(ctx, MethodPing, PingParams{}); err != nil {
		t.Fatal(err)
	}
	send := func(id int64) {
		b, _ := Message{Kind: KindResponse, ID: id, Result: json.RawMessage(`{}`)}.Encode()
		if err := p.rawToA.WriteFrame(b); err != nil {
			t.Fatal(err)
		}
	}
	send(99) // never sent
	if v := <-p.violations; v.Code != CodeUnexpectedResponse || !strings.Contains(v.Message, "never sent") {
		t.Fatalf("violation = %v", v)
	}
	send(1) // answered already
	if v := <-p.violations; v.Code != CodeUnexpectedResponse || !strings.Contains(v.Message, "already answered") {
		t.Fatalf("violation = %v", v)
	}
	// A late answer to an abandoned call is dropped quietly.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	_, err := p.a.Call(cctx, "slow", nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: %v", err)
	}
	select {
	case v := <-p.violations:
		t.Fatalf("violation for a late answer: %v", v)
	case <-time.After(250 * time.Millisecond):
	}
	// A malformed message is a violation too.
	if err := p.rawToA.WriteFrame([]byte(`{"v":1,"kind":"response"}`)); err != nil {
		t.Fatal(err)
	}
	if v := <-p.violations; v.Code != CodeBadMessage {
		t.Fatalf("violation = %v", v)
	}
}

func TestConnFrameTooLargeEnds(t *testing.T) {
	p := pair(t, echo{})
	// A header past a's cap (64 KiB in pair): stray text read as a length.
	if _, err := p.rawToA.w.Write([]byte("/hom")); err != nil {
		t.Fatal(err)
	}
	if v := <-p.violations; v.Code != CodeFrameTooLarge {
		t.Fatalf("violation = %v", v)
	}
	select {
	case err := <-p.served:
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not end")
	}
	if _, err := p.a.Call(context.Background(), MethodPing, PingParams{}); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("call after the end: %v", err)
	}
}

// recordEvents is a Handler that passes events on.
type recordEvents struct {
	echo
	events chan string
}

func (r recordEvents) HandleEvent(_ context.Context, name string, _ json.RawMessage) {
	r.events <- name
}

// TestConnSubscribe: subscribers get every event before the Handler, and
// none after they cancel.
func TestConnSubscribe(t *testing.T) {
	h := recordEvents{events: make(chan string, 8)}
	p := pair(t, h)
	got := make(chan string, 8)
	cancel := p.b.Subscribe(func(name string, data json.RawMessage) { got <- name + " " + string(data) })
	if err := p.a.Notify(EventBoundaryRefused, BoundaryRefusedEvent{TabID: 7, URL: "http://x.test/", Method: "GET", Type: "main_frame", Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !strings.HasPrefix(s, EventBoundaryRefused+` {"tabId":7,`) {
		t.Errorf("subscriber got %q", s)
	}
	if n := <-h.events; n != EventBoundaryRefused {
		t.Errorf("handler got %q", n)
	}
	cancel()
	if err := p.a.Notify("other", nil); err != nil {
		t.Fatal(err)
	}
	// The handler sees the event after the subscribers would have.
	if n := <-h.events; n != "other" {
		t.Errorf("handler got %q", n)
	}
	select {
	case s := <-got:
		t.Errorf("a cancelled subscriber got %q", s)
	default:
	}
}
