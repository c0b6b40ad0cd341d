package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ErrInterrupted is the cause of the context InterruptContext cancels: the
// session ends aborted, "aborted after N actions: interrupted (Ctrl-C)".
var ErrInterrupted = errors.New("interrupted")

// InterruptContext returns a context that the first interrupt (Ctrl-C,
// SIGINT) or SIGTERM cancels, with a cause wrapping ErrInterrupted. At
// that signal it says on w, at once, that aegis is stopping: the command
// under way then ends as its context ends (a session is sealed, the demo
// verifies its bundle, exit 3). The first signal also restores the default
// action of the signals, so a second one ends the process at once, leaving
// an evidence bundle unsealed. stop releases the signals; call it when the
// command has returned.
func InterruptContext(parent context.Context, w io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			name := "Ctrl-C"
			if sig != os.Interrupt {
				name = sig.String()
			}
			fmt.Fprintf(w, "aegis: stopping... (%s: the session ends and its evidence is sealed; interrupt again to quit at once)\n", name)
			cancel(fmt.Errorf("%w (%s)", ErrInterrupted, name))
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(nil)
		})
	}
}
