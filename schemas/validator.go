package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A Validator validates documents against one schema. It is compiled, from
// the same embedded schema files as the general validator
// (santhosh-tekuri/jsonschema), for the subset of JSON Schema (draft
// 2020-12) that the aegis schemas use, and decides exactly as the general
// validator does (the tests cross-check both on every vector, on every
// single-value mutation of them and under fuzzing) in a small fraction of
// its time: a record of a few hundred bytes takes 1 to 4 µs instead of 16
// to 100. Numbers are compared exactly, as the general validator compares
// them (as rationals), whatever their spelling.
//
// A schema that uses a keyword outside the subset does not compile, and its
// Validator uses the general validator instead: never a silent pass. On a
// failure the general validator's fuller account is reported; should it
// disagree and accept, the compiled verdict stands (fail closed).
//
// A Validator is safe for concurrent use.
type Validator struct {
	name    string // the kind, or the ref for a schema without a kind
	fast    *node  // nil when the schema does not compile here
	fastErr error  // why fast is nil
	general func() (schemaValidator, error)
}

// schemaValidator is the general validator of one schema.
type schemaValidator interface{ Validate(v any) error }

var (
	validatorsMu sync.Mutex
	validators   = map[string]*Validator{} // by ref
	nodeCompiler *compiler                 // shared, so that shared refs compile once
)

// ValidatorFor returns the validator of the kind's schema, compiled once.
func ValidatorFor(kind Kind) (*Validator, error) {
	ref, ok := kindRefs[kind]
	if !ok {
		_, err := ParseKind(string(kind))
		return nil, err
	}
	return validatorFor(string(kind), ref, func() (schemaValidator, error) {
		m, err := compileAll()
		if err != nil {
			return nil, err
		}
		return m[kind], nil
	})
}

// ValidatorForRef returns the validator of the schema at ref, relative to
// BaseURL with an optional JSON pointer fragment, such as
// "browser-observation.schema.json#/$defs/artifact": a shape that has no
// kind of its own. Its errors name the shape by the last segment of the
// pointer ("artifact"), or by the file name without ".schema.json".
func ValidatorForRef(ref string) (*Validator, error) {
	var once sync.Once
	var s *jsonschema.Schema
	var err error
	file, frag, _ := strings.Cut(ref, "#")
	name := strings.TrimSuffix(file, ".schema.json")
	if frag != "" {
		name = frag[strings.LastIndex(frag, "/")+1:]
	}
	return validatorFor(name, ref, func() (schemaValidator, error) {
		once.Do(func() {
			var c *jsonschema.Compiler
			if c, err = NewCompiler(); err != nil {
				return
			}
			if s, err = c.Compile(BaseURL + ref); err != nil {
				err = fmt.Errorf("schemas: compile %s: %w", ref, err)
			}
		})
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

func validatorFor(name, ref string, general func() (schemaValidator, error)) (*Validator, error) {
	validatorsMu.Lock()
	defer validatorsMu.Unlock()
	if v, ok := validators[ref]; ok {
		return v, nil
	}
	if nodeCompiler == nil {
		c, err := newCompiler()
		if err != nil {
			return nil, err
		}
		nodeCompiler = c
	}
	docURL, _, _ := strings.Cut(ref, "#")
	if _, ok := nodeCompiler.docs[BaseURL+docURL]; !ok {
		return nil, fmt.Errorf("schemas: no schema %s", ref)
	}
	v := &Validator{name: name, general: general}
	v.fast, v.fastErr = nodeCompiler.compileRef(BaseURL + ref)
	// The nodes compiled for this validator are not yet shared with any
	// other: plan their tape walk now, before the validator is published.
	for _, n := range nodeCompiler.fresh {
		n.planTape()
	}
	nodeCompiler.fresh = nil
	validators[ref] = v
	return v, nil
}

// Compiled returns nil when the validator is compiled, or why its schema
// falls back to the general validator.
func (v *Validator) Compiled() error { return v.fastErr }

// Validate parses doc as Parse does and validates the value, with the
// errors of the package-level Validate.
func (v *Validator) Validate(doc []byte) error {
	x, err := Parse(doc)
	if err != nil {
		return err
	}
	return v.ValidateValue(x)
}

// ValidateValue validates a parsed value (as Parse returns it: maps,
// slices, strings, bools, nil and json.Number). It returns nil or a
// *ValidationError; should the general validator panic on some value, the
// value is reported invalid, never accepted.
func (v *Validator) ValidateValue(x any) (err error) {
	if v.fast != nil {
		f := v.validateFast(x)
		if f == nil {
			return nil
		}
		// Ask the general validator for its fuller account; should it
		// disagree, the compiled verdict stands (fail closed).
		if err := v.ValidateGeneral(x); err != nil {
			return err
		}
		return &ValidationError{Kind: Kind(v.name), Problems: []Problem{f.problem()}}
	}
	return v.ValidateGeneral(x)
}

// ValidateCompiled validates x with the compiled validator alone and
// returns nil or a *ValidationError naming the first problem found. It is
// for tests and benchmarks that compare the two validators; a validator
// whose schema does not compile returns Compiled's error.
func (v *Validator) ValidateCompiled(x any) (err error) {
	if v.fast == nil {
		return v.fastErr
	}
	if f := v.validateFast(x); f != nil {
		return &ValidationError{Kind: Kind(v.name), Problems: []Problem{f.problem()}}
	}
	return nil
}

// validateFast runs the compiled validator; a panic (a value of a type no
// parser produces) is a fault.
func (v *Validator) validateFast(x any) (f *fault) {
	defer func() {
		if r := recover(); r != nil {
			f = &fault{Keyword: "type", Reason: fmt.Sprintf("validator failed: %v", r)}
		}
	}()
	return v.fast.check(x, false)
}

// ValidateGeneral validates x with the general validator alone (the
// reference the compiled one is held to), with ValidateValue's errors.
func (v *Validator) ValidateGeneral(x any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("schemas: validate %s: validator failed: %v", v.name, r)
		}
	}()
	s, err := v.general()
	if err != nil {
		return err
	}
	if err := s.Validate(x); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &ValidationError{Kind: Kind(v.name), Problems: problems(ve)}
		}
		return fmt.Errorf("schemas: validate %s: %w", v.name, err)
	}
	return nil
}

