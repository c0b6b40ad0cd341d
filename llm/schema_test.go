package llm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/schemas"
)

// compile compiles a self-contained schema document.
func compile(t *testing.T, doc []byte) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		t.Fatalf("bundle refers outside itself: %s", u)
		return nil, nil
	}
	if err := c.AddResource("mem://bundle.json", bytes.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://bundle.json")
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

type vectors struct {
	Valid []struct {
		Name string          `json:"name"`
		Doc  json.RawMessage `json:"doc"`
	} `json:"valid"`
	Invalid []struct {
		Name string          `json:"name"`
		Doc  json.RawMessage `json:"doc"`
	} `json:"invalid"`
}

func parse(t *testing.T, doc []byte) any {
	t.Helper()
	v, err := schemas.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBundleEquivalent proves the bundled schemas accept exactly what the
// originals accept, on the schema test vectors.
func TestBundleEquivalent(t *testing.T) {
	for _, kind := range []schemas.Kind{schemas.KindNavigatorResponse, schemas.KindPlan, schemas.KindObservation, schemas.KindAction, schemas.KindActions} {
		t.Run(string(kind), func(t *testing.T) {
			s, err := llm.SchemaFor(kind)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(s.Doc), ".schema.json") {
				t.Errorf("bundle still refers to a schema file")
			}
			bundled := compile(t, s.Doc)
			b, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", string(kind)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var vf vectors
			if err := json.Unmarshal(b, &vf); err != nil {
				t.Fatal(err)
			}
			if len(vf.Valid) == 0 || len(vf.Invalid) == 0 {
				t.Fatal("no vectors")
			}
			for _, v := range vf.Valid {
				if err := bundled.Validate(parse(t, v.Doc)); err != nil {
					t.Errorf("valid %q refused by the bundle: %v", v.Name, err)
				}
			}
			for _, v := range vf.Invalid {
				orig := schemas.Validate(kind, v.Doc)
				got := bundled.Validate(parse(t, v.Doc))
				if (orig == nil) != (got == nil) {
					t.Errorf("invalid %q: original says %v, bundle says %v", v.Name, orig, got)
				}
			}
		})
	}
}

// TestStrictSchemaRules checks the strict form against OpenAI's strict
// mode rules: every object closed with every property required, no
// keyword outside the subset, root an object.
func TestStrictSchemaRules(t *testing.T) {
	allowed := map[string]bool{
		"type": true, "properties": true, "required": true, "additionalProperties": true,
		"items": true, "enum": true, "anyOf": true, "$ref": true, "$defs": true,
		"description": true, "pattern": true, "minimum": true, "maximum": true,
		"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
		"minItems": true, "maxItems": true, "format": true,
	}
	for _, kind := range []schemas.Kind{schemas.KindNavigatorResponse, schemas.KindPlan} {
		t.Run(string(kind), func(t *testing.T) {
			s, err := llm.SchemaFor(kind)
			if err != nil {
				t.Fatal(err)
			}
			var root map[string]any
			if err := json.Unmarshal(s.Strict, &root); err != nil {
				t.Fatal(err)
			}
			if root["type"] != "object" {
				t.Errorf("root type = %v, want object", root["type"])
			}
			var walk func(path string, n map[string]any)
			walk = func(path string, n map[string]any) {
				for k, v := range n {
					if !allowed[k] {
						t.Errorf("%s: keyword %q outside the strict subset", path, k)
					}
					switch k {
					case "properties", "$defs":
						for name, sub := range v.(map[string]any) {
							walk(path+"/"+k+"/"+name, sub.(map[string]any))
						}
					case "items":
						walk(path+"/items", v.(map[string]any))
					case "anyOf":
						for i, sub := range v.([]any) {
							walk(path+"/anyOf/"+string(rune('0'+i)), sub.(map[string]any))
						}
					}
				}
				if props, ok := n["properties"].(map[string]any); ok {
					if n["additionalProperties"] != false {
						t.Errorf("%s: additionalProperties is not false", path)
					}
					req, _ := n["required"].([]any)
					if len(req) != len(props) {
						t.Errorf("%s: %d required of %d properties", path, len(req), len(props))
					}
				}
			}
			walk("", root)
		})
	}
}

// TestStrictAcceptsValidAnswers: a valid answer, with null for every
// absent optional field (as strict decoding makes it), is valid under the
// strict form, and Normalize turns it back into a valid answer.
func TestStrictAcceptsValidAnswers(t *testing.T) {
	s, err := llm.SchemaFor(schemas.KindNavigatorResponse)
	if err != nil {
		t.Fatal(err)
	}
	strict := compile(t, s.Strict)
	answer := `{"actions":[
	 {"id":"a1","type":"click","reason":"open","policyTags":[],"selector":"#x","timeoutMs":null},
	 {"id":"a2","type":"extract","reason":"read","policyTags":["read"],"selector":null,"extract":"table","vision":null},
	 {"id":"a3","type":"type","reason":"name","policyTags":[],"selector":"#n","text":"alice","redact":false}
	],"status":"continue","summary":"ok"}`
	if err := strict.Validate(parse(t, []byte(answer))); err != nil {
		t.Fatalf("strict schema refuses a valid answer: %v", err)
	}
	if err := schemas.Validate(schemas.KindNavigatorResponse, []byte(answer)); err == nil {
		t.Fatal("the real schema accepts nulls")
	}
	if err := schemas.Validate(schemas.KindNavigatorResponse, llm.Normalize(answer)); err != nil {
		t.Errorf("normalized answer invalid: %v", err)
	}
	bad := `{"actions":[{"id":"a1","type":"click","reason":"r","policyTags":[],"selector":"#x","timeoutMs":null,"url":"http://x/"}],"status":"continue","summary":""}`
	if err := strict.Validate(parse(t, []byte(bad))); err == nil {
		t.Error("strict schema accepts a click with a url")
	}
}

func TestNewSchemaName(t *testing.T) {
	for _, name := range []string{"", "has space", strings.Repeat("x", 65), "dot.ted"} {
		if _, err := llm.NewSchema(name, []byte(`{"type":"object"}`)); err == nil {
			t.Errorf("NewSchema(%q) accepted", name)
		}
	}
}
