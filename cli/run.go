package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/user"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/live"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/session"
)

func init() {
	register(command{
		name:    "run",
		summary: "run a governed browser session on a task (TASK.json or --goal and --url)",
		run:     runRun,
	})
}

// Exit codes of "aegis run" (and of "aegis demo"), one per session status,
// on top of ExitOK (completed) and ExitUsage.
const (
	ExitAborted             = 3 // aborted (Ctrl-C, SIGTERM, a person's refusal that left no other way)
	ExitDurationExceeded    = 4 // the duration budget ran out
	ExitActionLimitExceeded = 5 // the action budget ran out
	ExitSessionFailed       = 6 // the session failed (model, browser, policy, loop...)
)

// Environment variables that configure the model when the flags do not.
const (
	EnvModel      = "AEGIS_MODEL"
	EnvLLMBaseURL = "AEGIS_LLM_BASE_URL"
)

// DefaultEvidenceDir is where bundles go without --evidence.
const DefaultEvidenceDir = "aegis-evidence"

// DefaultPreset is the policy preset of a run without --preset.
const DefaultPreset = "power"

const runUsage = `[flags] TASK.json|-
       aegis run [flags] --goal "..." --url URL [--url URL...]

Runs one governed browser session: the Planner and the Navigator propose
actions, the policy gate judges every one of them (with the element the
browser resolved), a human or a rule approves the high-risk ones, the
driver runs what was allowed, and an evidence bundle records everything
and is sealed however the session ends.

TASK.json is a ComputerUseInput (seed 003): {"goal", "urls", "maxActions",
"maxDurationMs", "hints"}. hints.maxTokens (or --max-tokens) bounds the
tokens of the model calls, the planner's and the navigator's: the session
ends aborted once they pass it, or before a call estimated to pass it (the
prompt at about four bytes a token, calibrated by the usage the endpoint
reports, plus the completion bound). hints.maxCostUsd (or --max-cost-usd)
bounds what they cost in US dollars the same way, at the model's prices in
the model registry (--model-registry, required with a cost budget). The
urls are the allowlist (by origin); the first is opened first. hints.steps (plain-language steps: navigate, click, type,
select, scroll, wait, extract, expect) drive the steps agent; hints.script
(raw BrowserActions) the script agent.

Agent (--agent): llm when a model is configured (--model or $AEGIS_MODEL,
with --llm-base-url or $AEGIS_LLM_BASE_URL, and the key from --llm-key-file
or $OPENAI_API_KEY), else steps when the task has hints.steps, else script
when it has hints.script.

Secrets: write {{secret:NAME}} in a type step or action; the value comes
from $AEGIS_SECRET_NAME or --secrets-file (mode 0600), whose lines are
NAME=value or NAME@ORIGIN[,ORIGIN...]=value, such as
  SHOP_PASSWORD@https://shop.example,http://127.0.0.1:8080=s3cr3t
to bind the secret to the origins it may be typed on; a secret declared
without origins (and an environment secret) is bound to the task's first
origin. The model, the policy, the evidence and the output only ever see
the placeholder. The policy lets the secret be typed only as the whole
text of a type action into a field sensitive by its own facts (a password
input, a sensitive autocomplete such as current-password) on a bound
origin: that needs no approval (medium risk), so a run without a terminal
(--approve deny) can sign in. Every other use of it (another origin, a
field that only its name or label calls a password, a URL, a select) is
denied. Everything printed on stdout and stderr passes the secrets'
egress filter: a value the page echoes shows as its placeholder.

Approvals (--approve): the policy pauses high-risk actions (payments,
deletions, typing text of the model's own into sensitive fields) for a
human. ask prompts on the terminal (only when stdin is one; the default
then); deny refuses them all; without a terminal and without --approve
nobody can be asked, and each is refused, saying so;
low-and-medium-only approves what the policy rates low or medium risk and
refuses high risk: with the default preset it approves nothing, with
--preset balanced it confirms ordinary input and navigation. An approval
is bound to the action's hash, used once, and a request unanswered after
--approval-timeout is refused.

Live channel (--listen ADDR): serves the session's stream of events and a
control channel over WebSocket at ws://ADDR/v1/sessions/SESSION-ID/stream,
and a web console at http://ADDR/ that shows the steps and asks for the
approvals (--approve live, the default with --listen) and can abort. ADDR
is PORT or HOST:PORT, loopback unless a host is named. Every connection
needs the bearer token aegis prints to stderr and writes to a 0600 file
(--listen-token-file); live/PROTOCOL.md documents the wire. When the run
ends, the browser is closed and the console stays available for --linger
(default 5m when stderr is a terminal, else 0), until Ctrl-C; --linger 0
exits at once.

Witness (--witness URL|file:PATH): the bundle's writer sends a signed
checkpoint of its ledger (size, Merkle root, head hash) as the session
starts, after every approval, every --checkpoint-every entries and at
the seal to a witness, aegis witness
serve or an append-only log file on another path, so that aegis verify
--witness can later tell a truncated or re-signed bundle. The checkpoints
are signed with --sign-key, else with a key made for the session. A
checkpoint the witness does not take never holds the session up: it is
recorded in the bundle (an error event) and reported; with
--witness-required it aborts the run and the run fails (exit 6).

Presets (--preset): power (default: full permission; high risk still
needs approval), balanced (every navigate, click, type and select needs
approval), safe (nothing may act), developer (as power).

Classification (--classification public|restricted|sensitive): the data
classification of the session, the stricter (sensitive > restricted >
public) of the flag and the task's hints.classification, restricted when
neither names one. With the policy data it decides whether a screenshot
(masked) may be shown to the model, a vision escalation: by default yes
for public and restricted sessions, never for sensitive ones. The model
and the page cannot change it.

Vision (--vision): the model accepts images. When the policy allows vision
for the session's classification (above), the model may ask to see the
page (an extract screenshot with "vision": true), and aegis shows it a
screenshot after a failed step or when it makes no progress (a bounded
number of times): masked like every screenshot, stored in the bundle, its
hash in the model-call record, each one a decision of the policy. Without
--vision the model is never told of vision nor shown an image. With
--model-registry the registry's "images" says whether the model accepts
images, and --vision against it is a usage error; the offline agents never
see images.

Output: a progress line per action on stderr, such as
  step 3/50  click #sign-in "Sign in"  allowed (medium)  12ms  tokens 12,345/50,000
and the ComputerUseOutput JSON on stdout, indented (--json: one compact
line, for machines). Its "status" is seed 003's; a failed session says
"aborted" there and "endStatus": "failed" with "error" beside it. Its
"evidence" member names the bundle: dir, sealed, headHash. The bundle goes
to --evidence DIR/SESSION-ID (default ./` + DefaultEvidenceDir + `); verify it with
aegis verify DIR/SESSION-ID.

Ctrl-C (or SIGTERM) prints "stopping..." and ends the session aborted,
its bundle sealed; a second Ctrl-C quits at once, the bundle unsealed.

Exit status: 0 completed, 3 aborted, 4 duration_exceeded,
5 action_limit_exceeded, 6 failed, 2 usage (bad flags or task, unreadable
secrets file or key, policy that does not load).`

