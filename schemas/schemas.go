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
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed *.schema.json
var files embed.FS

// BaseURL is the base of every schema's $id.
const BaseURL = "https://github.com/aegis-run/aegis/schemas/"

// MaxDocumentBytes bounds a document handed to Validate. Chrome's own cap
// on a native message is 64 MiB; nothing aegis accepts is larger.
const MaxDocumentBytes = 64 << 20

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

// SyntaxError reports a document that is not a single well-formed JSON value.
type SyntaxError struct {
	// Offset is the byte offset at which the problem was found.
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte offset %d: %s", e.Offset, e.Msg)
}

// ErrTooLarge is returned for documents over MaxDocumentBytes.
var ErrTooLarge = fmt.Errorf("document larger than %d bytes", MaxDocumentBytes)

var (
	compileOnce sync.Once
	compiled    map[Kind]*jsonschema.Schema
	compileErr  error
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
		compiled = m
	})
	return compiled, compileErr
}

// Check compiles every schema, with the general validator and into each
// kind's Validator, and reports the first error. Validate compiles what it
// needs implicitly; callers may call Check at start-up to fail early.
func Check() error {
	if _, err := compileAll(); err != nil {
		return err
	}
	for _, k := range Kinds() {
		if _, err := ValidatorFor(k); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks that doc is one well-formed JSON value, with no duplicate
// object keys and no nesting deeper than MaxDepth, that is valid under the
// kind's schema. It returns nil, a *SyntaxError, a *ValidationError,
// ErrTooLarge, or an error for an unknown kind. It uses the kind's compiled
// Validator (see ValidatorFor).
func Validate(kind Kind, doc []byte) error {
	v, err := ValidatorFor(kind)
	if err != nil {
		return err
	}
	return v.Validate(doc)
}

// ValidateValue validates an already-parsed value (as produced by Parse:
// numbers as json.Number) against the kind's schema, with the kind's
// compiled Validator. Should the validator itself panic on some input, the
// document is reported invalid, never accepted: the panic becomes an
// error.
func ValidateValue(kind Kind, v any) error {
	val, err := ValidatorFor(kind)
	if err != nil {
		return err
	}
	return val.ValidateValue(v)
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
// over MaxDocumentBytes and trailing data. Errors are *SyntaxError or
// ErrTooLarge.
func Parse(doc []byte) (any, error) {
	return ParseDepth(doc, MaxDepth)
}

// MaxParseDepth is the deepest nesting ParseDepth accepts a bound of: far
// below what exhausts a goroutine's stack.
const MaxParseDepth = 10000

// ParseDepth is Parse with nesting bounded at maxDepth levels instead of
// MaxDepth, for documents whose depth a trusted producer already bounds
// (the observer's DOM snapshot nests two levels per element, to its own
// limit). maxDepth is clamped to 1..MaxParseDepth.
func ParseDepth(doc []byte, maxDepth int) (any, error) {
	maxDepth = min(max(maxDepth, 1), MaxParseDepth)
	if len(doc) > MaxDocumentBytes {
		return nil, ErrTooLarge
	}
	if v, ok := scanParse(doc, maxDepth); ok {
		return v, nil
	}
	return parseTokens(doc, maxDepth)
}

// parseTokens is Parse by encoding/json's tokenizer: the reference that
// scanParse is held to, and the source of every syntax error's account.
func parseTokens(doc []byte, maxDepth int) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	p := &parser{d: d, doc: doc, maxDepth: maxDepth}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.tokenStart()
	if _, err := d.Token(); err != io.EOF {
		return nil, &SyntaxError{Offset: off, Msg: "unexpected data after the JSON value"}
	}
	return v, nil
}

// parser walks a document token by token so that it can refuse what
// encoding/json accepts silently (duplicate keys, unbounded nesting).
type parser struct {
	d        *json.Decoder
	doc      []byte
	maxDepth int
}

// tokenStart returns the offset of the next token: the decoder's offset
// points at the end of the previous one, before any separator.
func (p *parser) tokenStart() int64 {
	i := p.d.InputOffset()
	skipSpace := func() {
		for i < int64(len(p.doc)) && (p.doc[i] == ' ' || p.doc[i] == '\t' || p.doc[i] == '\n' || p.doc[i] == '\r') {
			i++
		}
	}
	skipSpace()
	if i < int64(len(p.doc)) && (p.doc[i] == ',' || p.doc[i] == ':') {
		i++
		skipSpace()
	}
	return i
}

func (p *parser) value(depth int) (any, error) {
	d := p.d
	off := p.tokenStart()
	tok, err := d.Token()
	if err != nil {
		return nil, syntaxError(err, off)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= p.maxDepth {
			return nil, &SyntaxError{Offset: off, Msg: fmt.Sprintf("nesting deeper than %d levels", p.maxDepth)}
		}
		switch t {
		case '{':
			obj := map[string]any{}
			for d.More() {
				koff := p.tokenStart()
				kt, err := d.Token()
				if err != nil {
					return nil, syntaxError(err, koff)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, &SyntaxError{Offset: koff, Msg: "object key is not a string"}
				}
				if _, dup := obj[key]; dup {
					return nil, &SyntaxError{Offset: koff, Msg: "duplicate object key " + strconv.Quote(key)}
				}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := d.Token(); err != nil {
				return nil, syntaxError(err, d.InputOffset())
			}
			return obj, nil
		case '[':
			arr := []any{}
			for d.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, syntaxError(err, d.InputOffset())
			}
			return arr, nil
		default:
			return nil, &SyntaxError{Offset: off, Msg: "unexpected " + string(t)}
		}
	case json.Number:
		if msg := checkNumber(string(t)); msg != "" {
			return nil, &SyntaxError{Offset: off, Msg: msg}
		}
		return t, nil
	default:
		return t, nil
	}
}

// MaxNumberLen bounds the text of one number, and MaxNumberExponent the
// magnitude of its exponent. JSON writers never come near either
// (JavaScript writes at most 17 significant digits and exponents up to
// 308), while the validator turns numbers into exact rationals (math/big):
// past an exponent of about a million that fails and jsonschema/v5 then
// dereferences a nil *big.Rat (a panic), and long digit strings cost it
// time that grows faster than their length.
const (
	MaxNumberLen      = 100
	MaxNumberExponent = 999
)

// checkNumber says what is wrong with a number token, or "" if nothing.
func checkNumber(s string) string {
	if len(s) > MaxNumberLen {
		return fmt.Sprintf("number longer than %d characters", MaxNumberLen)
	}
	_, exp, ok := strings.Cut(strings.ToLower(s), "e")
	if !ok {
		return ""
	}
	digits := strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if n, err := strconv.Atoi(digits); len(digits) > 4 || err == nil && n > MaxNumberExponent {
		return fmt.Sprintf("number exponent beyond ±%d", MaxNumberExponent)
	}
	return ""
}

func syntaxError(err error, off int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &SyntaxError{Offset: se.Offset, Msg: se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &SyntaxError{Offset: off, Msg: "unexpected end of input"}
	}
	return &SyntaxError{Offset: off, Msg: err.Error()}
}
