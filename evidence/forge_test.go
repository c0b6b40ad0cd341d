package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// A forger: it holds the key and rewrites a bundle, then recomputes every
// hash (content, entry, chain, Merkle root), the end manifest's counts, the
// seal and the signature, as someone who can write the bundle and sign it
// would. What it changes can then be caught only by a rule about what the
// records say, never by a hash; the cross-record vectors use it.

// forgedEntry is one record of a bundle being forged, with its ledger
// entry's kind, file and time.
type forgedEntry struct {
	kind    contract.LedgerKind
	file    string
	time    string
	content []byte // the record bytes (without the line feed of a JSON record)
}

// forgery is a bundle taken apart into its records, in ledger order.
type forgery struct {
	t       testing.TB
	entries []forgedEntry
	dirs    []string // empty directories to add
}

// forge takes apart the bundle whose files are given.
func forge(t testing.TB, files map[string][]byte) *forgery {
	t.Helper()
	f := &forgery{t: t}
	jsonl := map[string][][]byte{}
	for file := range jsonlKinds {
		jsonl[file] = bytes.SplitAfter(files[file], []byte("\n"))
	}
	for _, l := range lines(files[FileLedger]) {
		var e contract.LedgerEntry
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		fe := forgedEntry{kind: e.Kind, file: e.File, time: e.Time}
		switch {
		case e.Line > 0:
			fe.content = bytes.TrimSuffix(jsonl[e.File][e.Line-1], []byte("\n"))
		case e.Kind == contract.LedgerImage || e.Kind == contract.LedgerDOMSnapshot:
			fe.content = files[e.File]
		default:
			fe.content = bytes.TrimSuffix(files[e.File], []byte("\n"))
		}
		f.entries = append(f.entries, fe)
	}
	return f
}

// find returns the index of the entry of file (and line, for a JSON Lines
// file; 0 otherwise).
func (f *forgery) find(file string, line int) int {
	n := 0
	for i, e := range f.entries {
		if e.file != file {
			continue
		}
		n++
		if line == 0 || n == line {
			return i
		}
	}
	f.t.Fatalf("forge: no entry for %s line %d", file, line)
	return -1
}

// edit rewrites the JSON record of entry i: change gets its parsed value.
func (f *forgery) edit(i int, change func(m map[string]any)) {
	f.t.Helper()
	v, err := canonjson.ParseCanonical(f.entries[i].content)
	if err != nil {
		f.t.Fatal(err)
	}
	change(v.(map[string]any))
	b, err := canonjson.EncodeValue(v)
	if err != nil {
		f.t.Fatal(err)
	}
	f.entries[i].content = b
}

// remove deletes entry i and its record.
func (f *forgery) remove(i int) {
	f.entries = append(f.entries[:i:i], f.entries[i+1:]...)
}

// insert adds a record with its entry at index i.
func (f *forgery) insert(i int, e forgedEntry) {
	f.entries = append(f.entries[:i:i], append([]forgedEntry{e}, f.entries[i:]...)...)
}

// files writes the bundle out again: every hash recomputed, the end
// manifest's counts taken from the records, sealed and signed with the
// test key.
func (f *forgery) files() fstest.MapFS {
	t := f.t
	t.Helper()
	out := fstest.MapFS{}
	var counts contract.Counts
	lineOf := map[string]int{}
	jsonl := map[string][]byte{}
	var hashes []Hash
	var prev Hash
	var last forgedEntry
	for i := range f.entries {
		e := &f.entries[i]
		switch e.kind {
		case contract.LedgerAction:
			counts.Actions++
		case contract.LedgerDecision:
			counts.Decisions++
		case contract.LedgerEvent:
			counts.Events++
		case contract.LedgerModelCall:
			counts.ModelCalls++
		case contract.LedgerObservation:
			counts.Observations++
		case contract.LedgerArtifact, contract.LedgerImageArtifact:
			counts.Artifacts++
		case contract.LedgerManifestEnd:
			f.edit(i, func(m map[string]any) {
				b, err := canonjson.Marshal(counts)
				if err != nil {
					t.Fatal(err)
				}
				if m["counts"], err = canonjson.ParseCanonical(b); err != nil {
					t.Fatal(err)
				}
			})
		}
		le := contract.LedgerEntry{Index: i, Kind: e.kind, File: e.file, Time: e.time, PrevHash: contract.GenesisPrevHash,
			ContentHash: ContentHash(e.kind, sha256.Sum256(e.content)).String()}
		if i > 0 {
			le.PrevHash = prev.String()
		}
		if _, ok := jsonlKinds[e.file]; ok {
			lineOf[e.file]++
			le.Line = lineOf[e.file]
			jsonl[e.file] = append(append(jsonl[e.file], e.content...), '\n')
		} else if e.kind == contract.LedgerImage || e.kind == contract.LedgerDOMSnapshot {
			out[e.file] = &fstest.MapFile{Data: e.content, Mode: 0o644}
		} else {
			out[e.file] = &fstest.MapFile{Data: append(bytes.Clone(e.content), '\n'), Mode: 0o644}
		}
		unhashed, err := encodeEntry(le, false)
		if err != nil {
			t.Fatal(err)
		}
		prev = entryHash(unhashed)
		le.EntryHash = prev.String()
		line, err := encodeEntry(le, true)
		if err != nil {
			t.Fatal(err)
		}
		jsonl[FileLedger] = append(append(jsonl[FileLedger], line...), '\n')
		hashes = append(hashes, prev)
		last = *e
	}
	for file, b := range jsonl {
		out[file] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	root, err := MerkleRoot(hashes)
	if err != nil {
		t.Fatal(err)
	}
	end, err := canonjson.ParseCanonical(last.content)
	if err != nil {
		t.Fatal(err)
	}
	end.(map[string]any)["seal"] = map[string]any{
		"entries": json.Number(strconv.Itoa(len(hashes))), "headHash": prev.String(),
		"merkleRoot": root.String(), "sealedAt": last.time,
	}
	manifest, err := canonjson.EncodeValue(end)
	if err != nil {
		t.Fatal(err)
	}
	out[FileManifest] = &fstest.MapFile{Data: append(manifest, '\n'), Mode: 0o644}
	env, err := signEnvelope(context.Background(), NewEd25519Signer(testKey()), manifest)
	if err != nil {
		t.Fatal(err)
	}
	out[FileSeal] = &fstest.MapFile{Data: env, Mode: 0o644}
	for _, d := range f.dirs {
		out[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	}
	return out
}