// node is one compiled schema node.
type node struct {
	boolean  *bool // a boolean schema: true accepts all, false nothing
	types    []string
	kinds    uint16 // the tape kinds types admits, by bit (1 << TapeKind)
	integer  bool   // types admits integers but not every number
	ref      *node
	props    map[string]*node
	propList []propNode // props, sorted by name
	addl     *node      // additionalProperties; nil when absent
	required []string
	enum     []any
	konst    []any // one element when const is present
	minLen   int   // -1 when absent
	maxLen   int
	pattern  *regexp.Regexp
	match    func(string) bool // pattern's matcher: a fast one for common patterns
	matchB   func([]byte) bool // the same, over bytes
	format   func(any) bool
	fmtName  string
	minimum  *bound
	maximum  *bound
	exclMin  *bound
	exclMax  *bound
	items    *node
	minItems int // -1 when absent
	maxItems int
	unique   bool
	allOf    []*node
	ifS      *node
	thenS    *node
	elseS    *node
	not      *node
	// The tape walk's plan (planTape): the declared properties with the
	// bits of the required ones (those beyond 64, or not declared, apart);
	// the allOf items that dispatch on one member's value, by member, and
	// the others.
	tapeProps     map[string]tapeProp
	requiredBits  uint64
	requiredOther []string
	dispatch      []dispatch
	allOfRest     []*node
}

type propNode struct {
	name string
	s    *node
}

// bound is a numeric bound of a schema: its exact value, and the nearest
// double when that is exact too (every bound of the aegis schemas).
type bound struct {
	r     *big.Rat
	f     float64
	exact bool // f == r
}

func newBound(text string) (*bound, bool) {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, false
	}
	f, exact := r.Float64()
	return &bound{r: r, f: f, exact: exact}, true
}

// cmp compares the number x (its JSON text) with the bound, exactly: the
// doubles decide when they differ (rounding to the nearest double never
// moves a number past a bound that is a double), the rationals otherwise.
// ok is false when x is not a number.
func (b *bound) cmp(x string) (c int, ok bool) {
	if b.exact {
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			switch {
			case f < b.f:
				return -1, true
			case f > b.f:
				return 1, true
			}
		}
	}
	r, ok := new(big.Rat).SetString(x)
	if !ok {
		return 0, false
	}
	return r.Cmp(b.r), true
}

