package evidence

import (
	"fmt"
)

// Consistency proofs of RFC 6962 (section 2.1.2) over the ledger's Merkle
// tree: they show that the tree of the first m entries is a prefix of the
// tree of n entries, which is what a witness checks before it accepts a
// newer checkpoint of the same ledger (FORMAT.md, section 14).

// ConsistencyProof returns the RFC 6962 consistency proof PROOF(m, D[n])
// between the tree of the first m entry hashes and the tree of all of
// them (n = len(entries)), 0 < m <= n. It is empty when m = n.
func ConsistencyProof(entries []Hash, m int) ([]Hash, error) {
	n := len(entries)
	if m <= 0 || m > n {
		return nil, fmt.Errorf("evidence: no consistency proof from %d to %d entries", m, n)
	}
	leaves := make([]Hash, n)
	for i, e := range entries {
		leaves[i] = LeafHash(e)
	}
	return subproof(leaves, m, true), nil
}

// subproof is SUBPROOF(m, D[n], b) of RFC 6962, section 2.1.2, over the
// leaf hashes.
func subproof(leaves []Hash, m int, whole bool) []Hash {
	n := len(leaves)
	if m == n {
		if whole {
			return nil
		}
		return []Hash{subtreeRoot(leaves, 0, n)}
	}
	k := splitPoint(n)
	if m <= k {
		return append(subproof(leaves[:k], m, whole), subtreeRoot(leaves, k, n))
	}
	return append(subproof(leaves[k:], m-k, false), subtreeRoot(leaves, 0, k))
}

// ConsistencyError says why a consistency proof does not hold.
type ConsistencyError struct {
	// Old and New are the two tree sizes.
	Old, New uint64
	// Reason says what is wrong.
	Reason string
}

// Error names the sizes and the reason.
func (e *ConsistencyError) Error() string {
	return fmt.Sprintf("consistency proof from %d to %d entries: %s", e.Old, e.New, e.Reason)
}

// VerifyConsistency checks that proof shows the tree of size m with root
// oldRoot to be a prefix of the tree of size n with root newRoot (the
// algorithm of RFC 9162, section 2.1.4.2). For m = n the proof must be
// empty and the roots equal.
func VerifyConsistency(m, n uint64, oldRoot, newRoot Hash, proof []Hash) error {
	fail := func(reason string) error { return &ConsistencyError{Old: m, New: n, Reason: reason} }
	switch {
	case m == 0 || m > n:
		return fail("sizes out of order")
	case m == n:
		if len(proof) != 0 {
			return fail("a proof between equal sizes must be empty")
		}
		if oldRoot != newRoot {
			return fail("different roots for the same size")
		}
		return nil
	case len(proof) == 0 || len(proof) > 128:
		return fail("proof of the wrong length")
	}
	path := proof
	if m&(m-1) == 0 { // the old tree is a perfect subtree: its root starts the path
		path = append([]Hash{oldRoot}, proof...)
	}
	fn, sn := m-1, n-1
	for fn&1 == 1 {
		fn >>= 1
		sn >>= 1
	}
	fr, sr := path[0], path[0]
	for _, c := range path[1:] {
		if sn == 0 {
			return fail("proof too long")
		}
		if fn&1 == 1 || fn == sn {
			fr = nodeHash(c, fr)
			sr = nodeHash(c, sr)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			sr = nodeHash(sr, c)
		}
		fn >>= 1
		sn >>= 1
	}
	switch {
	case sn != 0:
		return fail("proof too short")
	case fr != oldRoot:
		return fail("the old root does not follow from the proof")
	case sr != newRoot:
		return fail("the new root does not follow from the proof")
	}
	return nil
}
