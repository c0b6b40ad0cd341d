package evidence

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
)

func testEntries(n int) []Hash {
	hs := make([]Hash, n)
	for i := range hs {
		hs[i] = sha256.Sum256(fmt.Appendf(nil, "entry %d", i))
	}
	return hs
}

// TestConsistencyProof: for every pair of sizes up to 33, the proof of
// the longer tree's hashes leads from the shorter tree's root (computed on
// its own) to the longer's, and every corruption of it fails.
func TestConsistencyProof(t *testing.T) {
	all := testEntries(33)
	for n := 1; n <= len(all); n++ {
		newRoot, _ := MerkleRoot(all[:n])
		for m := 1; m <= n; m++ {
			oldRoot, _ := MerkleRoot(all[:m])
			proof, err := ConsistencyProof(all[:n], m)
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifyConsistency(uint64(m), uint64(n), oldRoot, newRoot, proof); err != nil {
				t.Fatalf("m=%d n=%d: %v", m, n, err)
			}
			if m == n {
				continue
			}
			var ce *ConsistencyError
			for i := range proof {
				bad := append([]Hash{}, proof...)
				bad[i][0] ^= 1
				if err := VerifyConsistency(uint64(m), uint64(n), oldRoot, newRoot, bad); !errors.As(err, &ce) {
					t.Fatalf("m=%d n=%d: proof element %d flipped: %v", m, n, i, err)
				}
			}
			if err := VerifyConsistency(uint64(m), uint64(n), oldRoot, newRoot, proof[:len(proof)-1]); err == nil {
				t.Fatalf("m=%d n=%d: a short proof verifies", m, n)
			}
			if err := VerifyConsistency(uint64(m), uint64(n), oldRoot, newRoot, append(proof, Hash{})); err == nil {
				t.Fatalf("m=%d n=%d: a long proof verifies", m, n)
			}
			other := oldRoot
			other[31] ^= 1
			if err := VerifyConsistency(uint64(m), uint64(n), other, newRoot, proof); err == nil {
				t.Fatalf("m=%d n=%d: another old root verifies", m, n)
			}
		}
	}
}

func TestConsistencyProofBounds(t *testing.T) {
	all := testEntries(4)
	for _, m := range []int{0, -1, 5} {
		if _, err := ConsistencyProof(all, m); err == nil {
			t.Errorf("ConsistencyProof(4 entries, %d): no error", m)
		}
	}
	root, _ := MerkleRoot(all)
	tests := []struct {
		m, n uint64
		old  Hash
	}{{0, 4, root}, {5, 4, root}, {4, 4, Hash{1}}}
	for _, tt := range tests {
		if err := VerifyConsistency(tt.m, tt.n, tt.old, root, nil); err == nil {
			t.Errorf("VerifyConsistency(%d, %d): no error", tt.m, tt.n)
		}
	}
	if err := VerifyConsistency(4, 4, root, root, []Hash{root}); err == nil {
		t.Error("a non-empty proof between equal sizes verifies")
	}
}
