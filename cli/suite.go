package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/session"
	"github.com/aegis-run/aegis/suite"
)

func init() {
	register(command{
		name:    "suite",
		summary: "run many tasks (a directory of TASK.json files) as one CI job: a shared browser or a Playwright fleet, a suite index",
		run:     runSuite,
	})
}

// Exit codes of "aegis suite", on top of ExitOK (every task completed),
// ExitUsage and ExitAborted (interrupted).
const (
	ExitSuiteIncomplete = ExitFailure // a task did not complete (failed, denied, aborted, its bundle not sealed)
	ExitSuiteStopped    = 4           // a suite budget stopped the suite (--max-duration, --max-actions, --max-tokens)
)

// MaxParallel bounds --parallel.
const MaxParallel = 32

// serverProbeTimeout bounds asking a Playwright server, after a task on it
// did not complete, whether it still gives a browser.
const serverProbeTimeout = 30 * time.Second

const suiteUsage = `[flags] DIR|TASK.json...

Runs many tasks as one CI job: every task is a governed session of its own,
as "aegis run" runs it (see aegis help run: agents, policy, presets,
secrets, evidence), with its own evidence bundle. A DIR stands for its
*.json files, sorted by name. --parallel N sessions run at once.

Browsers: one Chromium for the whole suite, launched on the first task's
need, each session in a fresh context of its own; or, with
--browser-endpoint ws://HOST:PORT/ (repeatable, or comma-separated), the
Playwright servers ("playwright run-server") of a fleet, the tasks handed
out round-robin. A server that fails (its connection refused or closed,
its browser gone: after a task on it did not complete, it cannot give a
browser any more) is taken out of the rotation and the task retried once
on another server; the index records the retry, and the failed attempt's
bundle stays. Whether a server still answers is asked with a round
trip (a browser context opened and closed on it, within 30s). A task
that fails on its own (denied, a selector that matches nothing, its
budget) on a server that still answers is not retried; nor is an
attempt that may have changed something a retry would repeat (an
approved action, an effect that may change state on a server, such as
a POST, or actions without a readable bundle): the task fails with it.
When no server is left, the remaining tasks fail.

Evidence: the suite's directory is --evidence DIR, which must not hold
a suite index or bundles already (a second suite, or "aegis run"'s
bundles: "aegis verify DIR" checks the directory whole); by default a
new directory of its own, ./` + DefaultEvidenceDir + `/` + suiteDirPrefix + `YYYYMMDDTHHMMSSZ (the
suite's start, UTC). Each task's bundles go to DIR/TASK/SESSION-ID
(TASK: the file's name without .json), and the suite index to
DIR/` + suite.IndexFile + `: per task its
task's hash (as its bundle's manifest records the task), status,
duration, actions, denials, approvals, tokens, bundle (relative to DIR),
head hash, server, retries and why it did not complete, or that it was
skipped (not run); and what stopped the suite, if anything did
(stoppedBy). A status is only ever a sealed bundle's: a session whose
bundle could not be sealed did not complete, whatever it reported.
"aegis verify DIR" checks the suite whole.

Reports: --junit FILE writes JUnit XML (a testcase per task: a failure
with the reason, status and bundle in each task that did not complete, a
skipped in each task not run; the testsuite's property stoppedBy says
what stopped the suite); --summary FILE appends a Markdown summary, for
a CI job's page: --summary "$GITHUB_STEP_SUMMARY".

Approvals: nobody can be asked in CI: a high-risk action that needs
approval is refused (--approve deny, the default) and the session goes on
as it does when a person refuses; --approve low-and-medium-only approves
what the policy rates low or medium risk.

Suite budgets: --max-duration bounds the suite's wall time (the tasks not
started by then are not run, the running ones end aborted, sealed);
--max-actions and --max-tokens bound the executed actions and the model
tokens of all the tasks together, the running ones included (they bound
what is predicted: a session may pass its grant by what an endpoint
reports beyond the prediction): each task starting is granted its fair share of what the suite's
budget has left once the tasks that ended and those running have taken
theirs (that left divided by the --parallel slots that could start a
task now, at most the tasks still to start; for tokens, those that call
a model), never more than its own
budget (its TASK.json's maxActions, else 50; hints.maxTokens). A task
starts only with at least 1 action and 8,192 tokens (one model call with
room for a full answer; less when its own budget or the suite's is
smaller); a task whose agent calls no model (steps, script) needs no
tokens. Once a task ended by a grant that was all the budget had left
(its session ended by the budget, a model call refused before it would
pass it included; a task cut short by its fair share leaves the rest to
the others), or the budget
has less left than a task needs, no task starts, and the suite is
stopped by that budget.

Output: a line per task on stderr as it ends, with a running count, such as
  [3/10] ok      checkout.json  4 actions 1.2s  checkout/SESSION-ID
  [4/10] FAILED  refund.json  failed: why  2 actions 1 denied 0.8s  refund/SESSION-ID
and a summary at the end; --verbose adds every session's step lines,
prefixed with the task's name.

Ctrl-C (or SIGTERM) prints "stopping...": the running sessions end
aborted, their bundles sealed, the tasks not started are not run, and the
index is written; a second Ctrl-C quits at once.

Exit status: 0 every task completed, 1 a task did not complete (failed,
denied, aborted, its bundle not sealed) or the index or a report could
not be written, 4 a suite budget stopped the suite, 3 interrupted, 2
usage (bad flags or task, no task, unreadable secrets file or key, policy
that does not load).`