// fault is the first way in which a value breaks a compiled schema.
type fault struct {
	Pointer string // JSON pointer of the offending value
	Keyword string // the keyword that failed
	Reason  string
}

func (f *fault) problem() Problem {
	return Problem{Pointer: f.Pointer, Reason: f.Reason, Keyword: f.Keyword}
}

// annotationKeywords carry no assertion.
var annotationKeywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "definitions": true, "$comment": true,
	"title": true, "description": true, "examples": true, "default": true, "deprecated": true,
	"readOnly": true, "writeOnly": true,
}

// compiler compiles schema nodes from the embedded schema documents.
type compiler struct {
	docs   map[string]any // by document URL
	nodes  map[string]*node
	failed map[string]error
	fresh  []*node // the nodes filled since the last planTape
}

func newCompiler() (*compiler, error) {
	c := &compiler{docs: map[string]any{}, nodes: map[string]*node{}, failed: map[string]error{}}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", e.Name(), err)
		}
		c.docs[BaseURL+e.Name()] = v
	}
	return c, nil
}

// compileRef compiles the schema at an absolute URL with an optional
// fragment (a JSON pointer).
func (c *compiler) compileRef(url string) (*node, error) {
	if err, ok := c.failed[url]; ok {
		return nil, err
	}
	if n, ok := c.nodes[url]; ok {
		return n, nil
	}
	docURL, frag, _ := strings.Cut(url, "#")
	doc, ok := c.docs[docURL]
	if !ok {
		return nil, fmt.Errorf("unknown schema %s", docURL)
	}
	v := doc
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: pointer does not resolve", url)
			}
			if v, ok = m[tok]; !ok {
				return nil, fmt.Errorf("%s: pointer does not resolve", url)
			}
		}
	}
	n := &node{}
	c.nodes[url] = n // before compiling, for recursive references
	if err := c.fill(n, v, docURL, url); err != nil {
		// Every node compiled meanwhile may lean on this one: forget them
		// all, so that no later shape reuses a half-compiled node.
		c.nodes = map[string]*node{}
		c.failed[url] = err
		return nil, err
	}
	return n, nil
}

func (c *compiler) sub(v any, docURL, at string) (*node, error) {
	n := &node{}
	return n, c.fill(n, v, docURL, at)
}

func intKeyword(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a non-negative integer: %v", v)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, fmt.Errorf("not a non-negative integer: %v", v)
	}
	return int(f), nil
}

