package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/aegis-run/aegis/live"
	"github.com/aegis-run/aegis/nativehost"
)

func init() {
	register(command{
		name:    "host",
		summary: "run as the extension's native messaging host (Chrome starts it)",
		run:     runHost,
	})
}

// isHostOrigin reports whether the first argument is the caller origin
// Chrome passes a native messaging host it starts
// ("chrome-extension://ID/"): then aegis is in host mode.
func isHostOrigin(arg string) bool { return nativehost.IsOriginArg(arg) }

const hostUsage = `ORIGIN

Runs aegis as the native messaging host of the aegis extension. Chrome starts
it, as "aegis chrome-extension://ID/", when the extension's popup starts a
session; "aegis host chrome-extension://ID/" is the same. stdin and stdout
carry Chrome's frames (nothing else is ever written to stdout); the log goes
to stderr, which Chrome forwards to its own log, and to the configuration's
logFile when set.

The origin must be in the allowed_origins of an installed host manifest that
points at this executable (see "aegis install"); any other caller is refused.
With "listen" set in the configuration (such as "127.0.0.1:8765"), the host
also serves the live channel there from the first session it starts (see
aegis help run and live/PROTOCOL.md): its console address and bearer token
go to the log. A host that only serves the options page never listens.

Model settings and secrets come from the host configuration file
($AEGIS_HOST_CONFIG, else host.json in the user configuration directory, such
as ~/.config/aegis/host.json), which must be readable by its owner only (0600).
A secret there is {"value": "...", "origins": ["https://..."]}: the origins
it may be typed on are required, since the extension's task starts on
whatever tab is open (a secret without them stops the host, saying so). The
policy lets a secret be typed only into a field
sensitive by its own facts (a password input, a sensitive autocomplete, a
sensitive selector) on one of them, and denies every other use of it.

When the extension disconnects, a running session is aborted, its evidence
sealed, and the host exits within a second.

Exit status: 0 after the extension disconnected, 1 a refused caller or a
broken configuration, 2 usage.`

func runHost(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("host", hostUsage, stdio)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var origin string
	for _, a := range fs.Args() {
		// Chrome on Windows adds --parent-window=N after the origin.
		if strings.HasPrefix(a, "--parent-window=") {
			continue
		}
		if origin != "" {
			fs.Usage()
			return usageError("host takes one origin, got %q too", a)
		}
		origin = a
	}
	if origin == "" {
		fs.Usage()
		return usageError("host needs the caller's origin (chrome-extension://ID/)")
	}
	if f, ok := stdio.Out.(*os.File); ok && f == os.Stdout {
		// From here on only frames reach Chrome's end of stdout.
		frames, err := nativehost.ProtectStdout()
		if err != nil {
			return exitCode(ExitFailure, err)
		}
		stdio.Out = frames
	}
	path, err := nativehost.ConfigPath()
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	// A configuration whose content does not load runs no session, but
	// the host still answers: the popup shows why, and the options page
	// may repair the model settings.
	cfg, cerr := nativehost.LoadConfig(path)
	var content *nativehost.ContentError
	if cerr != nil && !errors.As(cerr, &content) {
		// A file that may not be read (others may read it): tell the
		// extension why before exiting; the popup shows it.
		refuse(stdio, &nativehost.Error{Code: nativehost.CodeConfig, Message: cerr.Error()})
		return exitCode(ExitFailure, cerr)
	}
	o := nativehost.Options{
		In: stdio.In, Out: stdio.Out, Log: stdio.Err,
		Origin: origin, Config: cfg, ConfigPath: path, ConfigErr: cerr, Version: Version,
	}
	var hl hostLive
	defer hl.close()
	if cfg.Listen != "" {
		// Opened at the first session.start: the host the options page
		// starts for config.get and config.set never listens (the port
		// may be a running session's, in another host).
		o.OpenLive = func() (*live.Server, string, error) { return hl.open(cfg, stdio) }
	}
	err = nativehost.Serve(ctx, o)
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return nil
	case errors.Is(err, nativehost.ErrOriginRefused):
		return exitCode(ExitFailure, err)
	}
	return exitCode(ExitFailure, err)
}

// hostLive is the live channel of a host process, opened on the first
// session's need.
type hostLive struct {
	mu sync.Mutex
	lc *liveChannel
}

// open starts the live channel on cfg.Listen, saying where on stderr
// (Chrome's log), never on stdout, which carries frames.
func (hl *hostLive) open(cfg nativehost.Config, stdio Stdio) (*live.Server, string, error) {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	lc, err := startLive(cfg.Listen, `"listen" in the host configuration`, cfg.LiveTokenFile, nil, Stdio{Err: stdio.Err})
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.err != nil {
			err = ee.err
		}
		return nil, "", err
	}
	hl.lc = lc
	base := "http://" + lc.l.Addr().String()
	fmt.Fprintf(stdio.Err, "aegis: live console: %s/#token=%s (bearer token in %s)\n", base, lc.srv.Token(), lc.tokenFile)
	return lc.srv, base, nil
}

// close stops the live channel if it was opened.
func (hl *hostLive) close() {
	hl.mu.Lock()
	defer hl.mu.Unlock()
	if hl.lc != nil {
		hl.lc.close()
	}
}

// refuse writes one error event frame to the extension.
func refuse(stdio Stdio, e *nativehost.Error) {
	b, err := nativehost.Message{Kind: nativehost.KindEvent, Event: nativehost.EventError, Params: mustJSON(e.Wire())}.Encode()
	if err == nil {
		_ = nativehost.NewWriter(stdio.Out).WriteFrame(b)
	}
}
