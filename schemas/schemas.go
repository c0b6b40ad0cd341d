// Package schemas embeds the JSON Schemas (draft 2020-12) that define every
// wire shape aegis speaks, compiles each once, and validates documents
// against them. The .schema.json files in this directory are the single
// source of truth: Go types elsewhere mirror them, and tests prove the two
// agree.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/aegis-run/aegis/internal/strictjson"
)

//go:embed *.schema.json
var files embed.FS

// BaseURL is the base of every schema's $id.
const BaseURL = "https://github.com/aegis-run/aegis/schemas/"

// MaxDocumentBytes bounds a document handed to Validate. Chrome's own cap
// on a native message is 64 MiB; nothing aegis accepts is larger.
const MaxDocumentBytes = strictjson.MaxDocumentBytes

// MaxDepth bounds the nesting of a document, so that a hostile document
// cannot exhaust the stack of a recursive walker.
const MaxDepth = 64

// Kind names one wire shape.
type Kind string

// The kinds, one per wire shape. Their names are the KIND argument of
// "aegis validate".
const (
	KindState             Kind = "state"              // BrowserState (seed 001)
	KindObservation       Kind = "observation"        // BrowserObservation (seed 001)
	KindAction            Kind = "action"             // one BrowserAction (seed 001)
	KindActions           Kind = "actions"            // a batch of BrowserActions
	KindPlan              Kind = "plan"               // BrowserPlan (seed 001)
	KindNavigatorResponse Kind = "navigator-response" // the Navigator's answer
	KindInput             Kind = "input"              // ComputerUseInput (seed 003)
	KindOutput            Kind = "output"             // ComputerUseOutput (seed 003)
	KindEvent             Kind = "event"              // ComputerUseStreamEvent (seed 003)
	KindControl           Kind = "control"            // ComputerUseControlRequest (seed 003)
	KindToolResult        Kind = "tool-result"        // ToolResult with provenance (seed 000)
	KindDecision          Kind = "decision"           // decision record (seed 001 section 5)
	KindImageArtifact     Kind = "image-artifact"     // image artifact record (seed 004)
	KindManifest          Kind = "manifest"           // evidence bundle manifest
	KindLedgerEntry       Kind = "ledger-entry"       // one entry of provenance/ledger.json
	KindModelCall         Kind = "model-call"         // one model call: a line of model-calls.jsonl
	KindModelRegistry     Kind = "model-registry"     // the models a site allows (aegis run --model-registry)
	KindSuiteIndex        Kind = "suite-index"        // a suite's index, suite.json (aegis suite, aegis verify)
)

// kindRefs maps each kind to its schema, relative to BaseURL.
var kindRefs = map[Kind]string{
	KindState:             "browser-state.schema.json",
	KindObservation:       "browser-observation.schema.json",
	KindAction:            "browser-action.schema.json",
	KindActions:           "browser-actions.schema.json",
	KindPlan:              "browser-plan.schema.json",
	KindNavigatorResponse: "navigator-response.schema.json",
	KindInput:             "computer-use.schema.json#/$defs/ComputerUseInput",
	KindOutput:            "computer-use.schema.json#/$defs/ComputerUseOutput",
	KindEvent:             "computer-use.schema.json#/$defs/ComputerUseStreamEvent",
	KindControl:           "computer-use.schema.json#/$defs/ComputerUseControlRequest",
	KindToolResult:        "tool-result.schema.json",
	KindDecision:          "decision-record.schema.json",
	KindImageArtifact:     "image-artifact.schema.json",
	KindManifest:          "evidence-manifest.schema.json",
	KindLedgerEntry:       "ledger-entry.schema.json",
	KindModelCall:         "model-call.schema.json",
	KindModelRegistry:     "model-registry.schema.json",
	KindSuiteIndex:        "suite-index.schema.json",
}

// Kinds returns every kind, sorted by name.
func Kinds() []Kind {
	ks := make([]Kind, 0, len(kindRefs))
	for k := range kindRefs {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// ParseKind returns the kind named s, or an error listing the valid names.
func ParseKind(s string) (Kind, error) {
	if _, ok := kindRefs[Kind(s)]; ok {
		return Kind(s), nil
	}
	names := make([]string, 0, len(kindRefs))
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return "", fmt.Errorf("unknown kind %q (want one of: %s)", s, strings.Join(names, ", "))
}

// URL returns the absolute URL of the kind's schema.
func (k Kind) URL() string { return BaseURL + kindRefs[k] }

// FS returns the embedded schema files.
func FS() fs.FS { return files }

// Problem is one way in which a document breaks its schema.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value; "" is
	// the whole document.
	Pointer string `json:"pointer"`
	// Reason says what is wrong, in words.
	Reason string `json:"reason"`
	// Keyword is the schema location of the rule that failed.
	Keyword string `json:"keyword"`
}

func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return ptr + ": " + p.Reason
}

