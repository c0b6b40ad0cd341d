package suite

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/session"
)

// progress writes a suite's lines to its writer, whole lines one at a
// time whichever goroutine writes them: one per task as it ends, with a
// running count ("[3/10] ok  checkout-basic  4 actions 1.2s  BUNDLE"), and
// the task-prefixed lines of Attempt.Log.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	ended int
}

func newProgress(w io.Writer, total int) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w, total: total}
}

// taskEnded writes the line of a task that ended (or was not run).
func (p *progress) taskEnded(t TaskResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended++
	fmt.Fprintf(p.w, "[%d/%d] %s\n", p.ended, p.total, endedLine(t))
}

// log writes one line of the task's session.
func (p *progress) log(task, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%s] %s\n", task, line)
}

// endedLine is a task's line without its count: "ok      NAME  4 actions
// 1.2s  BUNDLE", "FAILED  NAME  failed: why  2 actions 1 denied 0.8s
// BUNDLE", "NOT RUN NAME  why".
func endedLine(t TaskResult) string {
	var b strings.Builder
	switch {
	case t.Completed():
		b.WriteString("ok      ")
	case t.Skipped:
		b.WriteString("NOT RUN ")
	default:
		b.WriteString("FAILED  ")
	}
	b.WriteString(session.Sanitize(t.Name, 120))
	if !t.Completed() {
		why := session.Sanitize(strings.TrimPrefix(t.Error, notRunPrefix), 300)
		if t.Status != "" {
			why = string(t.Status) + ": " + why
		}
		b.WriteString("  " + why)
	}
	if t.Status != "" {
		fmt.Fprintf(&b, "  %d actions", t.Actions)
		if t.Denials > 0 {
			fmt.Fprintf(&b, " %d denied", t.Denials)
		}
		if t.Approvals > 0 {
			fmt.Fprintf(&b, " %d approved", t.Approvals)
		}
		fmt.Fprintf(&b, " %s", (time.Duration(t.DurationMs) * time.Millisecond).Round(100*time.Millisecond))
	}
	for _, r := range t.Retries {
		fmt.Fprintf(&b, "  (retried: %s failed)", session.Sanitize(r.Endpoint, 120))
	}
	if t.Bundle != "" {
		b.WriteString("  " + t.Bundle)
	}
	return b.String()
}
