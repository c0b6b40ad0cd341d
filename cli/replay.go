package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/session"
)

// The auditor's commands: replay, report, and policy diff (policy_diff.go).
// Their work is done by package audit.

func init() {
	register(command{name: "replay", summary: "re-run a recorded session without a model and compare it with its evidence", run: runReplay})
}

const replayUsage = `BUNDLE... [--driver playwright|sandbox] [--policy DIR | --policy-from-bundle]
       [--map-origin FROM=TO]... [--approve deny|ask|low-and-medium-only] [--json]

Re-executes the recorded actions of an evidence bundle in order, without any
model: each action is judged again by the gate, run in a fresh browser
context, and what the replay sees is compared with the record: the action's
outcome and URL, the URL, title and DOM hash of every page the recording
observed (with a short diff of the visible text when it changed), and the
element each action targets. Each step is reported as same, diverged, or
blocked.

Several bundles are replayed one after the other, in one browser (each
replay in a context of its own, as a fresh browser would give it); the
output is each replay's in turn (--json: one JSON object per bundle, for
a bundle that could not be replayed {"bundle": ..., "error": ...}). An
interrupt (Ctrl-C) stops the replay under way and replays no further
bundle.

A recorded denial stays denied and is not executed. A recorded approval is
not granted again silently: the action is asked about again (--approve ask)
or denied (--approve deny); without a terminal and without --approve,
nobody can be asked, and the step is blocked, saying so.
--map-origin FROM=TO (repeatable) replays a bundle recorded against one
origin on another, such as the demo site served on another port.

The bundle is verified first: a tampered bundle is refused, naming the
place; an unsealed one unless --allow-unsealed. The replay writes its own
evidence bundle under --evidence, whose task hints link the recorded
session ("replayOf").

Exit status: 0 no step diverged (and every recorded action ran again),
1 a step diverged or was blocked by the policy or a refused approval, or
the bundle was refused, 2 usage or unreadable input; with several
bundles, the highest of theirs.`

// replayOutput is the --json output of replay for a bundle replayed (in
// part: Error says why it stopped).
type replayOutput struct {
	Reproduced bool `json:"reproduced"`
	*audit.ReplayReport
	Error string `json:"error,omitempty"`
}

// replayRefused is the --json output of replay for a bundle that could not
// be replayed (missing, unreadable, refused, or not reached before an
// interrupt).
type replayRefused struct {
	Bundle string `json:"bundle"`
	Error  string `json:"error"`
}

