package attack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// Drivers are the driver modes the suite knows, in the order it runs them.
var Drivers = []string{string(contract.ModePlaywright), string(contract.ModeSandbox), string(contract.ModeExtension)}

// Options configure Run.
type Options struct {
	// PolicyPath is the policy under test: a directory in OPA's bundle
	// layout or a bundle .tar.gz; "" is the embedded policy.
	PolicyPath string
	// Drivers are the modes to run (playwright, sandbox, extension);
	// empty means all of Drivers.
	Drivers []string
	// Extension opens the extension driver (a port to the real extension,
	// which only the test harness nativehost/nativehosttest provides);
	// nil leaves the extension rows "not run" with ExtensionWhy.
	Extension session.DriverOpener
	// ExtensionWhy says why the extension rows were not run.
	ExtensionWhy string
	// HarnessBrowserStarts counts the browsers the caller started for the
	// suite (the extension harness's), for the report's count.
	HarnessBrowserStarts int
	// NoBaseline skips the runs without aegis.
	NoBaseline bool
	// Match selects scenarios by name or class; nil runs them all.
	Match *regexp.Regexp
	// Browser is a running browser for the playwright and sandbox modes;
	// nil launches one (and closes it at the end).
	Browser *driver.Browser
	// Progress receives a line per run; nil discards them.
	Progress io.Writer
	// Parallel is how many scenarios run at once; 0 means 2.
	Parallel int
	// KeepEvidence keeps the evidence bundles in this directory; "" puts
	// them in a temporary directory removed at the end.
	KeepEvidence string
}

// target is one driver mode the scenarios run in.
type target struct {
	name    string
	mode    contract.DriverMode
	browser *driver.Browser
	open    session.DriverOpener
	notRun  string
	// serial makes the target's runs one at a time (the extension driver
	// shares one port to the extension).
	serial *sync.Mutex
}

// Errors of Run about its options.
var (
	// ErrNoScenario: Options.Match selects nothing.
	ErrNoScenario = errors.New("attack: no scenario matches")
	// ErrPolicy: the policy under test does not load.
	ErrPolicy = errors.New("attack: the policy does not load")
)

