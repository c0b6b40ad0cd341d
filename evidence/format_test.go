package evidence

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// TestFormatDocument: the values FORMAT.md quotes in its worked example are
// those of the committed example bundle, recomputed here.
func TestFormatDocument(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(exampleDir, testSession)
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	record := bytes.SplitN(read(FileEvents), []byte("\n"), 2)[0]
	d := Hash(sha256.Sum256(record))
	ch := ContentHash(contract.LedgerEvent, d)
	ledger := bytes.Split(read(FileLedger), []byte("\n"))
	var e contract.LedgerEntry
	if err := jsonUnmarshal(ledger[1], &e); err != nil {
		t.Fatal(err)
	}
	unhashed, err := encodeEntry(e, false)
	if err != nil {
		t.Fatal(err)
	}
	eh := entryHash(unhashed)
	var hashes []Hash
	for _, l := range ledger[:len(ledger)-1] {
		var x contract.LedgerEntry
		jsonUnmarshal(l, &x)
		h, _ := ParseHash(x.EntryHash)
		hashes = append(hashes, h)
	}
	root, _ := MerkleRoot(hashes)
	img := sha256.Sum256(read("artifacts/shot-1.png"))
	snap := sha256.Sum256(read("dom/0.html"))
	manifest := bytes.TrimSuffix(read(FileManifest), []byte("\n"))
	pae := string(PAE(SealPayloadType, manifest))
	want := []string{
		string(record), d.String(), ch.String(), string(ledger[1]), eh.String(), LeafHash(eh).String(),
		hex.EncodeToString(img[:]), hex.EncodeToString(snap[:]), hashes[len(hashes)-1].String(), root.String(),
		strconv.Itoa(len(manifest)) + " bytes", pae[:strings.Index(pae, "{")+len(`{"approvalKey":"`)], KeyID(testPub()),
		strconv.Itoa(len(hashes)) + " entries",
		string(bytes.SplitN(read(FileModelCalls), []byte("\n"), 2)[0]),
	}
	// Rule 15's worked example: decision line 3, its hashed document and
	// hash, and the action line that ran it.
	var dec contract.DecisionRecord
	if err := jsonUnmarshal(bytes.Split(read(FileDecisions), []byte("\n"))[2], &dec); err != nil {
		t.Fatal(err)
	}
	hashed, err := canonjson.EncodeValue(actionhash.Document(dec.SessionID, *dec.ActiveURL, actionhash.Action(*dec.Action), actionhash.Element(dec.Target), nil))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(hashed); hex.EncodeToString(sum[:]) != dec.ActionHash {
		t.Errorf("decision line 3: actionHash %s, want the SHA-256 of %s", dec.ActionHash, hashed)
	}
	ran, err := canonjson.Marshal(dec.Action)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bytes.Split(read(FileActions), []byte("\n"))[2], ran) {
		t.Errorf("actions.jsonl line 3 does not hold the decided action %s", ran)
	}
	want = append(want, string(hashed), "printf '%s' '"+string(hashed)+"' | sha256sum", dec.ActionHash+"  -", "\n    "+string(ran)+"\n")
	// Rule 16's worked example: the commitment, the revealed key, and the
	// MAC of the approval on decision line 4.
	want = append(want, approvalExample(t, read)...)
	for _, w := range want {
		if !bytes.Contains(doc, []byte(w)) {
			t.Errorf("FORMAT.md does not quote %q", w)
		}
	}
	if len(ContentPrefix) != 26 || ContentPrefix[18] != 'c' || EntryPrefix[18] != 'e' || ContentPrefix[:18] != EntryPrefix[:18] {
		t.Error("FORMAT.md's description of the prefixes is out of date")
	}
}

// approvalExample returns what rule 16's worked example quotes, recomputed
// from the example bundle: the commitment and the key, the message of the
// MAC of decision line 4's approval, and the MAC.
func approvalExample(t *testing.T, read func(string) []byte) []string {
	t.Helper()
	var start, end contract.Manifest
	if err := jsonUnmarshal(read(FileManifestStart), &start); err != nil {
		t.Fatal(err)
	}
	if err := jsonUnmarshal(read(FileManifestEnd), &end); err != nil {
		t.Fatal(err)
	}
	key, err := hex.DecodeString(end.ApprovalKey)
	if err != nil || ApprovalKeyHash(key) != start.ApprovalKeyHash {
		t.Fatalf("approvalKey %q does not hash to approvalKeyHash %s", end.ApprovalKey, start.ApprovalKeyHash)
	}
	line := bytes.Split(read(FileDecisions), []byte("\n"))[3]
	var dec contract.DecisionRecord
	if err := jsonUnmarshal(line, &dec); err != nil {
		t.Fatal(err)
	}
	if dec.Approval == nil || dec.Approval.Channel == "" {
		t.Fatalf("decision line 4 carries no approval with a channel: %s", line)
	}
	bare := *dec.Approval
	bare.MAC = ""
	msg, err := canonjson.Marshal(struct {
		Approval   contract.ApprovalRef `json:"approval"`
		DecisionID string               `json:"decisionId"`
	}{bare, dec.DecisionID})
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(ApprovalMACPrefix))
	h.Write(msg)
	if mac := hex.EncodeToString(h.Sum(nil)); mac != dec.Approval.MAC {
		t.Errorf("decision line 4: mac %s, want the HMAC of %s: %s", dec.Approval.MAC, msg, mac)
	}
	return []string{
		"\n    " + start.ApprovalKeyHash + "\n", "\n    " + end.ApprovalKey + "\n", start.ApprovalKeyHash + "  -",
		"\n    " + string(msg) + "\n",
		"printf '" + ApprovalMACPrefix + "%s' '" + string(msg) + "' | openssl dgst -sha256 -mac HMAC -macopt hexkey:" + end.ApprovalKey,
		"SHA2-256(stdin)= " + dec.Approval.MAC, "\n    " + dec.Approval.MAC + "\n",
	}
}
