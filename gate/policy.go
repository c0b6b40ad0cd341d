package gate

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/aegis-run/aegis/policy"
)

// Bounds on a policy bundle, so that a hostile or broken --policy cannot
// exhaust memory.
const (
	MaxPolicyFiles = 1000     // files in one bundle
	MaxPolicyBytes = 16 << 20 // total size of the files the gate reads
)

// The policy sources a DecisionRecord names.
const (
	SourceEmbedded = "embedded" // the default bundle compiled into the binary
	SourceDir      = "dir"      // a directory in OPA's bundle layout
	SourceBundle   = "bundle"   // an OPA bundle .tar.gz
	SourceFS       = "fs"       // an fs.FS handed to Options.PolicyFS
	SourceRemote   = "remote"   // a remote OPA server (Options.OPAURL)
)

// Query is the one rule the gate evaluates per action.
const Query = "data.aegis.browser.decision"

// QueryPath is Query as the path of OPA's data API.
const QueryPath = "aegis/browser/decision"

// PolicyLoadError reports a policy that could not be read, parsed or
// compiled. A Gate whose policy failed to load denies every action.
type PolicyLoadError struct {
	// Path is the directory or bundle given, or "embedded".
	Path string
	// Stage is "read", "parse" or "compile".
	Stage string
	// Err is the underlying error.
	Err error
}

// Error describes the failure with the path and the stage.
func (e *PolicyLoadError) Error() string {
	return fmt.Sprintf("gate: policy %s: %s: %v", e.Path, e.Stage, e.Err)
}

// Unwrap returns the underlying error.
func (e *PolicyLoadError) Unwrap() error { return e.Err }

// policyFiles is a policy bundle as read: its files by slash path, relative
// to the bundle root.
type policyFiles struct {
	source string
	path   string
	files  map[string][]byte
}

// isPolicyFile reports whether a bundle file takes part in evaluation:
// Rego modules other than tests, and data.json / data.yaml documents.
func isPolicyFile(name string) bool {
	base := path.Base(name)
	switch {
	case strings.HasSuffix(base, "_test.rego"):
		return false
	case strings.HasSuffix(base, ".rego"):
		return true
	case base == "data.json" || base == "data.yaml" || base == "data.yml":
		return true
	}
	return false
}

