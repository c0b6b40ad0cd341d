package evidence

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestProveEveryEntry(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true})
	ctx := context.Background()
	r, err := Verify(ctx, dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < r.Entries; i++ {
		p, err := Prove(ctx, dir, fmt.Sprint(i), true)
		if err != nil {
			t.Fatal(err)
		}
		// Through its file format.
		b, _ := json.Marshal(p)
		p2, err := ParseProof(b)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := VerifyProof(p2, testPub())
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if !pr.ContentVerified || !pr.Authenticated || pr.MerkleRoot != r.MerkleRoot || pr.Entry.Index != i {
			t.Errorf("entry %d: %+v", i, pr)
		}
		// Every bit of every path element matters.
		for j := range p.Path {
			for bit := 0; bit < 256; bit += 7 {
				bad := *p
				bad.Path = append([]string(nil), p.Path...)
				h, _ := ParseHash(p.Path[j])
				h[bit/8] ^= 1 << (bit % 8)
				bad.Path[j] = h.String()
				if _, err := VerifyProof(&bad, nil); err == nil || !strings.Contains(err.Error(), "root mismatch") {
					t.Fatalf("entry %d, path element %d, bit %d flipped: %v", i, j, bit, err)
				}
			}
		}
	}
	// By file and by line.
	for _, ref := range []string{"actions.jsonl:2", "dom/0.html", "artifacts/shot-1.png", FileManifestEnd} {
		if _, err := Prove(ctx, dir, ref, false); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	for _, ref := range []string{"actions.jsonl:99", "nope.json", "-1", "999", "actions.jsonl:x"} {
		if _, err := Prove(ctx, dir, ref, false); err == nil {
			t.Errorf("%s: proven", ref)
		}
	}
}

func TestVerifyProofRefuses(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true})
	ctx := context.Background()
	p, err := Prove(ctx, dir, "actions.jsonl:1", true)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, _ := GenerateKey(nil)
	tests := []struct {
		name   string
		change func(p *Proof)
		pub    bool
		want   string
	}{
		{"other content", func(p *Proof) { p.Content = base64.StdEncoding.EncodeToString([]byte("{}")) }, false, "content does not match"},
		{"other index", func(p *Proof) { p.Entry.Index++ }, false, "entryHash"},
		{"entry hash forged", func(p *Proof) { p.Entry.EntryHash = strings.Repeat("a", 64) }, false, "entryHash"},
		{"path too short", func(p *Proof) { p.Path = p.Path[1:] }, false, "proof too short"},
		{"path too long", func(p *Proof) { p.Path = append(p.Path, p.Path[0]) }, false, "proof too long"},
		{"other tree size", func(p *Proof) { p.TreeSize++ }, false, "treeSize"},
		{"envelope dropped", func(p *Proof) { p.Envelope = nil }, false, "no envelope"},
		{"wrong key", func(p *Proof) {}, true, "trusted key"},
		{"manifest changed", func(p *Proof) {
			p.Manifest = json.RawMessage(strings.Replace(string(p.Manifest), `"completed"`, `"aborted"`, 1))
		}, false, "not the sealed manifest"},
	}
	for _, tt := range tests {
		q := *p
		q.Path = append([]string(nil), p.Path...)
		tt.change(&q)
		var err error
		if tt.pub {
			_, err = VerifyProof(&q, otherPub)
		} else {
			_, err = VerifyProof(&q, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	// An unsealed bundle has nothing to prove against.
	w, _ := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	w.Close()
	if _, err := Prove(ctx, w.Dir(), "0", false); err == nil || !strings.Contains(err.Error(), "unsealed") {
		t.Errorf("prove in an unsealed bundle: %v", err)
	}
	if _, err := Prove(ctx, filepath.Join(dir, "nope"), "0", false); err == nil {
		t.Error("prove in nothing")
	}
	if _, err := ParseProof([]byte(`{"format":"other"}`)); err == nil {
		t.Error("a proof of another format parsed")
	}
}
