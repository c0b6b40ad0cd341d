package contract_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// decisionVectors reads schemas/testdata/decision.json.
func decisionVectors(t *testing.T) (valid, invalid []json.RawMessage) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "schemas", "testdata", "decision.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Valid   []struct{ Doc json.RawMessage } `json:"valid"`
		Invalid []struct{ Doc json.RawMessage } `json:"invalid"`
	}
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	for _, v := range vf.Valid {
		valid = append(valid, v.Doc)
	}
	for _, v := range vf.Invalid {
		invalid = append(invalid, v.Doc)
	}
	return valid, invalid
}

func plainValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDecisionVectorsRoundTrip: every valid decision record decodes into
// DecisionRecord and re-encodes to the same JSON value, schema-valid; every
// invalid one is refused by Decode.
func TestDecisionVectorsRoundTrip(t *testing.T) {
	valid, invalid := decisionVectors(t)
	if len(valid) == 0 || len(invalid) == 0 {
		t.Fatal("no decision vectors")
	}
	for i, doc := range valid {
		var r contract.DecisionRecord
		if err := contract.Decode(schemas.KindDecision, doc, &r); err != nil {
			t.Errorf("valid %d: Decode: %v", i, err)
			continue
		}
		out, err := contract.Encode(schemas.KindDecision, r)
		if err != nil {
			t.Errorf("valid %d: Encode: %v", i, err)
			continue
		}
		if got, want := plainValue(t, out), plainValue(t, doc); !reflect.DeepEqual(got, want) {
			t.Errorf("valid %d: re-encoded value differs:\n got %s\nwant %s", i, out, doc)
		}
	}
	for i, doc := range invalid {
		var r contract.DecisionRecord
		err := contract.Decode(schemas.KindDecision, doc, &r)
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("invalid %d: Decode: got %v, want a *schemas.ValidationError", i, err)
		}
	}
}

