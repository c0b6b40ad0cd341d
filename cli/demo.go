package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/session"
)

func init() {
	register(command{
		name:    "demo",
		summary: "run a governed session on the embedded demo shop and verify its evidence (--serve ADDR: only serve the shop)",
		run:     runDemo,
	})
}

const demoUsage = `[--evidence DIR] [--approve auto|ask|live|deny|low-and-medium-only] [--listen ADDR] [flags]
       aegis demo --serve ADDR

Serves the embedded demo shop on 127.0.0.1 (a free port) and runs a
realistic task on it with every safeguard of "aegis run": sign in with a
secret password, fill and submit the order form, extract the orders table.
Then it verifies the evidence bundle (as "aegis verify" does) and prints a
summary and where the bundle is. "make demo" runs it.

The agent is the offline steps agent, or the LLM agents when a model is
configured (--model or $AEGIS_MODEL; see aegis help run). The password is
the demo's own secret DEMO_PASSWORD: it is typed into the password field
and appears in no model request, log line or bundle file.

Typing the password needs no approval: DEMO_PASSWORD is bound to the
shop's origin (the task's first), and the policy lets a secret be typed
into a password field of an origin it is bound to (medium risk). One action
needs approval under the default preset: "Place order". --approve auto (the
default; only the demo has it) approves it as "aegis demo", since the shop
is the demo's own on loopback; ask prompts on the terminal; deny and
low-and-medium-only refuse it, and the session fails after signing in, as
it should.

--listen ADDR serves the live channel and web console on ADDR, as "aegis
run" does (see aegis help run); the approvals then wait for the console
unless --approve names another mode. Open the printed console address to
watch, approve, deny or abort.

--witness URL|file:PATH sends the bundle's checkpoints to a witness, as
"aegis run" does (see aegis help run and aegis witness serve).

--serve ADDR only serves the shop on ADDR (such as 127.0.0.1:8080) until
interrupted, and prints its URL.

Ctrl-C prints "stopping...", ends the session aborted with its bundle
sealed, and verifies the bundle as after any run (exit 3).

Exit status: 0 completed and the bundle verifies, 1 the bundle does not
verify, otherwise as "aegis run": 3 aborted, 4 duration_exceeded,
5 action_limit_exceeded, 6 failed, 2 usage.`

// demoPassword is the secret the demo signs in with. Any password works on
// the demo shop; this one is long enough to be masked wherever it might
// appear, and recognizable when looking for leaks.
const demoPassword = "aegis-demo-Pa55w0rd-7f3c"

// demoSteps is the demo task for the steps agent.
var demoSteps = []string{
	`type "demo" into "Username"`,
	`type "{{secret:DEMO_PASSWORD}}" into "Password"`,
	`click "Sign in"`,
	`expect "Signed in as demo"`,
	`navigate /form`,
	`type "Ada Lovelace" into "Full name"`,
	`type "ada@example.com" into "Email"`,
	`select "Express" in "Shipping"`,
	`click "Gift wrap"`,
	`click "Place order"`,
	`expect "Thank you, Ada Lovelace!"`,
	`navigate /orders`,
	`extract table "Orders"`,
}

const demoGoal = `Sign in to the shop as user "demo" with the password {{secret:DEMO_PASSWORD}}. Then place an order on the order form for Ada Lovelace (email ada@example.com) with express shipping and gift wrap, and submit it. Finally go to the orders page and extract the orders table.`

// demoTask returns the demo's task on the shop at base.
func demoTask(base string) contract.Input {
	hints, _ := json.Marshal(map[string]any{"steps": demoSteps})
	maxActions, maxMs := 40, 180000
	return contract.Input{
		Goal:          demoGoal,
		URLs:          []string{base + "/login"},
		MaxActions:    &maxActions,
		MaxDurationMs: &maxMs,
		Hints:         hints,
	}
}

func runDemo(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("demo", demoUsage, stdio)
	var o runOptions
	serve := fs.String("serve", "", "only serve the demo shop on `ADDR` until interrupted")
	fs.StringVar(&o.approve, "approve", "auto", "approval requests: auto (approve as \"aegis demo\"; with --listen: live), ask, live, deny or low-and-medium-only")
	fs.StringVar(&o.agent, "agent", "", "`agent`: steps or llm (default: llm with a model, else steps)")
	addSessionFlags(fs, &o)
	addRunFlags(fs, &o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o.lingerSet = flagSet(fs, "linger")
	if fs.NArg() != 0 {
		fs.Usage()
		return usageError("demo takes no arguments, got %d", fs.NArg())
	}
	if *serve != "" {
		return serveDemo(ctx, *serve, stdio)
	}
	if o.agent == "script" {
		return usageError("the demo has no script: --agent steps or llm")
	}
	if o.listen != "" && !flagSet(fs, "approve") {
		o.approve = ApproveLive
	}
	if err := checkSessionFlags(&o); err != nil {
		return err // before the shop starts
	}
	var approver session.Approver
	var auto *demoApprover
	if o.approve == "auto" {
		auto = &demoApprover{out: stdio.Err}
		approver = auto
	} else {
		a, err := runApprover(&o, stdio)
		if err != nil {
			return err
		}
		approver = a
	}

	site, err := demosite.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return exitCode(ExitSessionFailed, err)
	}
	defer site.Close()
	fmt.Fprintf(stdio.Err, "aegis demo: the demo shop is at %s/\n", site.URL())
	in := demoTask(site.URL())
	hooks := &sessionHooks{
		secrets: map[string]string{"DEMO_PASSWORD": demoPassword},
		done: func(res session.Result, out io.Writer) error {
			return demoSummary(ctx, res, &o, auto, out)
		},
	}
	return runSession(ctx, &o, in, approver, stdio, hooks)
}

