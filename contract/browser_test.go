package contract_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

func TestActionMarshalWritesExactlyItsTypesFields(t *testing.T) {
	base := contract.Action{ID: "a1", Reason: "r", PolicyTags: nil}
	with := func(f func(a *contract.Action)) contract.Action {
		a := base
		f(&a)
		return a
	}
	tests := []struct {
		name string
		a    contract.Action
		want string
	}{
		{"navigate", with(func(a *contract.Action) { a.Type, a.URL = contract.ActNavigate, "https://x.example/" }),
			`{"id":"a1","type":"navigate","reason":"r","policyTags":[],"url":"https://x.example/"}`},
		{"click without timeout", with(func(a *contract.Action) { a.Type, a.Selector = contract.ActClick, "#b" }),
			`{"id":"a1","type":"click","reason":"r","policyTags":[],"selector":"#b"}`},
		{"click with timeout", with(func(a *contract.Action) { a.Type, a.Selector, a.TimeoutMs = contract.ActClick, "#b", 500 }),
			`{"id":"a1","type":"click","reason":"r","policyTags":[],"selector":"#b","timeoutMs":500}`},
		{"type writes redact false and empty text", with(func(a *contract.Action) { a.Type, a.Selector = contract.ActType, "#e" }),
			`{"id":"a1","type":"type","reason":"r","policyTags":[],"selector":"#e","text":"","redact":false}`},
		{"type with redact", with(func(a *contract.Action) { a.Type, a.Selector, a.Text, a.Redact = contract.ActType, "#p", "pw", true }),
			`{"id":"a1","type":"type","reason":"r","policyTags":[],"selector":"#p","text":"pw","redact":true}`},
		{"select writes an empty value", with(func(a *contract.Action) { a.Type, a.Selector = contract.ActSelect, "select" }),
			`{"id":"a1","type":"select","reason":"r","policyTags":[],"selector":"select","value":""}`},
		{"scroll", with(func(a *contract.Action) { a.Type, a.Direction, a.AmountPx = contract.ActScroll, contract.ScrollUp, 10 }),
			`{"id":"a1","type":"scroll","reason":"r","policyTags":[],"direction":"up","amountPx":10}`},
		{"wait", with(func(a *contract.Action) { a.Type, a.DurationMs = contract.ActWait, 100 }),
			`{"id":"a1","type":"wait","reason":"r","policyTags":[],"durationMs":100}`},
		{"extract of the whole page", with(func(a *contract.Action) { a.Type, a.Extract = contract.ActExtract, contract.ExtractScreenshot }),
			`{"id":"a1","type":"extract","reason":"r","policyTags":[],"extract":"screenshot"}`},
		{"extract with selector and tags", with(func(a *contract.Action) {
			a.Type, a.Extract, a.Selector, a.PolicyTags = contract.ActExtract, contract.ExtractTable, "#t", []string{"x", "y"}
		}), `{"id":"a1","type":"extract","reason":"r","policyTags":["x","y"],"selector":"#t","extract":"table"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(b), tt.want; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if err := schemas.Validate(schemas.KindAction, b); err != nil {
				t.Errorf("not schema-valid: %v", err)
			}
		})
	}
}

func TestActionMarshalRefuses(t *testing.T) {
	tests := []struct {
		name string
		a    contract.Action
		want string
	}{
		{"unknown type", contract.Action{ID: "a1", Type: "hover"}, `unknown type "hover"`},
		{"empty type", contract.Action{ID: "a1"}, `unknown type ""`},
		{"click with a url", contract.Action{ID: "a1", Type: contract.ActClick, Selector: "#b", URL: "https://x.example/"}, `field "url" does not belong to a click action`},
		{"navigate with redact", contract.Action{ID: "a1", Type: contract.ActNavigate, URL: "https://x.example/", Redact: true}, `field "redact" does not belong to a navigate action`},
		{"wait with a selector", contract.Action{ID: "a1", Type: contract.ActWait, DurationMs: 1, Selector: "body"}, `field "selector" does not belong to a wait action`},
		{"type with a timeout", contract.Action{ID: "a1", Type: contract.ActType, Selector: "#e", TimeoutMs: 5}, `field "timeoutMs" does not belong to a type action`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.a)
			if err == nil {
				t.Fatalf("got %s, want an error", b)
			}
			if got, want := err.Error(), tt.want; !strings.Contains(got, want) {
				t.Errorf("got %q, want it to contain %q", got, want)
			}
		})
	}
}

func TestActionUnmarshalStrict(t *testing.T) {
	const click = `"id":"a1","type":"click","reason":"r","policyTags":[]`
	tests := []struct {
		name string
		doc  string
		want string // "" = accepted
	}{
		{"click", `{` + click + `,"selector":"#b"}`, ""},
		{"keys in any order", `{"selector":"#b","policyTags":["t"],"reason":"r","type":"click","id":"a1"}`, ""},
		{"not an object", `["click"]`, "want a JSON object"},
		{"string", `"click"`, "want a JSON object"},
		{"missing type", `{"id":"a1","reason":"r","policyTags":[],"selector":"#b"}`, `missing field "type"`},
		{"type not a string", `{"id":"a1","type":7,"reason":"r","policyTags":[]}`, `field "type"`},
		{"unknown type", `{"id":"a1","type":"eval","reason":"r","policyTags":[],"script":"x"}`, `unknown type "eval"`},
		{"field of another type", `{` + click + `,"selector":"#b","url":"https://x.example/"}`, `field "url" does not belong to a click action`},
		{"unknown field", `{` + click + `,"selector":"#b","force":true}`, `field "force" does not belong to a click action`},
		{"missing selector", `{` + click + `}`, `missing field "selector"`},
		{"missing reason", `{"id":"a1","type":"wait","policyTags":[],"durationMs":1}`, `missing field "reason"`},
		{"type missing redact", `{"id":"a1","type":"type","reason":"r","policyTags":[],"selector":"#e","text":"x"}`, `missing field "redact"`},
		{"duplicate key", `{` + click + `,"selector":"#b","selector":"#evil"}`, `duplicate field "selector"`},
		{"duplicate type", `{` + click + `,"selector":"#b","type":"navigate"}`, `duplicate field "type"`},
		{"null optional field", `{` + click + `,"selector":"#b","timeoutMs":null}`, `field "timeoutMs" is null`},
		{"null policyTags", `{"id":"a1","type":"click","reason":"r","policyTags":null,"selector":"#b"}`, `field "policyTags" is null`},
		{"wrong JSON type", `{"id":"a1","type":"type","reason":"r","policyTags":[],"selector":"#e","text":"x","redact":"no"}`, `field "redact"`},
		{"fractional integer", `{"id":"a1","type":"wait","reason":"r","policyTags":[],"durationMs":1.5}`, `field "durationMs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a contract.Action
			err := json.Unmarshal([]byte(tt.doc), &a)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted as %+v, want an error containing %q", a, tt.want)
			}
			if got, want := err.Error(), tt.want; !strings.Contains(got, want) {
				t.Errorf("got %q, want it to contain %q", got, want)
			}
		})
	}
}

