package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// Reading a bundle for Verify: the verifier and its state, the listing
// of the files, the reads, the JSON Lines files indexed by line, and the
// order of the work (run).

// verifier holds the state of one verification.
type verifier struct {
	ctx    context.Context
	fsys   fs.FS
	opts   VerifyOptions
	report *Report

	files    map[string]int64  // every regular file, by path
	folded   map[string]string // folded path -> path
	data     map[string][]byte // JSON Lines files read
	ends     map[string][]int  // per JSON Lines file, the offset after each complete line
	lines    map[string]int    // per JSON Lines file, the lines committed
	used     map[string]bool   // files committed
	total    int64
	done     int64
	lastTick int64

	sid        string
	startCanon []byte
	startTree  any
	endTree    any
	hashes     []Hash
	prev       Hash
	lastKind   contract.LedgerKind
	lastTime   string
	next       string              // the file the next entry must record, if any
	nextKind   contract.LedgerKind // and its kind
	prevDigest Hash                // the digest of the previous entry's record
	prevImg    imageInfo           // the previous entry's image type, for its record
	prevSize   int                 // and its size
	counts     contract.Counts
	plans      int
	images     map[string]Hash
	allow      map[string]decided
	consumed   map[string]bool
	ran        map[string]bool // ids of the actions executed so far
	vision     map[string]bool // action ids whose last line is a vision escalation (rule 17)
	shown      map[string]bool // image uris whose record names one (rule 17)
	format     string          // manifest-start's formatVersion
	strict     bool            // the format requires decisions that allow to record their action (rule 15)
	uncompared int             // action lines not compared with a decided action (aegis-evidence/1)

	emptyDirs []string                    // directories holding no file
	owed      *pendingAction              // the action line waiting for its event
	artDigest map[string]Hash             // artifacts/{id}.json -> D of its record
	embedded  map[string]embeddedArtifact // artifacts/{id}.json -> a copy embedded before the file
	keyHash   string                      // the manifest's approvalKeyHash, "" when none
	approvals []*approvalMark             // the approvals whose MACs the revealed key checks
}

func newVerifier(ctx context.Context, fsys fs.FS, opts VerifyOptions) *verifier {
	return &verifier{
		ctx: ctx, fsys: fsys, opts: opts, report: &Report{},
		files: map[string]int64{}, folded: map[string]string{}, data: map[string][]byte{},
		ends: map[string][]int{}, lines: map[string]int{}, used: map[string]bool{},
		images: map[string]Hash{}, allow: map[string]decided{}, consumed: map[string]bool{}, ran: map[string]bool{},
		vision: map[string]bool{}, shown: map[string]bool{},
		artDigest: map[string]Hash{}, embedded: map[string]embeddedArtifact{},
	}
}

func fault(file string, line, entry int, check string, err error) *VerifyError {
	return &VerifyError{File: file, Line: line, Entry: entry, Check: check, Err: err}
}

func mismatch(file string, line, entry int, check, want, got string) *VerifyError {
	return &VerifyError{File: file, Line: line, Entry: entry, Check: check, Want: want, Got: got}
}

// list walks the bundle: regular files only, and notes the directories
// that hold none (refused in a sealed bundle, what a crash may leave in an
// unsealed one).
func (v *verifier) list() error {
	dirs := map[string]bool{} // directory -> holds a file, at any depth
	err := fs.WalkDir(v.fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return fault(rel, 0, -1, "unreadable", err)
		}
		if rel == "." {
			return nil
		}
		switch {
		case d.IsDir():
			if !validBundlePath(rel) {
				return fault(rel, 0, -1, "extra", errors.New("directory name not allowed in a bundle"))
			}
			dirs[rel] = false
			return nil
		case !d.Type().IsRegular():
			return fault(rel, 0, -1, "file type", fmt.Errorf("%v: only regular files belong in a bundle", d.Type()))
		}
		info, err := d.Info()
		if err != nil {
			return fault(rel, 0, -1, "unreadable", err)
		}
		if prev, dup := v.folded[foldPath(rel)]; dup {
			return fault(rel, 0, -1, "extra", fmt.Errorf("collides with %s on a case-insensitive file system", prev))
		}
		v.folded[foldPath(rel)] = rel
		v.files[rel] = info.Size()
		v.total += info.Size()
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			dirs[dir] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for dir, full := range dirs {
		if !full {
			v.emptyDirs = append(v.emptyDirs, dir)
		}
	}
	sort.Strings(v.emptyDirs)
	return nil
}

func (v *verifier) read(file string) ([]byte, error) {
	b, err := fs.ReadFile(v.fsys, file)
	if err == nil {
		v.progress(int64(len(b)))
	}
	return b, err
}