// demoApprover approves every request, as "aegis demo", saying so: the
// demo runs unattended on its own shop. It exists only in the demo.
type demoApprover struct {
	mu  sync.Mutex
	out io.Writer
	n   int
}

func (d *demoApprover) Approve(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	fmt.Fprintf(d.out, "aegis demo: approval required (%s risk): %s: approved automatically (the demo's own shop)\n", req.Risk, session.DescribeRequest(req))
	return session.ApprovalAnswer{Approved: true, Approver: "aegis demo (auto-approved)"}, nil
}

// demoVerifyTimeout bounds the demo's verification of its bundle.
const demoVerifyTimeout = 2 * time.Minute

// demoSummary verifies the bundle and prints what the demo did.
func demoSummary(ctx context.Context, res session.Result, o *runOptions, auto *demoApprover, out io.Writer) error {
	agent := o.agent
	if agent == "steps" {
		agent += " (set --model or $" + EnvModel + " to use the LLM agents)"
	}
	fmt.Fprintf(out, "aegis demo: %s in %s\n", res.Status, res.Timings.Total.Round(1e7))
	fmt.Fprintf(out, "  task:      sign in with a secret, fill and submit the order form, extract the orders table\n")
	fmt.Fprintf(out, "  agent:     %s\n", agent)
	approved := fmt.Sprintf("%d approved", res.Approved)
	if auto != nil {
		approved += " (automatically, by the demo)"
	}
	fmt.Fprintf(out, "  actions:   %d executed, %d denied, %s\n", res.Output.ActionsExecuted, res.Denied, approved)
	if res.Status != contract.SessionCompleted {
		fmt.Fprintf(out, "  summary:   %s\n", session.Sanitize(res.Output.Summary, 500))
	}
	for _, a := range res.Artifacts {
		fmt.Fprintf(out, "  extracted: %s from %s\n", a.Type, session.Sanitize(a.SourceURL, 200))
		var rows [][]string
		if a.Type == contract.ArtifactTable && json.Unmarshal([]byte(a.Value), &rows) == nil {
			for i, r := range rows {
				if i == 12 {
					fmt.Fprintf(out, "             ... %d more rows\n", len(rows)-i)
					break
				}
				for j := range r {
					r[j] = session.Sanitize(r[j], 40)
				}
				fmt.Fprintf(out, "             %s\n", strings.Join(r, " | "))
			}
		} else {
			fmt.Fprintf(out, "             %s\n", session.Sanitize(a.Value, 300))
		}
	}
	if res.Evidence.Dir == "" {
		fmt.Fprintf(out, "  evidence:  none: %s\n", res.Evidence.Error)
		return exitCode(ExitFailure, fmt.Errorf("no evidence bundle"))
	}
	fmt.Fprintf(out, "  evidence:  %s\n", res.Evidence.Dir)
	// The session is over and its bundle sealed: verify it even when ctx
	// ended it (Ctrl-C), which must not make a valid bundle look invalid.
	// A second interrupt ends the process (InterruptContext).
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), demoVerifyTimeout)
	defer cancel()
	rep, err := evidence.Verify(vctx, res.Evidence.Dir, evidence.VerifyOptions{})
	if err != nil {
		fmt.Fprintf(out, "  verify:    INVALID: %v\n", err)
		return exitCode(ExitFailure, fmt.Errorf("the evidence bundle does not verify: %w", err))
	}
	fmt.Fprintf(out, "  verify:    valid: sealed, %d ledger entries, %d decisions, %d events, head %s, merkle root %s\n",
		rep.Entries, rep.Counts.Decisions, rep.Counts.Events, short(rep.HeadHash), short(rep.MerkleRoot))
	fmt.Fprintf(out, "  check it:  aegis verify %s\n", res.Evidence.Dir)
	return nil
}

// serveDemo serves the demo site until ctx ends.
func serveDemo(ctx context.Context, addr string, stdio Stdio) error {
	s, err := demosite.Start(ctx, addr)
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	fmt.Fprintf(stdio.Out, "aegis demo site: %s/\n", s.URL())
	fmt.Fprintln(stdio.Err, "serving until interrupted (Ctrl-C)")
	<-ctx.Done()
	if err := s.Close(); err != nil {
		return exitCode(ExitFailure, err)
	}
	return nil
}
