package navigator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/secrets"
)

// Defaults of StepsOptions.
const (
	DefaultExpectRounds = 10
	DefaultExpectWait   = 500 * time.Millisecond
)

// StepsOptions configures a Steps navigator.
type StepsOptions struct {
	// BaseURL resolves a navigate path ("/login") when the current page has
	// no http(s) URL (about:blank at the start of a session): typically
	// the task's first URL.
	BaseURL string
	// MaxBatch bounds the actions of one answer (default and at most
	// contract.MaxBatchActions). A batch always ends after an action that
	// may change the page (navigate, click, scroll, wait) and before an
	// expect, so that every target is resolved against the page it acts
	// on.
	MaxBatch int
	// ExpectRounds bounds how many observations an expect step waits for
	// its text (default DefaultExpectRounds); then the run fails with an
	// *ExpectError.
	ExpectRounds int
	// ExpectWait is the wait action between two such observations
	// (default DefaultExpectWait, at most 60 s).
	ExpectWait time.Duration
	// Secrets, when set, must hold every secret the steps name; New
	// refuses unknown names up front.
	Secrets *secrets.Set
}

// Steps is the offline `steps` navigator: it carries out a task's
// plain-language steps (see ParseStep for the grammar), resolving each
// target against the affordances of the current observation (see
// ResolveAffordance for the matching order). It never guesses: an
// ambiguous or missing target stops the run with an error naming the
// candidates. The steps whose actions the session skipped (their batch
// stopped before them) are carried out again, in order, before the rest:
// no step is dropped. Any denial or error of its previous batch stops it.
type Steps struct {
	steps  []Step
	opts   StepsOptions
	next   int // the next step to carry out
	rounds int // observations waited for the current expect
	done   bool
	asked  int   // the Request.Step of the last answer (0 before the first)
	batch  []int // the step of each action of the last answer (-1: an expect's wait, the final wait)
}

// ErrFinished is returned by Next after the navigator answered done.
var ErrFinished = errors.New("navigator: all steps are done")

// StepError is a step that could not be carried out.
type StepError struct {
	// Step is the step.
	Step Step
	// Err says why.
	Err error
}

