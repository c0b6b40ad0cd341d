package nativehost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/live"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// Defaults of Options.
const (
	// DefaultExitGrace bounds how long the host waits, once the extension
	// disconnected, for the aborted session to seal its evidence: the
	// host exits within a second of the disconnection.
	DefaultExitGrace = 900 * time.Millisecond
	// MaxGoal bounds a goal, in characters.
	MaxGoal = 4000
	// MaxOrigins bounds the allowed origins of a session.
	MaxOrigins = 64
)

// Options configure Serve.
type Options struct {
	// In and Out are the streams Chrome connected (stdin and stdout): Out
	// carries frames and nothing else.
	In  io.Reader
	Out io.Writer
	// Log receives the host's log lines (stderr); nil discards them.
	Log io.Writer
	// Origin is the caller's origin, Chrome's first argument.
	Origin string
	// Config is the host's configuration (LoadConfig).
	Config Config
	// ConfigPath is where Config was read from, for messages, and the
	// file config.get and config.set read and write.
	ConfigPath string
	// ConfigErr, when set, says why the configuration file did not load:
	// the host then runs no session (session.start is refused with it,
	// config) but answers config.get and config.set, so that the options
	// page can show the error and repair the model settings.
	ConfigErr error
	// Executable is this host's path, which the installed manifest must
	// name; "" means Executable().
	Executable string
	// Manifests are the host manifests the origin check reads; nil means
	// ManifestSearchPath(Config).
	Manifests []string
	// Version is the aegis version, for hello and the evidence.
	Version string
	// ExitGrace bounds the wait for an aborted session's seal after the
	// extension disconnected; 0 means DefaultExitGrace.
	ExitGrace time.Duration
	// Gate, when set, is the gate sessions use (with Approvals); nil makes
	// one from Config.Policy.
	Gate      *gate.Gate
	Approvals *gate.Approvals
	// Driver is the base driver configuration of sessions (timeouts,
	// observation limits); its Mode is always extension.
	Driver driver.Config
	// Live, when set, offers every session on this live channel, whose
	// clients may answer approvals too (the first answer, popup or live,
	// wins); LiveBase is its http://HOST:PORT, for the log.
	Live     *live.Server
	LiveBase string
	// OpenLive, when set and Live is not, opens the live channel at the
	// first session.start, returning Live and LiveBase: a host that only
	// serves the options page (config.get, config.set) never listens. An
	// error refuses that start (CodeConfig); the next one tries again.
	OpenLive func() (*live.Server, string, error)
}

// ErrOriginRefused is returned by Serve when the caller's origin is not
// allowed by the installed manifest (errors.Is on the *Error).
var ErrOriginRefused = &Error{Code: CodeOriginRefused}

