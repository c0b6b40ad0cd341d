// Package browsertest holds the helpers that the tests of several packages
// share when they run against real Chromium: one browser for a whole test
// binary (Shared), and a site that remembers the requests it served
// (Recorder), the server side of what a session did.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/driver"
)

// Shared is one Chromium for a whole test binary, launched on first use
// with Options; each test opens its own browser context in it. A package
// declares one Shared and calls Close from its TestMain after m.Run.
type Shared struct {
	// Options are the launch options.
	Options driver.BrowserOptions

	once sync.Once
	b    *driver.Browser
	err  error
}

// Browser returns the shared browser, launching it on the first call. It
// skips t under -short, and fails t when Chromium does not launch.
func (s *Shared) Browser(t testing.TB) *driver.Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s.b, s.err = driver.Launch(ctx, s.Options)
	})
	if s.err != nil {
		t.Fatalf("launch Chromium (run \"go run ./cmd/aegis setup\"): %v", s.err)
	}
	return s.b
}

// Close closes the browser when it was launched, and says on stderr when
// that failed.
func (s *Shared) Close() {
	if s.b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.b.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "close browser:", err)
	}
}

// Recorder is an http.Handler that remembers every request it serves as
// one line, "METHOD /path?query body" (the body read up to 1 MiB), and
// hands the request on to the handler it records for.
type Recorder struct {
	h   http.Handler
	mu  sync.Mutex
	log []string
}

// Record returns a Recorder for h.
func Record(h http.Handler) *Recorder { return &Recorder{h: h} }

// ServeHTTP records r and serves it with the recorded handler.
func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec.mu.Lock()
	rec.log = append(rec.log, r.Method+" "+r.URL.RequestURI()+" "+string(body))
	rec.mu.Unlock()
	rec.h.ServeHTTP(w, r)
}

// Requests returns the lines of the requests served so far that start
// with prefix, in order.
func (rec *Recorder) Requests(prefix string) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, l := range rec.log {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// All returns the lines of every request served so far, joined by "\n".
func (rec *Recorder) All() string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return strings.Join(rec.log, "\n")
}