// suiteOptions are the flags of "aegis suite" beside the session's.
type suiteOptions struct {
	parallel    int
	endpoints   endpointList
	approve     string
	maxDuration time.Duration
	maxActions  int
	maxTokens   int
	verbose     bool
	junit       string
	summary     string
}

// endpointList is --browser-endpoint of suite: repeatable, and each value
// may list several, comma-separated.
type endpointList []string

func (l *endpointList) String() string { return strings.Join(*l, ",") }

func (l *endpointList) Set(s string) error {
	for _, ep := range strings.Split(s, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			return errors.New("an empty endpoint")
		}
		*l = append(*l, ep)
	}
	return nil
}

// suiteOnStart, when set (tests), is called as each attempt of a task
// starts; suiteOnStep as each of its steps is reported.
var (
	suiteOnStart func(suite.Attempt)
	suiteOnStep  func(suite.Attempt, session.StepReport)
)

func runSuite(ctx context.Context, args []string, stdio Stdio) (err error) {
	fs := newFlagSet("suite", suiteUsage, stdio)
	var o runOptions
	var so suiteOptions
	fs.IntVar(&so.parallel, "parallel", 1, fmt.Sprintf("run `N` tasks at once, 1 to %d", MaxParallel))
	fs.Var(&so.endpoints, "browser-endpoint", "run the tasks on the Playwright server at `ws://HOST:PORT/` instead of launching Chromium (repeatable, or comma-separated: a fleet, round-robin)")
	fs.StringVar(&so.approve, "approve", string(session.ApproveDeny), "approval requests: deny or low-and-medium-only (nobody can be asked)")
	fs.DurationVar(&so.maxDuration, "max-duration", 0, "the suite's wall time budget (default none; each task's own is its TASK.json's)")
	fs.IntVar(&so.maxActions, "max-actions", 0, "the suite's action budget: the tasks together execute at most `N` actions, each task granted its share of what is left, at most its maxActions (default none)")
	fs.IntVar(&so.maxTokens, "max-tokens", 0, "the suite's token budget: the tasks' model calls use at most `N` tokens together, each task granted its share of what is left, at most its hints.maxTokens (default none)")
	fs.BoolVar(&so.verbose, "verbose", false, "print every session's step lines too, prefixed with the task's name")
	fs.StringVar(&so.junit, "junit", "", "write the JUnit XML report to `FILE` (replaced): a testcase per task, a failure with the reason and the bundle")
	fs.StringVar(&so.summary, "summary", "", "append the Markdown summary to `FILE` (created when missing), such as \"$GITHUB_STEP_SUMMARY\"")
	addAgentFlag(fs, &o)
	addSessionFlags(fs, &o)
	fs.Lookup("evidence").Usage = "the suite's `DIR`, holding no suite or bundle yet: each task's bundles go to DIR/TASK/SESSION-ID, the index to DIR/" + suite.IndexFile + " (default a new " + DefaultEvidenceDir + "/" + suiteDirPrefix + "TIME)"
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	evidenceSet := flagSet(fs, "evidence")
	o.approvalWait = session.DefaultApprovalTimeout // rules answer at once
	switch {
	case fs.NArg() == 0:
		fs.Usage()
		return usageError("suite needs tasks: a DIR of TASK.json files, or TASK.json files")
	case so.parallel < 1 || so.parallel > MaxParallel:
		return usageError("--parallel %d: want 1 to %d", so.parallel, MaxParallel)
	case so.maxDuration < 0 || so.maxActions < 0 || so.maxTokens < 0:
		return usageError("a suite budget (--max-duration, --max-actions, --max-tokens) is negative")
	}
	for _, ep := range so.endpoints {
		c := o
		c.endpoint = ep
		if err := checkSessionFlags(&c); err != nil {
			return err
		}
	}
	approver, err := suiteApprover(so.approve)
	if err != nil {
		return err
	}
	files, err := suite.Files(fs.Args())
	if err != nil {
		return usageError("%v", err)
	}
	env, err := newSessionEnv(ctx, &o, stdio, nil)
	if err != nil {
		return err
	}
	stdio = env.stdio
	defer env.end(&err)
	tasks := make([]suite.Task, len(files))
	for i, f := range files {
		in, err := runTask(&o, []string{f.Path}, stdio)
		if err != nil {
			return err
		}
		// Every task must make a session before any runs.
		_, agent, err := env.config(ctx, in, approver)
		if err != nil {
			return exitCode(ExitUsage, fmt.Errorf("%s: %w", f.Name, err))
		}
		tasks[i] = suite.Task{Name: f.Name, Input: in, NoModel: agent != "llm"}
	}
	// Made once every task loaded: a bad task leaves no directory behind.
	if o.evidence, err = suiteDir(o.evidence, evidenceSet, time.Now()); err != nil {
		return exitCode(ExitUsage, err)
	}
	out, err := suite.Run(ctx, tasks, suite.Options{
		Parallel:    so.parallel,
		Endpoints:   so.endpoints,
		Dir:         o.evidence,
		MaxDuration: so.maxDuration,
		MaxActions:  so.maxActions,
		MaxTokens:   so.maxTokens,
		Progress:    stdio.Err,
		OnStart:     suiteOnStart,
		Run: func(ctx context.Context, a suite.Attempt) (session.Result, error) {
			cfg, _, err := env.config(ctx, a.Task.Input, approver)
			if err != nil {
				return session.Result{}, env.redact(err)
			}
			cfg.Driver.BrowserEndpoint = a.Endpoint
			cfg.Evidence = session.EvidenceDir(a.Evidence)
			cfg.OnStep = nil
			if so.verbose || suiteOnStep != nil {
				cfg.OnStep = func(r session.StepReport) {
					if suiteOnStep != nil {
						suiteOnStep(a, r)
					}
					if so.verbose {
						a.Log(progressLine(r))
					}
				}
			}
			res, err := session.Run(ctx, cfg)
			// The index is output too: what the page echoed of a secret
			// shows as its placeholder.
			res.Output.Summary = env.set.Redact(res.Output.Summary)
			res.Evidence.Error = env.set.Redact(res.Evidence.Error)
			return res, env.redact(err)
		},
		ServerUp: func(ctx context.Context, endpoint string) error {
			return probeServer(ctx, env.browsers, endpoint, o.headed)
		},
	})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	if err := suiteReports(o.evidence, out, so, stdio); err != nil {
		return exitCode(ExitFailure, err)
	}
	return suiteExit(ctx, out)
}