func runReplay(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("replay", replayUsage, stdio)
	driverMode := fs.String("driver", "", "browser `driver`: playwright or sandbox (default: the bundle's)")
	policy := fs.String("policy", "", "judge the actions by the policy in `DIR` (or an OPA bundle .tar.gz; default: the embedded policy)")
	fromBundle := fs.Bool("policy-from-bundle", false, "judge by the policy that judged the recording: refuse unless the policy has the version the bundle names")
	var origins audit.OriginMap
	fs.Var(originFlag{&origins}, "map-origin", "replay the recorded origin `FROM=TO` on another (repeatable)")
	approve := fs.String("approve", "", "approval requests: ask (default on a terminal), deny or low-and-medium-only")
	preset := fs.String("preset", "", "security `preset` replacing the permission level the recording applied")
	evidenceDir := fs.String("evidence", DefaultEvidenceDir, "evidence root `DIR` of the replay's own bundle")
	allowUnsealed := fs.Bool("allow-unsealed", false, "replay an unsealed bundle (its intact entries)")
	pubFile := fs.String("pubkey", "", "trusted public key `FILE`: the bundle's seal must be signed by it")
	signKey := fs.String("sign-key", "", "sign the replay bundle's seal with the Ed25519 key in `FILE`")
	endpoint := fs.String("browser-endpoint", "", "connect to the Playwright server at `ws://HOST:PORT/` instead of launching Chromium")
	headed := fs.Bool("headed", false, "show the browser window")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return usageError("replay takes one BUNDLE or more, got none")
	}
	if *fromBundle && *policy != "" {
		return usageError("--policy and --policy-from-bundle are exclusive")
	}
	opts := audit.ReplayOptions{
		PolicyPath: *policy, PolicyFromBundle: *fromBundle, Preset: *preset, Origins: origins,
		AllowUnsealed: *allowUnsealed, EvidenceRoot: *evidenceDir, Version: Version,
		BrowserEndpoint: *endpoint, Headed: *headed,
	}
	switch m := contract.DriverMode(*driverMode); m {
	case "", contract.ModePlaywright, contract.ModeSandbox:
		opts.Driver = m
	default:
		return usageError("--driver %q: want playwright or sandbox", *driverMode)
	}
	if *pubFile != "" {
		if opts.PubKey, err = evidence.LoadPublicKey(*pubFile); err != nil {
			return usageError("%v", err)
		}
	}
	if *signKey != "" {
		s, err := evidence.LoadSigner(*signKey)
		if err != nil {
			return usageError("--sign-key: %v", err)
		}
		opts.Signer = s
	}
	if opts.Approver, err = replayApprover(*approve, stdio); err != nil {
		return err
	}
	if !*asJSON {
		opts.OnStep = func(s audit.StepResult) { printStep(stdio.Out, s) }
	}
	browsers, closeBrowsers := commandBrowsers(stdio)
	defer closeBrowsers()
	opts.Browsers = browsers
	code := ExitOK
	for i, bundle := range pos {
		if ctx.Err() != nil {
			// Interrupted: the rest is not replayed.
			code = max(code, ExitFailure)
			fmt.Fprintf(stdio.Err, "aegis: interrupted: %d bundles not replayed\n", len(pos)-i)
			if *asJSON {
				for _, b := range pos[i:] {
					if err := writeJSON(stdio.Out, replayRefused{Bundle: b, Error: "not replayed: interrupted (" + ctx.Err().Error() + ")"}); err != nil {
						return err
					}
				}
			}
			break
		}
		if len(pos) > 1 && !*asJSON {
			fmt.Fprintf(stdio.Out, "replay of %s\n", termSafe(bundle, 300))
		}
		c, err := replayBundle(ctx, bundle, opts, *asJSON, stdio)
		if err != nil {
			fmt.Fprintf(stdio.Err, "aegis: %v\n", err)
			if *asJSON {
				if jerr := writeJSON(stdio.Out, replayRefused{Bundle: bundle, Error: err.Error()}); jerr != nil {
					return jerr
				}
			}
		}
		code = max(code, c)
	}
	if code != ExitOK {
		return exitCode(code, nil)
	}
	return nil
}

// originFlag is replay's --map-origin: an audit.OriginMap that says the
// fix of an origin typed without its scheme.
type originFlag struct{ m *audit.OriginMap }

func (f originFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m.String()
}

// Set adds the pair FROM=TO, refusing an origin without its scheme with
// the pair as it should read.
func (f originFlag) Set(s string) error {
	if from, to, ok := strings.Cut(s, "="); ok && (noScheme(from) || noScheme(to)) {
		fix := func(o string) string {
			if noScheme(o) {
				return withScheme(o)
			}
			return o
		}
		return fmt.Errorf("an origin needs its scheme: --map-origin %s=%s", fix(from), fix(to))
	}
	return f.m.Set(s)
}

// writeJSON writes v to w as indented JSON, as replay's --json output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// replayBundle replays one bundle, prints its report, and returns its exit
// code and the error of a bundle that could not be replayed (whose report
// it did not print), if any.
func replayBundle(ctx context.Context, bundle string, opts audit.ReplayOptions, asJSON bool, stdio Stdio) (int, error) {
	if err := notBundle(bundle); err != nil {
		return ExitUsage, err
	}
	rep, err := audit.Replay(ctx, bundle, opts)
	if err != nil {
		var te *audit.TamperedError
		switch {
		case errors.As(err, &te), errors.Is(err, evidence.ErrUnsealed):
			return ExitFailure, err
		case rep == nil:
			var pe *os.PathError
			if errors.As(err, &pe) {
				return ExitUsage, err
			}
			return ExitFailure, err
		}
		fmt.Fprintf(stdio.Err, "aegis: replay stopped: %v\n", err)
	}
	if asJSON {
		out := replayOutput{Reproduced: rep.Reproduced() && err == nil, ReplayReport: rep}
		if err != nil {
			out.Error = "replay stopped: " + err.Error()
		}
		if err := writeJSON(stdio.Out, out); err != nil {
			return ExitFailure, err
		}
	} else {
		fmt.Fprintf(stdio.Out, "%d steps: %d same, %d diverged, %d blocked\nreplay bundle: %s\n", len(rep.Steps), rep.Same, rep.Diverged, rep.Blocked, rep.ReplayBundle)
	}
	if err != nil || !rep.Reproduced() {
		return ExitFailure, nil
	}
	return ExitOK, nil
}