// fill compiles the schema value v (found at URL at, in document docURL)
// into n.
func (c *compiler) fill(n *node, v any, docURL, at string) error {
	c.fresh = append(c.fresh, n)
	if b, ok := v.(bool); ok {
		n.boolean = &b
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema is an object or a boolean", at)
	}
	n.minLen, n.maxLen, n.minItems, n.maxItems = -1, -1, -1, -1
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var err error
	for _, k := range keys {
		kv := m[k]
		where := at + "/" + k
		switch k {
		case "type":
			switch t := kv.(type) {
			case string:
				n.types = []string{t}
			case []any:
				for _, x := range t {
					s, ok := x.(string)
					if !ok {
						return fmt.Errorf("%s: bad type", where)
					}
					n.types = append(n.types, s)
				}
			default:
				return fmt.Errorf("%s: bad type", where)
			}
		case "$ref":
			ref, _ := kv.(string)
			var target string
			switch {
			case strings.HasPrefix(ref, "#"):
				target = docURL + ref
			case strings.Contains(ref, "://"):
				target = ref
			default:
				target = BaseURL + ref
			}
			if n.ref, err = c.compileRef(target); err != nil {
				return err
			}
		case "properties":
			pm, ok := kv.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: bad properties", where)
			}
			n.props = map[string]*node{}
			for name, ps := range pm {
				if n.props[name], err = c.sub(ps, docURL, where+"/"+name); err != nil {
					return err
				}
				n.propList = append(n.propList, propNode{name, n.props[name]})
			}
			sort.Slice(n.propList, func(i, j int) bool { return n.propList[i].name < n.propList[j].name })
		case "additionalProperties":
			if n.addl, err = c.sub(kv, docURL, where); err != nil {
				return err
			}
		case "required":
			arr, ok := kv.([]any)
			if !ok {
				return fmt.Errorf("%s: bad required", where)
			}
			for _, x := range arr {
				s, ok := x.(string)
				if !ok {
					return fmt.Errorf("%s: bad required", where)
				}
				n.required = append(n.required, s)
			}
		case "enum":
			arr, ok := kv.([]any)
			if !ok {
				return fmt.Errorf("%s: bad enum", where)
			}
			n.enum = arr
		case "const":
			n.konst = []any{kv}
		case "minLength":
			if n.minLen, err = intKeyword(kv); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "maxLength":
			if n.maxLen, err = intKeyword(kv); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "minItems":
			if n.minItems, err = intKeyword(kv); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "maxItems":
			if n.maxItems, err = intKeyword(kv); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		case "pattern":
			s, _ := kv.(string)
			if n.pattern, err = regexp.Compile(s); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			n.match, n.matchB = n.pattern.MatchString, n.pattern.Match
			if f, ok := fastPatterns[s]; ok {
				n.match, n.matchB = f.str, f.bytes
			}
		case "format":
			s, _ := kv.(string)
			f, ok := jsonschema.Formats[s]
			if !ok {
				return fmt.Errorf("%s: unknown format %q", where, s)
			}
			n.format, n.fmtName = f, s
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			num, _ := kv.(json.Number)
			b, ok := newBound(string(num))
			if !ok {
				return fmt.Errorf("%s: not a number", where)
			}
			switch k {
			case "minimum":
				n.minimum = b
			case "maximum":
				n.maximum = b
			case "exclusiveMinimum":
				n.exclMin = b
			default:
				n.exclMax = b
			}
		case "items":
			if n.items, err = c.sub(kv, docURL, where); err != nil {
				return err
			}
		case "uniqueItems":
			n.unique, _ = kv.(bool)
		case "allOf":
			arr, ok := kv.([]any)
			if !ok {
				return fmt.Errorf("%s: bad allOf", where)
			}
			for i, x := range arr {
				s, err := c.sub(x, docURL, fmt.Sprintf("%s/%d", where, i))
				if err != nil {
					return err
				}
				n.allOf = append(n.allOf, s)
			}
		case "if":
			if n.ifS, err = c.sub(kv, docURL, where); err != nil {
				return err
			}
		case "then":
			if n.thenS, err = c.sub(kv, docURL, where); err != nil {
				return err
			}
		case "else":
			if n.elseS, err = c.sub(kv, docURL, where); err != nil {
				return err
			}
		case "not":
			if n.not, err = c.sub(kv, docURL, where); err != nil {
				return err
			}
		default:
			if !annotationKeywords[k] {
				return fmt.Errorf("%s: keyword %q is not supported by the compiled validator", where, k)
			}
		}
	}
	n.kinds, n.integer = tapeKinds(n.types)
	return nil
}

// tapeKinds returns the tape kinds a type keyword admits, by bit, and
// whether it admits integers but not every number.
func tapeKinds(types []string) (kinds uint16, integer bool) {
	number := false
	for _, t := range types {
		switch t {
		case "null":
			kinds |= 1 << TapeNull
		case "boolean":
			kinds |= 1<<TapeFalse | 1<<TapeTrue
		case "number":
			kinds |= 1 << TapeNumber
			number = true
		case "integer":
			integer = true
		case "string":
			kinds |= 1 << TapeString
		case "array":
			kinds |= 1 << TapeArray
		case "object":
			kinds |= 1 << TapeObject
		}
	}
	return kinds, integer && !number
}

// quickFault is the fault of a quick check (the if of an if/then/else, the
// schema of a not): only whether it holds matters, so nothing is allocated.
var quickFault = &fault{Keyword: "quick", Reason: "does not match"}

// at prepends a path segment to a fault's pointer. The pointer is built as
// the fault unwinds, so that success allocates nothing.
func (f *fault) at(seg string) *fault {
	if f != nil && f != quickFault {
		f.Pointer = "/" + escapePointer(seg) + f.Pointer
	}
	return f
}

// fail returns a fault, or quickFault in a quick check.
func fail(quick bool, keyword string, reason func() string) *fault {
	if quick {
		return quickFault
	}
	return &fault{Keyword: keyword, Reason: reason()}
}