// Serve is host mode: it checks the caller's origin, then runs the
// conversation with the extension on In and Out until the extension
// disconnects or ctx ends. The extension starts sessions on its tab; each
// runs the governed loop (package session) with the extension driver
// through this conversation. When the extension disconnects, a running
// session is aborted and its evidence sealed, and Serve returns within
// ExitGrace. It returns nil after a clean disconnection.
func Serve(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.ExitGrace <= 0 {
		o.ExitGrace = DefaultExitGrace
	}
	// The log passes the egress filter of the configuration's secrets: a
	// log line may quote an error holding page text. A set that does not
	// load filters nothing, and no session starts with it.
	logSet, _ := o.Config.SecretSet()
	h := &host{o: o, log: newLogger(o.Log, o.Config.LogFile, logSet)}
	defer h.log.close()
	if o.Executable == "" {
		exe, err := Executable()
		if err != nil {
			return err
		}
		o.Executable = exe
		h.o.Executable = exe
	}
	manifests := o.Manifests
	if manifests == nil {
		manifests = ManifestSearchPath(o.Config)
	}
	if err := CheckOrigin(o.Origin, o.Executable, manifests); err != nil {
		h.log.printf("refused a caller: %v", err)
		// Tell the caller why, in the one message it will get.
		w := NewWriter(o.Out)
		if b, e := (Message{Kind: KindEvent, Event: EventError, Params: mustJSON(asError(err).Wire())}).Encode(); e == nil {
			_ = w.WriteFrame(b)
		}
		return err
	}
	if relay != nil {
		if done, err := relay(ctx, o.In, o.Out, h.log.printf); done {
			return err
		}
	}
	h.log.printf("started by %s (pid %d, aegis %s, config %s)", o.Origin, os.Getpid(), o.Version, o.ConfigPath)
	if o.ConfigErr != nil {
		h.log.printf("the configuration does not load, no session will run: %v", o.ConfigErr)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h.ctx = ctx
	h.conn = NewConn(o.In, o.Out, ConnOptions{Handler: h, OnViolation: h.violation})
	if o.Gate == nil {
		go h.prepareGate()
	}
	err := h.conn.Serve(ctx)
	if err != nil {
		h.log.printf("conversation ended: %v", err)
	} else {
		h.log.printf("the extension disconnected")
	}
	h.shutdown("the extension disconnected")
	return err
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// relay, when set (builds with the aegis_relay tag), may take over the
// conversation: it pipes the streams to another process and reports true.
var relay func(ctx context.Context, in io.Reader, out io.Writer, logf func(string, ...any)) (bool, error)

// host is one host process's state.
type host struct {
	o    Options
	log  *logger
	ctx  context.Context
	conn *Conn

	gateOnce  sync.Once
	gate      *gate.Gate
	approvals *gate.Approvals
	gateErr   error

	mu    sync.Mutex
	hello bool
	run   *running

	// liveMu guards o.Live and o.LiveBase while OpenLive sets them.
	liveMu sync.Mutex
}

// running is the session under way.
type running struct {
	s        *session.Session
	approver *popupApprover
	done     chan struct{}
	tabID    int
}

func (h *host) prepareGate() {
	h.gateOnce.Do(func() {
		if h.o.Gate != nil {
			h.gate, h.approvals = h.o.Gate, h.o.Approvals
			return
		}
		ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
		defer cancel()
		h.approvals = gate.NewApprovals()
		h.gate, h.gateErr = gate.New(ctx, gate.Options{PolicyPath: h.o.Config.Policy, Approvals: h.approvals})
		if h.gateErr != nil {
			h.log.printf("the policy did not load: %v", h.gateErr)
		}
	})
}

// violation records a message of the extension that broke the protocol,
// and aborts the running session with it as the reason: the evidence
// records it in the session's end.
func (h *host) violation(e *Error) {
	h.log.printf("protocol violation by the extension: %v", e)
	if r := h.current(); r != nil {
		r.s.Abort("protocol violation by the extension (" + e.Code.String() + "): " + e.Message)
	}
}

// shutdown aborts a running session and waits, at most ExitGrace, for it
// to seal its evidence.
func (h *host) shutdown(reason string) {
	r := h.current()
	if r == nil {
		return
	}
	r.s.Abort(reason)
	t := time.NewTimer(h.o.ExitGrace)
	defer t.Stop()
	select {
	case <-r.done:
		h.log.printf("session %s ended and sealed", r.s.ID())
	case <-t.C:
		h.log.printf("session %s did not end within %v: exiting anyway", r.s.ID(), h.o.ExitGrace)
	}
}

// current is the running session, or nil.
func (h *host) current() *running {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run
}

// decoded decodes a request's params into a P (DecodeParams: unknown
// members refused) and answers it with f.
func decoded[P, R any](params json.RawMessage, f func(P) (R, error)) (any, error) {
	var p P
	if err := DecodeParams(params, &p); err != nil {
		return nil, err
	}
	return f(p)
}

// HandleRequest answers the extension's requests.
func (h *host) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h.mu.Lock()
	helloed := h.hello
	h.mu.Unlock()
	if method != MethodHello && !helloed {
		return nil, errorf(CodeHandshakeRequired, "send hello first")
	}
	switch method {
	case MethodHello:
		var p HelloParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		if !slices.Contains(p.Protocol, Version) {
			return nil, errorf(CodeUnsupportedVersion, "this host speaks protocol %d, the extension %v", Version, p.Protocol)
		}
		h.mu.Lock()
		h.hello = true
		sid := ""
		if h.run != nil {
			sid = h.run.s.ID()
		}
		h.mu.Unlock()
		h.log.printf("hello from extension %s", bound(p.Extension, 32))
		return HelloResult{Protocol: Version, Host: h.o.Version, Origin: h.o.Origin, Session: sid}, nil
	case MethodConfigGet:
		return decoded(params, func(struct{}) (ConfigView, error) { return h.configGet() })
	case MethodConfigSet:
		return decoded(params, h.configSet)
	case MethodPing:
		return decoded(params, func(p PingParams) (PingParams, error) { return p, nil })
	case MethodStart:
		return decoded(params, h.start)
	case MethodAbort:
		var p AbortParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		r := h.current()
		if r == nil {
			return nil, errorf(CodeNoSession, "no session is running")
		}
		reason := strings.TrimSpace(p.Reason)
		if reason == "" {
			reason = "aborted from the extension"
		}
		r.s.Abort(bound(reason, 200))
		return struct{}{}, nil
	case MethodApprove:
		var p ApprovalAnswerParams
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		r := h.current()
		if r == nil {
			return nil, errorf(CodeNoSession, "no session is running")
		}
		h.log.printf("approval answer %q for action %q", bound(string(p.Decision), 16), bound(p.ActionID, 128))
		if err := r.approver.answer(p); err != nil {
			h.log.printf("approval refused: %v", err)
			return nil, err
		}
		return struct{}{}, nil
	}
	return nil, errorf(CodeUnknownMethod, "unknown method %q", bound(method, 64))
}

// HandleEvent takes the extension's events: boundary.refused goes to the
// session's extension driver (it subscribed to the conversation); any
// other is logged and dropped.
func (h *host) HandleEvent(ctx context.Context, name string, data json.RawMessage) {
	if name == EventBoundaryRefused {
		return
	}
	h.log.printf("dropped an event %q of the extension", bound(name, 64))
}

// taskOf checks the start parameters and returns the task.
func taskOf(p StartParams) (contract.Input, error) {
	var in contract.Input
	bad := func(format string, args ...any) (contract.Input, error) {
		return in, &Error{Code: CodeBadParams, Message: fmt.Sprintf(format, args...)}
	}
	goal := strings.TrimSpace(p.Goal)
	if goal == "" || utf8.RuneCountInString(goal) > MaxGoal || !utf8.ValidString(goal) {
		return bad("the goal must be 1 to %d characters", MaxGoal)
	}
	if p.TabID <= 0 {
		return bad("no tab")
	}
	if len(p.Origins) == 0 || len(p.Origins) > MaxOrigins {
		return bad("name 1 to %d allowed origins", MaxOrigins)
	}
	var origins []string
	for _, o := range p.Origins {
		n, err := driver.NormalizeOrigin(o)
		if err != nil {
			return bad("allowed origin %q: not an http(s) origin", bound(o, 100))
		}
		if !slices.Contains(origins, n) {
			origins = append(origins, n)
		}
	}
	start := origins[0] + "/"
	if p.StartURL != "" {
		u, err := url.Parse(p.StartURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(p.StartURL) > driver.MaxURL {
			return bad("the start URL is not an http(s) URL")
		}
		o, err := driver.NormalizeOrigin(u.Scheme + "://" + u.Host)
		if err != nil || !slices.Contains(origins, o) {
			return bad("the start URL is outside the allowed origins")
		}
		start = p.StartURL
	}
	in.Goal = goal
	in.URLs = []string{start}
	for _, o := range origins {
		if !strings.HasPrefix(start, o+"/") && start != o {
			in.URLs = append(in.URLs, o+"/")
		}
	}
	if len(p.Steps) > navigator.MaxSteps {
		return bad("at most %d steps", navigator.MaxSteps)
	}
	hints := map[string]any{}
	if len(p.Steps) > 0 {
		hints["steps"] = p.Steps
	}
	if p.MaxTokens != 0 {
		hints[contract.HintMaxTokens] = p.MaxTokens // checked by hostBudget
	}
	if p.Classification != "" {
		hints[contract.HintClassification] = p.Classification // checked by checkClassification
	}
	if len(hints) > 0 {
		raw, err := json.Marshal(hints)
		if err != nil {
			return bad("hints: %v", err)
		}
		in.Hints = raw
	}
	return in, nil
}

var presets = []string{"", "safe", "balanced", "power", "developer"}

// checkClassification refuses, as bad parameters, a task whose
// hints.classification is not a classification. The host has no
// classification of its own: the session resolves the task's (restricted
// when it names none, as the popup's tasks do).
func checkClassification(in contract.Input) error {
	if _, err := in.Classification(); err != nil {
		return errorf(CodeBadParams, "%v", err)
	}
	return nil
}

// hostBudget is the model budget of a session on task in: its
// hints.maxTokens (StartParams.MaxTokens) bound the tokens (0: none, the
// calls still counted); a bad one is bad parameters. It has no cost limit:
// the host has no model registry to price the model with, and
// StartParams has no member for one.
func hostBudget(in contract.Input) (*llm.Budget, error) {
	maxTokens, err := in.MaxTokens()
	if err != nil {
		return nil, errorf(CodeBadParams, "%v", err)
	}
	b, err := llm.NewBudget(llm.Limits{MaxTokens: maxTokens})
	if err != nil {
		return nil, errorf(CodeBadParams, "%v", err)
	}
	return b, nil
}

// liveChannel returns the live channel sessions are offered on (nil
// without one), opening it with OpenLive on first need.
func (h *host) liveChannel() (*live.Server, string, error) {
	h.liveMu.Lock()
	defer h.liveMu.Unlock()
	if h.o.Live == nil && h.o.OpenLive != nil {
		srv, base, err := h.o.OpenLive()
		if err != nil {
			return nil, "", err
		}
		h.o.Live, h.o.LiveBase = srv, base
	}
	return h.o.Live, h.o.LiveBase, nil
}

// start starts a session on the extension's tab.
func (h *host) start(p StartParams) (StartResult, error) {
	var res StartResult
	if !slices.Contains(presets, p.Preset) {
		return res, errorf(CodeBadParams, "unknown preset %q (want safe, balanced, power or developer)", bound(p.Preset, 32))
	}
	in, err := taskOf(p)
	if err != nil {
		return res, err
	}
	if h.o.ConfigErr != nil {
		return res, errorf(CodeConfig, "%s: fix the model settings in aegis's options page, or edit the file", configMessage(h.o.ConfigErr))
	}
	h.mu.Lock()
	busy := h.run != nil
	h.mu.Unlock()
	if busy {
		return res, errorf(CodeSessionRunning, "a session is already running")
	}
	h.prepareGate()
	if h.gateErr != nil {
		return res, errorf(CodeConfig, "the policy did not load: %v", h.gateErr)
	}
	set, err := h.o.Config.SecretSet()
	if err != nil {
		return res, errorf(CodeConfig, "the configuration's secrets: %v", err)
	}
	if err := checkClassification(in); err != nil {
		return res, err
	}
	budget, err := hostBudget(in)
	if err != nil {
		return res, err
	}
	pl, nav, model, err := h.agents(in, set, budget)
	if err != nil {
		return res, err
	}
	// Every frame to the extension passes the session's egress filter
	// from now on (Conn.SetFilter: responses and events masked, a
	// driver's request holding a value refused), but the driver's call
	// that types a resolved secret (sessionPort.Call).
	h.conn.SetFilter(set)
	root := h.o.Config.EvidenceDir
	if root == "" {
		if root, err = DefaultEvidenceDir(); err != nil {
			return res, errorf(CodeConfig, "%v", err)
		}
	}
	id := driver.NewSessionID()
	approver := &popupApprover{conn: h.conn, name: "popup " + h.o.Origin, set: set}
	var sessApprover session.Approver = approver
	var liveApprover *live.Approver
	liveSrv, liveBase, err := h.liveChannel()
	if err != nil {
		return res, errorf(CodeConfig, "the live channel: %v", err)
	}
	if liveSrv != nil {
		liveApprover = live.NewApprover()
		sessApprover = session.FirstOf(approver, liveApprover)
	}
	timeout := time.Duration(h.o.Config.ApprovalTimeoutSeconds) * time.Second
	dc := h.o.Driver
	dc.Mode = contract.ModeExtension
	bus := session.NewBus(0)
	conn := h.conn
	var s *session.Session
	tabID := p.TabID
	cfg := session.Config{
		Task:      in,
		SessionID: id,
		Driver:    dc,
		// The extension driver calls the extension over the conversation's
		// connection, on the person's tab.
		OpenDriver: func(ctx context.Context, dc driver.Config) (driver.Driver, error) {
			return driver.OpenExtension(ctx, dc, driver.ExtensionTarget{Port: sessionPort{conn, s}, TabID: tabID})
		},
		Gate:            h.gate,
		Approvals:       h.approvals,
		Preset:          p.Preset,
		Planner:         pl,
		Navigator:       nav,
		Approver:        sessApprover,
		ApprovalTimeout: timeout,
		Secrets:         set,
		Evidence:        session.EvidenceDir(root),
		Bus:             bus,
		Model:           model,
		Budget:          budget,
		Version:         h.o.Version,
		OnStep: func(r session.StepReport) {
			_ = conn.Notify(EventStep, stepEvent(r))
		},
	}
	s, err = session.New(cfg)
	if err != nil {
		return res, errorf(CodeBadParams, "%v", err)
	}
	approver.abort = s.Abort
	if liveSrv != nil {
		liveSrv.Add(s, live.SessionOptions{Approver: liveApprover, Dir: filepath.Join(root, id), Goal: in.Goal})
		h.log.printf("session %s on the live channel: %s/?session=%s and %s/v1/sessions/%s/stream", id, liveBase, id, "ws"+strings.TrimPrefix(liveBase, "http"), id)
	}
	r := &running{s: s, approver: approver, done: make(chan struct{}), tabID: p.TabID}
	h.mu.Lock()
	if h.run != nil {
		h.mu.Unlock()
		return res, errorf(CodeSessionRunning, "a session is already running")
	}
	h.run = r
	h.mu.Unlock()

	sub := bus.Subscribe(h.ctx, session.SubscribeOptions{FromStart: true, Buffer: 256})
	forwarded := forward(sub, conn, filepath.Join(root, id), h.log.printf)
	go func() {
		defer close(r.done)
		// The session's context is not tied to the conversation's, so that
		// an abort still seals.
		result, err := s.Run(context.WithoutCancel(h.ctx))
		bus.Close()
		// Every event and thumbnail goes before session.ended: the
		// extension takes nothing of the session after it.
		select {
		case <-forwarded:
		case <-time.After(MaxForwardWait):
			h.log.printf("session %s: events or thumbnails still unsent after %v: ending without them", id, MaxForwardWait)
		}
		ended := EndedEvent{
			Session:  id,
			Status:   result.Status,
			Summary:  bound(result.Output.Summary, 2000),
			Evidence: EvidenceInfo{Dir: result.Evidence.Dir, Sealed: result.Evidence.Sealed, HeadHash: result.Evidence.HeadHash},
		}
		if err != nil {
			ended.Error = bound(err.Error(), 2000)
		}
		ended.Result = resultFor(ended, result, set)
		h.log.printf("session %s ended: %s, evidence %s (sealed %v)", id, result.Status, result.Evidence.Dir, result.Evidence.Sealed)
		_ = conn.Notify(EventEnded, ended)
		h.mu.Lock()
		if h.run == r {
			h.run = nil
		}
		h.mu.Unlock()
	}()
	h.log.printf("session %s started on tab %d (%d origins, preset %q, steps %v)", id, p.TabID, len(in.URLs), p.Preset, len(p.Steps) > 0)
	return StartResult{Session: id, Evidence: filepath.Join(root, id)}, nil
}

// agents returns the planner and navigator of a task: a steps task (its
// hints name steps) runs without a model; any other needs the
// configuration's model.
func (h *host) agents(in contract.Input, set *secrets.Set, budget *llm.Budget) (planner.Planner, navigator.Navigator, string, error) {
	steps, err := navigator.StepsFromHints(in.Hints)
	if err != nil && !errors.Is(err, navigator.ErrNoHints) {
		return nil, nil, "", errorf(CodeBadParams, "steps: %v", err)
	}
	if err == nil {
		nav, err := navigator.NewSteps(steps, navigator.StepsOptions{BaseURL: in.URLs[0], Secrets: set})
		if err != nil {
			return nil, nil, "", errorf(CodeBadParams, "steps: %v", err)
		}
		plan, err := planner.FromSteps(in.Goal, steps)
		if err != nil {
			return nil, nil, "", errorf(CodeBadParams, "steps: %v", err)
		}
		pl, err := planner.NewStatic(plan)
		if err != nil {
			return nil, nil, "", errorf(CodeBadParams, "steps: %v", err)
		}
		return pl, nav, "", nil
	}
	m := h.o.Config.Model
	if m == nil {
		return nil, nil, "", errorf(CodeConfig, "no model is configured: add one to %s, or give steps", h.o.ConfigPath)
	}
	lc := m.LLM()
	lc.Guard, lc.Budget = set.Guard(), budget
	c, err := llm.New(lc)
	if err != nil {
		return nil, nil, "", errorf(CodeConfig, "the configured model: %v", err)
	}
	pl, err := planner.NewLLM(c, planner.LLMOptions{Secrets: set})
	if err != nil {
		return nil, nil, "", errorf(CodeConfig, "planner: %v", err)
	}
	nav, err := navigator.NewLLM(c, navigator.LLMOptions{Secrets: set})
	if err != nil {
		return nil, nil, "", errorf(CodeConfig, "navigator: %v", err)
	}
	return pl, nav, m.Model, nil
}

func stepEvent(r session.StepReport) StepEvent {
	ev := StepEvent{
		Index: r.Index, Budget: r.Budget, ActionID: bound(r.Action.ID, 128), Type: r.Action.Type,
		Action:   session.DescribeAction(r.Action, r.Target),
		Effect:   r.Effect,
		Decision: r.Decision, Risk: r.Risk, Executed: r.Executed, OK: r.OK,
		Error: bound(r.Error, 1000), Ms: r.Duration.Milliseconds(),
		Reason: bound(r.Action.Reason, MaxReason), Batch: r.Step,
	}
	if r.Effect != nil {
		ev.Action = session.DescribeEffect(r.Action, r.Target, *r.Effect)
	}
	for _, rs := range r.Reasons {
		ev.Reasons = append(ev.Reasons, bound(rs.Rule+": "+rs.Message, 500))
	}
	return ev
}

// popupApprover asks the person through the extension's popup. The
// answer must name the pending action and its hash: an approval for any
// other hash is refused, and the pending action denied (the refusal is
// the approver's failure, recorded in the action's decision).
// sessionPort is the session's way to the extension: a call that fails
// because the extension disconnected aborts the session before it
// returns, so that the session ends as aborted rather than failed by the
// driver's error.
type sessionPort struct {
	conn *Conn
	s    *session.Session
}

// Subscribe delivers the extension's events to the session's driver.
func (p sessionPort) Subscribe(fn func(name string, data json.RawMessage)) (cancel func()) {
	return p.conn.Subscribe(fn)
}

func (p sessionPort) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	call := p.conn.Call
	if typesText(method, params) {
		// The frame that carries a type action's text to the executor:
		// the one frame that may hold a secret's value.
		call = p.conn.CallUnfiltered
	}
	raw, err := call(ctx, method, params)
	if errors.Is(err, ErrDisconnected) {
		p.s.Abort("the extension disconnected")
	}
	return raw, err
}

// typesText reports whether a driver call types text into the page: a
// tab.call of the page script's type function.
func typesText(method string, params any) bool {
	if method != "tab.call" {
		return false
	}
	b, err := json.Marshal(params)
	if err != nil {
		return false
	}
	var p struct {
		Fn string `json:"fn"`
	}
	return json.Unmarshal(b, &p) == nil && p.Fn == "type"
}

type popupApprover struct {
	conn *Conn
	name string
	// set redacts the values shown (SubmitValue).
	set *secrets.Set
	// abort ends the session when the extension disconnects while an
	// approval waits, before Approve returns: the session then ends as
	// aborted, not as failed by the approver's error.
	abort func(reason string)

	mu      sync.Mutex
	pending *pendingApproval
}

type pendingApproval struct {
	id, hash string
	ch       chan approvalResult
}

type approvalResult struct {
	ans session.ApprovalAnswer
	err error
}

// Approve sends the request to the extension and waits for the answer.
func (p *popupApprover) Approve(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
	pend := &pendingApproval{id: req.Action.ID, hash: req.ActionHash, ch: make(chan approvalResult, 1)}
	p.mu.Lock()
	p.pending = pend
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.pending == pend {
			p.pending = nil
		}
		p.mu.Unlock()
	}()
	ev := ApprovalRequestEvent{
		ActionID: req.Action.ID, ActionHash: req.ActionHash, Type: req.Action.Type,
		Action: session.DescribeRequest(req), Target: req.Target,
		Page: session.Sanitize(req.URL, 2048), Risk: req.Risk, Reasons: req.Reasons,
		Values: submitValues(req, p.set),
	}
	if ev.Values == nil {
		ev.Values = []SubmitValue{}
	}
	if ev.Reasons == nil {
		ev.Reasons = []contract.Reason{}
	}
	if dl, ok := ctx.Deadline(); ok {
		ev.TimeoutMs = time.Until(dl).Milliseconds()
	}
	if err := p.conn.Notify(EventApproval, ev); err != nil {
		return session.ApprovalAnswer{}, fmt.Errorf("the approval request could not be sent to the extension: %w", err)
	}
	select {
	case r := <-pend.ch:
		return r.ans, r.err
	case <-ctx.Done():
		return session.ApprovalAnswer{}, ctx.Err()
	case <-p.conn.Done():
		if p.abort != nil {
			p.abort("the extension disconnected")
		}
		return session.ApprovalAnswer{}, errors.New("the extension disconnected")
	}
}

