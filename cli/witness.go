package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/live"
	"github.com/aegis-run/aegis/session"
	"github.com/aegis-run/aegis/witness"
)

// The witness: "aegis witness serve", the --witness flags of run and demo
// (an evidence.Checkpointer for the session's bundle), and verify
// --witness. evidence/FORMAT.md, section 14, specifies the checkpoints and
// the HTTP API.

func init() {
	register(command{name: "witness", summary: "serve a witness that keeps the checkpoints of evidence bundles", run: runWitness, subcommands: []string{"serve"}})
}

const witnessUsage = `serve --dir DIR [--listen ADDR] [--keys FILE] [--max-origins N]

Serves a witness for evidence bundles over HTTP: sessions run with
--witness http://ADDR send it signed checkpoints of their ledger (as they
start, after every approval, every --checkpoint-every entries and at the
seal), and "aegis verify --witness http://ADDR BUNDLE" checks a bundle
against the latest one it holds.

The witness keeps, in DIR, one append-only log file per origin (a
session), and accepts a checkpoint only when it is signed by the key of
the origin's first checkpoint and extends the latest one: a consistency
proof from the latest size, never a smaller size or another root.
evidence/FORMAT.md, section 14, documents the API: POST /checkpoint and
GET /checkpoint?origin=ORIGIN.

With --keys FILE it takes only checkpoints signed by the keys FILE names
(PEM public keys, as aegis keygen writes them, or ed25519: key ids, one a
line): anyone else who reaches it cannot start the log of a session before
that session does (the sessions then run with --sign-key and one of those
keys). It keeps at most --max-origins logs (default 10000); the
first checkpoint of one more is refused (HTTP 507).

ADDR is PORT or HOST:PORT, loopback unless a host is named (default
127.0.0.1:8744). It serves until interrupted; serve it over https (behind a
TLS proxy) when sessions or verifiers reach it over a network.`

// defaultWitnessAddr is where "aegis witness serve" listens by default.
const defaultWitnessAddr = "127.0.0.1:8744"