// check returns the first fault of v, or nil; its pointer is relative to
// v.
func (n *node) check(v any, quick bool) *fault {
	if n.boolean != nil {
		if *n.boolean {
			return nil
		}
		return fail(quick, "false", func() string { return "not allowed" })
	}
	if n.ref != nil {
		if f := n.ref.check(v, quick); f != nil {
			return f
		}
	}
	if len(n.types) > 0 && !typeMatches(n.types, v) {
		return fail(quick, "type", func() string {
			return fmt.Sprintf("expected %s, but got %s", strings.Join(n.types, " or "), jsonType(v))
		})
	}
	if n.konst != nil && !Equal(v, n.konst[0]) {
		return fail(quick, "const", func() string { return "value differs from the constant" })
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if Equal(v, e) {
				found = true
				break
			}
		}
		if !found {
			return fail(quick, "enum", func() string { return "value is not one of the enumerated values" })
		}
	}
	switch t := v.(type) {
	case string:
		if f := n.checkString(t, quick); f != nil {
			return f
		}
	case map[string]any:
		if f := n.checkObject(t, quick); f != nil {
			return f
		}
	case []any:
		if f := n.checkArray(t, quick); f != nil {
			return f
		}
	case nil, bool:
	default:
		if f := n.checkNumber(v, quick); f != nil {
			return f
		}
	}
	for _, s := range n.allOf {
		if f := s.check(v, quick); f != nil {
			return f
		}
	}
	if n.ifS != nil {
		if n.ifS.check(v, true) == nil {
			if n.thenS != nil {
				if f := n.thenS.check(v, quick); f != nil {
					return f
				}
			}
		} else if n.elseS != nil {
			if f := n.elseS.check(v, quick); f != nil {
				return f
			}
		}
	}
	if n.not != nil && n.not.check(v, true) == nil {
		return fail(quick, "not", func() string { return "value matches a schema it must not match" })
	}
	return nil
}

func (n *node) checkString(s string, quick bool) *fault {
	// A string has at most as many characters as bytes, and at least a
	// quarter as many: count only when the byte length cannot decide.
	if n.maxLen >= 0 && len(s) > n.maxLen {
		if c := utf8.RuneCountInString(s); c > n.maxLen {
			return fail(quick, "maxLength", func() string { return fmt.Sprintf("length must be <= %d, but got %d", n.maxLen, c) })
		}
	}
	if n.minLen >= 0 && len(s) < 4*n.minLen {
		if c := utf8.RuneCountInString(s); c < n.minLen {
			return fail(quick, "minLength", func() string { return fmt.Sprintf("length must be >= %d, but got %d", n.minLen, c) })
		}
	}
	if n.pattern != nil && !n.match(s) {
		return fail(quick, "pattern", func() string { return fmt.Sprintf("does not match pattern %q", n.pattern.String()) })
	}
	if n.format != nil && !n.format(s) {
		return fail(quick, "format", func() string { return fmt.Sprintf("is not valid %s", n.fmtName) })
	}
	return nil
}

func (n *node) checkNumber(v any, quick bool) *fault {
	if n.minimum == nil && n.maximum == nil && n.exclMin == nil && n.exclMax == nil {
		return nil
	}
	x, ok := numText(v)
	if !ok {
		return nil // not a number: the type keyword decides
	}
	if f := checkBound(x, n.minimum, quick, "minimum", ">=", func(c int) bool { return c >= 0 }); f != nil {
		return f
	}
	if f := checkBound(x, n.maximum, quick, "maximum", "<=", func(c int) bool { return c <= 0 }); f != nil {
		return f
	}
	if f := checkBound(x, n.exclMin, quick, "exclusiveMinimum", ">", func(c int) bool { return c > 0 }); f != nil {
		return f
	}
	return checkBound(x, n.exclMax, quick, "exclusiveMaximum", "<", func(c int) bool { return c < 0 })
}

// checkBound checks the number x against one bound (nil: absent), which
// holds when holds(x compared with the bound).
func checkBound(x string, b *bound, quick bool, keyword, rel string, holds func(int) bool) *fault {
	if b == nil {
		return nil
	}
	c, ok := b.cmp(x)
	if !ok {
		return fail(quick, "type", func() string { return "not a number" })
	}
	if !holds(c) {
		return fail(quick, keyword, func() string { return fmt.Sprintf("must be %s %s", rel, b.r.RatString()) })
	}
	return nil
}