// isTestFile reports whether a bundle file is a Rego test module.
func isTestFile(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// version is the policy version: SHA-256 over the evaluated files sorted by
// path, each framed as path, NUL, decimal length, NUL, contents, so that no
// two different bundles frame to the same bytes. Tests, READMEs and other
// files do not count: they cannot change a decision.
func (p *policyFiles) version() string {
	names := make([]string, 0, len(p.files))
	for n := range p.files {
		if isPolicyFile(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		io.WriteString(h, n)
		h.Write([]byte{0})
		io.WriteString(h, strconv.Itoa(len(p.files[n])))
		h.Write([]byte{0})
		h.Write(p.files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readPolicy reads the policy the options name: PolicyFS, else PolicyPath
// (a directory or a .tar.gz bundle), else the embedded default.
func readPolicy(opts Options) (*policyFiles, error) {
	switch {
	case opts.PolicyFS != nil:
		return readPolicyFS(opts.PolicyFS, SourceFS, "fs")
	case opts.PolicyPath != "":
		st, err := os.Stat(opts.PolicyPath)
		if err != nil {
			return nil, &PolicyLoadError{Path: opts.PolicyPath, Stage: "read", Err: err}
		}
		if st.IsDir() {
			return readPolicyFS(os.DirFS(opts.PolicyPath), SourceDir, opts.PolicyPath)
		}
		return readPolicyTarball(opts.PolicyPath)
	default:
		return readPolicyFS(policy.FS(), SourceEmbedded, SourceEmbedded)
	}
}

// readPolicyFS reads every regular file of a bundle laid out in fsys,
// skipping hidden directories other than the root.
func readPolicyFS(fsys fs.FS, source, name string) (*policyFiles, error) {
	p := &policyFiles{source: source, path: name, files: map[string][]byte{}}
	total := 0
	err := fs.WalkDir(fsys, ".", func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if fp != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !(isPolicyFile(fp) || isTestFile(fp)) {
			return nil
		}
		if len(p.files) >= MaxPolicyFiles {
			return fmt.Errorf("more than %d policy files", MaxPolicyFiles)
		}
		b, err := readBounded(fsys, fp, MaxPolicyBytes-total)
		if err != nil {
			return err
		}
		total += len(b)
		p.files[fp] = b
		return nil
	})
	if err != nil {
		return nil, &PolicyLoadError{Path: name, Stage: "read", Err: err}
	}
	if err := p.check(); err != nil {
		return nil, &PolicyLoadError{Path: name, Stage: "read", Err: err}
	}
	return p, nil
}

func readBounded(fsys fs.FS, name string, limit int) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("policy files larger than %d bytes in total", MaxPolicyBytes)
	}
	return b, nil
}

// readPolicyTarball reads an OPA bundle .tar.gz: regular files only, no
// absolute paths or "..", bounded in count and size.
func readPolicyTarball(file string) (*policyFiles, error) {
	fail := func(err error) (*policyFiles, error) {
		return nil, &PolicyLoadError{Path: file, Stage: "read", Err: err}
	}
	f, err := os.Open(file)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fail(fmt.Errorf("not a .tar.gz bundle: %w", err))
	}
	tr := tar.NewReader(io.LimitReader(zr, 4*MaxPolicyBytes))
	p := &policyFiles{source: SourceBundle, path: file, files: map[string][]byte{}}
	total := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return fail(fmt.Errorf("bundle entry %q is not a regular file", h.Name))
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if name == "" || strings.HasPrefix(h.Name, "/") || strings.Contains(h.Name, "..") {
			return fail(fmt.Errorf("bundle entry %q has an unsafe path", h.Name))
		}
		if !(isPolicyFile(name) || isTestFile(name)) {
			continue
		}
		if len(p.files) >= MaxPolicyFiles {
			return fail(fmt.Errorf("more than %d policy files", MaxPolicyFiles))
		}
		if _, dup := p.files[name]; dup {
			return fail(fmt.Errorf("bundle entry %q appears twice", name))
		}
		b, err := io.ReadAll(io.LimitReader(tr, int64(MaxPolicyBytes-total)+1))
		if err != nil {
			return fail(err)
		}
		total += len(b)
		if total > MaxPolicyBytes {
			return fail(fmt.Errorf("policy files larger than %d bytes in total", MaxPolicyBytes))
		}
		p.files[name] = b
	}
	if err := p.check(); err != nil {
		return fail(err)
	}
	return p, nil
}

// check refuses a bundle without a single Rego module: an empty directory
// is a missing policy, not a policy that allows nothing.
func (p *policyFiles) check() error {
	for n := range p.files {
		if strings.HasSuffix(n, ".rego") && !isTestFile(n) {
			return nil
		}
	}
	return errors.New("no policy (.rego) files found")
}

// bundle parses the files into an OPA bundle (Rego v1), tests included
// only when withTests.
func (p *policyFiles) bundle(withTests bool) (*bundle.Bundle, error) {
	m := fstest.MapFS{}
	for n, b := range p.files {
		if isPolicyFile(n) || withTests && isTestFile(n) {
			m[n] = &fstest.MapFile{Data: b, Mode: 0o444}
		}
	}
	loader, err := bundle.NewFSLoader(m)
	if err != nil {
		return nil, &PolicyLoadError{Path: p.path, Stage: "parse", Err: err}
	}
	b, err := bundle.NewCustomReader(loader).
		WithRegoVersion(ast.RegoV1).
		WithSkipBundleVerification(true).
		WithBundleName("aegis").
		Read()
	if err != nil {
		return nil, &PolicyLoadError{Path: p.path, Stage: "parse", Err: err}
	}
	return &b, nil
}
