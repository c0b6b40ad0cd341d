package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aegis-run/aegis/schemas"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A fast validator for the subset of JSON Schema (draft 2020-12) that the
// aegis schemas use, compiled from the same embedded schema files as
// package schemas. The general validator (santhosh-tekuri/jsonschema)
// spends 15 to 55 µs on a small record, several times what hashing the
// record costs; this one decides the same (the tests cross-check both on
// every vector file and on generated and fuzzed documents) in a fraction
// of that, which keeps verify near the speed of SHA-256. A schema that
// uses a keyword outside the subset does not compile here, and its kind
// falls back to the general validator: never a silent pass.
//
// Its numbers are float64: exact for the canonical documents it is given
// (a canonical number is the shortest text of a double, so it lies on the
// same side of every bound that is itself a double).

// fastSchema is one compiled schema node.
type fastSchema struct {
	boolean  *bool // a boolean schema: true accepts all, false nothing
	types    []string
	ref      *fastSchema
	props    map[string]*fastSchema
	propList []propSchema // props, sorted by name
	addl     *fastSchema  // additionalProperties; nil when absent
	required []string
	enum     []any
	konst    []any // one element when const is present
	minLen   int   // -1 when absent
	maxLen   int
	pattern  *regexp.Regexp
	match    func(string) bool // pattern's matcher: a fast one for common patterns
	format   func(any) bool
	fmtName  string
	minimum  *float64
	maximum  *float64
	exclMin  *float64
	exclMax  *float64
	items    *fastSchema
	minItems int // -1 when absent
	maxItems int
	unique   bool
	allOf    []*fastSchema
	ifS      *fastSchema
	thenS    *fastSchema
	elseS    *fastSchema
	not      *fastSchema
}

type propSchema struct {
	name string
	s    *fastSchema
}

// schemaFault is the first way in which a value breaks a fast schema.
type schemaFault struct {
	Pointer string // JSON pointer of the offending value
	Keyword string // the keyword that failed
	Reason  string
}

// Error names the value at fault and the rule it breaks.
func (f *schemaFault) Error() string {
	p := f.Pointer
	if p == "" {
		p = "/"
	}
	return p + ": " + f.Reason
}

// annotation keywords carry no assertion.
var annotationKeywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "definitions": true, "$comment": true,
	"title": true, "description": true, "examples": true, "default": true, "deprecated": true,
	"readOnly": true, "writeOnly": true,
}

// fastCompiler compiles schema nodes from the embedded schema documents.
type fastCompiler struct {
	docs   map[string]any // by document URL
	nodes  map[string]*fastSchema
	failed map[string]error
}

// internSchemaStrings adds to interned every member name, and every string
// in an enum or const, of the schema documents.
func internSchemaStrings(docs map[string]any) {
	var walk func(v any, parentKey string)
	walk = func(v any, parentKey string) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if parentKey == "properties" {
					interned[k] = k
				}
				walk(x, k)
			}
		case []any:
			for _, x := range t {
				walk(x, parentKey)
			}
		case string:
			if parentKey == "enum" || parentKey == "const" || parentKey == "required" {
				interned[t] = t
			}
		}
	}
	for _, d := range docs {
		walk(d, "")
	}
}

func newFastCompiler() (*fastCompiler, error) {
	c := &fastCompiler{docs: map[string]any{}, nodes: map[string]*fastSchema{}, failed: map[string]error{}}
	entries, err := fs.ReadDir(schemas.FS(), ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(schemas.FS(), e.Name())
		if err != nil {
			return nil, err
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		c.docs[schemas.BaseURL+e.Name()] = v
	}
	return c, nil
}

// compileRef compiles the schema at an absolute URL with an optional
// fragment (a JSON pointer).
func (c *fastCompiler) compileRef(url string) (*fastSchema, error) {
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
	n := &fastSchema{}
	c.nodes[url] = n // before compiling, for recursive references
	if err := c.fill(n, v, docURL, url); err != nil {
		// Every node compiled meanwhile may lean on this one: forget them
		// all, so that no later shape reuses a half-compiled node.
		c.nodes = map[string]*fastSchema{}
		c.failed[url] = err
		return nil, err
	}
	return n, nil
}

func (c *fastCompiler) sub(v any, docURL, at string) (*fastSchema, error) {
	n := &fastSchema{}
	return n, c.fill(n, v, docURL, at)
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

func intKeyword(v any) (int, error) {
	f, ok := num(v)
	if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, fmt.Errorf("not a non-negative integer: %v", v)
	}
	return int(f), nil
}

// fill compiles the schema value v (found at URL at, in document docURL)
// into n.
func (c *fastCompiler) fill(n *fastSchema, v any, docURL, at string) error {
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
				target = schemas.BaseURL + ref
			}
			if n.ref, err = c.compileRef(target); err != nil {
				return err
			}
		case "properties":
			pm, ok := kv.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: bad properties", where)
			}
			n.props = map[string]*fastSchema{}
			for name, ps := range pm {
				if n.props[name], err = c.sub(ps, docURL, where+"/"+name); err != nil {
					return err
				}
				n.propList = append(n.propList, propSchema{name, n.props[name]})
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
			n.match = n.pattern.MatchString
			if f, ok := fastPatterns[s]; ok {
				n.match = f
			}
		case "format":
			s, _ := kv.(string)
			f, ok := jsonschema.Formats[s]
			if !ok {
				return fmt.Errorf("%s: unknown format %q", where, s)
			}
			n.format, n.fmtName = f, s
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			f, ok := num(kv)
			if !ok {
				return fmt.Errorf("%s: not a number", where)
			}
			switch k {
			case "minimum":
				n.minimum = &f
			case "maximum":
				n.maximum = &f
			case "exclusiveMinimum":
				n.exclMin = &f
			default:
				n.exclMax = &f
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
				return fmt.Errorf("%s: keyword %q is not supported by the fast validator", where, k)
			}
		}
	}
	return nil
}

