package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
)

const policyDiffUsage = `BUNDLE [--policy DIR|BUNDLE.tar.gz] [--preset P] [--json]

Re-evaluates every recorded decision of an evidence bundle under another
policy (default: the embedded one) and lists the decisions that would
change: the verdict (allow, approval, deny), or the rules of a denial, with
the recorded and the new reasons. Each decision is judged as the gate
judged it then: the gate's inputs are rebuilt from the record (the action,
the target element the gate judged, the page, the allowlist, the budget,
the permission level), at the recorded evaluation time, with no approval
presented. A decision is marked exact when the rebuilt inputs reproduce its
recorded action hash.

An action that was denied never ran, and the bundle keeps only its hash:
such decisions cannot be re-evaluated and are listed apart. So are the
decisions about an action on an element in a bundle that predates target
recording (its decisions do not hold the element judged).

Exit status: 0 no decision changes, 1 some decision changes (or the bundle
was refused: tampered, or unsealed without --allow-unsealed), 2 usage, an
unreadable bundle or a policy that does not load.`

func runPolicyDiff(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("policy diff", policyDiffUsage, stdio)
	policy := fs.String("policy", "", "the policy `DIR` (or OPA bundle .tar.gz) to judge by (default: the embedded policy)")
	preset := fs.String("preset", "", "security `preset` replacing the permission level the recording applied")
	allowUnsealed := fs.Bool("allow-unsealed", false, "read an unsealed bundle (its intact entries)")
	pubFile := fs.String("pubkey", "", "trusted public key `FILE`: the bundle's seal must be signed by it")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageError("policy diff takes one BUNDLE, got %d arguments", len(pos))
	}
	opts := audit.DiffOptions{PolicyPath: *policy, Preset: *preset, AllowUnsealed: *allowUnsealed}
	if *pubFile != "" {
		if opts.PubKey, err = evidence.LoadPublicKey(*pubFile); err != nil {
			return usageError("%v", err)
		}
	}
	r, err := audit.DiffPolicy(ctx, pos[0], opts)
	if err != nil {
		var te *audit.TamperedError
		var le *gate.PolicyLoadError
		var pe *os.PathError
		switch {
		case errors.As(err, &te), errors.Is(err, evidence.ErrUnsealed):
			return exitCode(ExitFailure, err)
		case errors.As(err, &le), errors.As(err, &pe):
			return usageError("%v", err)
		}
		return exitCode(ExitFailure, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printDiff(stdio, r)
	}
	if len(r.Changes) > 0 {
		return exitCode(ExitFailure, nil)
	}
	return nil
}

func printDiff(stdio Stdio, r *audit.DiffReport) {
	w := stdio.Out
	fmt.Fprintf(w, "session %s: recorded under policy %s, judged again under %s\n", termSafe(r.SessionID, 128), short12(r.RecordedPolicy), short12(r.Policy))
	for _, c := range r.Changes {
		exact := "exact"
		if !c.Exact {
			exact = "approximate"
		}
		what := ""
		if c.Effect != nil {
			what = " effect " + termSafe(audit.EffectTitle(*c.Effect), 200)
		}
		fmt.Fprintf(w, "step %d %s%s (%s, decision %s, %s): %s -> %s\n", c.Step, termSafe(c.ActionID, 40), what, c.ActionName, c.DecisionID, exact, c.Recorded.Verdict, c.Now.Verdict)
		printReasons(stdio, "recorded", c.Recorded)
		printReasons(stdio, "now", c.Now)
		for _, g := range c.Gaps {
			fmt.Fprintf(w, "    note: %s\n", termSafe(g, 300))
		}
	}
	for _, u := range r.Unevaluated {
		fmt.Fprintf(w, "step %d %s (%s, decision %s): not re-evaluated (recorded %s): %s\n", u.Step, termSafe(u.ActionID, 40), u.ActionName, u.DecisionID, u.Recorded.Verdict, termSafe(u.Why, 300))
	}
	fmt.Fprintf(w, "%d decisions judged again (%d exact), %d would change, %d could not be re-evaluated\n", r.Evaluated, r.Exact, len(r.Changes), len(r.Unevaluated))
}

func printReasons(stdio Stdio, label string, v audit.Verdict) {
	if len(v.Reasons) == 0 {
		fmt.Fprintf(stdio.Out, "    %-8s %s (%s, risk %s)\n", label+":", v.Verdict, v.Result, v.Risk)
		return
	}
	for i, r := range v.Reasons {
		head := ""
		if i == 0 {
			head = label + ":"
		}
		fmt.Fprintf(stdio.Out, "    %-8s %s: %s\n", head, termSafe(r.Rule, 64), termSafe(r.Message, 300))
	}
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
