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
// session ends aborted, "aborted after N actions: interrupted (Ctrl-C)";
// any other command ends "interrupted", exit 3 (asInterrupted).
var ErrInterrupted = errors.New("interrupted")

// InterruptContext returns a context that the first interrupt (Ctrl-C,
// SIGINT) or SIGTERM cancels, with a cause wrapping ErrInterrupted. At
// that signal it says on w, at once, that aegis is stopping: the command
// under way then ends as its context ends (a session is sealed, the demo
// verifies its bundle, exit 3; verify and report end without a verdict,
// exit 3; a lingering console closes). The first signal also restores the default
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
			fmt.Fprintf(w, "aegis: stopping... (%s: what is under way ends cleanly; interrupt again to quit at once)\n", name)
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

// asInterrupted returns err as an interruption when ctx ended by an
// interrupt (its cause is ErrInterrupted) and err is what the command
// made of it (an error that is no session's status): "what: interrupted
// (Ctrl-C)", exit 3 (ExitAborted), never a failure such as "INVALID:
// context canceled". Otherwise it returns err.
func asInterrupted(ctx context.Context, what string, err error) error {
	cause := context.Cause(ctx)
	if err == nil || !errors.Is(cause, ErrInterrupted) {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code != ExitFailure && ee.code != ExitUsage {
		return err // a session's status says it already
	}
	return exitCode(ExitAborted, fmt.Errorf("%s: %w", what, cause))
}