// validate returns the first fault of v, or nil. The fault's pointer is
// relative to v: callers prepend the path to v as the fault unwinds, so
// that success allocates nothing.
func (n *fastSchema) validate(v any) *schemaFault {
	return n.check(v, false)
}

// quickFault is the fault of a quick check (the if of an if/then/else, the
// schema of a not): only whether it holds matters, so nothing is allocated.
var quickFault = &schemaFault{Keyword: "quick", Reason: "does not match"}

// at prepends a path segment to a fault's pointer.
func (f *schemaFault) at(seg string) *schemaFault {
	if f != nil && f != quickFault {
		f.Pointer = "/" + escapePointer(seg) + f.Pointer
	}
	return f
}

// fail returns a fault, or quickFault in a quick check.
func fail(quick bool, keyword string, reason func() string) *schemaFault {
	if quick {
		return quickFault
	}
	return &schemaFault{Keyword: keyword, Reason: reason()}
}

func (n *fastSchema) check(v any, quick bool) *schemaFault {
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
	if n.konst != nil && !jsonEqual(v, n.konst[0]) {
		return fail(quick, "const", func() string { return "value differs from the constant" })
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if jsonEqual(v, e) {
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
		if f := n.validateString(t, quick); f != nil {
			return f
		}
	case json.Number:
		if f := n.validateNumber(t, quick); f != nil {
			return f
		}
	case map[string]any:
		if f := n.validateObject(t, quick); f != nil {
			return f
		}
	case []any:
		if f := n.validateArray(t, quick); f != nil {
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

func (n *fastSchema) validateString(s string, quick bool) *schemaFault {
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

func (n *fastSchema) validateNumber(x json.Number, quick bool) *schemaFault {
	if n.minimum == nil && n.maximum == nil && n.exclMin == nil && n.exclMax == nil {
		return nil
	}
	f, err := strconv.ParseFloat(string(x), 64)
	if err != nil {
		return fail(quick, "type", func() string { return "number out of range" })
	}
	switch {
	case n.minimum != nil && f < *n.minimum:
		return fail(quick, "minimum", func() string { return fmt.Sprintf("must be >= %v", *n.minimum) })
	case n.maximum != nil && f > *n.maximum:
		return fail(quick, "maximum", func() string { return fmt.Sprintf("must be <= %v", *n.maximum) })
	case n.exclMin != nil && f <= *n.exclMin:
		return fail(quick, "exclusiveMinimum", func() string { return fmt.Sprintf("must be > %v", *n.exclMin) })
	case n.exclMax != nil && f >= *n.exclMax:
		return fail(quick, "exclusiveMaximum", func() string { return fmt.Sprintf("must be < %v", *n.exclMax) })
	}
	return nil
}

func (n *fastSchema) validateObject(m map[string]any, quick bool) *schemaFault {
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
	var first *schemaFault
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
			var f *schemaFault
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

func (n *fastSchema) validateArray(a []any, quick bool) *schemaFault {
	if n.minItems >= 0 && len(a) < n.minItems {
		return fail(quick, "minItems", func() string { return fmt.Sprintf("must have >= %d items", n.minItems) })
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		return fail(quick, "maxItems", func() string { return fmt.Sprintf("must have <= %d items", n.maxItems) })
	}
	if n.unique {
		for i := 1; i < len(a); i++ {
			for j := 0; j < i; j++ {
				if jsonEqual(a[i], a[j]) {
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

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(types []string, v any) bool {
	vt := jsonType(v)
	for _, t := range types {
		if t == vt {
			return true
		}
		if t == "integer" && vt == "number" {
			if f, err := strconv.ParseFloat(string(v.(json.Number)), 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
				return true
			}
		}
	}
	return false
}

// jsonEqual is JSON value equality (numbers by value).
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, e1 := strconv.ParseFloat(string(x), 64)
		fy, e2 := strconv.ParseFloat(string(y), 64)
		return e1 == nil && e2 == nil && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
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
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// fastPatterns are hand-written matchers for the patterns that every
// record checks many times (a test cross-checks each with its regexp).
var fastPatterns = map[string]func(string) bool{
	`^[0-9a-f]{64}$`: func(s string) bool {
		if len(s) != 64 {
			return false
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	},
	`^[A-Za-z0-9][A-Za-z0-9._-]*$`: func(s string) bool {
		return len(s) > 0 && isAlnum(s[0]) && allIn(s[1:], "._-")
	},
	`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`: func(s string) bool {
		for {
			seg, rest, more := strings.Cut(s, "/")
			if len(seg) == 0 || !(isAlnum(seg[0]) || seg[0] == '_' || seg[0] == '-') || !allIn(seg[1:], "._-") {
				return false
			}
			if !more {
				return true
			}
			s = rest
		}
	},
	`\.jsonl$`: func(s string) bool { return strings.HasSuffix(s, ".jsonl") },
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// allIn reports whether every byte of s is a letter, a digit or in extra.
func allIn(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}

// recordSchema is how one record shape is validated: fast when its schema
// compiles here, else with the general validator.
type recordSchema struct {
	name string // the schema kind, or the ref for shapes without a kind
	fast *fastSchema
	slow func(any) error // the general validator
}

// check validates v, returning an error that names the problem.
func (r *recordSchema) check(v any) error {
	if r.fast != nil {
		f := r.fast.validate(v)
		if f == nil {
			return nil
		}
		// Ask the general validator for its fuller account; should it
		// disagree, the fast verdict stands (fail closed).
		if err := r.slow(v); err != nil {
			return err
		}
		return fmt.Errorf("invalid %s: %w", r.name, f)
	}
	return r.slow(v)
}

// The record shapes a bundle holds.
var (
	shapesOnce sync.Once
	shapes     map[string]*recordSchema
	shapesErr  error
)

const (
	shapeArtifact = "artifact" // browser-observation.schema.json#/$defs/artifact
)

// shapeNames maps each shape to its schema ref.
var shapeRefs = map[string]string{
	string(schemas.KindManifest):      "evidence-manifest.schema.json",
	string(schemas.KindLedgerEntry):   "ledger-entry.schema.json",
	string(schemas.KindPlan):          "browser-plan.schema.json",
	string(schemas.KindAction):        "browser-action.schema.json",
	string(schemas.KindToolResult):    "tool-result.schema.json",
	string(schemas.KindDecision):      "decision-record.schema.json",
	string(schemas.KindEvent):         "computer-use.schema.json#/$defs/ComputerUseStreamEvent",
	string(schemas.KindObservation):   "browser-observation.schema.json",
	string(schemas.KindImageArtifact): "image-artifact.schema.json",
	string(schemas.KindModelCall):     "model-call.schema.json",
	shapeArtifact:                     "browser-observation.schema.json#/$defs/artifact",
}

// fastCompileErrors records, per shape, why it fell back to the general
// validator (for the tests and benchmarks).
var fastCompileErrors = map[string]error{}

func loadShapes() (map[string]*recordSchema, error) {
	shapesOnce.Do(func() {
		fc, err := newFastCompiler()
		if err != nil {
			shapesErr = err
			return
		}
		gc, err := schemas.NewCompiler()
		if err != nil {
			shapesErr = err
			return
		}
		out := map[string]*recordSchema{}
		for name, ref := range shapeRefs {
			rs := &recordSchema{name: name}
			if kind, err := schemas.ParseKind(name); err == nil {
				rs.slow = func(v any) error { return schemas.ValidateValue(kind, v) }
			} else {
				s, err := gc.Compile(schemas.BaseURL + ref)
				if err != nil {
					shapesErr = fmt.Errorf("evidence: compile %s: %w", ref, err)
					return
				}
				rs.slow = func(v any) (err error) {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("invalid %s: validator failed: %v", name, r)
						}
					}()
					if err := s.Validate(v); err != nil {
						return fmt.Errorf("invalid %s: %w", name, err)
					}
					return nil
				}
			}
			if f, err := fc.compileRef(schemas.BaseURL + ref); err == nil {
				rs.fast = f
			} else {
				fastCompileErrors[name] = err
			}
			out[name] = rs
		}
		shapes = out
	})
	return shapes, shapesErr
}

// validateShape validates v as the named record shape.
func validateShape(name string, v any) error {
	s, err := loadShapes()
	if err != nil {
		return err
	}
	rs, ok := s[name]
	if !ok {
		return fmt.Errorf("evidence: unknown record shape %q", name)
	}
	return rs.check(v)
}
