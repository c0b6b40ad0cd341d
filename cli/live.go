package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/aegis-run/aegis/live"
	"github.com/aegis-run/aegis/session"
)

// ApproveLive is the --approve mode that lets the live channel's clients
// (the web console, a CI bot) answer approval requests. It is the default
// of a run with --listen.
const ApproveLive = "live"

// DefaultLinger is how long the live channel keeps serving after the run
// ended (--linger): the console stays available to read the outcome.
const DefaultLinger = 5 * time.Minute

// liveChannel is a run's live channel: the server, its listener, and the
// token file it wrote.
type liveChannel struct {
	srv       *live.Server
	l         net.Listener
	approver  *live.Approver
	tokenFile string
	served    chan error
	// lingerFor is how long linger keeps serving after the run.
	lingerFor time.Duration
	// console is the console's address for the last session added, the
	// token in its fragment: printed once, when the session is added; ""
	// before one was. page is the same without the token, for every
	// later mention (the token is in tokenFile).
	console, page string
	// sess is the last session added.
	sess *session.Session
}

// startLive listens on addr, which the setting named from gave, and serves
// the live channel; approver is nil when the run's approvals are answered
// elsewhere. The token goes to tokenFile (0600), or to a file of its own
// in the user cache directory.
func startLive(addr, from, tokenFile string, approver *live.Approver, stdio Stdio) (*liveChannel, error) {
	l, loopback, err := live.Listen(addr)
	if err != nil {
		return nil, usageError("%s: %v", from, err)
	}
	srv, err := live.NewServer(live.Options{Log: stdio.Err, AnyHost: !loopback})
	if err != nil {
		l.Close()
		return nil, err
	}
	if !loopback {
		fmt.Fprintf(stdio.Err, "aegis: warning: the live channel listens on %s, beyond this machine: anyone with the token can watch, approve and abort\n", l.Addr())
	}
	if tokenFile == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("live token file: %w", err)
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		tokenFile = filepath.Join(dir, "aegis", "live", "token-"+port)
	}
	if err := writeSecretFile(tokenFile, []byte(srv.Token()+"\n")); err != nil {
		l.Close()
		return nil, fmt.Errorf("live token file: %w", err)
	}
	lc := &liveChannel{srv: srv, l: l, approver: approver, tokenFile: tokenFile, served: make(chan error, 1)}
	go func() { lc.served <- srv.Serve(l) }()
	return lc, nil
}

// writeSecretFile writes data to a new file only its owner can read, in
// a directory only its owner can enter when it has to be made. A file
// left at path (by an earlier run on the same port) is removed first:
// never written through, should it be a link planted elsewhere.
func writeSecretFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return writeNew(path, data, 0o600)
}

// add offers the session on the channel and tells the user where.
func (lc *liveChannel) add(s *session.Session, goal, evidenceRoot string, stdio Stdio) {
	lc.srv.Add(s, live.SessionOptions{Approver: lc.approver, Dir: filepath.Join(evidenceRoot, s.ID()), Goal: goal})
	lc.sess = s
	lc.page = fmt.Sprintf("http://%s/?session=%s", lc.l.Addr(), s.ID())
	lc.console = lc.page + "#token=" + lc.srv.Token()
	fmt.Fprintf(stdio.Err, "aegis: live console: %s\n", lc.console)
	fmt.Fprintf(stdio.Err, "aegis: live stream:  ws://%s/v1/sessions/%s/stream (bearer token in %s)\n", lc.l.Addr(), s.ID(), lc.tokenFile)
	if lc.approver != nil {
		fmt.Fprintln(stdio.Err, "aegis: approval requests wait for a decision on the live channel")
	}
}

// linger keeps serving the console after the run ended, so that the page
// stays available, until ctx ends (Ctrl-C) or lingerFor passes. It
// returns at once when lingerFor is 0, when no session was added or it
// never started (it has no event to show), or when ctx ended already (the
// run was interrupted).
func (lc *liveChannel) linger(ctx context.Context, stdio Stdio) {
	if lc.lingerFor <= 0 || lc.sess == nil || ctx.Err() != nil || len(lc.sess.Bus().History()) == 0 {
		return
	}
	fmt.Fprintf(stdio.Err, "aegis: the run ended; the console stays open at %s (bearer token in %s) until Ctrl-C (or %s)\n", lc.page, lc.tokenFile, minutes(lc.lingerFor))
	t := time.NewTimer(lc.lingerFor)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
		fmt.Fprintf(stdio.Err, "aegis: the console closed after %s\n", minutes(lc.lingerFor))
	}
}

// minutes says d in minutes when it is whole minutes ("5 min").
func minutes(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", d/time.Minute)
	}
	return d.String()
}

// consoleURL returns the console's address for the session add offered,
// without the token (printed once, by add; it is in the token file).
func (lc *liveChannel) consoleURL() string { return lc.page }

// close lets the clients read the end of the stream (a few seconds at
// most), stops the server and removes the token file.
func (lc *liveChannel) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = lc.srv.Close(ctx)
	<-lc.served
	_ = os.Remove(lc.tokenFile)
}