func TestActionUnmarshalResets(t *testing.T) {
	a := contract.Action{ID: "old", Type: contract.ActNavigate, URL: "https://old.example/", Redact: true}
	if err := json.Unmarshal([]byte(`{"id":"a1","type":"wait","reason":"r","policyTags":[],"durationMs":5}`), &a); err != nil {
		t.Fatal(err)
	}
	want := contract.Action{ID: "a1", Type: contract.ActWait, Reason: "r", PolicyTags: []string{}, DurationMs: 5}
	if got := a; fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestPolicyName(t *testing.T) {
	for _, typ := range contract.ActionTypes() {
		got, want := contract.Action{Type: typ}.PolicyName(), "browser."+string(typ)
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		if !typ.Valid() {
			t.Errorf("%q.Valid() = false", typ)
		}
	}
	if got, want := len(contract.ActionTypes()), 7; got != want {
		t.Errorf("len(ActionTypes()) = %d, want %d", got, want)
	}
	if contract.ActionType("hover").Valid() {
		t.Error(`"hover".Valid() = true`)
	}
}

// TestEnumsMatchSchema checks that the Go constants of each enumeration
// are exactly the schema's enum, in the schema's order, and that every
// action type's policy name matches the tool-result pattern.
func TestEnumsMatchSchema(t *testing.T) {
	strs := func(xs ...any) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = fmt.Sprint(x)
		}
		return out
	}
	var types []any
	for _, typ := range contract.ActionTypes() {
		types = append(types, typ)
	}
	tests := []struct {
		file string
		path []string
		want []string
	}{
		{"browser-action.schema.json", []string{"$defs", "actionType"}, strs(types...)},
		{"browser-action.schema.json", []string{"$defs", "scroll", "properties", "direction"}, strs(contract.ScrollUp, contract.ScrollDown)},
		{"browser-action.schema.json", []string{"$defs", "extract", "properties", "extract"},
			strs(contract.ExtractText, contract.ExtractTable, contract.ExtractLink, contract.ExtractScreenshot)},
		{"browser-state.schema.json", []string{"properties", "mode"}, strs(contract.ModeExtension, contract.ModePlaywright, contract.ModeSandbox)},
		{"browser-state.schema.json", []string{"properties", "policyContext", "properties", "classification"},
			strs(contract.ClassPublic, contract.ClassRestricted, contract.ClassSensitive)},
		{"browser-observation.schema.json", []string{"$defs", "affordance", "properties", "actionHint"},
			strs(contract.HintClick, contract.HintType, contract.HintSelect, contract.HintScroll)},
		{"browser-observation.schema.json", []string{"$defs", "artifact", "properties", "type"},
			strs(contract.ArtifactTable, contract.ArtifactText, contract.ArtifactLink, contract.ArtifactScreenshot)},
		{"navigator-response.schema.json", []string{"properties", "status"}, strs(contract.StatusContinue, contract.StatusDone, contract.StatusFailed)},
		{"governance.schema.json", []string{"definitions", "ComputerUseActionRiskLevel"}, strs(contract.RiskLow, contract.RiskMedium, contract.RiskHigh)},
		{"tool-result.schema.json", []string{"properties", "error", "properties", "code"},
			strs(contract.CodeElementNotFound, contract.CodeAmbiguousSelector, contract.CodeNotInteractable, contract.CodeTimeout,
				contract.CodeNavigationBlocked, contract.CodePageClosed, contract.CodeUnsupported, contract.CodeInternal, contract.CodeTargetChanged)},
		{"image-artifact.schema.json", []string{"properties", "mimeType"}, strs(contract.MIMEPNG, contract.MIMEJPEG, contract.MIMEWebP)},
	}
	for _, tt := range tests {
		t.Run(tt.file+"#/"+strings.Join(tt.path, "/"), func(t *testing.T) {
			b, err := fs.ReadFile(schemas.FS(), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			v, err := schemas.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tt.path {
				v = v.(map[string]any)[p]
			}
			enum, _ := v.(map[string]any)["enum"].([]any)
			if got, want := strs(enum...), tt.want; !reflect.DeepEqual(got, want) {
				t.Errorf("got schema enum %q, want Go constants %q", got, want)
			}
		})
	}
	for _, typ := range contract.ActionTypes() {
		tr := handToolResult()
		tr.Action = contract.Action{Type: typ}.PolicyName()
		if _, err := contract.Encode(schemas.KindToolResult, tr); err != nil {
			t.Errorf("tool result for %s: %v", typ, err)
		}
	}
	seen := map[contract.ActionType]bool{}
	for _, a := range handActions() {
		seen[a.Type] = true
	}
	if got, want := len(seen), len(contract.ActionTypes()); got != want {
		t.Errorf("hand-written actions cover %d types, want %d", got, want)
	}
}

