package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/aegis-run/aegis/schemas"
)

// Schema is a JSON Schema the model's answer must satisfy, in the two
// forms the client sends.
type Schema struct {
	// Name names the schema in response_format (1 to 64 of [A-Za-z0-9_-]).
	Name string
	// Doc is the self-contained schema (every $ref local), which accepts
	// exactly what the original accepts. It goes into the prompt in
	// json_object mode; answers are always validated against the original
	// by the caller.
	Doc json.RawMessage
	// Strict is Doc rewritten for json_schema strict mode (OpenAI's subset:
	// every property required, optional ones nullable, no if/then, no
	// string length bounds). It is looser than Doc in places and never
	// replaces validation: answers decoded under it carry nulls for absent
	// optional fields, which Normalize removes.
	Strict json.RawMessage
}

var (
	schemaNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	defNameRe    = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// NewSchema returns the schema named name whose self-contained document is
// doc (no $ref outside the document), with its strict form.
func NewSchema(name string, doc []byte) (*Schema, error) {
	if !schemaNameRe.MatchString(name) {
		return nil, fmt.Errorf("llm: schema name %q: want 1 to 64 of [A-Za-z0-9_-]", name)
	}
	n, err := parseOrdered(doc)
	if err != nil {
		return nil, fmt.Errorf("llm: schema %s: %w", name, err)
	}
	compact, err := marshalOrdered(n)
	if err != nil {
		return nil, err
	}
	st, err := marshalOrdered(strictNode(n))
	if err != nil {
		return nil, err
	}
	return &Schema{Name: name, Doc: compact, Strict: st}, nil
}

var (
	kindSchemaMu sync.Mutex
	kindSchemas  = map[schemas.Kind]*Schema{}
)

// SchemaFor returns the schema of an aegis kind (such as
// schemas.KindNavigatorResponse), bundled from the embedded schema files
// (schemas.FS) into one self-contained document. The result is cached and
// shared: do not modify it.
func SchemaFor(kind schemas.Kind) (*Schema, error) {
	kindSchemaMu.Lock()
	defer kindSchemaMu.Unlock()
	if s, ok := kindSchemas[kind]; ok {
		return s, nil
	}
	if _, err := schemas.ParseKind(string(kind)); err != nil {
		return nil, err
	}
	doc, err := Bundle(schemas.FS(), kind.URL())
	if err != nil {
		return nil, err
	}
	name := strings.NewReplacer("-", "_").Replace(string(kind))
	s, err := NewSchema(name, doc)
	if err != nil {
		return nil, err
	}
	kindSchemas[kind] = s
	return s, nil
}

// Bundle returns the schema at ref (an absolute URL under schemas.BaseURL,
// with an optional fragment) as one self-contained document: every schema
// it references, in its own file or another of fsys, is copied into $defs
// and every $ref points there. $id and $schema are dropped (the result is
// draft 2020-12).
func Bundle(fsys fs.FS, ref string) ([]byte, error) {
	b := &bundler{fsys: fsys, docs: map[string]any{}, names: map[string]string{}, used: map[string]bool{}, defs: &object{vals: map[string]any{}}}
	file, frag, err := b.split("", ref)
	if err != nil {
		return nil, err
	}
	target, err := b.resolve(file, frag)
	if err != nil {
		return nil, err
	}
	root, err := b.rewrite(file, target)
	if err != nil {
		return nil, err
	}
	ro, ok := root.(*object)
	if !ok {
		return nil, fmt.Errorf("llm: bundle %s: the schema is not an object", ref)
	}
	out := &object{vals: map[string]any{}}
	out.set("$schema", "https://json-schema.org/draft/2020-12/schema")
	for _, k := range ro.keys {
		out.set(k, ro.vals[k])
	}
	if len(b.defs.keys) > 0 {
		out.set("$defs", b.defs)
	}
	return marshalOrdered(out)
}

type bundler struct {
	fsys  fs.FS
	docs  map[string]any    // file name → parsed document
	names map[string]string // "file#fragment" → $defs name
	used  map[string]bool   // $defs names taken
	defs  *object
}

// split turns a $ref, relative to the file it appears in, into a file name
// of the schema FS and a JSON pointer fragment.
func (b *bundler) split(base, ref string) (file, frag string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", "", fmt.Errorf("llm: bundle: bad $ref %q: %w", ref, err)
	}
	frag = u.Fragment
	u.Fragment = ""
	switch s := u.String(); {
	case s == "":
		file = base
	case strings.HasPrefix(s, schemas.BaseURL):
		file = strings.TrimPrefix(s, schemas.BaseURL)
	case !u.IsAbs() && !strings.Contains(s, "/"):
		file = s
	default:
		return "", "", fmt.Errorf("llm: bundle: $ref %q is outside the embedded schemas", ref)
	}
	if file == "" {
		return "", "", fmt.Errorf("llm: bundle: $ref %q has no file", ref)
	}
	return file, frag, nil
}

