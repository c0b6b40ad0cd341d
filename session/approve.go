package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// Approver decides whether an action the gate paused may run (seed 002).
// The session asks it only for actions whose gate decision was paused,
// with a context that ends after Config.ApprovalTimeout: an approver that
// has no answer by then must return (an error or a refusal), and the
// session denies the action. A yes is granted through gate.Approvals, bound
// to the action's hash, single-use and short-lived; the gate then decides
// again with the approval.
type Approver interface {
	// Approve answers one approval request. An error counts as a refusal.
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)
}

// ApprovalRequest is what an approver is shown. Everything in Action and
// Target comes from the model or the page and is hostile: an approver that
// prints it must neutralize control characters (see Sanitize).
type ApprovalRequest struct {
	// SessionID identifies the session.
	SessionID string
	// Action is the action as the Navigator proposed it (secret
	// placeholders, never secret values).
	Action contract.Action
	// Target is the element the driver resolved for the action's
	// selector; nil when the action has none.
	Target *contract.Element
	// URL is the page the action would run on.
	URL string
	// Risk is the risk the gate assigned (never the model's claim).
	Risk contract.RiskTag
	// Reasons say why approval is required and why the risk is what it is.
	Reasons []contract.Reason
	// ActionHash is what the approval will be bound to (gate.ActionHash):
	// for an effect, the hash of the effect's decision, which binds the
	// effect too.
	ActionHash string
	// Effect, when set, is what is to be approved: a request or navigation
	// the page made while or after Action ran (such as the POST to a
	// payment endpoint that a click on "Continue" causes), which the policy
	// holds for approval; Risk and Reasons are the effect's. Action ran
	// already (it was allowed); refusing stops only the effect. nil for an
	// approval of the action itself. Page-controlled: sanitize it too (see
	// DescribeRequest).
	Effect *contract.Effect
}

// DescribeRequest renders what an approval request asks about in one
// line: the action (DescribeAction), and for an effect what the action
// causes, such as `click #continue "Continue" causes POST
// https://shop.example/pay (fields: amount, card)`.
func DescribeRequest(req ApprovalRequest) string {
	if req.Effect != nil {
		return DescribeEffect(req.Action, req.Target, *req.Effect)
	}
	return DescribeAction(req.Action, req.Target)
}

// ApprovalAnswer is an approver's answer.
type ApprovalAnswer struct {
	// Approved is true to let the action run once.
	Approved bool
	// Approver names who decided (recorded in the decision's approval),
	// such as "terminal:alice" or "popup chrome-extension://<id>".
	Approver string
	// Channel says in plain words, for messages a person or the model
	// reads, who answered and where: "a person at the terminal", "a person
	// in the popup", "a person in the live console", or a rule such as
	// "the --approve=deny rule (no person was asked)". "" when the
	// approver does not say; messages then name Approver. The evidence
	// records the channel of an approval by name (see via): terminal,
	// popup, live, rule or program.
	Channel string
}

// Channels of the approvers aegis has, as ApprovalAnswer.Channel says them.
const (
	ChannelTerminal = "a person at the terminal"
	ChannelPopup    = "a person in the popup"
	ChannelLive     = "a person in the live console"
)

// person says whether a person gave ans: its Channel is one of the
// channels a person answers on.
func (ans ApprovalAnswer) person() bool {
	switch ans.Channel {
	case ChannelTerminal, ChannelPopup, ChannelLive:
		return true
	}
	return false
}

// via names the channel ans came on, as the evidence records it (the
// approval's channel): the terminal, the popup or the live console when
// Channel says so; the rule when the approver is named "policy:" and a
// mode (PolicyApprover); else the program that supplied the approver (an
// API caller, a test).
func (ans ApprovalAnswer) via() contract.ApprovalChannel {
	switch ans.Channel {
	case ChannelTerminal:
		return contract.ApprovalChannelTerminal
	case ChannelPopup:
		return contract.ApprovalChannelPopup
	case ChannelLive:
		return contract.ApprovalChannelLive
	}
	if strings.HasPrefix(ans.Approver, evidence.RulePrefix) {
		return contract.ApprovalChannelRule
	}
	return contract.ApprovalChannelProgram
}

