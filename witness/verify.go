package witness

import (
	"context"
	"errors"
	"fmt"

	"github.com/aegis-run/aegis/evidence"
)

// ErrNotAnchored is wrapped by every *MismatchError: the bundle is not the
// one the witness holds the checkpoint of.
var ErrNotAnchored = errors.New("bundle does not match its witness")

// MismatchError says how a bundle differs from the witness's checkpoint.
type MismatchError struct {
	// Witness names the witness; Origin is the bundle's origin.
	Witness, Origin string
	// Reason says what differs, in words.
	Reason string
}

// Error names the witness and what differs.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("witness %s, %s: %s", e.Witness, e.Origin, e.Reason)
}

// Is makes errors.Is(err, ErrNotAnchored) hold.
func (e *MismatchError) Is(target error) bool { return target == ErrNotAnchored }

// Anchored is what Verify established.
type Anchored struct {
	// Witness names the witness; Origin is the bundle's origin.
	Witness string `json:"witness"`
	Origin  string `json:"origin"`
	// Size is the size of the witness's latest checkpoint, Entries the
	// bundle's: equal for a sealed bundle. Entries 0 to Size-1 are
	// anchored (Range).
	Size    uint64 `json:"size"`
	Entries int    `json:"entries"`
	// KeyID signed the checkpoint.
	KeyID string `json:"keyId"`
}

// Range says which entries of the bundle the checkpoint anchors, as in
// "entries 0..26 of 27".
func (a *Anchored) Range() string {
	return fmt.Sprintf("entries 0..%d of %d", a.Size-1, a.Entries)
}

// Verify checks a bundle, as evidence.Verify reported it (rep, for a
// valid bundle: sealed, or unsealed with AllowUnsealed), against the
// latest checkpoint w holds for its session: signed by the bundle's signer
// when the bundle is signed; for a sealed bundle, of exactly its entries,
// root and head (fewer entries: the seal was not witnessed; more: the
// bundle was truncated); for an unsealed one, of at most its intact
// entries, with the root of that many first entries. A bundle that differs
// fails with a *MismatchError; a witness that cannot be asked, with an
// error wrapping ErrUnavailable; a checkpoint that does not verify, with
// one wrapping ErrSignature or ErrMalformed.
func Verify(ctx context.Context, w Witness, rep *evidence.Report) (*Anchored, error) {
	origin := Origin(rep.SessionID)
	miss := func(format string, args ...any) error {
		return &MismatchError{Witness: w.String(), Origin: origin, Reason: fmt.Sprintf(format, args...)}
	}
	if rep.SessionID == "" || len(rep.EntryHashes) != rep.Entries || rep.Entries == 0 {
		return nil, errors.New("witness: verify the bundle first (no entries to check)")
	}
	s, err := w.Latest(ctx, origin)
	if errors.Is(err, ErrNotFound) {
		return nil, miss("the witness holds no checkpoint of this session (never sent there, or the session id was changed)")
	}
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", w, err)
	}
	if rep.Signer != "" && s.KeyID != rep.Signer {
		return nil, miss("the witness's checkpoint is signed by %s, the bundle by %s (the bundle was re-signed with another key)", s.KeyID, rep.Signer)
	}
	got := &Anchored{Witness: w.String(), Origin: origin, Size: s.Size, Entries: rep.Entries, KeyID: s.KeyID}
	n := uint64(rep.Entries)
	switch {
	case s.Size > n:
		return nil, miss("truncated: the witness holds a checkpoint of %d entries, the bundle has %d", s.Size, n)
	case s.Size < n && rep.Sealed:
		if prefixRoot(rep.EntryHashes, s.Size) != s.Root {
			return nil, miss("rewritten: the root of the bundle's first %d entries is not the witness's %s", s.Size, s.Root)
		}
		return nil, miss("the seal was not witnessed: anchored: entries 0..%d of %d (they match the witness's latest checkpoint); entries %d..%d are not anchored", s.Size-1, n, s.Size, n-1)
	}
	root := prefixRoot(rep.EntryHashes, s.Size)
	head := rep.EntryHashes[s.Size-1]
	switch {
	case root != s.Root:
		return nil, miss("rewritten: the root of the bundle's first %d entries is %s, the witness's %s", s.Size, root, s.Root)
	case head != s.Head:
		return nil, miss("rewritten: entry %d's hash is %s, the witness's head %s", s.Size-1, head, s.Head)
	}
	return got, nil
}

// prefixRoot returns the Merkle tree hash of the first n entry hashes.
func prefixRoot(hashes []evidence.Hash, n uint64) evidence.Hash {
	root, _ := evidence.MerkleRoot(hashes[:n])
	return root
}