func (b *bundler) doc(file string) (any, error) {
	if d, ok := b.docs[file]; ok {
		return d, nil
	}
	raw, err := fs.ReadFile(b.fsys, file)
	if err != nil {
		return nil, fmt.Errorf("llm: bundle: %w", err)
	}
	d, err := parseOrdered(raw)
	if err != nil {
		return nil, fmt.Errorf("llm: bundle %s: %w", file, err)
	}
	b.docs[file] = d
	return d, nil
}

func (b *bundler) resolve(file, frag string) (any, error) {
	n, err := b.doc(file)
	if err != nil {
		return nil, err
	}
	if frag == "" {
		return n, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("llm: bundle: fragment %q of %s is not a JSON pointer", frag, file)
	}
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch t := n.(type) {
		case *object:
			v, ok := t.vals[seg]
			if !ok {
				return nil, fmt.Errorf("llm: bundle: %s#%s not found", file, frag)
			}
			n = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("llm: bundle: %s#%s not found", file, frag)
			}
			n = t[i]
		default:
			return nil, fmt.Errorf("llm: bundle: %s#%s not found", file, frag)
		}
	}
	return n, nil
}

// defName makes a $defs name from a file and fragment:
// "browser-state.schema.json" and "/$defs/id" give "browser-state_id".
func (b *bundler) defName(file, frag string) string {
	stem := strings.TrimSuffix(strings.TrimSuffix(file, ".json"), ".schema")
	name := stem
	if frag != "" {
		segs := strings.Split(strings.TrimPrefix(frag, "/"), "/")
		if len(segs) >= 2 && segs[0] == "$defs" {
			segs = segs[1:]
		}
		name += "_" + strings.Join(segs, "_")
	}
	name = defNameRe.ReplaceAllString(name, "_")
	base := name
	for i := 2; b.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	b.used[name] = true
	return name
}

// rewrite copies n, found in file, with every $ref pointing into the
// bundle's $defs and without document keywords ($id, $schema, $defs).
func (b *bundler) rewrite(file string, n any) (any, error) {
	switch t := n.(type) {
	case *object:
		out := &object{vals: map[string]any{}}
		for _, k := range t.keys {
			v := t.vals[k]
			switch k {
			case "$id", "$schema", "$comment":
				continue
			case "$defs":
				// Definitions are copied on demand, when referenced.
				continue
			case "$ref":
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("llm: bundle %s: $ref is not a string", file)
				}
				local, err := b.ref(file, s)
				if err != nil {
					return nil, err
				}
				out.set(k, local)
				continue
			}
			// "const", "enum", "default" and "examples" hold data; the
			// values of "properties" and the like are maps of schemas;
			// everything else is a schema, an array of schemas or a
			// plain value.
			switch k {
			case "const", "enum", "default", "examples":
				out.set(k, v)
				continue
			case "properties", "patternProperties", "dependentSchemas":
				m, ok := v.(*object)
				if !ok {
					return nil, fmt.Errorf("llm: bundle %s: %s is not an object", file, k)
				}
				nm := &object{vals: map[string]any{}}
				for _, mk := range m.keys {
					c, err := b.rewrite(file, m.vals[mk])
					if err != nil {
						return nil, err
					}
					nm.set(mk, c)
				}
				out.set(k, nm)
				continue
			}
			c, err := b.rewrite(file, v)
			if err != nil {
				return nil, err
			}
			out.set(k, c)
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			c, err := b.rewrite(file, v)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return n, nil
}

func (b *bundler) ref(base, ref string) (string, error) {
	file, frag, err := b.split(base, ref)
	if err != nil {
		return "", err
	}
	key := file + "#" + frag
	if name, ok := b.names[key]; ok {
		return "#/$defs/" + name, nil
	}
	name := b.defName(file, frag)
	b.names[key] = name
	target, err := b.resolve(file, frag)
	if err != nil {
		return "", err
	}
	b.defs.set(name, nil) // reserve the slot, so that defs keep first-use order
	c, err := b.rewrite(file, target)
	if err != nil {
		return "", err
	}
	b.defs.vals[name] = c
	return "#/$defs/" + name, nil
}

// strictKeywords are the keywords json_schema strict mode accepts, per
// OpenAI's documented subset; every other keyword is dropped.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "anyOf": true, "$ref": true, "$defs": true,
	"description": true, "pattern": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true, "format": true,
}