func TestValidateBatch(t *testing.T) {
	acts := func(ids ...string) []contract.Action {
		out := make([]contract.Action, len(ids))
		for i, id := range ids {
			out[i] = contract.Action{ID: id, Type: contract.ActWait, Reason: "r", DurationMs: 1}
		}
		return out
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = fmt.Sprintf("a%d", i)
	}
	tests := []struct {
		name    string
		batch   []contract.Action
		want    string // "" = valid
		wantDup bool
	}{
		{"one", acts("a1"), "", false},
		{"ten", acts(eleven[:10]...), "", false},
		{"empty", nil, "empty action batch", false},
		{"eleven", acts(eleven...), "batch of 11 actions (at most 10)", false},
		{"duplicate ids", acts("a1", "a2", "a1"), `duplicate action id in batch: "a1" at indexes 0 and 2`, true},
		{"ids differing in case are distinct", acts("a1", "A1"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := contract.ValidateBatch(tt.batch)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil, want %q", tt.want)
			}
			if got, want := err.Error(), tt.want; !strings.Contains(got, want) {
				t.Errorf("got %q, want it to contain %q", got, want)
			}
			if got, want := errors.Is(err, contract.ErrDuplicateActionID), tt.wantDup; got != want {
				t.Errorf("errors.Is(ErrDuplicateActionID) = %v, want %v", got, want)
			}
		})
	}
}

