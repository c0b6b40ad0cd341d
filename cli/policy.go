package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aegis-run/aegis/gate"
)

func init() {
	register(command{
		name:        "policy",
		summary:     "evaluate the gate policy on an input, run its Rego tests, or attack it",
		run:         runPolicy,
		subcommands: []string{"eval", "test", "diff", "attack"},
	})
}

const policyUsage = `Usage: aegis policy SUBCOMMAND [flags] [args]

Subcommands:
  eval   evaluate the gate on one policy input and print the decision record
  test   run the policy's Rego unit tests and report coverage
  diff   re-evaluate an evidence bundle's decisions under another policy
  attack run the attack suite (hostile pages, a hostile model) against the
         policy in every driver, and print the scorecard

Run "aegis policy SUBCOMMAND -h" for a subcommand's flags.
`

func runPolicy(ctx context.Context, args []string, stdio Stdio) error {
	if len(args) == 0 {
		fmt.Fprint(stdio.Err, policyUsage)
		return usageError("policy needs a subcommand: eval or test, diff, or attack")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdio.Out, policyUsage)
		return flag.ErrHelp
	case "eval":
		return runPolicyEval(ctx, args[1:], stdio)
	case "test":
		return runPolicyTest(ctx, args[1:], stdio)
	case "diff":
		return runPolicyDiff(ctx, args[1:], stdio)
	case "attack":
		return runPolicyAttack(ctx, args[1:], stdio)
	}
	fmt.Fprint(stdio.Err, policyUsage)
	return usageError("unknown policy subcommand %q", args[0])
}

func runPolicyEval(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("policy eval", `[--policy DIR|BUNDLE.tar.gz] [--opa-url URL] [--preset safe|balanced|power] INPUT.json|-

Evaluates the gate on one policy input and prints the decision record
(schema kind "decision") as indented JSON.

INPUT is seed 001's policy input (state, action, step_index, policy) plus
the session fields it leaves out:
  {"state": {"sessionId": "s-1", "activeUrl": "https://example.com",
             "policyContext": {"maxStepBudget": 25, "decisionLogId": "dec-1"}},
   "action": {"id": "a1", "type": "click", "selector": "#submit"},
   "step_index": 3,
   "policy": {"blocked_domains": [], "sensitive_selectors": [],
              "governed_exceptions": [{"id": "ge-1", "rule": "origin_not_allowed",
                "reason": "...", "expires_at": "2026-02-15T00:00:00Z",
                "decision_log_id": "dec-approval-7"}]},
   "session": {"allowed_origins": ["https://example.com"], "permission": "full",
               "preset": "power"},
   "target": {"tag": "button", "text": "Submit"},
   "now": "2026-01-23T10:00:00Z"}
Without session.allowed_origins the allowlist is the origin of activeUrl;
without a permission or preset the policy's default preset applies. With
"effect": {"kind": "request", "method": "POST", "origin": "https://example.com",
"path": "/pay", "fields": ["amount"]} the input asks about that effect of
the action (a request or navigation it caused), judged on the effect.

Exit status: 0 allowed (or approved), 1 denied or paused for approval
(the record says which), 2 usage or unreadable input.`, stdio)
	policyPath := fs.String("policy", "", "policy `DIR` in OPA's bundle layout, or an OPA bundle .tar.gz (default: the embedded policy)")
	opaURL := fs.String("opa-url", "", "evaluate against the running OPA server at `URL` (http only on loopback) instead of the embedded engine")
	preset := fs.String("preset", "", "security `preset` (safe, balanced, power, developer) replacing the input's permission and preset")
	timeout := fs.Duration("timeout", gate.DefaultTimeout, "bound on one evaluation")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError("policy eval takes one INPUT file (or - for stdin), got %d arguments", fs.NArg())
	}
	if *policyPath != "" && *opaURL != "" {
		return usageError("--policy and --opa-url are exclusive: the remote server holds its own policy")
	}
	name := fs.Arg(0)
	data, err := readBounded(name, gate.MaxInputBytes, stdio)
	if err != nil {
		return usageError("read %s: %v", name, err)
	}
	req, err := gate.ReadInput(data)
	if err != nil {
		return usageError("%s: %v", name, err)
	}
	if *preset != "" {
		req.Session.Permission, req.Session.Preset = "", *preset
	}
	g, err := gate.New(ctx, gate.Options{
		PolicyPath: *policyPath,
		OPAURL:     *opaURL,
		Timeout:    *timeout,
		Audit: func(e gate.Event) {
			fmt.Fprintf(stdio.Err, "aegis: audit: %s: %s\n", e.Kind, e.Reason)
		},
	})
	if err != nil {
		// The gate denies everything; say why, and still print the record.
		fmt.Fprintf(stdio.Err, "aegis: %v\n", err)
	}
	d := g.Decide(ctx, req)
	enc := json.NewEncoder(stdio.Out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d.DecisionRecord); err != nil {
		return err
	}
	if !d.Allow {
		return exitCode(ExitFailure, nil)
	}
	return nil
}