var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// strictNode rewrites a schema for strict mode:
//   - an allOf of if/then branches (a discriminated union) becomes an anyOf
//     of the then branches, which are complete closed variants in aegis
//     schemas;
//   - every object lists all its properties as required, optional ones
//     made nullable, and gets additionalProperties false;
//   - const becomes a one-value enum; unsupported keywords and formats are
//     dropped.
func strictNode(n any) any {
	t, ok := n.(*object)
	if !ok {
		return n
	}
	if variants, ok := unionVariants(t); ok {
		out := &object{vals: map[string]any{}}
		if d, ok := t.vals["description"]; ok {
			out.set("description", d)
		}
		anyOf := make([]any, len(variants))
		for i, v := range variants {
			anyOf[i] = strictNode(v)
		}
		out.set("anyOf", anyOf)
		if defs, ok := t.vals["$defs"]; ok {
			out.set("$defs", strictDefs(defs))
		}
		return out
	}
	out := &object{vals: map[string]any{}}
	if _, ok := t.vals["$ref"]; ok {
		// A $ref with siblings: keep the reference and its description.
		out.set("$ref", t.vals["$ref"])
		if d, ok := t.vals["description"]; ok {
			out.set("description", d)
		}
		return out
	}
	required := map[string]bool{}
	if r, ok := t.vals["required"].([]any); ok {
		for _, v := range r {
			if s, ok := v.(string); ok {
				required[s] = true
			}
		}
	}
	for _, k := range t.keys {
		v := t.vals[k]
		switch {
		case k == "const":
			if _, str := v.(string); str && t.vals["type"] == nil {
				out.set("type", "string")
			}
			out.set("enum", []any{v})
		case k == "format":
			if s, _ := v.(string); strictFormats[s] {
				out.set(k, v)
			}
		case !strictKeywords[k]:
		case k == "required":
			// Rewritten below, from the properties.
		case k == "properties":
			props, ok := v.(*object)
			if !ok {
				continue
			}
			np := &object{vals: map[string]any{}}
			var req []any
			for _, pk := range props.keys {
				ps := strictNode(props.vals[pk])
				if !required[pk] {
					ps = nullable(ps)
				}
				np.set(pk, ps)
				req = append(req, pk)
			}
			out.set("properties", np)
			if req == nil {
				req = []any{}
			}
			out.set("required", req)
		case k == "items":
			out.set(k, strictNode(v))
		case k == "anyOf":
			if arr, ok := v.([]any); ok {
				na := make([]any, len(arr))
				for i, s := range arr {
					na[i] = strictNode(s)
				}
				out.set(k, na)
			}
		case k == "$defs":
			out.set(k, strictDefs(v))
		case k == "additionalProperties":
			out.set(k, false)
		default:
			out.set(k, v)
		}
	}
	if _, hasProps := out.vals["properties"]; hasProps {
		out.set("additionalProperties", false)
	}
	return out
}

func strictDefs(v any) any {
	defs, ok := v.(*object)
	if !ok {
		return v
	}
	nd := &object{vals: map[string]any{}}
	for _, dk := range defs.keys {
		nd.set(dk, strictNode(defs.vals[dk]))
	}
	return nd
}

// unionVariants recognizes the discriminated-union shape of aegis schemas:
// an allOf whose every member is {"if": ..., "then": S}; it returns the S.
func unionVariants(t *object) ([]any, bool) {
	all, ok := t.vals["allOf"].([]any)
	if !ok || len(all) == 0 {
		return nil, false
	}
	var out []any
	for _, m := range all {
		mo, ok := m.(*object)
		if !ok {
			return nil, false
		}
		then, ok := mo.vals["then"]
		if _, hasIf := mo.vals["if"]; !ok || !hasIf || len(mo.keys) != 2 {
			return nil, false
		}
		out = append(out, then)
	}
	return out, true
}

// nullable makes a strict schema also accept null.
func nullable(n any) any {
	t, ok := n.(*object)
	if !ok {
		return n
	}
	if typ, ok := t.vals["type"].(string); ok && t.vals["$ref"] == nil && t.vals["anyOf"] == nil {
		out := &object{vals: map[string]any{}}
		for _, k := range t.keys {
			out.set(k, t.vals[k])
		}
		out.vals["type"] = []any{typ, "null"}
		if e, ok := t.vals["enum"].([]any); ok {
			out.vals["enum"] = append(append([]any(nil), e...), nil)
		}
		return out
	}
	out := &object{vals: map[string]any{}}
	out.set("anyOf", []any{n, mkObject("type", "null")})
	return out
}

// object is a JSON object that keeps its members' order, so that schemas
// keep their reading order in prompts (and models generate properties in
// schema order).
type object struct {
	keys []string
	vals map[string]any
}

func mkObject(kv ...any) *object {
	o := &object{vals: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// parseOrdered parses one JSON value, keeping object member order.
func parseOrdered(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := parseValue(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func parseValue(d *json.Decoder, depth int) (any, error) {
	if depth > schemas.MaxDepth {
		return nil, errors.New("nesting too deep")
	}
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				if _, dup := o.vals[k]; dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				v, err := parseValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			arr := []any{}
			for d.More() {
				v, err := parseValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

func marshalOrdered(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeOrdered(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeOrdered(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case *object:
		buf.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeOrdered(buf, t.vals[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeOrdered(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}