func runWitness(ctx context.Context, args []string, stdio Stdio) error {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintf(stdio.Err, "Usage: aegis witness %s\n", witnessUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return flag.ErrHelp
		}
		return usageError("witness: want the subcommand serve")
	}
	fs := newFlagSet("witness serve", witnessUsage, stdio)
	dir := fs.String("dir", "", "keep the checkpoints in `DIR` (created when missing)")
	addr := fs.String("listen", defaultWitnessAddr, "listen on `ADDR` (PORT or HOST:PORT; loopback unless a host is named)")
	keysFile := fs.String("keys", "", "take only checkpoints signed by the keys in `FILE` (PEM public keys or ed25519: key ids)")
	maxOrigins := fs.Int("max-origins", witness.DefaultMaxOrigins, "keep at most `N` origins (sessions)")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 || *dir == "" {
		fs.Usage()
		return usageError("witness serve needs --dir DIR and takes no arguments")
	}
	if *maxOrigins < 1 {
		return usageError("--max-origins %d: want 1 or more (default %d)", *maxOrigins, witness.DefaultMaxOrigins)
	}
	adm := witness.Admission{MaxOrigins: *maxOrigins}
	if *keysFile != "" {
		data, err := os.ReadFile(*keysFile)
		if err != nil {
			return usageError("--keys: %v", err)
		}
		if adm.Keys, err = witness.ParseKeys(data); err != nil {
			return usageError("--keys %s: %v", *keysFile, err)
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return usageError("--dir: %v", err)
	}
	log, err := witness.NewAdmittingLog(witness.DirStore{Dir: *dir}, adm)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	l, loopback, err := live.Listen(*addr)
	if err != nil {
		return usageError("--listen: %v", err)
	}
	if !loopback && adm.Keys == nil {
		fmt.Fprintf(stdio.Err, "aegis: warning: the witness listens on %s, beyond this machine, and takes any key (no --keys): anyone who reaches it can start a log for a session id not yet used\n", l.Addr())
	}
	hs := &http.Server{
		Handler:           witness.Server{Log: log},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	keys := "any key"
	if adm.Keys != nil {
		keys = fmt.Sprintf("%d key(s) of %s", len(adm.Keys), *keysFile)
	}
	fmt.Fprintf(stdio.Err, "aegis: witness serving http://%s/ (checkpoints in %s; %s; at most %d origins)\n", l.Addr(), *dir, keys, adm.MaxOrigins)
	select {
	case err := <-served:
		return fmt.Errorf("witness: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("witness: shutdown: %w", err)
	}
	<-served
	return nil
}

// sessionWitness is the witness of a run: its Anchor and what the person
// asked for.
type sessionWitness struct {
	anchor   *witness.Anchor
	required bool
}

// checkWitnessFlags refuses the witness flags of a run that cannot work,
// before anything starts.
func checkWitnessFlags(o *runOptions) error {
	switch {
	case o.witness == "" && o.witnessRequired:
		return usageError("--witness-required needs --witness URL|file:PATH")
	case o.witness == "" && o.checkpointEvery != 0:
		return usageError("--checkpoint-every needs --witness URL|file:PATH")
	case o.checkpointEvery < 0:
		return usageError("--checkpoint-every %d: want 1 or more (default %d)", o.checkpointEvery, evidence.DefaultCheckpointEvery)
	}
	if o.witness != "" {
		if _, err := witness.Open(o.witness); err != nil {
			return usageError("--witness: %v", err)
		}
	}
	return nil
}

// openSessionWitness returns the witness the run's flags name (nil for
// none) and makes the session's bundle send it its checkpoints. With
// --witness-required, the first checkpoint not taken cancels the run
// (cancel), which then ends aborted, its bundle sealed.
func openSessionWitness(o *runOptions, cfg *session.Config, cancel context.CancelCauseFunc) (*sessionWitness, error) {
	if o.witness == "" {
		return nil, nil
	}
	w, err := witness.Open(o.witness)
	if err != nil {
		return nil, usageError("--witness: %v", err)
	}
	a, err := witness.NewAnchor(w, cfg.Signer)
	if err != nil {
		return nil, err
	}
	sw := &sessionWitness{anchor: a, required: o.witnessRequired}
	if sw.required {
		a.OnFailure = func(err error) { cancel(fmt.Errorf("the witness is required: %w", err)) }
	}
	open, every := cfg.Evidence, o.checkpointEvery
	cfg.Evidence = func(m contract.Manifest, opts evidence.Options) (session.Recorder, error) {
		opts.Checkpoint, opts.CheckpointEvery = a, every
		return open(m, opts)
	}
	return sw, nil
}

// finish says on stderr what the witness took, and returns an error when
// it was required and did not take every checkpoint.
func (sw *sessionWitness) finish(stdio Stdio) error {
	r := sw.anchor.Report()
	if r.Failed == 0 && r.Sealed {
		fmt.Fprintf(stdio.Err, "aegis: witness %s: %d checkpoints taken, the last of the sealed bundle (%d entries)\n", r.Witness, r.Taken, r.Size)
		return nil
	}
	msg := fmt.Sprintf("witness %s: %d checkpoints not taken (%d taken; last taken: %d entries, sealed: %v): %s", r.Witness, r.Failed, r.Taken, r.Size, r.Sealed, r.Err)
	if r.Failed == 0 {
		msg = fmt.Sprintf("witness %s: the sealed bundle was not checkpointed (%d taken, last of %d entries)", r.Witness, r.Taken, r.Size)
	}
	if sw.required {
		return exitCode(ExitSessionFailed, errors.New(msg+"; the bundle is not anchored"))
	}
	fmt.Fprintf(stdio.Err, "aegis: warning: %s; the bundle is not fully anchored\n", msg)
	return nil
}

// verifyWitness checks a verified bundle against the witness spec names.
func verifyWitness(ctx context.Context, spec string, rep *evidence.Report) (*witness.Anchored, error) {
	w, err := witness.Open(spec)
	if err != nil {
		return nil, usageError("--witness: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return witness.Verify(ctx, w, rep)
}

// printWitness writes the witness's verdict: success on stdout, failure
// on stderr.
func printWitness(stdio Stdio, a *witness.Anchored, err error) {
	if err != nil {
		fmt.Fprintf(stdio.Err, "witness: NOT ANCHORED: %v\n", err)
		return
	}
	rest := ""
	if int(a.Size) < a.Entries {
		rest = fmt.Sprintf("; entries %d..%d are not", a.Size, a.Entries-1)
	}
	fmt.Fprintf(stdio.Out, "witness: anchored: %s%s: %s holds a checkpoint of %s with %d entries, signed by %s\n", a.Range(), rest, a.Witness, a.Origin, a.Size, a.KeyID)
}
