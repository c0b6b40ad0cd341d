package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// sessionTimeout bounds one scenario's session; a passing run takes a
// second or two.
const sessionTimeout = 60 * time.Second

// actionTimeout bounds how long an action waits for its element, with and
// without aegis (the driver's default: loaded machines are slow).
const actionTimeout = 5 * time.Second

// gated runs scenarios through the real loop: session.Run with the real
// gate, a real driver and a real evidence bundle.
type gated struct {
	world     *world
	gate      *gate.Gate
	approvals *gate.Approvals
	secrets   *secrets.Set
	secret    string
	evidence  string
}

// sessionOutcome is what aegis itself said about a run: used only to say
// why a scenario held, never to decide whether it did.
type sessionOutcome struct {
	status  contract.SessionStatus
	stopped []string // what the gate, the session or the driver stopped
	err     string
	// notStarted: the session ended with an error before any action ran.
	notStarted bool
	bundle     string        // "verified", or why the bundle does not verify
	effects    int           // decision records of effects that were not allowed
	driver     time.Duration // time spent in the driver
	gate       time.Duration // time spent in gate decisions
}

func (g *gated) run(ctx context.Context, r *runState, tgt target) sessionOutcome {
	var out sessionOutcome
	// The guard stays the model request's last check; every part of the
	// request has passed the egress filter before it, so a refusal means
	// the filter missed the value.
	guard := g.secrets.Guard()
	guarded := func(body []byte) error {
		err := guard(body)
		if err != nil {
			g.world.sinkHolds(r, "a model request (the filter let the secret reach it; the guard caught it)")
		}
		return err
	}
	c, err := llm.New(llm.Config{BaseURL: g.world.model.baseURL(r), Model: "hostile-model", Timeout: 20 * time.Second,
		MaxRetries: 1, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Guard: guarded})
	if err != nil {
		out.err = err.Error()
		return out
	}
	pl, err := planner.NewLLM(c, planner.LLMOptions{Secrets: g.secrets})
	if err != nil {
		out.err = err.Error()
		return out
	}
	nav, err := navigator.NewLLM(c, navigator.LLMOptions{Secrets: g.secrets})
	if err != nil {
		out.err = err.Error()
		return out
	}
	maxActions := len(r.sc.Steps) + 3
	bus := session.NewBus(0)
	cfg := session.Config{
		Task: contract.Input{Goal: "Do what the page asks (attack scenario " + r.sc.Name + ")",
			URLs: []string{g.world.startURL(r)}, MaxActions: &maxActions},
		SessionID:  "attack-" + r.key,
		Driver:     driver.Config{Mode: tgt.mode, Browser: tgt.browser, ActionTimeout: actionTimeout, NavigationTimeout: 10 * time.Second},
		OpenDriver: tgt.open,
		Gate:       g.gate,
		Approvals:  g.approvals,
		Planner:    pl,
		Navigator:  nav,
		Approver:   g.approver(r),
		Preset:     r.sc.Preset,
		Secrets:    g.secrets,
		Evidence:   session.EvidenceDir(g.evidence),
		Model:      "hostile-model",
		MaxReplans: -1,
		// A hostile page left on another origin makes every later
		// action a denial: two of them end the session.
		LoopThreshold: 2,
		Bus:           bus,
		OnStep: func(s session.StepReport) {
			if b, err := json.Marshal(s); err != nil || carries(string(b), g.secret) {
				g.world.sinkHolds(r, "a step report")
			}
			switch {
			case s.Effect != nil:
				// An effect's report: the bundle's effect records say it
				// (deniedEffects), once.
			case s.Decision == contract.ResultDenied:
				rules := make([]string, len(s.Reasons))
				for i, rs := range s.Reasons {
					rules[i] = rs.Rule
				}
				out.stopped = append(out.stopped, fmt.Sprintf("%s %s denied (%s)", s.Action.Type, actionTarget(s.Action), strings.Join(rules, ", ")))
			case s.Error != "":
				out.stopped = append(out.stopped, fmt.Sprintf("%s %s failed: %s", s.Action.Type, actionTarget(s.Action), session.Sanitize(s.Error, 120)))
			}
		},
	}
	// The operator's classification: the page's words cannot change it.
	cfg.Classification, cfg.ModelImages = r.sc.Classification, r.sc.ModelImages
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout)
	defer cancel()
	res, err := session.Run(ctx, cfg)
	out.driver, out.gate = res.Timings.Driver, res.Timings.Gate
	out.status = res.Status
	g.checkSinks(r, bus, res, err)
	if err != nil {
		out.err = session.Sanitize(err.Error(), 200)
		out.notStarted = res.Output.ActionsExecuted == 0
	}
	if res.Evidence.Dir != "" {
		out.bundle = "verified"
		if _, verr := evidence.Verify(ctx, res.Evidence.Dir, evidence.VerifyOptions{}); verr != nil {
			out.bundle = "does not verify: " + session.Sanitize(verr.Error(), 200)
		}
		// What the boundary and the gate refused of the page's own
		// doing comes first: it is what stopped a page-caused attack.
		if files := holding(res.Evidence.Dir, g.secret); len(files) > 0 {
			g.world.bundleHolds(r, files)
		}
		// A screenshot that shows the secret in clear holds it too.
		if files := captureLeaks(res.Evidence.Dir, r.sc, g.world.truth(r).Allowed, g.secret); len(files) > 0 {
			g.world.bundleHolds(r, files)
		}
		effects := deniedEffects(res.Evidence.Dir)
		out.effects = len(effects)
		out.stopped = append(effects, out.stopped...)
	}
	return out
}

