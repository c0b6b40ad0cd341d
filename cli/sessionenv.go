package cli

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/modelreg"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// sessionEnv is what the sessions of one command share, made once from
// its flags (newSessionEnv): the secrets and the output through their
// egress filter, the policy gate and its approval store (the policy is
// compiled once), the browsers (launched on the first session's need),
// the seal's signer, and the model identities the registry checked. run
// and demo make one for their session, suite one for all its tasks, whose
// sessions it configures at once from several goroutines (config). A
// command defers end as soon as it has one.
type sessionEnv struct {
	o *runOptions
	// stdio is the command's output through the secrets' egress filter.
	stdio     Stdio
	set       *secrets.Set
	gate      *gate.Gate
	approvals *gate.Approvals
	browsers  *driver.Browsers
	signer    evidence.Signer
	// closeBrowsers closes the browsers (once, however often called);
	// flush writes what the egress filter holds back.
	closeBrowsers, flush func()

	mu   sync.Mutex
	regs map[string]*registryCall // by model: checkModelRegistry's answers
}

// registryCall is the registry check of one model, made once per command
// (sessionEnv.registry): its mutex is held while the endpoint is asked,
// so that the sessions of other models need not wait for it.
type registryCall struct {
	mu     sync.Mutex
	done   bool
	answer registryAnswer
	err    error // a refusal, remembered like an answer
}

// registryAnswer is checkModelRegistry's answer for a model: the identity
// the endpoint reported and the registry's entry (nil without a registry).
type registryAnswer struct {
	ident modelreg.Identity
	entry *modelreg.Model
}

// checkSessionOptions refuses the session flags whose values cannot work,
// before anything starts.
func checkSessionOptions(o *runOptions) error {
	if err := checkSessionFlags(o); err != nil {
		return err
	}
	mode := contract.DriverMode(o.driver)
	if mode != contract.ModeSandbox && mode != contract.ModePlaywright {
		return usageError("--driver %q: want sandbox or playwright", o.driver)
	}
	switch o.preset {
	case "safe", "balanced", "power", "developer":
	default:
		return usageError("--preset %q: want power, balanced, safe or developer", o.preset)
	}
	if o.policy != "" && o.opaURL != "" {
		return usageError("--policy and --opa-url are exclusive: the remote server holds its own policy")
	}
	return checkWitnessFlags(o)
}

// newSessionEnv checks the session flags and makes what the command's
// sessions share; extra are secrets of the command's own (the demo's),
// beside the environment's and --secrets-file's. The command defers
// env.end(&err) at once; everything it prints from then on goes through
// env.stdio.
func newSessionEnv(ctx context.Context, o *runOptions, stdio Stdio, extra map[string]string) (*sessionEnv, error) {
	if err := checkSessionOptions(o); err != nil {
		return nil, err
	}
	environ := os.Environ()
	for k, v := range extra {
		environ = append(environ, secrets.EnvPrefix+k+"="+v)
	}
	set, err := secrets.Load(environ, o.secretsFile)
	if err != nil {
		return nil, usageError("%v", err)
	}
	e := &sessionEnv{o: o, set: set, regs: map[string]*registryCall{}}
	e.stdio, e.flush = filterStdio(stdio, set)
	e.approvals = gate.NewApprovals()
	e.gate, err = gate.New(ctx, gate.Options{PolicyPath: o.policy, OPAURL: o.opaURL, Approvals: e.approvals})
	if err != nil {
		e.flush()
		return nil, e.redact(usageError("policy: %v", err))
	}
	if o.signKey != "" {
		if e.signer, err = loadSigner(o.signKey); err != nil {
			e.flush()
			return nil, e.redact(usageError("--sign-key: %v", err))
		}
	}
	e.browsers, e.closeBrowsers = commandBrowsers(e.stdio)
	return e, nil
}

// close closes the browsers and writes what the output filter holds back
// (again at end: both are safe to repeat).
func (e *sessionEnv) close() {
	e.closeBrowsers()
	e.flush()
}

// end is what a command does with its environment when it returns,
// deferred as soon as it is made (defer env.end(&err)): the command's
// error through the secrets' egress filter (Run prints it on the
// unfiltered stderr), then close.
func (e *sessionEnv) end(err *error) {
	*err = e.redact(*err)
	e.close()
}

// redact returns err with its message through the secrets' egress filter.
func (e *sessionEnv) redact(err error) error { return redactError(e.set, err) }

// registry is checkModelRegistry's answer for model, asked once per
// command: a refusal is remembered too (a suite of many tasks asks the
// endpoint once), but not an error of a context that ended (ctx is this
// session's: the next one asks again). Only the sessions of the same
// model wait for the endpoint's answer.
func (e *sessionEnv) registry(ctx context.Context, model string) (registryAnswer, error) {
	e.mu.Lock()
	c := e.regs[model]
	if c == nil {
		c = &registryCall{}
		e.regs[model] = c
	}
	e.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return c.answer, c.err
	}
	ident, entry, err := checkModelRegistry(ctx, e.o, model)
	if err != nil && ctx.Err() != nil {
		return registryAnswer{}, err
	}
	c.answer, c.err, c.done = registryAnswer{ident: ident, entry: entry}, err, true
	return c.answer, c.err
}

// config builds the configuration of a session of task in, answered by
// approver, and names the agent it picked (--agent, or the one the task's
// hints and the model select): its own model budget, Planner and
// Navigator, on the shared gate, browsers and signer, its bundle under
// --evidence, its progress lines on stderr. It may be called from several
// goroutines at once.
func (e *sessionEnv) config(ctx context.Context, in contract.Input, approver session.Approver) (session.Config, string, error) {
	o := *e.o // agentModel writes the agent it picks into the options: this task's own copy
	model, err := agentModel(&o, in)
	if err != nil {
		return session.Config{}, "", err
	}
	reg, err := e.registry(ctx, model)
	if err != nil {
		return session.Config{}, "", err
	}
	ident, entry := reg.ident, reg.entry
	budget, err := runBudget(&o, in, model, entry)
	if err != nil {
		return session.Config{}, "", err
	}
	pl, nav, err := agents(&o, in, model, e.set, budget)
	if err != nil {
		return session.Config{}, "", err
	}
	images, err := modelImages(&o, model, entry)
	if err != nil {
		return session.Config{}, "", err
	}
	stderr := e.stdio.Err
	return session.Config{
		Task:            in,
		Driver:          driver.Config{Mode: contract.DriverMode(o.driver), BrowserEndpoint: o.endpoint, Headed: o.headed, AllowNoNetworkIsolation: o.noIsolation, Browsers: e.browsers},
		OpenDriver:      driver.Open,
		Gate:            e.gate,
		Approvals:       e.approvals,
		Preset:          o.preset,
		Planner:         pl,
		Navigator:       nav,
		Approver:        approver,
		ApprovalTimeout: o.approvalWait,
		Secrets:         e.set,
		Evidence:        session.EvidenceDir(o.evidence),
		Signer:          e.signer,
		Budget:          budget,
		Model:           model,
		ModelID:         ident.ID,
		ModelDigest:     ident.Digest,
		ModelPath:       ident.ModelPath,
		ModelPrices:     modelPrices(entry),
		ModelImages:     images,
		Version:         Version,
		OnStep:          func(r session.StepReport) { fmt.Fprintln(stderr, progressLine(r)) },
	}, o.agent, nil
}