// probeServer asks the Playwright server at endpoint whether it still
// gives a browser, as the next session on it would need: it opens a
// browser context with a blank page in the server's browser (connecting
// again first when the suite's connection was lost) and closes it, within
// serverProbeTimeout. A connection that still looks up but whose server
// hangs or is cut off fails the probe: the context is a round trip to the
// server and its browser.
func probeServer(ctx context.Context, browsers *driver.Browsers, endpoint string, headed bool) error {
	pctx, cancel := context.WithTimeout(ctx, serverProbeTimeout)
	defer cancel()
	d, err := driver.Open(pctx, driver.Config{Mode: contract.ModePlaywright, BrowserEndpoint: endpoint, Headed: headed, Browsers: browsers})
	if err != nil {
		return fmt.Errorf("server probe: %w", err)
	}
	if err := d.Close(pctx); err != nil {
		return fmt.Errorf("server probe: close its context: %w", err)
	}
	return nil
}

// suiteDirPrefix starts the name of the directory a suite makes for
// itself under the default evidence root.
const suiteDirPrefix = "suite-"

// suiteDir returns the suite's directory, made: without --evidence
// (given false), a new one under root named after the suite's start in
// UTC (suite-20260102T150405Z, with -2, -3... when taken); with it, root
// itself, refused when it already holds a suite index or bundles (aegis
// verify checks a suite's directory whole: a bundle the index does not
// list makes it fail).
func suiteDir(root string, given bool, now time.Time) (string, error) {
	if given {
		if err := suite.CheckFreshDir(root); err != nil {
			return "", fmt.Errorf("--evidence: %w", err)
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", fmt.Errorf("--evidence: %w", err)
		}
		return root, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("evidence root: %w", err)
	}
	base := filepath.Join(root, suiteDirPrefix+now.UTC().Format("20060102T150405Z"))
	for i := 1; ; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 1000 {
			return "", fmt.Errorf("the suite's directory: %w", err)
		}
	}
}

