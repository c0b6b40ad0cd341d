package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// refLeaf, refMTH and refPath are RFC 6962 section 2.1 written out
// literally and recursively: slow, obviously right, used only to check the
// fast code.
func refLeaf(data []byte) Hash { return sha256.Sum256(append([]byte{0}, data...)) }

func refMTH(leaves [][]byte) Hash {
	n := len(leaves)
	switch n {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return refLeaf(leaves[0])
	}
	k := 1
	for k*2 < n {
		k *= 2
	}
	l, r := refMTH(leaves[:k]), refMTH(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func refPath(m int, leaves [][]byte) []Hash {
	n := len(leaves)
	if n <= 1 {
		return nil
	}
	k := 1
	for k*2 < n {
		k *= 2
	}
	if m < k {
		return append(refPath(m, leaves[:k]), refMTH(leaves[k:]))
	}
	return append(refPath(m-k, leaves[k:]), refMTH(leaves[:k]))
}

type merkleVectors struct {
	Comment   string   `json:"comment"`
	Leaves    []string `json:"leaves"`
	Roots     []string `json:"roots"`
	Inclusion []struct {
		Name    string   `json:"name"`
		Index   uint64   `json:"index"`
		Size    uint64   `json:"size"`
		Proof   []string `json:"proof"`
		WantErr string   `json:"wantErr"`
	} `json:"inclusion"`
}

func loadMerkleVectors(t *testing.T) (merkleVectors, [][]byte) {
	t.Helper()
	b, err := os.ReadFile("testdata/merkle.json")
	if err != nil {
		t.Fatal(err)
	}
	var v merkleVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var data [][]byte
	for _, l := range v.Leaves {
		d, err := hex.DecodeString(l)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, d)
	}
	return v, data
}

func mustHash(t *testing.T, s string) Hash {
	t.Helper()
	h, err := ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestMerkleVectors(t *testing.T) {
	v, data := loadMerkleVectors(t)
	leaves := make([]Hash, len(data))
	for i, d := range data {
		leaves[i] = refLeaf(d)
	}
	for n := 1; n < len(v.Roots); n++ {
		if got, want := subtreeRoot(leaves, 0, n).String(), v.Roots[n]; got != want {
			t.Errorf("root of %d leaves: got %s, want %s", n, got, want)
		}
		if got, want := refMTH(data[:n]).String(), v.Roots[n]; got != want {
			t.Errorf("reference root of %d leaves: got %s, want %s", n, got, want)
		}
	}
	for _, c := range v.Inclusion {
		t.Run(c.Name, func(t *testing.T) {
			var proof []Hash
			for _, p := range c.Proof {
				proof = append(proof, mustHash(t, p))
			}
			root := mustHash(t, v.Roots[c.Size])
			leaf := Hash{}
			if c.Index < c.Size {
				leaf = leaves[c.Index]
			}
			got, err := rootFromPath(c.Index, c.Size, leaf, proof)
			if err == nil && got != root {
				err = &ProofError{Index: c.Index, Size: c.Size, Reason: "root mismatch", Want: root, Got: got}
			}
			switch {
			case c.WantErr == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case c.WantErr != "" && (err == nil || !strings.Contains(err.Error(), c.WantErr)):
				t.Errorf("got %v, want an error containing %q", err, c.WantErr)
			}
			if c.WantErr == "" {
				if got := auditPath(leaves[:c.Size], int(c.Index)); fmt.Sprint(got) != fmt.Sprint(proof) {
					t.Errorf("audit path %v, want %v", got, proof)
				}
			}
		})
	}
}

// TestMerkleAgainstReference cross-checks roots and every audit path of
// every tree up to 70 entries with the reference, and that flipping any
// bit of any proof element, or using another index, makes it fail.
func TestMerkleAgainstReference(t *testing.T) {
	var entries []Hash
	var data [][]byte
	for n := 1; n <= 70; n++ {
		e := Hash(sha256.Sum256([]byte(fmt.Sprint("entry ", n))))
		entries, data = append(entries, e), append(data, e[:])
		root, err := MerkleRoot(entries)
		if err != nil {
			t.Fatal(err)
		}
		if want := refMTH(data); root != want {
			t.Fatalf("n=%d: root %s, reference %s", n, root, want)
		}
		for i := 0; i < n; i++ {
			proof, err := InclusionProof(entries, i)
			if err != nil {
				t.Fatal(err)
			}
			if want := refPath(i, data); fmt.Sprint(proof) != fmt.Sprint(want) {
				t.Fatalf("n=%d i=%d: path differs from the reference", n, i)
			}
			if err := VerifyInclusion(uint64(i), uint64(n), entries[i], proof, root); err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			if n > 40 && i%7 != 0 {
				continue // the bit flips below for a sample of the larger trees
			}
			for j := range proof {
				for bit := 0; bit < 256; bit += 37 {
					bad := append([]Hash(nil), proof...)
					bad[j][bit/8] ^= 1 << (bit % 8)
					var pe *ProofError
					if err := VerifyInclusion(uint64(i), uint64(n), entries[i], bad, root); !errors.As(err, &pe) {
						t.Fatalf("n=%d i=%d: element %d bit %d flipped: %v, want a ProofError", n, i, j, bit, err)
					}
				}
			}
			if n > 1 {
				if err := VerifyInclusion(uint64((i+1)%n), uint64(n), entries[i], proof, root); err == nil {
					t.Fatalf("n=%d: entry %d's proof verifies at index %d", n, i, (i+1)%n)
				}
			}
		}
	}
	if _, err := MerkleRoot(nil); err == nil {
		t.Error("the root of an empty ledger")
	}
	if _, err := InclusionProof(entries[:3], 3); err == nil {
		t.Error("a proof of an entry beyond the ledger")
	}
}
