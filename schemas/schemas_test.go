package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/schemas"
)

func TestParse(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name       string
		doc        string
		wantOffset int64  // -1: no error
		wantMsg    string // substring of the SyntaxError's message
	}{
		{"object", `{"a":[1,2.5,{"b":null}],"c":"d"}`, -1, ""},
		{"scalar with whitespace", " \n true \t", -1, ""},
		{"nesting at MaxDepth", deep(schemas.MaxDepth), -1, ""},
		{"empty input", ``, 0, "unexpected end of input"},
		{"only whitespace", "   ", 3, "unexpected end of input"},
		{"duplicate key", `{"a":1,"a":2}`, 7, `duplicate object key "a"`},
		{"duplicate key in a nested object", `{"x":{"k":1,"k":2}}`, 12, `duplicate object key "k"`},
		{"duplicate key differing only in escapes", `{"a":1,"\u0061":2}`, 7, `duplicate object key "a"`},
		{"trailing object", `{} {}`, 3, "unexpected data after the JSON value"},
		{"trailing garbage", `{}x`, 2, "unexpected data after the JSON value"},
		{"two numbers", `1 2`, 2, "unexpected data after the JSON value"},
		{"nesting deeper than MaxDepth", deep(schemas.MaxDepth + 1), schemas.MaxDepth, "nesting deeper than 64 levels"},
		{"bad literal", `{"a": tru}`, 7, "in literal true"},
		{"trailing comma in object", `{"a":1,}`, 7, "looking for beginning of object key string"},
		{"trailing comma in array", `{"a":[1,2,]}`, 10, "looking for beginning of value"},
		{"unterminated array", `[1,2`, 4, "unexpected end of input"},
		{"key without value", `{"a"}`, 4, "after object key"},
		{"missing comma", `{"a":1 "b":2}`, 7, "after object key:value pair"},
		{"bad escape", `"\x01"`, 3, "in string escape code"},
		{"control character in string", "\"a\x01\"", 3, "in string literal"},
		{"non-string key", `{1:2}`, 1, "invalid character '1'"},
		{"stray closing bracket", `]`, 0, "looking for beginning of value"},
		{"truncated literal", `nul`, 0, "unexpected end of input"},
		{"exponent beyond what the validator can hold", `{"n":1e10000000}`, 5, "number exponent beyond"},
		{"number longer than MaxNumberLen", `[` + strings.Repeat("1", 101) + `]`, 1, "number longer than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := schemas.Parse([]byte(tt.doc))
			if tt.wantOffset < 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var se *schemas.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if got, want := se.Offset, tt.wantOffset; got != want {
				t.Errorf("offset: got %d, want %d (%v)", got, want, se)
			}
			if got, want := se.Msg, tt.wantMsg; !strings.Contains(got, want) {
				t.Errorf("message: got %q, want it to contain %q", got, want)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	got, err := schemas.Parse([]byte(`{"n":[1,-2.50,1e400],"s":"\u00e9","b":false,"z":null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"n": []any{json.Number("1"), json.Number("-2.50"), json.Number("1e400")},
		"s": "é",
		"b": false,
		"z": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestParseTooLarge(t *testing.T) {
	doc := make([]byte, schemas.MaxDocumentBytes+1)
	for i := range doc {
		doc[i] = ' '
	}
	doc[0] = '1'
	if _, err := schemas.Parse(doc); !errors.Is(err, schemas.ErrTooLarge) {
		t.Errorf("Parse: got %v, want ErrTooLarge", err)
	}
	if err := schemas.Validate(schemas.KindPlan, doc); !errors.Is(err, schemas.ErrTooLarge) {
		t.Errorf("Validate: got %v, want ErrTooLarge", err)
	}
	if _, err := schemas.Parse(doc[:schemas.MaxDocumentBytes]); err != nil {
		t.Errorf("Parse of exactly MaxDocumentBytes: got %v, want nil", err)
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range schemas.Kinds() {
		got, err := schemas.ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v; want %q, nil", k, got, err, k)
		}
	}
	for _, s := range []string{"", "State", "states", " state", "browser-state", "plan.json"} {
		got, err := schemas.ParseKind(s)
		if err == nil {
			t.Errorf("ParseKind(%q) = %q, nil; want an error", s, got)
			continue
		}
		if got != "" {
			t.Errorf("ParseKind(%q) returned kind %q with its error", s, got)
		}
		for _, k := range schemas.Kinds() {
			if !strings.Contains(err.Error(), string(k)) {
				t.Errorf("ParseKind(%q) error %q does not list kind %q", s, err, k)
			}
		}
	}
}

func TestKindsSorted(t *testing.T) {
	ks := schemas.Kinds()
	if got, want := sort.SliceIsSorted(ks, func(i, j int) bool { return ks[i] < ks[j] }), true; got != want {
		t.Errorf("Kinds() = %v, not sorted", ks)
	}
	if got, want := len(ks), 18; got != want {
		t.Errorf("len(Kinds()) = %d, want %d", got, want)
	}
}

func TestValidateErrors(t *testing.T) {
	if err := schemas.Validate(schemas.Kind("nope"), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), `unknown kind "nope"`) {
		t.Errorf("unknown kind: got %v", err)
	}
	var se *schemas.SyntaxError
	if err := schemas.Validate(schemas.KindPlan, []byte(`{"goal":"a","goal":"b"}`)); !errors.As(err, &se) {
		t.Errorf("duplicate key: got %v, want a *SyntaxError", err)
	}
	var ve *schemas.ValidationError
	err := schemas.Validate(schemas.KindAction, []byte(`{"id":"a1","type":"click","reason":"r","policyTags":[],"url":"https://x.example/"}`))
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	if got, want := ve.Kind, schemas.KindAction; got != want {
		t.Errorf("Kind: got %q, want %q", got, want)
	}
	// A broken click reports the click's own problems, not one failure per
	// action type.
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.String())
	}
	want := []string{"/: missing properties: 'selector'", "/: additionalProperties 'url' not allowed"}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems: got %q, want %q", got, want)
	}
}

// TestSchemaFiles checks every embedded schema file: valid JSON (by the
// strict parser), draft 2020-12, $id equal to BaseURL plus its file name,
// and compilable on its own with formats asserted and no loading from
// outside.
func TestSchemaFiles(t *testing.T) {
	if err := schemas.Check(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(schemas.FS(), "*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no embedded schema")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			b, err := fs.ReadFile(schemas.FS(), name)
			if err != nil {
				t.Fatal(err)
			}
			v, err := schemas.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			doc, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("got %T, want an object", v)
			}
			if got, want := doc["$id"], schemas.BaseURL+name; got != want {
				t.Errorf("$id: got %v, want %q", got, want)
			}
			if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
				t.Errorf("$schema: got %v, want %q", got, want)
			}
			c, err := schemas.NewCompiler()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compile(schemas.BaseURL + name); err != nil {
				t.Errorf("compile: %v", err)
			}
		})
	}
	// Every kind points into an embedded file.
	for _, k := range schemas.Kinds() {
		file, _, _ := strings.Cut(strings.TrimPrefix(k.URL(), schemas.BaseURL), "#")
		if _, err := fs.Stat(schemas.FS(), file); err != nil {
			t.Errorf("kind %s: %v", k, err)
		}
	}
}

// browserFiles are the schemas of the browser contract (seeds 000, 001,
// 004), held to the house rules TestSchemaHouseRules checks.
var browserFiles = []string{
	"browser-state.schema.json",
	"browser-observation.schema.json",
	"browser-action.schema.json",
	"browser-actions.schema.json",
	"browser-plan.schema.json",
	"navigator-response.schema.json",
	"tool-result.schema.json",
	"image-artifact.schema.json",
	"model-call.schema.json",
}

// TestSchemaHouseRules checks the browser schemas: every schema, property,
// definition and item schema has a description; every object schema with
// properties is closed (additionalProperties or unevaluatedProperties
// false), except the action dispatcher, whose every branch is a closed
// $defs shape; and every string is bounded (maxLength, enum, const, or a
// fixed-length pattern).
func TestSchemaHouseRules(t *testing.T) {
	for _, name := range browserFiles {
		t.Run(name, func(t *testing.T) {
			b, err := fs.ReadFile(schemas.FS(), name)
			if err != nil {
				t.Fatal(err)
			}
			v, err := schemas.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			root := v.(map[string]any)
			var walk func(ptr string, s map[string]any, needDesc bool)
			walk = func(ptr string, s map[string]any, needDesc bool) {
				if needDesc {
					if d, _ := s["description"].(string); strings.TrimSpace(d) == "" {
						t.Errorf("%s: no description", ptr)
					}
				}
				if _, ok := s["properties"]; ok {
					_, dispatch := s["allOf"]
					if s["additionalProperties"] != false && s["unevaluatedProperties"] != false && !(ptr == "#" && dispatch) {
						t.Errorf("%s: object schema is not closed", ptr)
					}
				}
				if s["type"] == "string" && s["maxLength"] == nil && s["enum"] == nil && s["const"] == nil {
					if p, _ := s["pattern"].(string); !strings.HasSuffix(p, "{64}$") {
						t.Errorf("%s: unbounded string", ptr)
					}
				}
				if s["type"] == "array" && s["maxItems"] == nil {
					t.Errorf("%s: unbounded array", ptr)
				}
				for _, kw := range []string{"properties", "$defs"} {
					m, _ := s[kw].(map[string]any)
					for k, sub := range m {
						if sm, ok := sub.(map[string]any); ok {
							walk(ptr+"/"+kw+"/"+k, sm, true)
						}
					}
				}
				if items, ok := s["items"].(map[string]any); ok {
					walk(ptr+"/items", items, true)
				}
			}
			walk("#", root, true)
		})
	}
}

// TestSchemaLargeBounds checks the bounds too large for vector files.
// maxLength counts characters, not bytes.
func TestSchemaLargeBounds(t *testing.T) {
	state := map[string]any{
		"sessionId": "s1", "mode": "playwright", "activeUrl": "https://example.com/", "title": "",
		"viewport":  map[string]any{"width": 1280, "height": 720, "deviceScaleFactor": 1},
		"timestamp": "2026-01-23T10:00:00Z", "domHash": strings.Repeat("0", 64),
		"policyContext": map[string]any{"classification": "public", "allowVisionEscalation": false, "maxStepBudget": 10, "decisionLogId": "d1"},
	}
	obs := func(text, snapshot string, affordances int) []byte {
		affs := make([]any, affordances)
		for i := range affs {
			affs[i] = map[string]any{"selector": "a"}
		}
		b, err := json.Marshal(map[string]any{"state": state, "domText": text, "domSnapshot": snapshot, "affordances": affs})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name        string
		doc         []byte
		wantPointer string // "" with wantKeyword "" means valid
		wantKeyword string
	}{
		{"domText of 1 Mi two-byte characters", obs(strings.Repeat("é", 1<<20), "", 0), "", ""},
		{"domText over 1 Mi characters", obs(strings.Repeat("x", 1<<20+1), "", 0), "/domText", "maxLength"},
		{"domSnapshot of 4 Mi characters", obs("", strings.Repeat("x", 4<<20), 0), "", ""},
		{"domSnapshot over 4 Mi characters", obs("", strings.Repeat("x", 4<<20+1), 0), "/domSnapshot", "maxLength"},
		{"5000 affordances", obs("", "", 5000), "", ""},
		{"5001 affordances", obs("", "", 5001), "/affordances", "maxItems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schemas.Validate(schemas.KindObservation, tt.doc)
			if tt.wantKeyword == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			var got []string
			for _, p := range ve.Problems {
				got = append(got, p.Pointer+" "+p.Keyword[strings.LastIndex(p.Keyword, "/")+1:])
			}
			if want := tt.wantPointer + " " + tt.wantKeyword; !reflect.DeepEqual(got, []string{want}) {
				t.Errorf("got problems %q, want [%q]", got, want)
			}
		})
	}
}

// FuzzParse checks that Parse never panics, accepts only valid JSON, and
// that what it accepts survives a round trip.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}]}`, `{"a":1,"a":2}`, `[[[]]]`, `"\u00e9"`, `1e400`, `{} {}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := schemas.Parse(doc)
		if err != nil {
			var se *schemas.SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, schemas.ErrTooLarge) {
				t.Fatalf("error %v of type %T", err, err)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("Parse accepted invalid JSON %q", doc)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := schemas.Parse(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("round trip changed %#v into %#v", v, v2)
		}
	})
}

func ExampleValidate() {
	doc := []byte(`{"id":"a1","type":"click","reason":"Submit the form","policyTags":[]}`)
	err := schemas.Validate(schemas.KindAction, doc)
	fmt.Println(err)
	// Output:
	// invalid action:
	//   /: missing properties: 'selector'
}

func ExampleValidate_problems() {
	doc := []byte(`{"id":"a1","type":"wait","reason":"Let the page settle","policyTags":[],"durationMs":600000}`)
	var ve *schemas.ValidationError
	if errors.As(schemas.Validate(schemas.KindAction, doc), &ve) {
		for _, p := range ve.Problems {
			fmt.Printf("%s: %s\n", p.Pointer, p.Reason)
		}
	}
	// Output:
	// /durationMs: must be <= 60000 but found 600000
}

func ExampleValidate_syntaxError() {
	err := schemas.Validate(schemas.KindPlan, []byte(`{"goal":"a","goal":"b","steps":[]}`))
	var se *schemas.SyntaxError
	fmt.Println(errors.As(err, &se), err)
	// Output:
	// true malformed JSON at byte offset 12: duplicate object key "goal"
}

func ExampleValidate_valid() {
	doc := bytes.TrimSpace([]byte(`
{"goal": "Sign in",
 "steps": [{"id": "s1", "description": "Open the sign-in page", "successCriteria": "A password field is visible"}]}`))
	fmt.Println(schemas.Validate(schemas.KindPlan, doc))
	// Output:
	// <nil>
}

// TestDecodeOwn: what encoding/json writes reads back as schemas.Parse reads it,
// and a document over MaxDocumentBytes is refused as Parse refuses it.
func TestDecodeOwn(t *testing.T) {
	for _, v := range []any{
		map[string]any{"a": 1, "b": []any{true, nil, "x\u2028<&>"}, "c": 1.5e300, "d": map[string]any{}},
		[]any{},
		"\xff invalid UTF-8 becomes U+FFFD",
		-0.0,
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := schemas.DecodeOwn(b)
		if err != nil {
			t.Fatalf("schemas.DecodeOwn(%s): %v", b, err)
		}
		want, err := schemas.Parse(b)
		if err != nil {
			t.Fatalf("Parse(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("schemas.DecodeOwn(%s) = %#v, want %#v", b, got, want)
		}
	}
	big := make([]byte, schemas.MaxDocumentBytes+1)
	if _, err := schemas.DecodeOwn(big); !errors.Is(err, schemas.ErrTooLarge) {
		t.Errorf("DecodeOwn of %d bytes: %v, want schemas.ErrTooLarge", len(big), err)
	}
	if _, err := schemas.DecodeOwn([]byte(`{"a":`)); err == nil {
		t.Error("DecodeOwn of a cut document: no error")
	}
}