// runOptions are the flags of "aegis run".
type runOptions struct {
	goal         string
	urls         stringList
	driver       string
	agent        string
	policy       string
	opaURL       string
	preset       string
	maxActions   int
	maxTokens    int
	maxCostUSD   float64
	maxDuration  time.Duration
	evidence     string
	json         bool
	baseURL      string
	model        string
	keyFile      string
	secretsFile  string
	approve      string
	approvalWait time.Duration
	endpoint     string
	noIsolation  bool
	headed       bool
	signKey      string
	listen       string
	tokenFile    string
	linger       time.Duration
	// lingerSet is whether --linger was given: without it, a run whose
	// stderr is no terminal (CI) does not linger.
	lingerSet bool
	// witness, witnessRequired, checkpointEvery: cli/witness.go.
	witness         string
	witnessRequired bool
	checkpointEvery int

	// modelRegistry is --model-registry: cli/modelreg.go.
	modelRegistry string
	// vision is --vision: the model accepts images (without a registry).
	vision bool
	// classification is --classification, which runTask records in the
	// task's hints (setClassification).
	classification string
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// addSessionFlags declares the flags of the sessions that run, demo and
// suite share; addRunFlags those of run and demo alone (one session: one
// browser endpoint, a live channel, a witness, a person's approvals).
func addSessionFlags(fs *flag.FlagSet, o *runOptions) {
	fs.StringVar(&o.driver, "driver", string(contract.ModeSandbox), "browser `driver`: sandbox (Playwright with every request outside the allowlist blocked) or playwright")
	fs.StringVar(&o.policy, "policy", "", "policy `DIR` in OPA's bundle layout, or an OPA bundle .tar.gz (default: the embedded policy)")
	fs.StringVar(&o.opaURL, "opa-url", "", "evaluate the policy on the OPA server at `URL` instead of the embedded engine")
	fs.StringVar(&o.preset, "preset", DefaultPreset, "security `preset`: power (full permission; high risk still needs approval), balanced, safe or developer")
	fs.StringVar(&o.evidence, "evidence", DefaultEvidenceDir, "evidence root `DIR`: each bundle goes to DIR/SESSION-ID")
	fs.StringVar(&o.baseURL, "llm-base-url", "", "OpenAI-compatible endpoint `URL`, up to /v1 (default $"+EnvLLMBaseURL+", else OpenAI)")
	fs.StringVar(&o.model, "model", "", "model `id`; setting one selects the LLM agents (default $"+EnvModel+")")
	fs.StringVar(&o.modelRegistry, "model-registry", "", "refuse a model that the registry `FILE` (schemas/model-registry.schema.json) does not list for the endpoint, or whose identity or digest the endpoint reports differently; the reported identity goes to the manifest")
	fs.BoolVar(&o.vision, "vision", false, "the model accepts images: when the policy allows vision for the task's classification, the model may be shown masked screenshots of the page (with --model-registry, the registry's \"images\" decides)")
	fs.StringVar(&o.keyFile, "llm-key-file", "", "read the API key from `FILE` (mode 0600) instead of $OPENAI_API_KEY")
	fs.StringVar(&o.secretsFile, "secrets-file", "", "read secrets from `FILE`: NAME=value or NAME@ORIGIN,...=value lines, mode 0600 ($AEGIS_SECRET_NAME gives the value)")
	fs.BoolVar(&o.headed, "headed", false, "show the browser window")
	fs.BoolVar(&o.noIsolation, "no-network-isolation", false, "let the sandbox run where the browser cannot get a network namespace of its own (not Linux, no CAP_SYS_ADMIN): the allowlist is then held by the filtering proxy and request routing alone, and UDP/WebRTC/DNS are not contained")
	fs.StringVar(&o.signKey, "sign-key", "", "sign the bundle's seal with the Ed25519 key in `FILE` (aegis keygen)")
}

// addRunFlags declares the session flags of run and demo that suite has
// not (see addSessionFlags).
func addRunFlags(fs *flag.FlagSet, o *runOptions) {
	fs.DurationVar(&o.approvalWait, "approval-timeout", session.DefaultApprovalTimeout, "refuse an approval request unanswered after `DURATION`")
	fs.StringVar(&o.endpoint, "browser-endpoint", "", "connect to the Playwright server at `ws://HOST:PORT/` instead of launching Chromium")
	fs.StringVar(&o.listen, "listen", "", "serve the live stream, control channel and web console on `ADDR` (PORT or HOST:PORT; loopback unless a host is named)")
	fs.StringVar(&o.tokenFile, "listen-token-file", "", "write the live channel's bearer token to `FILE` (0600; default: a file in the user cache directory)")
	fs.DurationVar(&o.linger, "linger", DefaultLinger, "with --listen: keep serving the console for `DURATION` after the run ends, until Ctrl-C (0: exit at once; default 0 when stderr is not a terminal)")
	fs.StringVar(&o.witness, "witness", "", "send signed checkpoints of the bundle's ledger to the witness at `URL` (http(s)://, aegis witness serve) or file:PATH (an append-only log file)")
	fs.BoolVar(&o.witnessRequired, "witness-required", false, "fail closed: a checkpoint the witness does not take aborts the run, and the run fails (exit 6)")
	fs.IntVar(&o.checkpointEvery, "checkpoint-every", 0, fmt.Sprintf("send a checkpoint every `N` ledger entries, besides those at the start, after each approval and at the seal (default %d)", evidence.DefaultCheckpointEvery))
}

// addAgentFlag declares --agent as run and suite have it.
func addAgentFlag(fs *flag.FlagSet, o *runOptions) {
	fs.StringVar(&o.agent, "agent", "", "`agent`: llm, steps or script (default: llm with a model, else steps or script by the task's hints)")
}

func runRun(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("run", runUsage, stdio)
	var o runOptions
	fs.StringVar(&o.goal, "goal", "", "the task's `goal` (with --url instead of TASK.json)")
	fs.Var(&o.urls, "url", "an allowed `URL` (repeatable; the first is opened first)")
	addAgentFlag(fs, &o)
	fs.IntVar(&o.maxActions, "max-actions", 0, "action budget, 1 to 200 (default the task's, else 50)")
	fs.DurationVar(&o.maxDuration, "max-duration", 0, "duration budget, 1s to 30m (default the task's, else 10m)")
	fs.IntVar(&o.maxTokens, "max-tokens", 0, fmt.Sprintf("token budget of the model calls (prompt and completion, planner and navigator), 1 to %s; sets the task's hints.maxTokens (default the task's, else none)", text.Thousands(contract.MaxTaskTokens)))
	fs.Float64Var(&o.maxCostUSD, "max-cost-usd", 0, fmt.Sprintf("cost budget of the model calls in US `dollars` (more than 0, at most %s), priced from --model-registry; sets the task's hints.maxCostUsd (default the task's, else none)", text.Thousands(contract.MaxTaskCostUSD)))
	fs.StringVar(&o.classification, "classification", "", "data `classification` of the session: public, restricted or sensitive; the stricter of this and the task's hints.classification applies (default restricted); only public and restricted sessions may show a screenshot to the model")
	fs.StringVar(&o.approve, "approve", "", "approval requests: ask (default on a terminal), live (default with --listen), deny (default otherwise) or low-and-medium-only")
	fs.BoolVar(&o.json, "json", false, "print the output as one compact JSON line (default indented)")
	addSessionFlags(fs, &o)
	addRunFlags(fs, &o)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	o.lingerSet = flagSet(fs, "linger")
	in, err := runTask(&o, pos, stdio)
	if err != nil {
		return err
	}
	approver, err := runApprover(&o, stdio)
	if err != nil {
		return err
	}
	return runSession(ctx, &o, in, approver, stdio, nil)
}

// runTask builds the task from TASK.json or --goal/--url, and applies the
// budget flags.
func runTask(o *runOptions, pos []string, stdio Stdio) (contract.Input, error) {
	var in contract.Input
	var file string // the TASK.json, and its bytes
	var doc []byte
	switch {
	case len(pos) > 1:
		return in, usageError("run takes one TASK.json, got %d arguments", len(pos))
	case len(pos) == 1:
		if o.goal != "" || len(o.urls) > 0 {
			return in, usageError("give a TASK.json or --goal and --url, not both")
		}
		data, err := readBounded(pos[0], schemas.MaxDocumentBytes, stdio)
		if err != nil {
			return in, usageError("read %s: %v", pos[0], err)
		}
		if err := contract.Decode(schemas.KindInput, data, &in); err != nil {
			return in, taskError(err, pos[0], data, &runOptions{}) // the flags are not applied yet
		}
		file, doc = pos[0], data
	default:
		if o.goal == "" || len(o.urls) == 0 {
			return in, usageError("run needs a TASK.json, or --goal and at least one --url (aegis help run)")
		}
		in = contract.Input{Goal: o.goal, URLs: o.urls}
	}
	if o.maxActions != 0 {
		in.MaxActions = &o.maxActions
	}
	if o.maxDuration != 0 {
		ms := int(o.maxDuration.Milliseconds())
		in.MaxDurationMs = &ms
	}
	if o.maxTokens != 0 {
		if o.maxTokens < 1 || o.maxTokens > contract.MaxTaskTokens {
			return in, usageError("--max-tokens %d: want 1 to %s", o.maxTokens, text.Thousands(contract.MaxTaskTokens))
		}
		var err error
		if in, err = in.WithMaxTokens(o.maxTokens); err != nil {
			return in, usageError("--max-tokens: %v", err)
		}
	} else if _, err := in.MaxTokens(); err != nil {
		return in, usageError("%s: %v", taskName(file), err)
	}
	if o.maxCostUSD != 0 {
		if !(o.maxCostUSD > 0) || o.maxCostUSD > contract.MaxTaskCostUSD {
			return in, usageError("--max-cost-usd %v: want more than 0 and at most %s (US dollars)", o.maxCostUSD, text.Thousands(contract.MaxTaskCostUSD))
		}
		var err error
		if in, err = in.WithMaxCostUSD(o.maxCostUSD); err != nil {
			return in, usageError("--max-cost-usd: %v", err)
		}
	} else if _, err := in.MaxCostUSD(); err != nil {
		return in, usageError("%s: %v", taskName(file), err)
	}
	in, err := setClassification(o.classification, in, file)
	if err != nil {
		return in, err
	}
	if err := checkTaskURLs(in.URLs, file); err != nil {
		return in, err
	}
	if _, err := contract.Encode(schemas.KindInput, in); err != nil {
		return in, taskError(err, file, doc, o)
	}
	return in, nil
}

// runApprover picks the approver of --approve; nil means the live
// channel's (runSession makes it).
func runApprover(o *runOptions, stdio Stdio) (session.Approver, error) {
	tty := isTerminal(stdio.In)
	flagValue := o.approve
	switch {
	case flagValue == "" && o.listen != "":
		flagValue = ApproveLive
	case flagValue == "":
		flagValue = string(session.ApproveDeny)
		if tty {
			flagValue = string(session.ApproveAsk)
		}
	}
	if flagValue == ApproveLive {
		if o.listen == "" {
			return nil, usageError("--approve=live needs --listen ADDR: the live channel's clients answer the approvals")
		}
		return nil, nil
	}
	mode, err := session.ParseApproveMode(flagValue)
	if err != nil {
		return nil, usageError("--approve: %v", err)
	}
	if o.approve == "" && !tty {
		// Nobody chose to refuse: nobody can be asked.
		return nobodyApprover{out: stdio.Err}, nil
	}
	if mode != session.ApproveAsk {
		return session.PolicyApprover{Mode: mode}, nil
	}
	if !tty {
		return nil, usageError("--approve=ask needs an interactive terminal on stdin (piped input cannot approve actions); use deny or low-and-medium-only")
	}
	name := "terminal"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = "terminal:" + u.Username
	}
	return session.NewTerminalApprover(stdio.In, stdio.Err, name), nil
}