func (n *node) checkObject(m map[string]any, quick bool) *fault {
	for _, r := range n.required {
		if _, ok := m[r]; !ok {
			return fail(quick, "required", func() string { return "missing property " + strconv.Quote(r) })
		}
	}
	if n.props == nil && n.addl == nil {
		return nil
	}
	// Faults are reported in member name order, so the first is the same
	// on every run: the declared properties in order, then any other.
	var first *fault
	firstKey := ""
	for _, p := range n.propList {
		if x, ok := m[p.name]; ok {
			if f := p.s.check(x, quick); f != nil {
				first, firstKey = f.at(p.name), p.name
				break
			}
		}
	}
	if n.addl != nil && len(m) > 0 {
		for k, x := range m {
			if _, declared := n.props[k]; declared || first != nil && k > firstKey {
				continue
			}
			var f *fault
			if n.addl.boolean != nil && !*n.addl.boolean {
				f = fail(quick, "additionalProperties", func() string { return "additional property " + strconv.Quote(k) + " not allowed" })
			} else if f = n.addl.check(x, quick); f != nil {
				f = f.at(k)
			}
			if f != nil && (first == nil || k < firstKey) {
				first, firstKey = f, k
			}
		}
	}
	return first
}

func (n *node) checkArray(a []any, quick bool) *fault {
	if n.minItems >= 0 && len(a) < n.minItems {
		return fail(quick, "minItems", func() string { return fmt.Sprintf("must have >= %d items", n.minItems) })
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		return fail(quick, "maxItems", func() string { return fmt.Sprintf("must have <= %d items", n.maxItems) })
	}
	if n.unique {
		for i := 1; i < len(a); i++ {
			for j := 0; j < i; j++ {
				if Equal(a[i], a[j]) {
					return fail(quick, "uniqueItems", func() string { return fmt.Sprintf("items at %d and %d are equal", j, i) })
				}
			}
		}
	}
	if n.items != nil {
		for i, x := range a {
			if f := n.items.check(x, quick); f != nil {
				return f.at(strconv.Itoa(i))
			}
		}
	}
	return nil
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// numText returns the text of a number: a json.Number as it is, another
// Go number as the general validator prints it.
func numText(v any) (string, bool) {
	switch t := v.(type) {
	case json.Number:
		return string(t), true
	case float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(t), true
	}
	return "", false
}

// jsonType names the JSON type of a value as the general validator does,
// and panics, as it does, on a value no JSON parser produces.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	if _, ok := numText(v); ok {
		return "number"
	}
	panic(fmt.Sprintf("not a JSON value: %T", v))
}

func typeMatches(types []string, v any) bool {
	vt := jsonType(v)
	for _, t := range types {
		if t == vt {
			return true
		}
		if t == "integer" && vt == "number" && isInteger(v) {
			return true
		}
	}
	return false
}

// isInteger reports whether a number is an integer, exactly: a number
// written without fraction or exponent is one; any other is decided as a
// rational.
func isInteger(v any) bool {
	x, _ := numText(v)
	return isIntegerText(x)
}

// isIntegerText is isInteger for the text of a number.
func isIntegerText(x string) bool {
	if !strings.ContainsAny(x, ".eE") {
		return true
	}
	r, ok := new(big.Rat).SetString(x)
	return ok && r.IsInt()
}

// Equal reports whether two parsed JSON values (as Parse returns them) are
// equal as JSON values: numbers by their exact value (1, 1.0 and 1e0 are
// equal), objects whatever the order of their members. It is the equality
// of the JSON Schema keywords const, enum and uniqueItems.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	}
	xs, ok1 := numText(a)
	ys, ok2 := numText(b)
	return ok1 && ok2 && equalNumbers(xs, ys)
}

// equalNumbers reports whether two numbers, by their JSON text, are equal
// as values.
func equalNumbers(xs, ys string) bool {
	if xs == ys {
		return true
	}
	// Two plain integers (no sign on zero, no leading zero) are equal only
	// when they are spelled alike.
	if plainInteger(xs) && plainInteger(ys) {
		return false
	}
	rx, ok1 := new(big.Rat).SetString(xs)
	ry, ok2 := new(big.Rat).SetString(ys)
	return ok1 && ok2 && rx.Cmp(ry) == 0
}

