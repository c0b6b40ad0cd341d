package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The end of a verification: a sealed bundle (the manifest, the seal, the
// signature, nothing left over) or an unsealed one (what a crash can
// leave).

// sealed finishes the verification of a sealed bundle.
func (v *verifier) sealed(manifestCanon []byte, manifestTree any) error {
	if v.endTree == nil {
		if _, ok := v.files[FileLedger]; !ok {
			return fault(FileLedger, 0, -1, "missing", errors.New("the manifest is sealed"))
		}
		return fault(FileLedger, len(v.hashes)+1, -1, "missing", fmt.Errorf("%s is sealed, but the ledger (%d entries) does not end with the manifest-end entry", FileManifest, len(v.hashes)))
	}
	// The sealed manifest is the manifest-end record plus the seal, every
	// member of which is recomputed.
	root, _ := MerkleRoot(v.hashes)
	want := map[string]any{}
	for k, x := range v.endTree.(map[string]any) {
		want[k] = x
	}
	want["seal"] = map[string]any{
		"entries":    jsonNumber(len(v.hashes)),
		"headHash":   v.prev.String(),
		"merkleRoot": root.String(),
		"sealedAt":   v.lastTime,
	}
	wantCanon, err := canonjson.EncodeValue(want)
	if err != nil {
		return fault(FileManifest, 0, -1, "seal", err)
	}
	if !bytes.Equal(wantCanon, manifestCanon) {
		return manifestDiff(want, manifestTree)
	}
	// Nothing beyond what the ledger records.
	signer := strMember(v.endTree, "signer")
	if err := v.leftovers(func(file string) bool { return file == FileSeal && signer != "" }); err != nil {
		return err
	}
	// The signature.
	if signer == "" {
		if v.opts.PubKey != nil {
			return fault(FileSeal, 0, -1, "signature", errors.New("missing: the bundle is not signed, but a trusted key was given"))
		}
	} else {
		if _, ok := v.files[FileSeal]; !ok {
			return fault(FileSeal, 0, -1, "missing", fmt.Errorf("the manifest names signer %s", signer))
		}
		b, err := v.read(FileSeal)
		if err != nil {
			return fault(FileSeal, 0, -1, "unreadable", err)
		}
		content, err := jsonFile(FileSeal, b, -1)
		if err != nil {
			return err
		}
		tree, err := canonjson.ParseCanonical(content)
		if err != nil {
			return fault(FileSeal, 0, -1, "canonical", err)
		}
		auth, err := openEnvelope(tree, signer, manifestCanon, v.opts.PubKey)
		if err != nil {
			return fault(FileSeal, 0, -1, "DSSE envelope", err)
		}
		v.report.Signer, v.report.Authenticated = signer, auth
	}
	v.report.Sealed = true
	v.report.Status = contract.SessionStatus(strMember(v.endTree, "status"))
	return nil
}

func jsonNumber(n int) any { return json.Number(strconv.Itoa(n)) }

// manifestDiff names the first member of manifest.json that differs from
// what the ledger says it must be.
func manifestDiff(want map[string]any, got any) error {
	g, _ := got.(map[string]any)
	names := map[string]bool{}
	for k := range want {
		names[k] = true
	}
	for k := range g {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if schemas.Equal(want[k], g[k]) {
			continue
		}
		if wm, ok := want[k].(map[string]any); ok {
			if gm, ok := g[k].(map[string]any); ok {
				for sk, wv := range wm {
					if !schemas.Equal(wv, gm[sk]) {
						e := mismatch(FileManifest, 0, -1, k+"."+sk, short(wv), short(gm[sk]))
						e.Rule = "section 6"
						return e
					}
				}
			}
		}
		e := mismatch(FileManifest, 0, -1, k+" (against the ledger's manifest-end record and seal)", short(want[k]), short(g[k]))
		e.Rule = "section 6"
		return e
	}
	return fault(FileManifest, 0, -1, "seal", errors.New("differs from the sealed manifest the ledger implies"))
}

// short renders a JSON value for a message.
func short(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := canonjson.EncodeValue(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

// leftovers fails on any file, or line of a JSON Lines file, that no
// entry committed, but for the manifest, the ledger and what allow admits.
func (v *verifier) leftovers(allow func(string) bool) error {
	names := make([]string, 0, len(v.files))
	for f := range v.files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if _, isJSONL := jsonlKinds[f]; isJSONL && v.used[f] {
			ends := v.ends[f]
			committed := 0
			if n := v.lines[f]; n > 0 {
				committed = ends[n-1]
			}
			if len(v.data[f]) != committed {
				return fault(f, v.lines[f]+1, -1, "extra", errors.New("a line the ledger does not record"))
			}
			continue
		}
		if v.used[f] || f == FileManifest || f == FileLedger || allow(f) {
			continue
		}
		return fault(f, 0, -1, "extra", errors.New("a file the ledger does not record"))
	}
	return nil
}

// unsealed finishes the verification of an unsealed bundle: what its
// ledger records verified; what a crash can leave beyond that is at most
// one uncommitted record (a last line, or a file), a partial last ledger
// line, and the temporary files of a seal in progress.
func (v *verifier) unsealed(manifestCanon []byte, manifest rec, partial string) error {
	n := len(v.hashes)
	switch {
	case !manifest.present() && n > 0:
		return fault(FileManifest, 0, -1, "missing", fmt.Errorf("the ledger has %d entries", n))
	case manifest.present() && n > 0 && !bytes.Equal(manifestCanon, v.startCanon):
		return fault(FileManifest, 0, -1, "manifest", fmt.Errorf("unsealed, but not the manifest as the session started (%s)", FileManifestStart))
	case manifest.present() && n == 0:
		if err := checkStartManifest(manifest); err != nil {
			return fault(FileManifest, 0, -1, "manifest", err)
		}
	}
	sealing := v.lastKind == contract.LedgerManifestEnd
	var tail []string
	if partial != "" {
		tail = append(tail, partial)
	}
	var uncommitted []string
	names := make([]string, 0, len(v.files))
	for f := range v.files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if _, isJSONL := jsonlKinds[f]; isJSONL {
			ends := v.ends[f]
			committed := 0
			if c := v.lines[f]; c > 0 {
				committed = ends[c-1]
			}
			rest := v.data[f][committed:]
			switch nl := bytes.IndexByte(rest, '\n'); {
			case len(rest) == 0:
			case nl >= 0 && nl != len(rest)-1:
				return fault(f, v.lines[f]+2, -1, "extra", errors.New("more than one line the ledger does not record"))
			default:
				uncommitted = append(uncommitted, fmt.Sprintf("%s line %d", f, v.lines[f]+1))
			}
			continue
		}
		switch {
		case v.used[f] || f == FileManifest || f == FileLedger:
		case f == FileManifest+tmpSuffix && (n == 0 || sealing):
			tail = append(tail, f)
		case (f == FileSeal || f == FileSeal+tmpSuffix) && sealing:
			tail = append(tail, f)
		case isRecordPath(f):
			uncommitted = append(uncommitted, f)
		default:
			return fault(f, 0, -1, "extra", errors.New("a file the ledger does not record"))
		}
	}
	// A crash between creating a record's directory and its file leaves
	// the directory empty: an uncommitted record too.
	for _, d := range v.emptyDirs {
		uncommitted = append(uncommitted, d+"/")
	}
	if len(uncommitted) > 1 {
		return fault(uncommitted[1], 0, -1, "extra", fmt.Errorf("uncommitted beside %s: a crash leaves at most one record uncommitted", uncommitted[0]))
	}
	v.report.Incomplete = strings.Join(append(uncommitted, tail...), "; ")
	// With a trusted key only a sealed, signed bundle passes.
	if v.opts.AllowUnsealed && v.opts.PubKey == nil {
		return nil
	}
	return &UnsealedError{Entries: n, Incomplete: v.report.Incomplete}
}
