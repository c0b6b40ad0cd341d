package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/session"
)

// ErrNoServer is the error of the tasks a fleet could not run: every
// Playwright server of the suite failed.
var ErrNoServer = errors.New("no browser server left")

// fleet hands out the suite's Playwright servers round-robin and takes
// out those that failed.
//
// # A server's failure, or the task's
//
// An attempt of a task is charged to its server, not to the task, when
// both hold:
//
//  1. the session did not complete (failed, aborted, a budget, or it
//     never started), while the suite was not stopping (its context
//     live: a suite budget or an interruption ends sessions aborted, and
//     that is nobody's failure); and
//  2. the server, asked right after the attempt (Options.ServerUp: aegis
//     suite opens a browser context on it and closes it, a round trip to
//     the server and its browser, bounded in time, as the next session
//     would need), cannot give a browser: the connection is refused or
//     closed, the browser is gone, or the server does not answer in time.
//
// Everything else is the task's own: a denial, a selector that matches
// nothing, a task budget, a model error, on a server that still answers.
// The order matters: a task that failed on its own on a healthy server is
// never retried, and a server that went away while its task ran is found
// whatever the session made of the loss (a driver error, an observation
// that failed, an aborted wait).
//
// A server charged with a failure is out of the rotation for the rest of
// the suite, and the task is retried once on another server that is still
// in it; the failed attempt is recorded (TaskResult.Retries) and its
// bundle, sealed as the session ended, stays.
//
// # What is never retried
//
// A retry runs the task again from its start: what the failed attempt
// did that cannot be undone would be done twice. An attempt is not
// retried, and the task fails with it (its Error says why), when it
// executed an approved action, or when its bundle records an effect that
// may change state on a server (contract.Effect.ChangesState: a POST, a
// peer channel...) that happened (allowed or approved). An attempt that
// executed actions but whose bundle cannot be read is not retried either:
// nothing shows it changed nothing. An attempt whose retry also
// failed with its server ends the task there. When no server is left,
// the tasks not yet run fail with ErrNoServer.
type fleet struct {
	mu     sync.Mutex
	alive  []string
	failed []string // "ENDPOINT: why", in the order they failed
	next   int
}

func newFleet(endpoints []string) *fleet {
	return &fleet{alive: append([]string(nil), endpoints...)}
}

// pick returns the next server in the rotation that is not one of
// exclude (the servers the task already failed on), or an error wrapping
// ErrNoServer that says how each failed.
func (f *fleet) pick(exclude []string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range f.alive {
		ep := f.alive[f.next%len(f.alive)]
		f.next++
		if !slices.Contains(exclude, ep) {
			return ep, nil
		}
	}
	if len(f.failed) == 0 {
		return "", fmt.Errorf("%w", ErrNoServer)
	}
	return "", fmt.Errorf("%w: %s", ErrNoServer, strings.Join(f.failed, "; "))
}

// fail takes ep out of the rotation.
func (f *fleet) fail(ep string, why error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.alive {
		if a == ep {
			f.alive = append(f.alive[:i], f.alive[i+1:]...)
			f.failed = append(f.failed, fmt.Sprintf("%s failed (%v)", ep, why))
			return
		}
	}
}

// irreversible says why retrying the attempt that ended as res could
// repeat something that cannot be undone (see fleet), or "" when nothing
// shows it could: no approved action, and no state-changing effect that
// happened in its bundle.
func irreversible(ctx context.Context, res session.Result) string {
	if res.Approved > 0 {
		return fmt.Sprintf("the attempt executed %d approved action(s), which a retry could repeat", res.Approved)
	}
	if res.Output.ActionsExecuted == 0 {
		return ""
	}
	if res.Evidence.Dir == "" {
		return fmt.Sprintf("the attempt executed %d action(s) and left no bundle to show they changed nothing", res.Output.ActionsExecuted)
	}
	b, err := audit.Open(ctx, res.Evidence.Dir, audit.OpenOptions{AllowUnsealed: true})
	if err != nil {
		return fmt.Sprintf("the attempt executed %d action(s) and its bundle does not show they changed nothing: %v", res.Output.ActionsExecuted, err)
	}
	defer b.Close()
	for _, s := range b.Steps {
		for _, e := range s.Effects {
			if r := e.Final().Result; e.Effect.ChangesState() && (r == contract.ResultAllowed || r == contract.ResultApproved) {
				return fmt.Sprintf("step %d's action had an effect that may change state (%s %s %s%s, %s), which a retry could repeat", s.Index, e.Effect.Kind, e.Effect.Method, e.Effect.Origin, e.Effect.Path, r)
			}
		}
	}
	return ""
}

// serverFailed applies the rule of fleet: whether the attempt on ep that
// ended as res is its server's failure, and the server's error if so.
func serverFailed(ctx context.Context, up func(context.Context, string) error, ep string, res session.Result) error {
	if ep == "" || res.Status == contract.SessionCompleted || ctx.Err() != nil {
		return nil
	}
	return up(ctx, ep)
}