// plainInteger reports whether x is an integer written in the one way
// JSON allows for it: digits without a leading zero, after a minus sign
// unless it is zero.
func plainInteger[S string | []byte](x S) bool {
	d := x
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || d[0] == '0' && (len(d) > 1 || len(d) < len(x)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// fastPattern is a hand-written matcher of a pattern, over strings and
// over bytes.
type fastPattern struct {
	str   func(string) bool
	bytes func([]byte) bool
}

// fastPatterns are hand-written matchers for the patterns that every
// record checks many times (a test cross-checks each with its regexp).
var fastPatterns = map[string]fastPattern{
	`^[0-9a-f]{64}$`:               {isHex64[string], isHex64[[]byte]},
	`^[A-Za-z0-9][A-Za-z0-9._-]*$`: {isID[string], isID[[]byte]},
	`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`: {isBundlePath[string], isBundlePath[[]byte]},
	`\.jsonl$`:                       {hasJSONLSuffix[string], hasJSONLSuffix[[]byte]},
	`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`: {isPolicyTag[string], isPolicyTag[[]byte]},
	`^dec-[0-9a-f]{32}$`:             {isDecisionID[string], isDecisionID[[]byte]},
	`^apr-[0-9a-f]{32}$`:             {isApprovalID[string], isApprovalID[[]byte]},
	`^browser\.[a-z][a-z_]{0,31}$`:   {isActionName[string], isActionName[[]byte]},
	`^browser\.(navigate|click|type|select|scroll|wait|extract)$`: {isBrowserAction[string], isBrowserAction[[]byte]},
	`^[a-z][a-z0-9_]{0,63}$`:                                       {isRuleName[string], isRuleName[[]byte]},
	`^dom/(0|[1-9][0-9]{0,9})\.html$`:                              {isDOMFile[string], isDOMFile[[]byte]},
	`^dom/(0|[1-9][0-9]{0,9})\.json$`:                              {isObservationFile[string], isObservationFile[[]byte]},
	`^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.json$`:           {isArtifactRecordFile[string], isArtifactRecordFile[[]byte]},
	`^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.(png|jpg|webp)$`: {isImageFile[string], isImageFile[[]byte]},
	`^(plan\.json|plans/[1-9][0-9]{0,8}\.json)$`:                   {isPlanFile[string], isPlanFile[[]byte]},
}

// isHex64 matches ^[0-9a-f]{64}$.
func isHex64[S string | []byte](s S) bool {
	return len(s) == 64 && isLowerHex(s)
}

// lowerHex marks the lowercase hex digits.
var lowerHex = func() (t [256]uint8) {
	for _, c := range "0123456789abcdef" {
		t[c] = 1
	}
	return t
}()

// isID matches ^[A-Za-z0-9][A-Za-z0-9._-]*$.
func isID[S string | []byte](s S) bool {
	return len(s) > 0 && isAlnum(s[0]) && allIn(s[1:], "._-")
}

// isBundlePath matches
// ^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$.
func isBundlePath[S string | []byte](s S) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '/' {
			continue
		}
		seg := s[start:i]
		if len(seg) == 0 || !(isAlnum(seg[0]) || seg[0] == '_' || seg[0] == '-') || !allIn(seg[1:], "._-") {
			return false
		}
		start = i + 1
	}
	return true
}

// hasJSONLSuffix matches \.jsonl$.
func hasJSONLSuffix[S string | []byte](s S) bool {
	return len(s) >= 6 && string(s[len(s)-6:]) == ".jsonl"
}

// isPolicyTag matches ^[A-Za-z0-9][A-Za-z0-9._:/-]*$.
func isPolicyTag[S string | []byte](s S) bool {
	return len(s) > 0 && isAlnum(s[0]) && allIn(s[1:], "._:/-")
}

// isDecisionID matches ^dec-[0-9a-f]{32}$.
func isDecisionID[S string | []byte](s S) bool {
	return len(s) == 36 && string(s[:4]) == "dec-" && isLowerHex(s[4:])
}

// isApprovalID matches ^apr-[0-9a-f]{32}$.
func isApprovalID[S string | []byte](s S) bool {
	return len(s) == 36 && string(s[:4]) == "apr-" && isLowerHex(s[4:])
}

