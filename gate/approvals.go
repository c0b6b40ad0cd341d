package gate

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// MaxApprovalTTL is the longest an approval may stay valid.
const MaxApprovalTTL = time.Hour

// The errors of Approvals.Consume; the gate denies with their text.
var (
	ErrApprovalUnknown  = errors.New("approval: unknown approval id")
	ErrApprovalUsed     = errors.New("approval: already used (approvals are single-use)")
	ErrApprovalExpired  = errors.New("approval: expired")
	ErrApprovalMismatch = errors.New("approval: bound to a different action (action hash mismatch)")
)

// Approval is a human approval of one exact action (seed 002): bound to
// the action's hash (Gate.ActionHash), single-use, expiring.
type Approval struct {
	// ID identifies the approval: "apr-" and 32 random hex digits.
	ID string
	// ActionHash is the hash of the action approved (see Gate.ActionHash).
	ActionHash string
	// Approver names who approved.
	Approver string
	// ApprovedAt is when the approval was granted.
	ApprovedAt time.Time
	// ExpiresAt is when the approval expires.
	ExpiresAt time.Time
}

func (a Approval) ref() *contract.ApprovalRef {
	return &contract.ApprovalRef{
		ID:         a.ID,
		Approver:   a.Approver,
		ApprovedAt: a.ApprovedAt.UTC().Format(time.RFC3339Nano),
		ExpiresAt:  a.ExpiresAt.UTC().Format(time.RFC3339Nano),
		ActionHash: a.ActionHash,
	}
}

// Approvals holds granted approvals until they are used. It is safe for
// concurrent use. An approval is consumed by the first decision that
// presents it, whether that decision accepts it or not: an approval
// presented for another action (a model that changed the action after the
// human approved it) is burnt.
type Approvals struct {
	mu   sync.Mutex
	byID map[string]*approvalEntry
}

type approvalEntry struct {
	a    Approval
	used bool
}

// NewApprovals returns an empty approval store.
func NewApprovals() *Approvals { return &Approvals{byID: map[string]*approvalEntry{}} }

// Grant records that approver approved the action whose hash is actionHash
// (Decision.ActionHash of the paused decision) at approvedAt, valid for ttl
// (at most MaxApprovalTTL). The returned approval's ID is what the next
// Request presents as ApprovalID.
func (s *Approvals) Grant(actionHash, approver string, approvedAt time.Time, ttl time.Duration) (Approval, error) {
	switch {
	case !isSHA256Hex(actionHash):
		return Approval{}, fmt.Errorf("approval: action hash %q is not 64 lowercase hex digits", actionHash)
	case approver == "" || utf8.RuneCountInString(approver) > 256 || !utf8.ValidString(approver):
		return Approval{}, errors.New("approval: approver must be 1 to 256 characters")
	case ttl <= 0 || ttl > MaxApprovalTTL:
		return Approval{}, fmt.Errorf("approval: ttl %v is not in (0, %v]", ttl, MaxApprovalTTL)
	case approvedAt.IsZero():
		return Approval{}, errors.New("approval: no approval time")
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Approval{}, fmt.Errorf("approval: %w", err)
	}
	a := Approval{
		ID:         "apr-" + hex.EncodeToString(b[:]),
		ActionHash: actionHash,
		Approver:   approver,
		ApprovedAt: approvedAt.UTC(),
		ExpiresAt:  approvedAt.UTC().Add(ttl),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*approvalEntry{}
	}
	if len(s.byID) >= 1024 {
		for id, e := range s.byID {
			if !approvedAt.Before(e.a.ExpiresAt) {
				delete(s.byID, id)
			}
		}
	}
	s.byID[a.ID] = &approvalEntry{a: a}
	return a, nil
}

// Consume uses the approval id for the action whose hash is actionHash at
// time now. It returns the approval (zero when the id is unknown) and nil,
// or ErrApprovalUnknown, ErrApprovalUsed, ErrApprovalExpired or
// ErrApprovalMismatch (wrapped). Any known approval is used up by the call.
func (s *Approvals) Consume(id, actionHash string, now time.Time) (Approval, error) {
	if s == nil {
		return Approval{}, ErrApprovalUnknown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return Approval{}, fmt.Errorf("%w %q", ErrApprovalUnknown, text.CutRunes(id, 64))
	}
	if e.used {
		return e.a, fmt.Errorf("%w: %s", ErrApprovalUsed, id)
	}
	e.used = true
	if !now.Before(e.a.ExpiresAt) {
		return e.a, fmt.Errorf("%w: %s expired at %s", ErrApprovalExpired, id, e.a.ExpiresAt.Format(time.RFC3339))
	}
	if subtle.ConstantTimeCompare([]byte(e.a.ActionHash), []byte(actionHash)) != 1 {
		return e.a, fmt.Errorf("%w: %s approves %s, not %s", ErrApprovalMismatch, id, e.a.ActionHash, actionHash)
	}
	return e.a, nil
}