// statusExit maps a session status to the exit code of run and demo.
func statusExit(s contract.SessionStatus) int {
	switch s {
	case contract.SessionCompleted:
		return ExitOK
	case contract.SessionAborted:
		return ExitAborted
	case contract.SessionDurationExceeded:
		return ExitDurationExceeded
	case contract.SessionActionLimitExceeded:
		return ExitActionLimitExceeded
	}
	return ExitSessionFailed
}

// sessionHooks lets the demo add to a run: more secrets and its own
// summary.
type sessionHooks struct {
	secrets map[string]string
	// done, when set, prints the result instead of the output JSON, to
	// out (stdout through the egress filter).
	done func(res session.Result, out io.Writer) error
}

// runSession builds everything a session needs from the options, runs it,
// prints the progress and the output, and returns the exit code as an
// error.
func runSession(ctx context.Context, o *runOptions, in contract.Input, approver session.Approver, stdio Stdio, hooks *sessionHooks) (err error) {
	if o.listen != "" && !o.lingerSet && !isTerminal(stdio.Err) {
		// Nobody watches the terminal (CI, a service): nobody reads the
		// console after the run either.
		o.linger = 0
	}
	var extra map[string]string
	if hooks != nil {
		extra = hooks.secrets
	}
	env, err := newSessionEnv(ctx, o, stdio, extra)
	if err != nil {
		return err
	}
	// From here on, everything aegis prints passes the egress filter.
	stdio = env.stdio
	defer env.end(&err)
	cfg, agent, err := env.config(ctx, in, approver)
	if err != nil {
		return err
	}
	o.agent = agent
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	sw, err := openSessionWitness(o, &cfg, cancelRun)
	if err != nil {
		return err
	}
	var lc *liveChannel
	if o.listen != "" {
		var liveApprover *live.Approver
		if approver == nil {
			liveApprover = live.NewApprover()
		}
		if o.linger < 0 {
			return usageError("--linger %s: want 0 or more", o.linger)
		}
		if lc, err = startLive(o.listen, "--listen", o.tokenFile, liveApprover, stdio); err != nil {
			return err
		}
		lc.lingerFor = o.linger
		defer func() {
			// The console only reads what the run recorded: the browsers
			// and the driver are closed, and all output written, before
			// it lingers.
			env.close()
			lc.linger(ctx, stdio)
			lc.close()
		}()
		if liveApprover != nil {
			cfg.Approver = &announcedApprover{next: liveApprover, out: stdio.Err, timeout: o.approvalWait, console: lc.consoleURL, tokenFile: lc.tokenFile}
		}
	}
	s, err := session.New(cfg)
	if err != nil {
		return usageError("%v", err)
	}
	fmt.Fprintf(stdio.Err, "aegis: session %s: %s\n", s.ID(), session.Sanitize(in.Goal, 200))
	if lc != nil {
		lc.add(s, in.Goal, o.evidence, stdio)
	}
	res, runErr := s.Run(ctx)
	if res.Output.ComputerUseSessionID == "" {
		// Not even started: nothing to print but the error.
		return exitCode(ExitSessionFailed, runErr)
	}
	var b []byte
	if o.json {
		b, err = json.Marshal(res.Output)
	} else {
		b, err = json.MarshalIndent(res.Output, "", "  ")
	}
	if err != nil {
		return exitCode(ExitSessionFailed, err)
	}
	if hooks == nil || hooks.done == nil {
		fmt.Fprintf(stdio.Out, "%s\n", b)
	}
	fmt.Fprintln(stdio.Err, endLine(res))
	if sw != nil {
		if err := sw.finish(stdio); err != nil {
			return err
		}
	}
	if hooks != nil && hooks.done != nil {
		if err := hooks.done(res, stdio.Out); err != nil {
			return err
		}
	}
	code := statusExit(res.Status)
	if code == ExitOK {
		return nil
	}
	if runErr != nil {
		return exitCode(code, runErr)
	}
	return exitCode(code, nil)
}

