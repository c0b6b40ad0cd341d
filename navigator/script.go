package navigator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
)

// ScriptOptions configures a Script navigator.
type ScriptOptions struct {
	// MaxBatch bounds the actions of one answer (default and at most
	// contract.MaxBatchActions).
	MaxBatch int
	// Secrets, when set, must hold every secret the script names.
	Secrets *secrets.Set
}

// Script is the offline `script` navigator: it replays a list of raw
// BrowserActions in batches of up to MaxBatch, in order. A batch also ends
// before an action whose id it already holds. Type actions whose text
// holds a placeholder are redacted. Actions of its previous batch that the
// session skipped (the batch stopped before them: the page changed, an
// approval ran) are handed out again, in order, before the rest: the
// script never drops an action. Any denial or error of its previous batch
// stops it with a *RejectedError.
type Script struct {
	actions []contract.Action
	opts    ScriptOptions
	next    int // the next action to hand out
	start   int // the first action of the last answer
	asked   int // the Request.Step of the last answer (0 before the first)
}

// NewScript returns a Script navigator for actions, each of which must be
// valid on its own (see Validate): secret placeholders only in type text,
// and known when opts.Secrets is set.
func NewScript(actions []contract.Action, opts ScriptOptions) (*Script, error) {
	if len(actions) == 0 {
		return nil, errors.New("navigator: empty script")
	}
	if opts.MaxBatch <= 0 || opts.MaxBatch > contract.MaxBatchActions {
		opts.MaxBatch = contract.MaxBatchActions
	}
	out := make([]contract.Action, len(actions))
	for i, a := range actions {
		r, err := Validate(contract.NavigatorResponse{Actions: []contract.Action{a}, Status: contract.StatusContinue}, opts.Secrets)
		if err != nil {
			return nil, fmt.Errorf("navigator: script action %d: %w", i, err)
		}
		out[i] = r.Actions[0]
	}
	return &Script{actions: out, opts: opts}, nil
}

// NewScriptFromHints parses hints.script (see ScriptFromHints) and returns
// a Script navigator for it.
func NewScriptFromHints(hints json.RawMessage, opts ScriptOptions) (*Script, error) {
	actions, err := ScriptFromHints(hints)
	if err != nil {
		return nil, err
	}
	return NewScript(actions, opts)
}

// Next returns the next batch of the script, starting with the actions of
// the previous batch that were skipped; status is done with the batch
// that holds the last action, and ErrFinished after all of them ran.
func (s *Script) Next(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if Stops(req.Feedback) {
		return Response{}, &RejectedError{Feedback: req.Feedback}
	}
	if s.asked > 0 {
		if n := Skipped(req.Progress, s.asked); n > 0 {
			s.next -= min(n, s.next-s.start)
		}
	}
	if s.next >= len(s.actions) {
		if len(req.Feedback) > 0 {
			return Response{}, &RejectedError{Feedback: req.Feedback}
		}
		return Response{}, ErrFinished
	}
	start := s.next
	s.start, s.asked = start, req.Step
	ids := map[string]bool{}
	var batch []contract.Action
	for s.next < len(s.actions) && len(batch) < s.opts.MaxBatch && !ids[s.actions[s.next].ID] {
		ids[s.actions[s.next].ID] = true
		batch = append(batch, s.actions[s.next])
		s.next++
	}
	status := contract.StatusContinue
	if s.next == len(s.actions) {
		status = contract.StatusDone
	}
	resp := contract.NavigatorResponse{
		Actions: batch,
		Status:  status,
		Summary: fmt.Sprintf("script actions %d to %d of %d", start+1, s.next, len(s.actions)),
	}
	out, err := Validate(resp, s.opts.Secrets)
	if err != nil {
		return Response{}, fmt.Errorf("navigator: script made an invalid answer: %w", err)
	}
	return Response{NavigatorResponse: out}, nil
}

// Item says that the i-th action of the last answer is scripted action
// start+i+1.
func (s *Script) Item(i int) PlanItem {
	return PlanItem{Kind: "script", N: s.start + i + 1, Total: len(s.actions)}
}
