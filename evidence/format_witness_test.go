package evidence_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/witness"
)

// TestFormatDocumentWitness: FORMAT.md section 14's worked example is the
// checkpoint of the committed example bundle's seal, signed by the
// example's key, and the values its shell commands print are those.
func TestFormatDocumentWitness(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "example", "cus_01HZX4K9", evidence.FileManifest))
	if err != nil {
		t.Fatal(err)
	}
	var m contract.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	root, _ := evidence.ParseHash(m.Seal.MerkleRoot)
	head, _ := evidence.ParseHash(m.Seal.HeadHash)
	seed := make([]byte, ed25519.SeedSize) // the example's key: seed bytes 1, 2, ..., 32
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	signer := evidence.NewEd25519Signer(ed25519.NewKeyFromSeed(seed))
	if signer.KeyID() != m.Signer {
		t.Fatalf("the example is signed by %s, not by the key of seed 1..32", m.Signer)
	}
	c := witness.Checkpoint{Origin: witness.Origin(m.SessionID), Size: uint64(m.Seal.Entries), Root: root, Head: head}
	s, err := witness.Sign(context.Background(), c, signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := witness.OpenNote(s.Note); err != nil {
		t.Fatal(err)
	}
	sigLine := s.Note[bytes.LastIndex(s.Note, []byte("\n\n"))+2:]
	blob, err := base64.StdEncoding.DecodeString(string(bytes.Fields(sigLine)[2]))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"```\n" + string(s.Note) + "```\n",
		fmt.Sprintf("(`%s`, the first 4 bytes", hex.EncodeToString(blob[:4])),
		"| cut -c1-8\n" + hex.EncodeToString(blob[:4]) + "\n",
		fmt.Sprintf("aegis-evidence/1/%s with %d entries, signed by %s", m.SessionID, m.Seal.Entries, m.Signer[:len("ed25519:79b5")]),
		fmt.Sprintf("`witness: anchored: entries 0..%d of %d: ", m.Seal.Entries-1, m.Seal.Entries),
		"## 14. Witness checkpoints",
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("FORMAT.md does not quote %q", want)
		}
	}
}