// Error names the step and its source, then the cause.
func (e *StepError) Error() string {
	return fmt.Sprintf("step %d (%s): %v", e.Step.Line, clip(e.Step.Source), e.Err)
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// ErrExpectFailed is matched (errors.Is) by an *ExpectError.
var ErrExpectFailed = errors.New("navigator: expected text not found")

// ExpectError is an expect step whose text never appeared.
type ExpectError struct {
	// Text is the text expected.
	Text string
	// Rounds is how many observations were checked.
	Rounds int
	// URL is the page's URL at the last one.
	URL string
}

// Error says which text is missing from which page.
func (e *ExpectError) Error() string {
	return fmt.Sprintf("expected text %q is not on the page %s after %d observations", clip(e.Text), clip(e.URL), e.Rounds)
}

// Is matches ErrExpectFailed.
func (e *ExpectError) Is(target error) bool { return target == ErrExpectFailed }

// RejectedError stops an offline navigator whose previous batch was
// denied or failed: a fixed list of steps has no other way to go.
type RejectedError struct {
	// Feedback is what went wrong.
	Feedback []Feedback
}

// Error lists the feedback.
func (e *RejectedError) Error() string {
	parts := make([]string, len(e.Feedback))
	for i, f := range e.Feedback {
		parts[i] = f.String()
	}
	return "the previous batch did not complete: " + strings.Join(parts, "; ")
}

// NewSteps returns a Steps navigator for steps (see ParseSteps).
func NewSteps(steps []Step, opts StepsOptions) (*Steps, error) {
	if len(steps) == 0 {
		return nil, errors.New("navigator: no steps")
	}
	if opts.MaxBatch <= 0 || opts.MaxBatch > contract.MaxBatchActions {
		opts.MaxBatch = contract.MaxBatchActions
	}
	if opts.ExpectRounds <= 0 {
		opts.ExpectRounds = DefaultExpectRounds
	}
	if opts.ExpectWait <= 0 {
		opts.ExpectWait = DefaultExpectWait
	}
	if opts.ExpectWait > time.Duration(MaxWaitMs)*time.Millisecond {
		opts.ExpectWait = time.Duration(MaxWaitMs) * time.Millisecond
	}
	if opts.BaseURL != "" {
		if u, err := url.Parse(opts.BaseURL); err != nil || !httpURL(u) {
			return nil, fmt.Errorf("navigator: base URL %q is not an absolute http(s) URL", opts.BaseURL)
		}
	}
	for _, s := range steps {
		if s.Op == OpType && opts.Secrets != nil {
			for _, n := range secrets.Find(s.Text) {
				if !opts.Secrets.Has(n) {
					return nil, &StepError{Step: s, Err: &secrets.UnknownError{Name: n}}
				}
			}
		}
	}
	return &Steps{steps: append([]Step(nil), steps...), opts: opts}, nil
}

// NewStepsFromHints parses the "steps" member of a task's hints (see
// StepsFromHints) and returns a Steps navigator for them.
func NewStepsFromHints(hints json.RawMessage, opts StepsOptions) (*Steps, error) {
	steps, err := StepsFromHints(hints)
	if err != nil {
		return nil, err
	}
	return NewSteps(steps, opts)
}

// Remaining returns the number of steps not yet carried out.
func (s *Steps) Remaining() int { return len(s.steps) - s.next }

// Next carries out the next steps against req.Observation. Each answer
// holds at most MaxBatch actions and ends after the first action that may
// change the page. An expect step is checked against the observation's
// visible text (case and white space ignored); while it is missing, Next
// answers a wait, at most ExpectRounds times, and then fails with an
// *ExpectError. Status is done with the batch that holds the last step;
// when the last steps are expects that hold, the answer is a 1 ms wait
// with status done (an answer needs an action). Errors are *StepError
// (wrapping a *TargetError, an *ExpectError...) or, when the previous
// batch was denied or failed, a *RejectedError.
func (s *Steps) Next(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if Stops(req.Feedback) {
		err := error(&RejectedError{Feedback: req.Feedback})
		if s.next > 0 {
			err = &StepError{Step: s.steps[s.next-1], Err: err}
		}
		return Response{}, err
	}
	s.resume(req.Progress)
	if s.done {
		return Response{}, ErrFinished
	}
	s.asked, s.batch = req.Step, s.batch[:0]
	var actions []contract.Action
	summary := []string{}
	for s.next < len(s.steps) && len(actions) < s.opts.MaxBatch {
		st := s.steps[s.next]
		if st.Op == OpExpect {
			if len(actions) > 0 {
				break // check it on the page these actions lead to
			}
			if containsFold(req.Observation.DOMText, st.Text) {
				summary = append(summary, fmt.Sprintf("hint %d: found %q", st.Line, clip(st.Text)))
				s.next++
				s.rounds = 0
				continue
			}
			s.rounds++
			if s.rounds > s.opts.ExpectRounds {
				return Response{}, &StepError{Step: st, Err: &ExpectError{Text: st.Text, Rounds: s.rounds, URL: req.Observation.State.ActiveURL}}
			}
			s.batch = append(s.batch, -1)
			actions = append(actions, contract.Action{
				ID:         fmt.Sprintf("step%d-wait%d", st.Line, s.rounds),
				Type:       contract.ActWait,
				Reason:     text.CutBytes(fmt.Sprintf("hint %d: waiting for %q to appear (%d/%d)", st.Line, st.Text, s.rounds, s.opts.ExpectRounds), 2000),
				DurationMs: int(s.opts.ExpectWait / time.Millisecond),
			})
			summary = append(summary, fmt.Sprintf("hint %d: waiting for %q", st.Line, clip(st.Text)))
			break
		}
		a, err := s.action(st, req.Observation)
		if err != nil {
			return Response{}, &StepError{Step: st, Err: err}
		}
		actions = append(actions, a)
		s.batch = append(s.batch, s.next)
		summary = append(summary, fmt.Sprintf("hint %d: %s", st.Line, clip(neutralize(st.String()))))
		s.next++
		if a.Type != contract.ActType && a.Type != contract.ActSelect && a.Type != contract.ActExtract {
			break
		}
	}
	status := contract.StatusContinue
	if s.next >= len(s.steps) {
		status = contract.StatusDone
		s.done = true
		if len(actions) == 0 {
			s.batch = append(s.batch, -1)
			actions = append(actions, contract.Action{ID: "steps-done", Type: contract.ActWait, Reason: "all steps are done", DurationMs: 1})
		}
	}
	resp := contract.NavigatorResponse{Actions: actions, Status: status, Summary: text.CutBytes(strings.Join(summary, "; "), 2000)}
	out, err := Validate(resp, s.opts.Secrets)
	if err != nil {
		return Response{}, fmt.Errorf("navigator: steps made an invalid answer: %w", err)
	}
	return Response{NavigatorResponse: out}, nil
}

// resume goes back to the first step whose action the session skipped
// in the last answer (see Skipped), so that it is carried out again; a
// skipped wait of an expect is asked again by the expect itself, and a
// skipped final wait by answering done again.
func (s *Steps) resume(progress []Progress) {
	if s.asked == 0 {
		return
	}
	n := min(Skipped(progress, s.asked), len(s.batch))
	if n == 0 {
		return
	}
	s.done = false
	for _, i := range s.batch[len(s.batch)-n:] {
		if i >= 0 {
			s.next, s.rounds = i, 0
			return
		}
	}
}

// Item says which step the i-th action of the last answer carries out:
// none for the wait of an expect step or the final wait.
func (s *Steps) Item(i int) PlanItem {
	it := PlanItem{Kind: "steps", Total: len(s.steps)}
	if i >= 0 && i < len(s.batch) && s.batch[i] >= 0 {
		it.N = s.batch[i] + 1
	}
	return it
}

// action makes the action of one step, resolving its target against obs.
func (s *Steps) action(st Step, obs contract.Observation) (contract.Action, error) {
	a := contract.Action{
		ID:     fmt.Sprintf("step%d", st.Line),
		Reason: text.CutBytes(fmt.Sprintf("hint %d: %s", st.Line, neutralize(st.String())), 2000),
	}
	target := func(what string, keep func(contract.Affordance) bool) (string, error) {
		if st.Target.CSS != "" {
			return st.Target.CSS, nil
		}
		c, err := ResolveAffordance(obs, st.Target.Name, what, keep)
		return c.Selector, err
	}
	var err error
	switch st.Op {
	case OpNavigate:
		a.Type = contract.ActNavigate
		a.URL, err = s.resolveURL(st.URL, obs.State.ActiveURL)
	case OpClick:
		a.Type = contract.ActClick
		a.Selector, err = target("element to click", anyElement)
	case OpType:
		a.Type = contract.ActType
		a.Text = st.Text
		a.Redact = secrets.Contains(st.Text)
		a.Selector, err = target("field to type into", typeable)
	case OpSelect:
		a.Type = contract.ActSelect
		a.Value = st.Text
		a.Selector, err = target("select element", selectable)
	case OpScroll:
		a.Type = contract.ActScroll
		a.Direction = st.Direction
		a.AmountPx = st.Amount
	case OpWait:
		a.Type = contract.ActWait
		a.DurationMs = st.Amount
	case OpExtract:
		a.Type = contract.ActExtract
		a.Extract = st.Extract
		switch {
		case st.Target.CSS != "":
			a.Selector = st.Target.CSS
		case st.Target.Name == "":
		case st.Extract == contract.ExtractTable:
			var c Candidate
			c, err = ResolveTable(obs, st.Target.Name)
			a.Selector = c.Selector
		default:
			a.Selector, err = target("element to extract from", anyElement)
		}
	default:
		err = fmt.Errorf("step %s makes no action", st.Op)
	}
	return a, err
}

// resolveURL makes a navigate URL absolute: a path is resolved against the
// current page, or the base URL when the page has no http(s) URL.
func (s *Steps) resolveURL(ref, current string) (string, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	if r.IsAbs() {
		return ref, nil
	}
	base := s.opts.BaseURL
	if u, err := url.Parse(current); err == nil && httpURL(u) {
		base = current
	}
	if base == "" {
		return "", fmt.Errorf("cannot resolve the path %q: the page has no http(s) URL and no base URL is set", ref)
	}
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

func httpURL(u *url.URL) bool { return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" }

// containsFold reports whether text contains sub, ignoring case and
// differences of white space.
func containsFold(text, sub string) bool {
	return strings.Contains(strings.ToLower(normalize(text)), strings.ToLower(normalize(sub)))
}

// neutralize writes the placeholders of s as "<secret NAME>", for reasons
// and summaries: placeholders belong in the text of type actions only.
func neutralize(s string) string {
	for _, n := range secrets.Find(s) {
		s = strings.ReplaceAll(s, secrets.Placeholder(n), "<secret "+n+">")
	}
	return s
}
