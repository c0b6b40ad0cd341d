package contract_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// browserKinds maps each kind of the browser contract to a constructor of
// its Go type.
var browserKinds = map[schemas.Kind]func() any{
	schemas.KindState:             func() any { return new(contract.State) },
	schemas.KindObservation:       func() any { return new(contract.Observation) },
	schemas.KindAction:            func() any { return new(contract.Action) },
	schemas.KindActions:           func() any { return new([]contract.Action) },
	schemas.KindPlan:              func() any { return new(contract.Plan) },
	schemas.KindNavigatorResponse: func() any { return new(contract.NavigatorResponse) },
	schemas.KindToolResult:        func() any { return new(contract.ToolResult) },
	schemas.KindImageArtifact:     func() any { return new(contract.ImageArtifact) },
}

// vectorFile is the shape of schemas/testdata/KIND.json.
type vectorFile struct {
	Valid []struct {
		Name string          `json:"name"`
		Doc  json.RawMessage `json:"doc"`
	} `json:"valid"`
	Invalid []struct {
		Name   string `json:"name"`
		Breaks struct {
			Pointer string `json:"pointer"`
			Keyword string `json:"keyword"`
		} `json:"breaks"`
		Doc json.RawMessage `json:"doc"`
	} `json:"invalid"`
}

func loadVectors(t *testing.T, kind schemas.Kind) vectorFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", string(kind)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatalf("%s vectors: %v", kind, err)
	}
	return vf
}

// TestVectorEquivalence proves that the Go types and the schemas agree on
// every vector: each valid document decodes (validated, strictly) into its
// Go type and re-encodes to a schema-valid document with the same JSON
// value; each invalid document is refused by Decode.
func TestVectorEquivalence(t *testing.T) {
	for kind, newValue := range browserKinds {
		t.Run(string(kind), func(t *testing.T) {
			vf := loadVectors(t, kind)
			for _, v := range vf.Valid {
				t.Run("valid/"+v.Name, func(t *testing.T) {
					val := newValue()
					if err := contract.Decode(kind, v.Doc, val); err != nil {
						t.Fatalf("Decode: %v", err)
					}
					out, err := contract.Encode(kind, reflect.ValueOf(val).Elem().Interface())
					if err != nil {
						t.Fatalf("Encode: %v", err)
					}
					if got, want := jsonValue(t, out), jsonValue(t, v.Doc); !reflect.DeepEqual(got, want) {
						t.Errorf("re-encoded value differs:\n got %s\nwant %s", out, v.Doc)
					}
					checkBatch(t, val)
				})
			}
			for _, v := range vf.Invalid {
				t.Run("invalid/"+v.Name, func(t *testing.T) {
					err := contract.Decode(kind, v.Doc, newValue())
					var ve *schemas.ValidationError
					if !errors.As(err, &ve) {
						t.Errorf("Decode: got %v, want a *schemas.ValidationError", err)
					}
				})
			}
		})
	}
}

// TestActionVectorsRefusedWithoutSchema checks the second line of defence:
// Action.UnmarshalJSON alone (no schema) refuses every invalid action
// vector that breaks the action's structure: a missing or foreign field,
// a wrong JSON type, an unknown action type.
func TestActionVectorsRefusedWithoutSchema(t *testing.T) {
	vf := loadVectors(t, schemas.KindAction)
	n := 0
	for _, v := range vf.Invalid {
		structural := v.Breaks.Keyword == "required" || v.Breaks.Keyword == "additionalProperties" ||
			v.Breaks.Keyword == "type" || v.Breaks.Pointer == "/type"
		if !structural {
			continue
		}
		n++
		var a contract.Action
		if err := json.Unmarshal(v.Doc, &a); err == nil {
			t.Errorf("%s: json.Unmarshal accepted %s as %+v", v.Name, v.Doc, a)
		}
	}
	if n < 10 {
		t.Errorf("only %d structural vectors; want at least 10", n)
	}
}