// TestDecisionRecordMarshal: Go values marshal to schema-valid documents,
// nil Reasons as [].
func TestDecisionRecordMarshal(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	r := contract.DecisionRecord{
		DecisionID: "dec-" + strings.Repeat("0", 32), StepIndex: 1, ActionHash: hash,
		ActionName: "browser.wait", PolicyVersion: hash, PolicySource: "embedded",
		Allow: true, Result: contract.ResultAllowed, Risk: contract.RiskLow,
		EvaluatedAt: "2026-01-23T10:00:00.123456789Z",
	}
	b, err := contract.Encode(schemas.KindDecision, r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"reasons":[]`) {
		t.Errorf("nil reasons not written as []: %s", b)
	}
	denied := r
	denied.Allow, denied.Result = false, contract.ResultDenied
	denied.Reasons = []contract.Reason{{Rule: "fail_closed", Message: "no policy"}}
	denied.FailClosed, denied.Error = true, "no policy"
	denied.Exceptions = []contract.ExceptionUse{{Status: contract.ExceptionMalformed, Why: "it names no rule to waive"}}
	if _, err := contract.Encode(schemas.KindDecision, denied); err != nil {
		t.Errorf("fail-closed record: %v", err)
	}
	approved := r
	approved.Result, approved.RequiresApproval = contract.ResultApproved, true
	approved.Approval = &contract.ApprovalRef{ID: "apr-" + strings.Repeat("1", 32), Approver: "alice", ApprovedAt: r.EvaluatedAt, ExpiresAt: r.EvaluatedAt, ActionHash: hash}
	if _, err := contract.Encode(schemas.KindDecision, approved); err != nil {
		t.Errorf("approved record: %v", err)
	}
	contradiction := r
	contradiction.Reasons = denied.Reasons
	if _, err := contract.Encode(schemas.KindDecision, contradiction); err == nil {
		t.Error("an allow with deny reasons encoded")
	}
}

func TestElementValidate(t *testing.T) {
	ok := contract.Element{Tag: "input", Type: "password", Label: strings.Repeat("é", contract.MaxElementLabel)}
	if err := ok.Validate(); err != nil {
		t.Errorf("bounded element: %v", err)
	}
	for name, e := range map[string]contract.Element{
		"text":  {Text: strings.Repeat("x", contract.MaxElementText+1)},
		"tag":   {Tag: strings.Repeat("x", contract.MaxElementTag+1)},
		"name":  {Name: strings.Repeat("x", contract.MaxElementName+1)},
		"utf-8": {ID: "\xff"},
	} {
		if err := e.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}

// TestDecisionSchemaHouseRules holds decision-record.schema.json to the
// browser schemas' rules: every property and definition described, every
// object closed, every string and array bounded.
func TestDecisionSchemaHouseRules(t *testing.T) {
	b, err := fs.ReadFile(schemas.FS(), "decision-record.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	var walk func(ptr string, s map[string]any)
	walk = func(ptr string, s map[string]any) {
		if d, _ := s["description"].(string); strings.TrimSpace(d) == "" {
			t.Errorf("%s: no description", ptr)
		}
		if _, ok := s["properties"]; ok && s["additionalProperties"] != false {
			t.Errorf("%s: object schema is not closed", ptr)
		}
		if s["type"] == "string" && s["maxLength"] == nil && s["enum"] == nil {
			t.Errorf("%s: unbounded string", ptr)
		}
		if s["type"] == "array" && s["maxItems"] == nil {
			t.Errorf("%s: unbounded array", ptr)
		}
		for _, kw := range []string{"properties", "$defs"} {
			m, _ := s[kw].(map[string]any)
			for k, sub := range m {
				if sm, ok := sub.(map[string]any); ok {
					walk(ptr+"/"+kw+"/"+k, sm)
				}
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(ptr+"/items", items)
		}
	}
	walk("#", root)
}

// TestDecisionTargetBounds: the schema's element definition bounds each
// member as contract.Element's Validate does (the driver truncates to the
// same constants), so a target the gate accepts is one the record holds.
func TestDecisionTargetBounds(t *testing.T) {
	b, err := fs.ReadFile(schemas.FS(), "decision-record.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Defs struct {
			Element struct {
				Properties map[string]struct {
					MaxLength int `json:"maxLength"`
				} `json:"properties"`
			} `json:"element"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"tag": contract.MaxElementTag, "type": contract.MaxElementType, "name": contract.MaxElementName,
		"id": contract.MaxElementID, "autocomplete": contract.MaxElementAutocomplete, "role": contract.MaxElementRole,
		"label": contract.MaxElementLabel, "text": contract.MaxElementText,
		"sensitiveSelector": contract.MaxElementSensitiveSelector, "origin": contract.MaxElementOrigin,
	}
	got := map[string]int{}
	for name, p := range root.Defs.Element.Properties {
		got[name] = p.MaxLength
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("$defs/element maxLength %v, want the contract's bounds %v", got, want)
	}
	// Members are named as contract.Element's JSON tags name them.
	el := reflect.TypeOf(contract.Element{})
	for i := range el.NumField() {
		name, _, _ := strings.Cut(el.Field(i).Tag.Get("json"), ",")
		if _, ok := want[name]; !ok {
			t.Errorf("contract.Element field %s (json %q) is not in $defs/element", el.Field(i).Name, name)
		}
	}
}

// TestDecisionRecordTarget: a record with the element the gate judged
// encodes schema-valid and decodes to the same element; one without a
// target has no target member; an element the gate denies as out of
// bounds is not a valid record.
func TestDecisionRecordTarget(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	r := contract.DecisionRecord{
		DecisionID: "dec-" + strings.Repeat("0", 32), StepIndex: 1, ActionHash: hash,
		ActionName: "browser.type", PolicyVersion: hash, PolicySource: "embedded",
		Result: contract.ResultPaused, RequiresApproval: true, Risk: contract.RiskHigh,
		EvaluatedAt: "2026-01-23T10:00:00Z",
	}
	b, err := contract.Encode(schemas.KindDecision, r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"target"`) {
		t.Errorf("a record without a target encodes one: %s", b)
	}
	want := contract.Element{Tag: "input", Type: "password", ID: "pw", Role: "textbox", Label: strings.Repeat("é", contract.MaxElementLabel)}
	r.Target = &want
	if b, err = contract.Encode(schemas.KindDecision, r); err != nil {
		t.Fatal(err)
	}
	var got contract.DecisionRecord
	if err := contract.Decode(schemas.KindDecision, b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Target == nil || *got.Target != want {
		t.Errorf("decoded target %+v, want %+v", got.Target, want)
	}
	r.Target = &contract.Element{Tag: "p", Text: strings.Repeat("x", contract.MaxElementText+1)}
	if _, err := contract.Encode(schemas.KindDecision, r); err == nil {
		t.Error("a target past its bounds encoded")
	}
}