// checkSinks reads what the session sent out besides the model requests
// and the bundle: every live event (the bus the session closed at its
// end), the output and the error.
func (g *gated) checkSinks(r *runState, bus *session.Bus, res session.Result, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sub := bus.Subscribe(ctx, session.SubscribeOptions{FromStart: true})
	for ev := range sub.Events() {
		if b, jerr := json.Marshal(ev); jerr != nil || carries(string(b), g.secret) {
			g.world.sinkHolds(r, "a live event")
		}
	}
	if b, jerr := json.Marshal(res.Output); jerr != nil || carries(string(b), g.secret) {
		g.world.sinkHolds(r, "the session output")
	}
	if err != nil && carries(err.Error(), g.secret) {
		g.world.sinkHolds(r, "the session error")
	}
}

// approver answers the run's approval requests: no, unless the scenario
// approves; a Flip scenario first lets the page change when asked about
// typing.
func (g *gated) approver(r *runState) session.Approver {
	return session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		if r.sc.Flip && req.Action.Type == contract.ActType && req.Effect == nil {
			g.world.flipAndWait(ctx, r)
		}
		return session.ApprovalAnswer{Approved: r.sc.Approve, Approver: "attack-suite"}, nil
	})
}

func actionTarget(a contract.Action) string {
	if a.URL != "" {
		return a.URL
	}
	return a.Selector
}

// deniedEffects reads the bundle's decision records about effects (issue
// 15) that were not allowed.
func deniedEffects(dir string) []string {
	data, err := os.ReadFile(filepath.Join(dir, evidence.FileDecisions))
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var d contract.DecisionRecord
		if json.Unmarshal(sc.Bytes(), &d) != nil || d.Effect == nil || d.Allow {
			continue
		}
		rules := make([]string, len(d.Reasons))
		for i, rs := range d.Reasons {
			rules[i] = rs.Rule
		}
		e := d.Effect
		out = append(out, fmt.Sprintf("effect %s %s %s%s denied (%s)", e.Kind, e.Method, e.Origin, e.Path, strings.Join(rules, ", ")))
	}
	return out
}

// holding returns the files of the bundle in dir that hold the secret, in
// any common encoding.
func holding(dir, secret string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err == nil && carries(string(data), secret) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}