// isActionName matches ^browser\.[a-z][a-z_]{0,31}$.
func isActionName[S string | []byte](s S) bool {
	if len(s) < 9 || len(s) > 40 || string(s[:8]) != "browser." || !('a' <= s[8] && s[8] <= 'z') {
		return false
	}
	for i := 9; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// isBrowserAction matches
// ^browser\.(navigate|click|type|select|scroll|wait|extract)$.
func isBrowserAction[S string | []byte](s S) bool {
	if len(s) < 8 || string(s[:8]) != "browser." {
		return false
	}
	switch string(s[8:]) {
	case "navigate", "click", "type", "select", "scroll", "wait", "extract":
		return true
	}
	return false
}

// isRuleName matches ^[a-z][a-z0-9_]{0,63}$.
func isRuleName[S string | []byte](s S) bool {
	if len(s) == 0 || len(s) > 64 || !('a' <= s[0] && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isDOMFile matches ^dom/(0|[1-9][0-9]{0,9})\.html$.
func isDOMFile[S string | []byte](s S) bool {
	return len(s) > 9 && string(s[:4]) == "dom/" && string(s[len(s)-5:]) == ".html" && isStep(s[4:len(s)-5])
}

// isObservationFile matches ^dom/(0|[1-9][0-9]{0,9})\.json$.
func isObservationFile[S string | []byte](s S) bool {
	return len(s) > 9 && string(s[:4]) == "dom/" && string(s[len(s)-5:]) == ".json" && isStep(s[4:len(s)-5])
}

// isStep matches ^(0|[1-9][0-9]{0,9})$.
func isStep[S string | []byte](s S) bool {
	return len(s) == 1 && s[0] == '0' || len(s) >= 1 && len(s) <= 10 && s[0] != '0' && isDigits(s)
}

// isPlanFile matches ^(plan\.json|plans/[1-9][0-9]{0,8}\.json)$.
func isPlanFile[S string | []byte](s S) bool {
	if string(s) == "plan.json" {
		return true
	}
	if len(s) < 12 || string(s[:6]) != "plans/" || string(s[len(s)-5:]) != ".json" {
		return false
	}
	n := s[6 : len(s)-5]
	return len(n) <= 9 && n[0] != '0' && isDigits(n)
}

// isArtifactRecordFile matches
// ^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.json$.
func isArtifactRecordFile[S string | []byte](s S) bool {
	return len(s) > 15 && string(s[len(s)-5:]) == ".json" && isArtifactName(s[:len(s)-5])
}

// isImageFile matches
// ^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.(png|jpg|webp)$.
func isImageFile[S string | []byte](s S) bool {
	switch {
	case len(s) > 14 && (string(s[len(s)-4:]) == ".png" || string(s[len(s)-4:]) == ".jpg"):
		return isArtifactName(s[:len(s)-4])
	case len(s) > 15 && string(s[len(s)-5:]) == ".webp":
		return isArtifactName(s[:len(s)-5])
	}
	return false
}

// isArtifactName matches ^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}$.
func isArtifactName[S string | []byte](s S) bool {
	if len(s) < 11 || string(s[:10]) != "artifacts/" {
		return false
	}
	id := s[10:]
	return len(id) <= 128 && isAlnum(id[0]) && allIn(id[1:], "._-")
}

// isLowerHex reports whether s is all lowercase hex digits. It does not
// branch on the bytes (hashes are random: a branch per digit or letter
// would be mispredicted half the time), and it takes eight at a time.
func isLowerHex[S string | []byte](s S) bool {
	ok := uint8(1)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if !lowerHex8(x) {
			return false
		}
	}
	for ; i < len(s); i++ {
		ok &= lowerHex[s[i]]
	}
	return ok == 1
}

// lowerHex8 reports whether the eight bytes of x are lowercase hex digits:
// each byte b is ASCII, and 0x30 <= b <= 0x39 or 0x61 <= b <= 0x66, tested
// by the carries of adding to every byte at once (an ASCII byte plus at
// most 0x50 does not carry into the next).
func lowerHex8(x uint64) bool {
	const l, h = 0x0101010101010101, 0x8080808080808080
	if x&h != 0 {
		return false
	}
	digit := (x + 0x50*l) &^ (x + 0x46*l)  // >= 0x30, <= 0x39
	letter := (x + 0x1F*l) &^ (x + 0x19*l) // >= 0x61, <= 0x66
	return (digit|letter)&h == h
}

// isDigits reports whether s is all decimal digits.
func isDigits[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// allIn reports whether every byte of s is a letter, a digit or in extra.
func allIn[S string | []byte](s S, extra string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}