// who says who gave ans, for messages: its Channel, or "the approver"
// and its name.
func (ans ApprovalAnswer) who() string {
	if c := Sanitize(ans.Channel, 128); c != "" {
		return c
	}
	if n := Sanitize(ans.Approver, 256); n != "" {
		return "the approver " + n
	}
	return "an unnamed approver"
}

// ApproverFunc adapts a function to the Approver interface.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	return f(ctx, req)
}

// FirstOf returns an approver that asks all of approvers at once and
// takes the first answer; the others' requests are then withdrawn (their
// contexts end). An error from one approver is not an answer: the others
// may still answer, and only when every approver failed is the first
// error returned. Host mode uses it to let both the extension's popup and
// the live channel answer.
func FirstOf(approvers ...Approver) Approver {
	return ApproverFunc(func(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			ans ApprovalAnswer
			err error
		}
		results := make(chan result, len(approvers))
		for _, ap := range approvers {
			go func() {
				ans, err := ap.Approve(ctx, req)
				results <- result{ans, err}
			}()
		}
		var first error
		for range approvers {
			r := <-results
			if r.err == nil {
				return r.ans, nil
			}
			if first == nil {
				first = r.err
			}
		}
		return ApprovalAnswer{}, first
	})
}

// ApproveMode is how a non-interactive run answers approval requests
// (the --approve flag, without "ask").
type ApproveMode string

// The approve modes.
const (
	// ApproveAsk asks a human on the terminal (TerminalApprover).
	ApproveAsk ApproveMode = "ask"
	// ApproveDeny refuses every approval request: the default of a run
	// without a terminal.
	ApproveDeny ApproveMode = "deny"
	// ApproveLowAndMedium approves a request exactly when the gate's risk
	// for the action is low or medium, and refuses every high-risk one.
	// Under the default preset (power, permission full) every approval
	// request is a high-risk action, so this mode approves nothing and
	// behaves like deny. It matters with --preset balanced (permission
	// control), where the policy asks for confirmation of every navigate,
	// click, type and select: this mode confirms the medium-risk ones
	// automatically, while payments, deletions and typing into sensitive
	// fields (high risk) are still refused. The risk is the gate's, from
	// the policy and the element the driver resolved; the model's
	// policyTags cannot lower it.
	ApproveLowAndMedium ApproveMode = "low-and-medium-only"
)

// ParseApproveMode parses an --approve value.
func ParseApproveMode(s string) (ApproveMode, error) {
	switch m := ApproveMode(s); m {
	case ApproveAsk, ApproveDeny, ApproveLowAndMedium:
		return m, nil
	}
	return "", fmt.Errorf("unknown approve mode %q (want ask, deny or low-and-medium-only)", s)
}

// PolicyApprover answers without a human, by its mode: ApproveDeny or
// ApproveLowAndMedium (see there). Any other mode refuses.
type PolicyApprover struct {
	// Mode is ApproveDeny or ApproveLowAndMedium.
	Mode ApproveMode
}

// Approve approves a low- or medium-risk request in ApproveLowAndMedium
// mode and refuses everything else.
func (p PolicyApprover) Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	name := evidence.RulePrefix + string(p.Mode)
	channel := "the --approve=" + string(p.Mode) + " rule (no person was asked)"
	if p.Mode == ApproveLowAndMedium && (req.Risk == contract.RiskLow || req.Risk == contract.RiskMedium) {
		return ApprovalAnswer{Approved: true, Approver: name, Channel: channel}, nil
	}
	return ApprovalAnswer{Approved: false, Approver: name, Channel: channel}, nil
}

// TerminalApprover asks a human: it prints the action, the page, the risk
// and the reasons to Out and reads y or n from In. Anything but y or yes
// (in any case), end of input, or no answer before the context ends, is a
// refusal. Use it only when In is an interactive terminal: the CLI refuses
// --approve=ask otherwise, so that piped input cannot approve actions.
//
// A goroutine reads In line by line from NewTerminalApprover on, for the
// life of the process (a blocked read cannot be interrupted); lines typed
// while no request is pending are discarded, so that an answer typed ahead
// approves nothing.
type TerminalApprover struct {
	in   io.Reader
	out  io.Writer
	name string

	once  sync.Once
	lines chan string
	mu    sync.Mutex // one request at a time
}