// suiteApprover is the approver of a suite's sessions: a rule, since
// nobody can be asked (--approve deny or low-and-medium-only).
func suiteApprover(flagValue string) (session.Approver, error) {
	mode, err := session.ParseApproveMode(flagValue)
	if err != nil {
		return nil, usageError("--approve: %v", err)
	}
	if mode == session.ApproveAsk {
		return nil, usageError("--approve ask: a suite asks nobody (its sessions run in parallel, in CI): use deny or low-and-medium-only")
	}
	return session.PolicyApprover{Mode: mode}, nil
}

// suiteReports writes what a suite's run produced: the index in dir
// (suite.WriteIndex: atomically, refused if it breaks its schema), the
// reports CI reads (--junit, --summary: suite.WriteReports), and the
// summary on stderr. The reports are written even when the index is not.
func suiteReports(dir string, out suite.Outcome, so suiteOptions, stdio Stdio) error {
	path := filepath.Join(dir, suite.IndexFile)
	var errs []error
	if err := os.MkdirAll(dir, 0o755); err != nil {
		errs = append(errs, fmt.Errorf("suite index: %w", err))
	} else if err := suite.WriteIndex(dir, out.Index); err != nil {
		errs = append(errs, err)
	}
	if err := suite.WriteReports(out.Index, so.junit, so.summary); err != nil {
		errs = append(errs, err)
	}
	fmt.Fprintln(stdio.Err, suiteSummary(out, path))
	return errors.Join(errs...)
}

// suiteSummary is the suite's last line: "aegis suite: 8 of 10 tasks
// completed (1 did not complete, 1 not run) in 12.3s; index
// DIR/suite.json", and what stopped it.
func suiteSummary(out suite.Outcome, index string) string {
	t := out.Index.Totals()
	var b strings.Builder
	fmt.Fprintf(&b, "aegis suite: %d of %d tasks completed", t.Completed, t.Tasks)
	if t.Failed > 0 || t.Skipped > 0 {
		fmt.Fprintf(&b, " (%d did not complete, %d not run)", t.Failed, t.Skipped)
	}
	fmt.Fprintf(&b, " in %s; index %s", (time.Duration(out.Index.DurationMs) * time.Millisecond).Round(100*time.Millisecond), index)
	if out.Index.StoppedBy != "" {
		fmt.Fprintf(&b, "\naegis suite: stopped: %s", out.StopReason)
	}
	return b.String()
}

// suiteExit is the suite's exit code, as an error: interrupted, stopped by
// a suite budget, a task that did not complete, or success.
func suiteExit(ctx context.Context, out suite.Outcome) error {
	switch {
	case out.Index.StoppedBy == suite.StopInterrupted:
		return exitCode(ExitAborted, fmt.Errorf("suite: %w", context.Cause(ctx)))
	case out.Index.StoppedBy != "":
		return exitCode(ExitSuiteStopped, nil)
	case !out.OK():
		return exitCode(ExitSuiteIncomplete, nil)
	}
	return nil
}
