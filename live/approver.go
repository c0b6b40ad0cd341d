package live

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/session"
)

// Errors of Approver.Decide. The server turns each into an error event
// with its own code (see PROTOCOL.md).
var (
	// ErrNoPending means no approval request is waiting: it was never
	// made, it was answered, or it timed out.
	ErrNoPending = errors.New("live: no approval is pending")
	// ErrStale means the decision names an approval request that is no
	// longer the pending one (a later request replaced it).
	ErrStale = errors.New("live: the approval request was replaced by a later one")
)

// DecidedError is returned by Approver.Decide when another client decided
// the request first: the first decision wins.
type DecidedError struct {
	// By is the client that decided.
	By string
	// Decision is what it decided.
	Decision contract.ApprovalDecision
}

func (e *DecidedError) Error() string {
	return fmt.Sprintf("live: the approval was already decided (%s) by %s", e.Decision, e.By)
}

// Approver is a session.Approver whose requests the clients of the live
// channel answer. A session asks one approval at a time; each request gets
// the next sequence number, starting at 1, which is also the position of
// its approval_required event among the session's approval_required
// events (the session emits the event, then asks). A client's decision
// names the sequence number of the last approval_required event it was
// sent, so it can only ever answer the request it was shown, and through
// it the action's hash that the session binds the approval to: a decision
// meant for an earlier action that had the same id approves nothing.
//
// The first decision wins; later ones get a DecidedError. A request that
// no client answers before the session's approval timeout is refused by
// the session.
type Approver struct {
	mu      sync.Mutex
	seq     int
	last    *pendingApproval // the latest request, answered or not
	changed chan struct{}    // closed and replaced when seq changes
}

type pendingApproval struct {
	seq     int
	req     session.ApprovalRequest
	answer  chan session.ApprovalAnswer
	decided *DecidedError // the first decision
	gone    bool          // the session stopped waiting
}

// NewApprover returns an Approver with nothing pending.
func NewApprover() *Approver {
	return &Approver{changed: make(chan struct{})}
}

// Approve registers the request as pending and waits for the first
// client decision or the end of ctx.
func (a *Approver) Approve(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
	p := &pendingApproval{req: req, answer: make(chan session.ApprovalAnswer, 1)}
	a.mu.Lock()
	a.seq++
	p.seq = a.seq
	a.last = p
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		p.gone = true
		a.mu.Unlock()
	}()
	select {
	case ans := <-p.answer:
		return ans, nil
	case <-ctx.Done():
		return session.ApprovalAnswer{}, ctx.Err()
	}
}

// Pending returns the pending request and its sequence number; ok is
// false when none is pending.
func (a *Approver) Pending() (req session.ApprovalRequest, seq int, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.last; p != nil && !p.gone && p.decided == nil {
		return p.req, p.seq, true
	}
	return session.ApprovalRequest{}, 0, false
}

// Decide answers request number seq for the client named by: approve lets
// the action run once, deny refuses it. The session emits a request's
// approval_required event just before it asks, so a decision may arrive
// first: Decide waits, until ctx ends, for request seq to be asked.
func (a *Approver) Decide(ctx context.Context, seq int, decision contract.ApprovalDecision, by string) error {
	if decision != contract.ApprovalApprove && decision != contract.ApprovalDeny {
		return fmt.Errorf("live: unknown approval decision %q", decision)
	}
	a.mu.Lock()
	for a.seq < seq {
		wait := a.changed
		a.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("%w (request %d was announced but not asked: %v)", ErrNoPending, seq, ctx.Err())
		}
		a.mu.Lock()
	}
	defer a.mu.Unlock()
	p := a.last
	switch {
	case a.seq > seq:
		return ErrStale
	case p.decided != nil:
		return p.decided
	case p.gone:
		return ErrNoPending
	}
	p.decided = &DecidedError{By: by, Decision: decision}
	p.answer <- session.ApprovalAnswer{Approved: decision == contract.ApprovalApprove, Approver: by, Channel: session.ChannelLive}
	return nil
}