// TestBatchDuplicatesPassSchemaButNotGo documents the split: a batch with
// a repeated id is schema-valid, and ValidateBatch refuses it.
func TestBatchDuplicatesPassSchemaButNotGo(t *testing.T) {
	doc := []byte(`{"actions":[{"id":"a1","type":"wait","reason":"r","policyTags":[],"durationMs":1},{"id":"a1","type":"wait","reason":"r","policyTags":[],"durationMs":2}],"status":"continue","summary":""}`)
	var r contract.NavigatorResponse
	if err := contract.Decode(schemas.KindNavigatorResponse, doc, &r); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if err := contract.ValidateBatch(r.Actions); !errors.Is(err, contract.ErrDuplicateActionID) {
		t.Errorf("ValidateBatch: got %v, want ErrDuplicateActionID", err)
	}
}

func TestObservationNilAffordances(t *testing.T) {
	o := contract.Observation{State: handState()}
	b, err := contract.Encode(schemas.KindObservation, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"affordances":[]`) || strings.Contains(string(b), "extractedArtifacts") {
		t.Errorf("got %s, want affordances [] and no extractedArtifacts", b)
	}
}

func TestDecodeRefusesBeforeGoSeesIt(t *testing.T) {
	tests := []struct {
		name string
		kind schemas.Kind
		doc  string
		into any
	}{
		{"duplicate key in a nested action", schemas.KindActions, `[{"id":"a1","type":"wait","reason":"r","policyTags":[],"durationMs":1,"durationMs":60001}]`, new([]contract.Action)},
		{"trailing data", schemas.KindPlan, `{"goal":"g","steps":[{"id":"s","description":"d","successCriteria":"c"}]} {}`, new(contract.Plan)},
		{"relative navigate URL", schemas.KindAction, `{"id":"a1","type":"navigate","reason":"r","policyTags":[],"url":"//evil.example/"}`, new(contract.Action)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := contract.Decode(tt.kind, []byte(tt.doc), tt.into); err == nil {
				t.Errorf("accepted %s", tt.doc)
			}
		})
	}
}

// TestActionUnmarshalTrailingData calls UnmarshalJSON directly (encoding/json
// would refuse the bytes before): data after the object is refused, whether
// it tokenizes or not.
func TestActionUnmarshalTrailingData(t *testing.T) {
	const click = `{"id":"a1","type":"click","reason":"r","policyTags":[],"selector":"#b"}`
	for _, tail := range []string{"", " {}", "x", " ]"} {
		var a contract.Action
		err := a.UnmarshalJSON([]byte(click + tail))
		if got, want := err != nil, tail != ""; got != want {
			t.Errorf("UnmarshalJSON(click+%q) error = %v, want error: %v", tail, err, want)
		}
	}
}

// TestNeedsTarget: the actions that work on one element of the page.
func TestNeedsTarget(t *testing.T) {
	tests := []struct {
		a    contract.Action
		want bool
	}{
		{contract.Action{Type: contract.ActClick, Selector: "#b"}, true},
		{contract.Action{Type: contract.ActType, Selector: "#t"}, true},
		{contract.Action{Type: contract.ActSelect, Selector: "#s"}, true},
		{contract.Action{Type: contract.ActExtract, Selector: "#orders"}, true},
		{contract.Action{Type: contract.ActExtract}, false},
		{contract.Action{Type: contract.ActNavigate, URL: "http://shop.test/"}, false},
		{contract.Action{Type: contract.ActScroll}, false},
		{contract.Action{Type: contract.ActWait}, false},
	}
	for _, tt := range tests {
		if got := tt.a.NeedsTarget(); got != tt.want {
			t.Errorf("%s (selector %q): NeedsTarget() = %v, want %v", tt.a.Type, tt.a.Selector, got, tt.want)
		}
	}
}