// NewTerminalApprover returns an approver that reads answers from in and
// writes prompts to out; name is recorded as the approver (such as
// "terminal:alice").
func NewTerminalApprover(in io.Reader, out io.Writer, name string) *TerminalApprover {
	if name == "" {
		name = "terminal"
	}
	t := &TerminalApprover{in: in, out: out, name: name}
	t.start()
	return t
}

func (t *TerminalApprover) start() {
	t.once.Do(func() {
		t.lines = make(chan string, 4)
		go func() {
			defer close(t.lines)
			r := bufio.NewReaderSize(t.in, 4096)
			for {
				line, err := r.ReadString('\n')
				if line != "" || err == nil {
					t.lines <- line
				}
				if err != nil {
					return
				}
			}
		}()
	})
}

// Approve prints the request and waits for y or n.
func (t *TerminalApprover) Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start()
	deny := ApprovalAnswer{Approver: t.name, Channel: ChannelTerminal}
	// Discard what was typed before the question was asked.
	for drained := false; !drained; {
		select {
		case _, ok := <-t.lines:
			if !ok {
				fmt.Fprintln(t.out, "aegis: approval required, but the terminal is closed: denied")
				return deny, nil
			}
		default:
			drained = true
		}
	}
	var b strings.Builder
	b.WriteString("\naegis: approval required\n")
	fmt.Fprintf(&b, "  action:  %s\n", DescribeAction(req.Action, req.Target))
	if req.Effect != nil {
		fmt.Fprintf(&b, "  causes:  %s\n", describeEffect(cleanEffect(*req.Effect)))
		b.WriteString("           (the action ran already; this approves or refuses only what it causes)\n")
	}
	fmt.Fprintf(&b, "  page:    %s\n", Sanitize(req.URL, 300))
	fmt.Fprintf(&b, "  risk:    %s\n", Sanitize(string(req.Risk), 16))
	for _, r := range req.Reasons {
		fmt.Fprintf(&b, "  reason:  %s: %s\n", Sanitize(r.Rule, 64), Sanitize(r.Message, 300))
	}
	what := "action"
	if req.Effect != nil {
		what = "effect"
	}
	if dl, ok := ctx.Deadline(); ok {
		fmt.Fprintf(&b, "Approve this %s once? [y/N] (denied in %s): ", what, time.Until(dl).Round(time.Second))
	} else {
		fmt.Fprintf(&b, "Approve this %s once? [y/N]: ", what)
	}
	if _, err := io.WriteString(t.out, b.String()); err != nil {
		return deny, fmt.Errorf("session: terminal approver: %w", err)
	}
	select {
	case line, ok := <-t.lines:
		if !ok {
			fmt.Fprintln(t.out, "\naegis: end of input: denied")
			return deny, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			fmt.Fprintln(t.out, "aegis: approved")
			return ApprovalAnswer{Approved: true, Approver: t.name, Channel: ChannelTerminal}, nil
		}
		fmt.Fprintln(t.out, "aegis: denied")
		return deny, nil
	case <-ctx.Done():
		fmt.Fprintln(t.out, "\naegis: no answer in time: denied")
		return deny, ctx.Err()
	}
}

// ErrNoPendingApproval is returned by ChannelApprover.Decide when no
// request for that action is waiting.
var ErrNoPendingApproval = errors.New("session: no approval pending for that action")

// ChannelApprover hands approval requests to another goroutine (a test, an
// embedding program) and waits for its answer. Requests arrive on
// Requests(); answer them with PendingApproval.Answer, or by action id with
// Decide (the shape of seed 003's decision control request). A session asks
// for one approval at a time. The live channel has its own approver
// (live.Approver), which also binds a decision to the request its client
// was shown.
type ChannelApprover struct {
	ch      chan *PendingApproval
	mu      sync.Mutex
	pending *PendingApproval
}

// NewChannelApprover returns a ChannelApprover.
func NewChannelApprover() *ChannelApprover {
	return &ChannelApprover{ch: make(chan *PendingApproval, 1)}
}

// PendingApproval is one request waiting for an answer.
type PendingApproval struct {
	// Request is what is to be approved.
	Request ApprovalRequest
	answer  chan ApprovalAnswer
	once    sync.Once
}

