package evidence

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The ledger entries: each prepared ahead by a worker (parsed, its record
// read, hashed, and checked for canonical form and schema), then checked
// in order (index, chain, entry hash, content hash).

// prepared is what a worker established about one ledger entry ahead of
// the checks that must run in order: the entry parsed, its record read
// and hashed, and the record's own form (canonical, schema) checked. Its
// errors are reported by check, at their place in the order of checks, so
// the first failure named is the same whatever the workers' timing.
type prepared struct {
	e           contract.LedgerEntry // but for its hashes:
	prevHash    Hash                 // the entry's prevHash
	entryHash   Hash                 // its entryHash
	contentHash Hash                 // its contentHash
	eh          Hash                 // the entry hash recomputed
	lineErr     error                // the line is not a valid entry
	contentErr  error                // the record is missing or malformed as a file
	recErr      error                // the record breaks its form
	size        int
	digest      Hash
	rec         rec // a JSON record, parsed
	img         imageInfo
}

// entries verifies the ledger's complete lines in order. The work that
// does not depend on the entries before (reading, hashing, parsing,
// schema validation) runs ahead on up to GOMAXPROCS workers, at most a
// bounded window of entries ahead; the checks that do run here, in order.
func (v *verifier) entries(lines [][]byte) error {
	n := len(lines)
	workers := min(runtime.GOMAXPROCS(0), 4)
	results := make([]chan *prepared, n)
	for i := range results {
		results[i] = make(chan *prepared, 1)
	}
	stop := make(chan struct{})
	defer close(stop)
	window := make(chan struct{}, 4*workers)
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		go func() {
			for {
				select {
				case window <- struct{}{}:
				case <-stop:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				results[i] <- v.prepare(i, lines[i])
			}
		}()
	}
	for i := 0; i < n; i++ {
		var p *prepared
		select {
		case p = <-results[i]:
		case <-v.ctx.Done():
			return v.ctx.Err()
		}
		<-window
		if err := v.check(i, p); err != nil {
			return err
		}
		v.progress(int64(p.size)) // the ledger and JSON Lines files were counted when read
	}
	return nil
}

// prepare does the order-independent work for entry i. It reads only what
// the verifier does not change while entries are checked.
func (v *verifier) prepare(i int, line []byte) *prepared {
	p := &prepared{}
	r, err := parseRec(line)
	if err != nil {
		p.lineErr = fault(FileLedger, i+1, i, "canonical", err)
		return p
	}
	if err := validateRec(string(schemas.KindLedgerEntry), r); err != nil {
		p.lineErr = fault(FileLedger, i+1, i, "schema", err)
		return p
	}
	// The hashes are kept as bytes (the schema checked their spelling);
	// e holds the rest.
	e := contract.LedgerEntry{
		Index: int(r.at("index").num()), Kind: ledgerKind(r.at("kind")),
		File: r.at("file").str(), Time: r.at("time").str(),
	}
	p.prevHash, p.entryHash, p.contentHash = hashOf(r.at("prevHash")), hashOf(r.at("entryHash")), hashOf(r.at("contentHash"))
	if l := r.at("line"); l.present() {
		e.Line = int(l.num())
	}
	p.e = e
	if p.eh, err = unhashedEntryHash(r); err != nil {
		p.lineErr = fault(FileLedger, i+1, i, "canonical", err)
		return p
	}
	// The record's bytes.
	var content []byte
	if _, isJSONL := jsonlKinds[e.File]; isJSONL {
		ends := v.ends[e.File]
		if e.Line > len(ends) {
			p.contentErr = fault(e.File, e.Line, i, "missing", errors.New("the line the ledger records is not there"))
			return p
		}
		start := 0
		if e.Line > 1 {
			start = ends[e.Line-2]
		}
		content = v.data[e.File][start : ends[e.Line-1]-1]
	} else {
		if _, ok := v.files[e.File]; !ok {
			p.contentErr = fault(e.File, 0, i, "missing", errors.New("the file the ledger records is not there"))
			return p
		}
		b, err := v.readRecord(e.File)
		if err != nil {
			p.contentErr = fault(e.File, 0, i, "unreadable", err)
			return p
		}
		p.size = len(b)
		content = b
		if e.Kind != contract.LedgerImage && e.Kind != contract.LedgerDOMSnapshot {
			if content, err = jsonFile(e.File, b, i); err != nil {
				p.contentErr = err
				return p
			}
		}
	}
	p.digest = sha256.Sum256(content)
	p.recErr = v.form(p, content)
	return p
}

// hashOf returns a hash written as 64 lowercase hex digits (checked by the
// schema); zero for anything else.
func hashOf(r rec) Hash {
	h, err := ParseHash(r.str())
	if err != nil {
		return Hash{}
	}
	return h
}

// ledgerKind returns the kind an entry names.
func ledgerKind(r rec) contract.LedgerKind { return contract.LedgerKind(r.str()) }

// unhashedEntryHash returns the entry hash of a parsed ledger entry: the
// hash of the canonical form of the entry without its entryHash member
// (FORMAT.md, section 5). For a canonical line that is the line with the
// member cut out.
func unhashedEntryHash(r rec) (Hash, error) {
	m, _ := r.v.(map[string]any)
	rest := make(map[string]any, len(m))
	for k, x := range m {
		if k != "entryHash" {
			rest[k] = x
		}
	}
	b, err := canonjson.EncodeValue(rest)
	if err != nil {
		return Hash{}, err
	}
	return entryHash(b), nil
}

// form checks what a record is by itself: an image's type, a snapshot's
// text, a JSON record's canonical form and schema.
func (v *verifier) form(p *prepared, content []byte) error {
	e := p.e
	bad := func(check string, err error) error { return fault(e.File, e.Line, e.Index, check, err) }
	switch e.Kind {
	case contract.LedgerImage:
		info, ok := sniffImage(content)
		switch {
		case !ok:
			return bad("image", errors.New("not a PNG, JPEG or WebP image"))
		case !strings.HasSuffix(e.File, imageExt[info.mime]):
			return bad("image", fmt.Errorf("the bytes are %s, not what the extension says", info.mime))
		case len(content) > contract.MaxImageBytes:
			return bad("image", fmt.Errorf("%d bytes, at most %d allowed", len(content), contract.MaxImageBytes))
		}
		p.img = info
		return nil
	case contract.LedgerDOMSnapshot:
		if err := checkSnapshot(content); err != nil {
			return bad("dom snapshot", err)
		}
		return nil
	}
	r, err := parseRec(content)
	p.rec = r
	if err != nil {
		return bad("canonical", err)
	}
	var shape string
	switch e.Kind {
	case contract.LedgerManifestStart, contract.LedgerManifestEnd:
		shape = string(schemas.KindManifest)
	case contract.LedgerPlan:
		shape = string(schemas.KindPlan)
	case contract.LedgerDecision:
		shape = string(schemas.KindDecision)
	case contract.LedgerEvent:
		shape = string(schemas.KindEvent)
	case contract.LedgerModelCall:
		shape = string(schemas.KindModelCall)
	case contract.LedgerObservation:
		shape = string(schemas.KindObservation)
	case contract.LedgerArtifact:
		shape = shapeArtifact
	case contract.LedgerImageArtifact:
		shape = string(schemas.KindImageArtifact)
	case contract.LedgerAction:
		if err := validateActionLine(r); err != nil {
			return bad("schema", err)
		}
		return nil
	}
	if err := validateRec(shape, r); err != nil {
		return bad("schema", err)
	}
	return nil
}

// check runs the checks of entry i that depend on the entries before it,
// in order, and records the entry.
func (v *verifier) check(i int, p *prepared) error {
	if p.lineErr != nil {
		return p.lineErr
	}
	e := p.e
	where := func(check string, err error) error { return fault(FileLedger, i+1, i, check, err) }
	if e.Index != i {
		return mismatch(FileLedger, i+1, i, "index", fmt.Sprint(i), fmt.Sprint(e.Index))
	}
	var wantPrev Hash // 64 zeros for entry 0: contract.GenesisPrevHash
	if i > 0 {
		wantPrev = v.prev
	}
	if p.prevHash != wantPrev {
		return mismatch(FileLedger, i+1, i, "chain: prevHash", wantPrev.String(), p.prevHash.String())
	}
	if p.entryHash != p.eh {
		return mismatch(FileLedger, i+1, i, "entryHash", p.eh.String(), p.entryHash.String())
	}
	if i > 0 {
		if err := notBefore("time", e.Time, "the previous entry's time", v.lastTime); err != nil {
			return where("time", err)
		}
	} else if _, err := parseTime(e.Time); err != nil {
		return where("time", err)
	}
	if v.lastKind == contract.LedgerManifestEnd {
		return where("extra", errors.New("an entry after the manifest-end entry"))
	}
	if v.next != "" && (e.File != v.next || e.Kind != v.nextKind) {
		return where("order", fmt.Errorf("entry records %s %s, want %s %s (recorded with the entry before it)", e.Kind, e.File, v.nextKind, v.next))
	}
	// Each line of a JSON Lines file in turn, each other file once.
	if _, isJSONL := jsonlKinds[e.File]; isJSONL {
		if e.Line != v.lines[e.File]+1 {
			return mismatch(FileLedger, i+1, i, "line", fmt.Sprintf("%s line %d", e.File, v.lines[e.File]+1), fmt.Sprintf("line %d", e.Line))
		}
	} else if v.used[e.File] {
		return fault(FileLedger, i+1, i, "duplicate", fmt.Errorf("%s is recorded twice", e.File))
	}
	if p.contentErr != nil {
		return p.contentErr
	}
	v.used[e.File] = true
	if e.Line > 0 {
		v.lines[e.File] = e.Line
	}
	if got := ContentHash(e.Kind, p.digest); got != p.contentHash {
		return mismatch(e.File, e.Line, i, "contentHash (the record does not match its ledger entry)", p.contentHash.String(), got.String())
	}
	if p.recErr != nil {
		return p.recErr
	}
	if err := v.record(p); err != nil {
		return err
	}
	v.hashes = append(v.hashes, p.eh)
	v.prev = p.eh
	v.lastKind, v.lastTime = e.Kind, e.Time
	v.prevDigest, v.prevImg, v.prevSize = p.digest, p.img, p.size
	return nil
}