// readBounded reads a file, or stdin for "-", refusing more than limit
// bytes.
func readBounded(path string, limit int64, stdio Stdio) ([]byte, error) {
	var r io.Reader = stdio.In
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

func runPolicyTest(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("policy test", `[-v] [--min-coverage PERCENT] [DIR|BUNDLE.tar.gz]

Runs the Rego unit tests (test_* rules in *_test.rego files) of the policy in
DIR, or of the embedded policy without DIR, with OPA's tester and builtin
errors raised as in the gate, and reports the coverage of the policy files.

Exit status: 0 every test passed (and coverage reached --min-coverage),
1 a test failed or coverage fell short, 2 usage or a policy that does not load.`, stdio)
	verbose := fs.Bool("v", false, "print every test, not only failures")
	minCov := fs.Float64("min-coverage", 0, "fail when the policy files' coverage is below `PERCENT`")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return usageError("policy test takes at most one DIR, got %d arguments", fs.NArg())
	}
	report, err := gate.RunPolicyTests(ctx, fs.Arg(0))
	if err != nil {
		var le *gate.PolicyLoadError
		if errors.As(err, &le) {
			return usageError("%v", err)
		}
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		pass, fail, skip := 0, 0, 0
		for _, t := range report.Tests {
			status := "PASS"
			switch {
			case t.Error != "":
				status, fail = "ERROR", fail+1
			case t.Fail:
				status, fail = "FAIL", fail+1
			case t.Skip:
				status, skip = "SKIP", skip+1
			default:
				pass++
			}
			if *verbose || status != "PASS" && status != "SKIP" {
				fmt.Fprintf(stdio.Out, "%-5s %s.%s (%s) %v\n", status, t.Package, t.Name, t.Location, t.Duration.Round(time.Microsecond))
				if t.Error != "" {
					fmt.Fprintf(stdio.Out, "      %s\n", t.Error)
				}
			}
		}
		fmt.Fprintf(stdio.Out, "%d passed, %d failed, %d skipped\n", pass, fail, skip)
		for f, c := range report.Files {
			fmt.Fprintf(stdio.Out, "coverage %s: %.1f%%\n", f, c)
		}
		for _, nc := range report.NotCovered {
			fmt.Fprintf(stdio.Out, "not covered: %s\n", nc)
		}
		fmt.Fprintf(stdio.Out, "coverage: %.1f%% of the policy's lines\n", report.Coverage)
	}
	if !report.Passed() {
		return exitCode(ExitFailure, errors.New("policy tests failed"))
	}
	if report.Coverage < *minCov {
		return exitCode(ExitFailure, fmt.Errorf("policy coverage %.1f%% is below %.1f%%", report.Coverage, *minCov))
	}
	return nil
}