// loadSigner loads the seal signing key.
func loadSigner(path string) (evidence.Signer, error) {
	s, err := evidence.LoadSigner(path)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// taskName names where the task came from, for errors.
func taskName(file string) string {
	if file == "" {
		return "the task"
	}
	return file
}

// setClassification applies --classification to the task: it parses the
// flag and the task's hints.classification (a bad one is a usage error;
// file names the task file, "" for --goal) and, when the flag names one,
// records it in the task's hints (contract.Input.WithClassification), as
// --max-tokens is recorded, so that the manifest's task says what the
// session ran under; the flag never makes the task's own weaker
// (contract.Stricter). The session resolves the classification from the
// task (restricted when it names none).
func setClassification(flag string, in contract.Input, file string) (contract.Input, error) {
	fromTask, err := in.Classification()
	if err != nil {
		return in, usageError("%s: %v", taskName(file), err)
	}
	if flag == "" {
		return in, nil
	}
	c, err := contract.ParseClassification(flag)
	if err != nil {
		return in, usageError("--classification %q: want %s%s", flag, contract.ClassificationNames(), didYouMean(flag, strings.Split(contract.ClassificationNames(), ", ")))
	}
	if in, err = in.WithClassification(contract.Stricter(c, fromTask)); err != nil {
		return in, usageError("--classification: %v", err)
	}
	return in, nil
}
