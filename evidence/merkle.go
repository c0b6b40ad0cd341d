package evidence

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
)

// The Merkle tree of RFC 6962 (section 2.1) over the ledger: leaf i's data
// is the 32-byte entryHash of entry i. A leaf hashes as SHA-256(0x00 ||
// data), an interior node as SHA-256(0x01 || left || right), and the tree
// over n leaves splits at the largest power of two smaller than n.

// LeafHash returns the RFC 6962 leaf hash of an entry hash.
func LeafHash(entry Hash) Hash {
	var buf [1 + 32]byte
	buf[0] = leafPrefix
	copy(buf[1:], entry[:])
	return sha256.Sum256(buf[:])
}

// nodeHash returns the RFC 6962 interior node hash of two children.
func nodeHash(l, r Hash) Hash {
	var buf [1 + 64]byte
	buf[0] = nodePrefix
	copy(buf[1:], l[:])
	copy(buf[33:], r[:])
	return sha256.Sum256(buf[:])
}

// MerkleRoot returns the RFC 6962 Merkle tree hash over the entry hashes,
// in order. It needs at least one entry.
func MerkleRoot(entries []Hash) (Hash, error) {
	if len(entries) == 0 {
		return Hash{}, errors.New("evidence: Merkle root of an empty ledger")
	}
	leaves := make([]Hash, len(entries))
	for i, e := range entries {
		leaves[i] = LeafHash(e)
	}
	return subtreeRoot(leaves, 0, len(leaves)), nil
}

// rootBuilder computes a Merkle tree hash leaf by leaf, keeping the roots
// of the perfect subtrees it has completed (one per set bit of the count,
// largest first), so memory is logarithmic.
type rootBuilder struct {
	n     uint64
	stack []Hash
}

func (r *rootBuilder) add(leaf Hash) {
	r.stack = append(r.stack, leaf)
	// Merge while the lowest bits of the new count say two perfect
	// subtrees of the same size sit on top.
	for c := r.n; c&1 == 1; c >>= 1 {
		k := len(r.stack)
		r.stack[k-2] = nodeHash(r.stack[k-2], r.stack[k-1])
		r.stack = r.stack[:k-1]
	}
	r.n++
}

// root folds the perfect subtrees from the smallest (rightmost) up, which
// is RFC 6962's split at the largest power of two.
func (r *rootBuilder) root() Hash {
	h := r.stack[len(r.stack)-1]
	for i := len(r.stack) - 2; i >= 0; i-- {
		h = nodeHash(r.stack[i], h)
	}
	return h
}

// subtreeRoot returns the Merkle tree hash over leaves[lo:hi].
func subtreeRoot(leaves []Hash, lo, hi int) Hash {
	var r rootBuilder
	for _, l := range leaves[lo:hi] {
		r.add(l)
	}
	return r.root()
}

// InclusionProof returns the RFC 6962 audit path (PATH(m, D[n])) of entry
// index among the entry hashes: the sibling subtree hashes from the leaf
// up to the root.
func InclusionProof(entries []Hash, index int) ([]Hash, error) {
	n := len(entries)
	if index < 0 || index >= n {
		return nil, fmt.Errorf("evidence: entry %d is not in a ledger of %d entries", index, n)
	}
	leaves := make([]Hash, n)
	for i, e := range entries {
		leaves[i] = LeafHash(e)
	}
	return auditPath(leaves, index), nil
}

// auditPath returns the audit path of leaf index among leaf hashes.
func auditPath(leaves []Hash, index int) []Hash {
	var path []Hash
	lo, hi, m := 0, len(leaves), index
	// Walk down from the root, collecting the sibling at each split; the
	// path lists them from the bottom up, so it is reversed at the end.
	for hi-lo > 1 {
		k := splitPoint(hi - lo)
		if m < k {
			path = append(path, subtreeRoot(leaves, lo+k, hi))
			hi = lo + k
		} else {
			path = append(path, subtreeRoot(leaves, lo, lo+k))
			lo, m = lo+k, m-k
		}
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// splitPoint returns the largest power of two smaller than n (n >= 2).
func splitPoint(n int) int {
	return 1 << (bits.Len(uint(n-1)) - 1)
}

// ProofError says why an inclusion proof does not hold.
type ProofError struct {
	// Index and Size are the entry's index and the tree size.
	Index, Size uint64
	// Reason says what is wrong.
	Reason string
	// Want is the trusted root; Got the root the proof leads to (zero when
	// the proof could not be evaluated).
	Want, Got Hash
}

// Error says why the proof fails, with the roots when it got that far.
func (e *ProofError) Error() string {
	if e.Got == (Hash{}) {
		return fmt.Sprintf("inclusion proof of entry %d in a tree of %d: %s", e.Index, e.Size, e.Reason)
	}
	return fmt.Sprintf("inclusion proof of entry %d in a tree of %d: %s: want root %s, got %s", e.Index, e.Size, e.Reason, e.Want, e.Got)
}

// RootFromInclusionProof computes the root that the audit path leads to
// from entry index's hash in a tree of size entries (RFC 9162, section
// 2.1.3.2).
func RootFromInclusionProof(index, size uint64, entry Hash, proof []Hash) (Hash, error) {
	return rootFromPath(index, size, LeafHash(entry), proof)
}

// rootFromPath computes the root an audit path leads to from a leaf hash.
func rootFromPath(index, size uint64, leaf Hash, proof []Hash) (Hash, error) {
	if index >= size {
		return Hash{}, &ProofError{Index: index, Size: size, Reason: "index beyond the tree"}
	}
	fn, sn := index, size-1
	r := leaf
	for _, p := range proof {
		if sn == 0 {
			return Hash{}, &ProofError{Index: index, Size: size, Reason: "proof too long"}
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(p, r)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn >>= 1
					sn >>= 1
				}
			}
		} else {
			r = nodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return Hash{}, &ProofError{Index: index, Size: size, Reason: "proof too short"}
	}
	return r, nil
}

// VerifyInclusion checks that entry is leaf index of the tree of size
// entries whose root is root.
func VerifyInclusion(index, size uint64, entry Hash, proof []Hash, root Hash) error {
	got, err := RootFromInclusionProof(index, size, entry, proof)
	if err != nil {
		return err
	}
	if got != root {
		return &ProofError{Index: index, Size: size, Reason: "root mismatch", Want: root, Got: got}
	}
	return nil
}