// answer takes the extension's answer to the pending request.
func (p *popupApprover) answer(a ApprovalAnswerParams) error {
	if a.Decision != contract.ApprovalApprove && a.Decision != contract.ApprovalDeny {
		return errorf(CodeBadParams, "decision %q is neither approve nor deny", bound(string(a.Decision), 16))
	}
	p.mu.Lock()
	pend := p.pending
	if pend == nil {
		p.mu.Unlock()
		return errorf(CodeNoPendingApproval, "no approval is pending (it may have timed out)")
	}
	if a.ActionID != pend.id || a.ActionHash != pend.hash {
		p.pending = nil
		p.mu.Unlock()
		e := errorf(CodeApprovalMismatch, "the extension answered for action %q with hash %s, but action %q with hash %s is pending: refused, and the pending action denied",
			bound(a.ActionID, 64), bound(a.ActionHash, 80), bound(pend.id, 64), pend.hash)
		pend.ch <- approvalResult{err: e}
		return e
	}
	p.pending = nil
	p.mu.Unlock()
	pend.ch <- approvalResult{ans: session.ApprovalAnswer{Approved: a.Decision == contract.ApprovalApprove, Approver: p.name, Channel: session.ChannelPopup}}
	return nil
}

// logger writes the host's log lines to stderr and, when configured, to
// a log file (never to stdout, which carries frames), each through the
// egress filter of the secrets (secrets.Writer).
type logger struct {
	mu sync.Mutex
	w  []*secrets.Writer
	f  *os.File
}

func newLogger(w io.Writer, file string, set *secrets.Set) *logger {
	l := &logger{w: []*secrets.Writer{secrets.NewWriter(w, set)}}
	if file != "" {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			l.f = f
			l.w = append(l.w, secrets.NewWriter(f, set))
		} else {
			fmt.Fprintf(w, "aegis host: log file: %v\n", err)
		}
	}
	return l
}

func (l *logger) printf(format string, args ...any) {
	line := time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + " aegis host: " + fmt.Sprintf(format, args...) + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.w {
		_, _ = io.WriteString(w, line)
	}
}

// close writes what the filters hold back and closes the log file.
func (l *logger) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.w {
		_ = w.Flush()
	}
	if l.f != nil {
		_ = l.f.Close()
	}
}
