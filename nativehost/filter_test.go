package nativehost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/secrets"
)

const filterValueTest = "hunter2-hunter2"

func filterSet(t *testing.T) *secrets.Set {
	t.Helper()
	set, err := secrets.NewSet(map[string]string{"PW": filterValueTest})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestConnFilter: every response and event the host sends is masked,
// keys and error messages included; a request holding a value is refused
// and not sent, but a CallUnfiltered one; a request without one goes out
// as it is.
func TestConnFilter(t *testing.T) {
	var out bytes.Buffer
	c := NewConn(strings.NewReader(""), &out, ConnOptions{})
	c.SetFilter(filterSet(t))
	if err := c.Notify("step", map[string]any{"action": "typed " + filterValueTest, filterValueTest: []any{"x h u n t e r 2 h u n t e r 2", 1.5}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		call     func(context.Context, string, any) (json.RawMessage, error)
		params   any
		refused  bool // refused before it was sent
		wantSent string
	}{
		{"the type call, unfiltered", c.CallUnfiltered, map[string]any{"fn": "type", "args": []string{"#pw", filterValueTest}}, false, filterValueTest},
		{"a selector holding the value", c.Call, map[string]any{"fn": "observe", "args": []string{"#" + filterValueTest}}, true, ""},
		{"a URL holding it encoded", c.Call, map[string]any{"url": "http://x.test/?q=hunter2%2Dhunter2"}, true, ""},
		{"a key holding it", c.Call, map[string]any{filterValueTest: 1}, true, ""},
		{"a clean request, #password", c.Call, map[string]any{"fn": "click", "args": []string{"#password"}}, false, "#password"},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		before := out.Len()
		// Nobody answers: a call that was sent gives up at the timeout.
		_, err := tc.call(ctx, "tab.call", tc.params)
		cancel()
		if got := errors.Is(err, ErrSecretInRequest); got != tc.refused {
			t.Errorf("%s: err = %v, want refused %v", tc.name, err, tc.refused)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the refusal quotes the value: %v", tc.name, err)
		}
		if sent := out.Len() > before; sent == tc.refused || sent && !strings.Contains(out.String()[before:], tc.wantSent) {
			t.Errorf("%s: sent %v (%q), want sent %v holding %q", tc.name, sent, out.String()[before:], !tc.refused, tc.wantSent)
		}
	}
	if err := c.respond(7, nil, errorf(CodeInternal, "failed on %s", filterValueTest)); err != nil {
		t.Fatal(err)
	}
	if err := c.respond(8, json.RawMessage(`{"text":"`+filterValueTest+`"}`), nil); err != nil {
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
	if len(got) != 5 {
		t.Fatalf("got %d frames, want 5: %q", len(got), got)
	}
	for i, f := range got {
		if !json.Valid([]byte(f)) {
			t.Errorf("frame %d is not JSON: %s", i, f)
		}
		if holds := strings.Contains(secrets.Normalize(f), secrets.Normalize(filterValueTest)); holds != (i == 1) {
			t.Errorf("frame %d holds the value: %v, want %v: %s", i, holds, i == 1, f)
		}
	}
}

// TestLoggerFiltered: the host's log lines pass the egress filter on
// stderr and in the log file.
func TestLoggerFiltered(t *testing.T) {
	var stderr bytes.Buffer
	file := filepath.Join(t.TempDir(), "host.log")
	l := newLogger(&stderr, file, filterSet(t))
	l.printf("driver failed: %s", "no element #"+filterValueTest)
	l.printf("spaced: %s", "h u n t e r 2 h u n t e r 2")
	l.close()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"stderr": stderr.String(), "log file": string(b)} {
		if strings.Count(got, "\n") != 2 || strings.Count(got, secrets.Placeholder("PW")) != 2 || strings.Contains(got, "hunter2") {
			t.Errorf("%s: got %q, want two lines with the placeholder in place of the value", name, got)
		}
	}
}