// checkBatch runs ValidateBatch on the batches a value holds: valid
// vectors have unique action ids.
func checkBatch(t *testing.T, val any) {
	t.Helper()
	var batch []contract.Action
	switch v := val.(type) {
	case *[]contract.Action:
		batch = *v
	case *contract.NavigatorResponse:
		batch = v.Actions
	default:
		return
	}
	if err := contract.ValidateBatch(batch); err != nil {
		t.Errorf("ValidateBatch: %v", err)
	}
}

// jsonValue parses a document strictly and normalizes its numbers to exact
// rationals, so that 2, 2.0 and 2e0 compare equal.
func jsonValue(t *testing.T, doc []byte) any {
	t.Helper()
	v, err := schemas.Parse(doc)
	if err != nil {
		t.Fatalf("parse %s: %v", doc, err)
	}
	return normalize(t, v)
}

func normalize(t *testing.T, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(t, e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(t, e)
		}
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			t.Fatalf("number %q", x)
		}
		return r.RatString()
	}
	return v
}

// TestGoValuesRoundTrip proves the other direction: Go values, written by
// hand for every action type and drawn at random for every kind, encode
// to schema-valid documents that decode back to equal values.
func TestGoValuesRoundTrip(t *testing.T) {
	var cases []struct {
		kind schemas.Kind
		name string
		v    any
	}
	add := func(kind schemas.Kind, name string, v any) {
		cases = append(cases, struct {
			kind schemas.Kind
			name string
			v    any
		}{kind, name, v})
	}
	for _, a := range handActions() {
		add(schemas.KindAction, "hand/"+a.ID, a)
	}
	add(schemas.KindActions, "hand/batch", handActions())
	add(schemas.KindNavigatorResponse, "hand/response", contract.NavigatorResponse{Actions: handActions()[:3], Status: contract.StatusContinue, Summary: "Sign in."})
	add(schemas.KindState, "hand/state", handState())
	add(schemas.KindObservation, "hand/observation", handObservation())
	add(schemas.KindPlan, "hand/plan", contract.Plan{Goal: "Sign in", Steps: []contract.PlanStep{{ID: "s1", Description: "Open the page", SuccessCriteria: "A form is visible"}}, Revision: intp(0)})
	add(schemas.KindToolResult, "hand/ok", handToolResult())
	add(schemas.KindImageArtifact, "hand/image", contract.ImageArtifact{ID: "img-1", URI: "artifacts/img-1.png", MIMEType: contract.MIMEPNG, ByteSize: contract.MaxImageBytes, ContentHash: hex64(7)})

	g := newGen(20260123)
	for i := range 300 {
		add(schemas.KindAction, fmt.Sprintf("random/action/%d", i), g.action(fmt.Sprintf("a%d", i)))
	}
	for i := range 60 {
		add(schemas.KindState, fmt.Sprintf("random/state/%d", i), g.state())
		add(schemas.KindObservation, fmt.Sprintf("random/observation/%d", i), g.observation())
		add(schemas.KindActions, fmt.Sprintf("random/actions/%d", i), g.batch())
		add(schemas.KindNavigatorResponse, fmt.Sprintf("random/response/%d", i), g.response())
		add(schemas.KindPlan, fmt.Sprintf("random/plan/%d", i), g.plan())
		add(schemas.KindToolResult, fmt.Sprintf("random/tool-result/%d", i), g.toolResult())
		add(schemas.KindImageArtifact, fmt.Sprintf("random/image/%d", i), g.image())
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := contract.Encode(c.kind, c.v)
			if err != nil {
				t.Fatalf("Encode: %v\nvalue %+v", err, c.v)
			}
			back := browserKinds[c.kind]()
			if err := contract.Decode(c.kind, b, back); err != nil {
				t.Fatalf("Decode: %v\n%s", err, b)
			}
			if got, want := reflect.ValueOf(back).Elem().Interface(), c.v; !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the value:\n got %+v\nwant %+v\njson %s", got, want, b)
			}
			checkBatch(t, back)
		})
	}
}