// ValidationError reports every problem of a document that is well-formed
// JSON but breaks its schema.
type ValidationError struct {
	Kind     Kind
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid %s:", e.Kind)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// SyntaxError reports a document that is not a single well-formed JSON
// value: where (Offset) and what (Msg). Parse, Validate and canonjson's
// Transform return it, from the one strict reader they share.
type SyntaxError = strictjson.SyntaxError

// ErrTooLarge is returned for documents over MaxDocumentBytes.
var ErrTooLarge = strictjson.ErrTooLarge

var (
	compileOnce sync.Once
	compiled    map[Kind]*jsonschema.Schema
	compileErr  error

	refsMu   sync.Mutex                        // guards refs and compiler after compileOnce
	refs     = map[string]*jsonschema.Schema{} // compiled by ref (ValidateRef)
	compiler *jsonschema.Compiler              // the compiler of compileAll, reused by ValidateRef
)

// NewCompiler returns a compiler that knows every embedded schema under its
// $id, asserts formats, and never loads anything from the network or disk.
// Tests use it to compile other schemas (such as the seed's) against ours.
func NewCompiler() (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("schemas: refusing to load %s: only embedded schemas are used", u)
	}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(BaseURL+e.Name(), bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", e.Name(), err)
		}
	}
	return c, nil
}

func compileAll() (map[Kind]*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		c, err := NewCompiler()
		if err != nil {
			compileErr = err
			return
		}
		m := make(map[Kind]*jsonschema.Schema, len(kindRefs))
		for k := range kindRefs {
			s, err := c.Compile(k.URL())
			if err != nil {
				compileErr = fmt.Errorf("schemas: compile %s: %w", k, err)
				return
			}
			m[k] = s
		}
		compiled, compiler = m, c
	})
	return compiled, compileErr
}

// Check compiles every schema and reports the first error. Validate
// compiles what it needs implicitly; callers may call Check at start-up to
// fail early.
func Check() error {
	_, err := compileAll()
	return err
}

// Validate checks that doc is one well-formed JSON value, as Parse reads
// it, that is valid under the kind's schema. It returns nil, a
// *SyntaxError, a *ValidationError, ErrTooLarge, or an error for an unknown
// kind.
func Validate(kind Kind, doc []byte) error {
	if _, ok := kindRefs[kind]; !ok {
		_, err := ParseKind(string(kind))
		return err
	}
	v, err := Parse(doc)
	if err != nil {
		return err
	}
	return ValidateValue(kind, v)
}

// ValidateValue validates an already-parsed value (as produced by Parse:
// numbers as json.Number) against the kind's schema. It returns nil, a
// *ValidationError, or an error for an unknown kind or a schema that does
// not compile. Should the validator itself panic on some input, the
// document is reported invalid, never accepted: the panic becomes an
// error.
func ValidateValue(kind Kind, v any) error {
	if _, ok := kindRefs[kind]; !ok {
		_, err := ParseKind(string(kind))
		return err
	}
	m, err := compileAll()
	if err != nil {
		return err
	}
	return validate(kind, m[kind], v)
}

// ValidateRef validates an already-parsed value against the schema at
// ref, relative to BaseURL with an optional JSON pointer fragment, such as
// "browser-observation.schema.json#/$defs/artifact": a shape that has no
// kind of its own. Errors are those of ValidateValue; a *ValidationError
// names the shape by the last segment of the pointer ("artifact"), or by
// the file name without ".schema.json". Each ref is compiled once.
func ValidateRef(ref string, v any) (err error) {
	file, frag, _ := strings.Cut(ref, "#")
	name := strings.TrimSuffix(file, ".schema.json")
	if frag != "" {
		name = frag[strings.LastIndex(frag, "/")+1:]
	}
	if _, err := compileAll(); err != nil {
		return err
	}
	refsMu.Lock()
	s, ok := refs[ref]
	if !ok {
		if s, err = compiler.Compile(BaseURL + ref); err == nil {
			refs[ref] = s
		}
	}
	refsMu.Unlock()
	if err != nil {
		return fmt.Errorf("schemas: compile %s: %w", ref, err)
	}
	return validate(Kind(name), s, v)
}

// validate runs a compiled schema on a parsed value, its failures as a
// *ValidationError of the kind and a panic as an error.
func validate(kind Kind, s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("schemas: validate %s: validator failed: %v", kind, r)
		}
	}()
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &ValidationError{Kind: kind, Problems: problems(ve)}
		}
		return fmt.Errorf("schemas: validate %s: %w", kind, err)
	}
	return nil
}

// problems flattens a validation error tree into its leaves, sorted by
// pointer, without duplicates.
func problems(ve *jsonschema.ValidationError) []Problem {
	var out []Problem
	seen := map[Problem]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			p := Problem{Pointer: e.InstanceLocation, Reason: e.Message, Keyword: e.KeywordLocation}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// Parse decodes doc as exactly one JSON value with numbers as json.Number,
// refusing duplicate object keys, nesting deeper than MaxDepth, documents
// over MaxDocumentBytes, trailing data, and numbers too long or with an
// exponent too large for the validator to hold exactly. Errors are
// *SyntaxError or ErrTooLarge.
func Parse(doc []byte) (any, error) {
	return strictjson.Parse(doc, MaxDepth)
}

// DecodeOwn reads back a document aegis itself just wrote with
// encoding/json (json.Marshal of a Go value) into the form Parse gives:
// numbers as json.Number. It reads with encoding/json, not with the strict
// reader Parse is: that reader guards bytes from outside (duplicate
// members, trailing data, hostile nesting and numbers), none of which
// encoding/json writes, and on a large observation it costs more than
// validating it. Bytes from outside always go through Parse. Documents
// over MaxDocumentBytes are ErrTooLarge, as with Parse.
func DecodeOwn(doc []byte) (any, error) {
	if len(doc) > MaxDocumentBytes {
		return nil, ErrTooLarge
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("schemas: read back an encoded document: %w", err)
	}
	return v, nil
}