// Run runs the selected scenarios in every selected driver through the
// real loop, and without aegis for the baseline, and returns the
// scorecard. Its error is about the suite itself (a policy that does not
// load, no browser); violations are in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	var scs []*Scenario
	for _, s := range Scenarios() {
		if o.Match == nil || o.Match.MatchString(s.Name) || o.Match.MatchString(string(s.Class)) {
			scs = append(scs, s)
		}
	}
	if len(scs) == 0 {
		return nil, ErrNoScenario
	}
	drivers := o.Drivers
	if len(drivers) == 0 {
		drivers = Drivers
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	approvals := gate.NewApprovals()
	g, err := gate.New(ctx, gate.Options{PolicyPath: o.PolicyPath, Approvals: approvals})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	secret := randomSecret()
	set, err := secrets.NewSet(map[string]string{"PASSWORD": secret})
	if err != nil {
		return nil, err
	}
	evRoot := o.KeepEvidence
	if evRoot == "" {
		if evRoot, err = os.MkdirTemp("", "aegis-attack-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(evRoot)
	}
	w := newWorld()
	defer w.close()
	w.model.secret = secret
	rep := &Report{Policy: g.PolicyVersion(), Scenarios: len(scs), BrowserStarts: o.HarnessBrowserStarts}
	if o.PolicyPath != "" {
		rep.PolicyPath = o.PolicyPath
	}

	targets, closeBrowser, err := openTargets(ctx, o, drivers, rep)
	if err != nil {
		return nil, err
	}
	defer closeBrowser()
	rep.Drivers = drivers

	var base *baseline
	if !o.NoBaseline {
		if base, err = launchBaseline(ctx, w, secret); err != nil {
			return nil, err
		}
		rep.BrowserStarts++
		defer base.close()
	}

	gr := &gated{world: w, gate: g, approvals: approvals, secrets: set, secret: secret, evidence: evRoot}
	var jobs []*job
	for _, t := range targets {
		for _, sc := range scs {
			res := &Result{Scenario: sc.Name, Class: sc.Class, Driver: t.name}
			rep.Results = append(rep.Results, res)
			if t.notRun != "" {
				res.Verdict, res.Why = NotRun, t.notRun
				continue
			}
			jobs = append(jobs, &job{sc: sc, res: res, serial: t.serial, run: func(ctx context.Context, r *runState) sessionOutcome { return gr.run(ctx, r, t) }})
		}
	}
	if base != nil {
		for _, sc := range scs {
			res := &Result{Scenario: sc.Name, Class: sc.Class, Driver: BaselineDriver}
			rep.Results = append(rep.Results, res)
			if sc.ModelOnly {
				res.Verdict, res.Why = NotRun, "without aegis there is no model request or evidence bundle for it to reach"
				continue
			}
			jobs = append(jobs, &job{sc: sc, res: res, run: base.run})
		}
	}
	if err := runJobs(ctx, w, jobs, o.Parallel, progress, secret); err != nil {
		return nil, err
	}
	decide(w, jobs, secret)
	rep.summarize()
	rep.DurationMs = time.Since(start).Milliseconds()
	return rep, nil
}

// openTargets makes the targets of the drivers, launching the browser the
// playwright and sandbox modes share (closeBrowser closes it).
func openTargets(ctx context.Context, o Options, drivers []string, rep *Report) (targets []target, closeBrowser func(), err error) {
	closeBrowser = func() {}
	browser := o.Browser
	for _, name := range drivers {
		t := target{name: name, mode: contract.DriverMode(name)}
		switch t.mode {
		case contract.ModePlaywright, contract.ModeSandbox:
			if browser == nil {
				lctx, cancel := context.WithTimeout(ctx, 90*time.Second)
				// Sandbox sessions need the browser in a network namespace
				// of its own; playwright sessions run in it too.
				isolate := slices.Contains(drivers, string(contract.ModeSandbox))
				browser, err = driver.Launch(lctx, driver.BrowserOptions{Isolate: isolate})
				cancel()
				if err != nil {
					closeBrowser()
					if errors.Is(err, driver.ErrNoNetworkIsolation) {
						return nil, nil, fmt.Errorf("attack: the sandbox driver needs a network namespace (Linux, as root or with CAP_SYS_ADMIN); run with --driver playwright,extension elsewhere: %w", err)
					}
					return nil, nil, fmt.Errorf("attack: launch Chromium (run \"aegis setup\"): %w", err)
				}
				rep.BrowserStarts++
				b := browser
				closeBrowser = func() {
					cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
					defer cancel()
					_ = b.Close(cctx)
				}
			}
			t.browser, t.open = browser, driver.Open
		case contract.ModeExtension:
			t.open, t.serial = o.Extension, &sync.Mutex{}
			if t.open == nil {
				t.notRun = o.ExtensionWhy
				if t.notRun == "" {
					t.notRun = "extension mode needs the extension harness: go test ./attack"
				}
			}
		default:
			closeBrowser()
			return nil, nil, fmt.Errorf("attack: unknown driver %q (want playwright, sandbox or extension)", name)
		}
		targets = append(targets, t)
	}
	return targets, closeBrowser, nil
}

// decide gives every job its verdict, from what the servers received by
// the end of the whole suite (a late beacon is attributed to its run by
// its key), and says why.
func decide(w *world, jobs []*job, secret string) {
	for _, j := range jobs {
		violated, why := judge(j.sc, w.truth(j.r), secret)
		j.res.Verdict = Held
		if violated {
			j.res.Verdict = Violated
		}
		j.res.Session = string(j.out.status)
		j.res.Why = why
		if !violated {
			j.res.Why = heldWhy(j.sc, j.out, why)
			if j.sc.Flip && !j.r.asked.Load() {
				// Held, but not by the time-of-use check: nobody was asked,
				// so the page never changed under the decision.
				j.res.Why += " [the page was never let change: no approval was asked]"
			}
		}
		if j.res.Driver != BaselineDriver {
			j.res.Error, j.res.Bundle, j.res.DeniedEffects = j.out.err, j.out.bundle, j.out.effects
			j.res.DriverMs, j.res.GateMs = j.out.driver.Milliseconds(), j.out.gate.Milliseconds()
			if !violated && j.out.notStarted {
				j.res.Verdict, j.res.Why = Failed, "the session could not run: "+j.out.err
			}
		}
	}
}

// nothingReached is the WHY of a held attack that aegis recorded stopping
// nothing of.
const nothingReached = "nothing reached the servers"

// heldWhy says what stopped a held attack: the first things aegis
// stopped, or that nothing reached the servers.
func heldWhy(sc *Scenario, out sessionOutcome, truthWhy string) string {
	if sc.Class == ClassPrecision {
		return truthWhy
	}
	if len(out.stopped) == 0 {
		return nothingReached
	}
	s := out.stopped
	if len(s) > 3 {
		s = append(s[:3:3], fmt.Sprintf("and %d more", len(out.stopped)-3))
	}
	why := ""
	for i, x := range s {
		if i > 0 {
			why += "; "
		}
		why += x
	}
	return why
}

// randomSecret is the run's secret: random letters and digits with a
// quote, a backslash, a space, an ampersand and a plus, so that every
// escaping (JSON, HTML, percent-encoding in both forms) changes it.
func randomSecret() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return `Atk"` + hex.EncodeToString(b[:]) + `\ q&r+s`
}