// Answer answers the request; later answers are ignored.
func (p *PendingApproval) Answer(a ApprovalAnswer) {
	p.once.Do(func() { p.answer <- a })
}

// Requests returns the channel the requests arrive on. It holds at most
// the latest request: one nobody took is replaced by the next.
func (c *ChannelApprover) Requests() <-chan *PendingApproval { return c.ch }

// Approve offers the request on Requests and waits for an answer or the
// end of ctx.
func (c *ChannelApprover) Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	p := &PendingApproval{Request: req, answer: make(chan ApprovalAnswer, 1)}
	c.mu.Lock()
	c.pending = p
	select { // drop a stale request nobody took
	case <-c.ch:
	default:
	}
	c.ch <- p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.pending == p {
			c.pending = nil
		}
		c.mu.Unlock()
	}()
	select {
	case a := <-p.answer:
		return a, nil
	case <-ctx.Done():
		return ApprovalAnswer{}, ctx.Err()
	}
}

// Decide answers the pending request for the action whose id is actionID:
// approve lets it run once, deny refuses it. It returns
// ErrNoPendingApproval when no such request is waiting.
func (c *ChannelApprover) Decide(actionID string, decision contract.ApprovalDecision, approver string) error {
	c.mu.Lock()
	p := c.pending
	c.mu.Unlock()
	if p == nil || p.Request.Action.ID != actionID {
		return fmt.Errorf("%w: %q", ErrNoPendingApproval, actionID)
	}
	switch decision {
	case contract.ApprovalApprove:
		p.Answer(ApprovalAnswer{Approved: true, Approver: approver})
	case contract.ApprovalDeny:
		p.Answer(ApprovalAnswer{Approved: false, Approver: approver})
	default:
		return fmt.Errorf("session: unknown approval decision %q", decision)
	}
	return nil
}

// DescribeAction renders an action for a human in one line, such as
// `click #pay "Pay now"`: the type, the selector or URL, the target's
// name, and for a type action the length of the text (never the text: it
// may be a secret or a placeholder for one). Page- and model-controlled
// parts are sanitized and bounded.
func DescribeAction(a contract.Action, target *contract.Element) string {
	var b strings.Builder
	b.WriteString(string(a.Type))
	switch a.Type {
	case contract.ActNavigate:
		b.WriteString(" " + Sanitize(a.URL, 200))
	case contract.ActClick, contract.ActSelect, contract.ActType:
		b.WriteString(" " + Sanitize(a.Selector, 120))
	case contract.ActScroll:
		fmt.Fprintf(&b, " %s", Sanitize(string(a.Direction), 8))
		if a.AmountPx > 0 {
			fmt.Fprintf(&b, " %dpx", a.AmountPx)
		}
	case contract.ActWait:
		fmt.Fprintf(&b, " %dms", a.DurationMs)
	case contract.ActExtract:
		b.WriteString(" " + Sanitize(string(a.Extract), 16))
		if a.Selector != "" {
			b.WriteString(" " + Sanitize(a.Selector, 120))
		}
	}
	if name := TargetName(target); name != "" {
		b.WriteString(" " + strconv.Quote(name))
	}
	switch a.Type {
	case contract.ActType:
		if a.Redact {
			b.WriteString(" (redacted text)")
		} else {
			fmt.Fprintf(&b, " (%d characters)", utf8.RuneCountInString(a.Text))
		}
	case contract.ActSelect:
		b.WriteString(" = " + strconv.Quote(Sanitize(a.Value, 80)))
	}
	return b.String()
}

// TargetName returns the name a human knows an element by: its text,
// label, or name, sanitized and bounded; "" for nil.
func TargetName(e *contract.Element) string {
	if e == nil {
		return ""
	}
	for _, s := range []string{e.Text, e.Label, e.Name, e.ID} {
		if s = strings.TrimSpace(s); s != "" {
			return Sanitize(s, 60)
		}
	}
	return ""
}

// Sanitize makes page- or model-controlled text safe to print on a
// terminal: control characters (escape sequences, carriage returns, line
// breaks) and invisible format characters become spaces or are dropped,
// invalid UTF-8 is replaced, and the result is cut to max characters with
// an ellipsis.
func Sanitize(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			r = ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			continue
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
