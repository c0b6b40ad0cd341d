package nativehost

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestConnFilter: every frame the host sends passes the filter, keys and
// error messages included, but a CallUnfiltered request.
func TestConnFilter(t *testing.T) {
	var out bytes.Buffer
	var sent []string
	c := NewConn(strings.NewReader(""), &out, ConnOptions{})
	c.SetFilter(func(s string) string { return strings.ReplaceAll(s, "hunter2", "{{secret:PW}}") })
	if err := c.Notify("step", map[string]any{"action": "typed hunter2", "hunter2": []any{"x hunter2", 1.5}}); err != nil {
		t.Fatal(err)
	}
	// Nobody answers: each call gives up after sending.
	for _, call := range []func(context.Context, string, any) (json.RawMessage, error){c.CallUnfiltered, c.Call} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		fn := "type"
		if len(sent) > 0 {
			fn = "observe"
		}
		sent = append(sent, fn)
		_, _ = call(ctx, "tab.call", map[string]any{"fn": fn, "args": []string{"#pw", "hunter2"}})
		cancel()
	}
	if err := c.respond(7, nil, errorf(CodeInternal, "failed on hunter2")); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&out, 0)
	var got []string
	for {
		b, err := r.ReadFrame()
		if err != nil {
			break
		}
		got = append(got, string(b))
	}
	if len(got) != 4 {
		t.Fatalf("got %d frames, want 4: %q", len(got), got)
	}
	for i, f := range got {
		if !json.Valid([]byte(f)) {
			t.Errorf("frame %d is not JSON: %s", i, f)
		}
		if holds := strings.Contains(f, "hunter2"); holds != (i == 1) {
			t.Errorf("frame %d holds the value: %v, want %v: %s", i, holds, i == 1, f)
		}
	}
}