func (v *verifier) progress(n int64) {
	v.done += n
	v.report.Bytes = v.done
	if v.opts.Progress != nil && (v.done-v.lastTick >= 8<<20 || v.done == v.total) {
		v.lastTick = v.done
		v.opts.Progress(v.done, v.total)
	}
}

// jsonFile returns a JSON file's content: its bytes without the one final
// line feed it must end with.
func jsonFile(file string, b []byte, entry int) ([]byte, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fault(file, 0, entry, "line feed", errors.New("a JSON file ends with one line feed"))
	}
	return b[:len(b)-1], nil
}

func (v *verifier) run() error {
	if err := v.list(); err != nil {
		return err
	}
	v.report.Files = len(v.files)
	// The manifest says whether the bundle is sealed.
	var manifestCanon []byte
	var manifestTree any
	var manifest rec
	if _, ok := v.files[FileManifest]; ok {
		b, err := v.read(FileManifest)
		if err != nil {
			return fault(FileManifest, 0, -1, "unreadable", err)
		}
		if manifestCanon, err = jsonFile(FileManifest, b, -1); err != nil {
			return err
		}
		if manifest, err = parseRec(manifestCanon); err != nil {
			return fault(FileManifest, 0, -1, "canonical", err)
		}
		if err := validateRec(string(schemas.KindManifest), manifest); err != nil {
			return fault(FileManifest, 0, -1, "schema", err)
		}
		manifestTree = manifest.value()
	}
	sealed := manifest.at("seal").present()
	if sealed && len(v.emptyDirs) > 0 {
		return fault(v.emptyDirs[0], 0, -1, "empty directory", errors.New("a sealed bundle holds regular files only, and every directory holds one"))
	}
	// The ledger, and the JSON Lines files its entries point into.
	var ledger []byte
	if _, ok := v.files[FileLedger]; ok {
		var err error
		if ledger, err = v.read(FileLedger); err != nil {
			return fault(FileLedger, 0, -1, "unreadable", err)
		}
	}
	for file := range jsonlKinds {
		if err := v.readJSONL(file); err != nil {
			return err
		}
	}
	var lines [][]byte
	partial := ""
	for len(ledger) > 0 {
		nl := bytes.IndexByte(ledger, '\n')
		if nl < 0 {
			partial = fmt.Sprintf("%s line %d is incomplete (%d bytes)", FileLedger, len(lines)+1, len(ledger))
			break
		}
		lines = append(lines, ledger[:nl])
		ledger = ledger[nl+1:]
	}
	if err := v.entries(lines); err != nil {
		return err
	}
	v.report.Entries = len(v.hashes)
	v.report.EntryHashes = v.hashes
	v.report.Counts = v.counts
	v.report.Unchecked = v.unchecked()
	if len(v.hashes) > 0 {
		root, _ := MerkleRoot(v.hashes)
		v.report.HeadHash, v.report.MerkleRoot = v.prev.String(), root.String()
	}
	if sealed {
		if partial != "" {
			return fault(FileLedger, len(v.hashes)+1, -1, "extra", errors.New("incomplete last line in a sealed ledger"))
		}
		return v.sealed(manifestCanon, manifestTree)
	}
	return v.unsealed(manifestCanon, manifest, partial)
}

// readJSONL reads a JSON Lines file once and indexes its complete lines.
func (v *verifier) readJSONL(file string) error {
	var b []byte
	if _, ok := v.files[file]; ok {
		var err error
		if b, err = v.read(file); err != nil {
			return fault(file, 0, -1, "unreadable", err)
		}
	}
	ends := make([]int, 0, 64)
	for off := 0; ; {
		nl := bytes.IndexByte(b[off:], '\n')
		if nl < 0 {
			break
		}
		off += nl + 1
		ends = append(ends, off)
	}
	v.data[file], v.ends[file] = b, ends
	return nil
}

// readRecord reads a whole record file, of the size it was listed with:
// one larger than any record is refused unread, and one whose size
// changed since it was listed is an error.
func (v *verifier) readRecord(file string) ([]byte, error) {
	f, err := v.fsys.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := v.files[file] // as listed: a file that changed since fails below
	if size > schemas.MaxDocumentBytes && size > contract.MaxImageBytes {
		return nil, fmt.Errorf("%d bytes: larger than any record", size)
	}
	b := make([]byte, size+1)
	n, err := io.ReadFull(f, b)
	if err == io.EOF && size == 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != io.ErrUnexpectedEOF || int64(n) != size {
		if err == nil || err == io.ErrUnexpectedEOF || err == io.EOF {
			err = errors.New("the file changed while verified")
		}
		return nil, err
	}
	return b[:n], nil
}