// printStep writes one replayed step for a person.
func printStep(w io.Writer, s audit.StepResult) {
	line := fmt.Sprintf("step %-3d %-8s %-10s %s", s.Step, s.ActionType, termSafe(s.ActionID, 40), s.Status)
	switch {
	case s.Status == audit.StepBlocked && s.RecordedDenial:
		line += ": the record denied it; not executed"
	case s.Status == audit.StepBlocked && len(s.Reasons) > 0 && strings.HasPrefix(s.Reasons[0].Rule, "approval_"):
		line += ": it needs an approval again, and it was refused (recorded " + string(s.Recorded) + ")"
	case s.Status == audit.StepBlocked:
		line += ": the gate denies it now (recorded " + string(s.Recorded) + ")"
	case s.Approver != "":
		line += " (approved again by " + termSafe(s.Approver, 80) + ")"
	}
	fmt.Fprintln(w, line)
	if s.Status == audit.StepBlocked {
		for _, r := range s.Reasons {
			fmt.Fprintf(w, "    %s: %s\n", termSafe(r.Rule, 64), termSafe(r.Message, 300))
		}
	}
	for _, d := range s.Differences {
		where := "the action"
		if d.Observation >= 0 {
			where = fmt.Sprintf("dom/%d", d.Observation)
		}
		fmt.Fprintf(w, "    %s (%s): want %s\n    %*s  got  %s\n", d.Field, where, termSafe(d.Want, 300), len(d.Field)+len(where)+3, "", termSafe(d.Got, 300))
		for _, l := range strings.Split(d.TextDiff, "\n") {
			if l != "" {
				fmt.Fprintf(w, "      %s\n", termSafe(l, 240))
			}
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "    note: %s\n", termSafe(n, 300))
	}
}

// termSafe bounds s and replaces control characters (a hostile page's
// terminal escapes) by U+FFFD.
func termSafe(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return '\uFFFD'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// errNobodyToAsk is why a replay without a terminal and without
// --approve cannot have an approval: the step is blocked, said so.
var errNobodyToAsk = errors.New("nobody could be asked: stdin is not a terminal and no --approve rule was given (run in a terminal, or give --approve deny or low-and-medium-only)")

// replayApprover picks the approver of replay's --approve: as aegis run,
// ask needs a terminal (piped input cannot approve), deny is the default
// without one.
func replayApprover(flagValue string, stdio Stdio) (audit.Approver, error) {
	tty := isTerminal(stdio.In)
	if flagValue == "" && !tty {
		// Nobody chose to refuse: nobody can be asked.
		return audit.ApproverFunc(func(ctx context.Context, req audit.ApprovalRequest) (audit.ApprovalAnswer, error) {
			return audit.ApprovalAnswer{}, errNobodyToAsk
		}), nil
	}
	if flagValue == "" {
		flagValue = string(session.ApproveAsk)
	}
	mode, err := session.ParseApproveMode(flagValue)
	if err != nil {
		return nil, usageError("--approve: %v", err)
	}
	var sa session.Approver
	switch {
	case mode == session.ApproveDeny:
		return nil, nil
	case mode != session.ApproveAsk:
		sa = session.PolicyApprover{Mode: mode}
	case !tty:
		return nil, usageError("--approve=ask needs an interactive terminal on stdin (piped input cannot approve actions); use deny or low-and-medium-only")
	default:
		sa = session.NewTerminalApprover(stdio.In, stdio.Err, "terminal:replay")
	}
	return audit.ApproverFunc(func(ctx context.Context, req audit.ApprovalRequest) (audit.ApprovalAnswer, error) {
		if req.Recorded != nil {
			fmt.Fprintf(stdio.Err, "\naegis: step %d was approved in the recording by %s at %s; it needs an approval again\n", req.Step, termSafe(req.Recorded.Approver, 120), termSafe(req.Recorded.ApprovedAt, 40))
		}
		ans, err := sa.Approve(ctx, session.ApprovalRequest{
			Action: req.Action, Target: req.Target, URL: req.URL, Risk: req.Risk, Reasons: req.Reasons,
		})
		return audit.ApprovalAnswer{Approved: ans.Approved, Approver: ans.Approver}, err
	}), nil
}
