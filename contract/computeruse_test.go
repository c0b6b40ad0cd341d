package contract_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// computerUseKinds maps the seed 003 kinds to a constructor of their Go
// type.
var computerUseKinds = map[schemas.Kind]func() any{
	schemas.KindInput:   func() any { return new(contract.Input) },
	schemas.KindOutput:  func() any { return new(contract.Output) },
	schemas.KindEvent:   func() any { return new(contract.StreamEvent) },
	schemas.KindControl: func() any { return new(contract.ControlRequest) },
}

func strp(s string) *string { return &s }

// checkVectorsBothWays proves that the Go type of kind and its schema agree
// on every vector: each valid document decodes (validated, strictly) into
// the Go type and marshals back to a schema-valid document with the same
// JSON value; each invalid one is refused by Decode with a
// *schemas.ValidationError.
func checkVectorsBothWays(t *testing.T, kind schemas.Kind, newValue func() any) {
	vf := loadVectors(t, kind)
	if len(vf.Valid) == 0 || len(vf.Invalid) == 0 {
		t.Fatalf("%s: %d valid and %d invalid vectors, want some of each", kind, len(vf.Valid), len(vf.Invalid))
	}
	for _, v := range vf.Valid {
		t.Run("valid/"+v.Name, func(t *testing.T) {
			val := newValue()
			if err := contract.Decode(kind, v.Doc, val); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			out, err := json.Marshal(val)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if err := schemas.Validate(kind, out); err != nil {
				t.Fatalf("re-encoded document is invalid: %v\n%s", err, out)
			}
			if got, want := jsonValue(t, out), jsonValue(t, v.Doc); !reflect.DeepEqual(got, want) {
				t.Errorf("re-encoded value differs:\n got %s\nwant %s", out, v.Doc)
			}
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
}

// checkGoRoundTrip proves the other direction for one Go value: it
// marshals to a schema-valid document that decodes back to an equal value.
func checkGoRoundTrip(t *testing.T, kind schemas.Kind, v any, newValue func() any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v\nvalue %+v", err, v)
	}
	if err := schemas.Validate(kind, b); err != nil {
		t.Fatalf("marshaled document is invalid: %v\n%s", err, b)
	}
	back := newValue()
	if err := contract.Decode(kind, b, back); err != nil {
		t.Fatalf("Decode: %v\n%s", err, b)
	}
	if got, want := reflect.ValueOf(back).Elem().Interface(), v; !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the value:\n got %#v\nwant %#v\njson %s", got, want, b)
	}
}

func TestComputerUseVectors(t *testing.T) {
	for _, kind := range []schemas.Kind{schemas.KindInput, schemas.KindOutput, schemas.KindEvent, schemas.KindControl} {
		t.Run(string(kind), func(t *testing.T) { checkVectorsBothWays(t, kind, computerUseKinds[kind]) })
	}
}

// TestComputerUseVectorsRefusedWithoutSchema checks the second line of
// defence: StreamEvent and ControlRequest's UnmarshalJSON alone (no schema)
// refuse every invalid vector that breaks the union's structure (a missing
// or foreign member, an unknown or missing tag, a wrong JSON type), so a
// caller that forgets Decode still cannot smuggle a member through.
func TestComputerUseVectorsRefusedWithoutSchema(t *testing.T) {
	for _, tt := range []struct {
		kind     schemas.Kind
		tag      string
		newValue func() any
	}{
		{schemas.KindEvent, "/type", computerUseKinds[schemas.KindEvent]},
		{schemas.KindControl, "/action", computerUseKinds[schemas.KindControl]},
	} {
		vf := loadVectors(t, tt.kind)
		n := 0
		for _, v := range vf.Invalid {
			k := v.Breaks.Keyword
			if k != "required" && k != "additionalProperties" && k != "type" && v.Breaks.Pointer != tt.tag {
				continue
			}
			n++
			val := tt.newValue()
			if err := json.Unmarshal(v.Doc, val); err == nil {
				t.Errorf("%s %q: json.Unmarshal accepted %s as %+v", tt.kind, v.Name, v.Doc, val)
			}
		}
		if n < 5 {
			t.Errorf("%s: only %d structural vectors, want at least 5", tt.kind, n)
		}
	}
}

// handEvents returns hand-written events: every type, with and without its
// optional fields.
func handEvents() []contract.StreamEvent {
	const ts = "2026-01-23T10:15:30.123Z"
	return []contract.StreamEvent{
		{Type: contract.EventSessionStarted, ComputerUseSessionID: "cus_1", Timestamp: ts},
		{Type: contract.EventAction, ActionID: "act-1", ActionType: contract.ActClick, RiskLevel: contract.RiskMedium, URL: strp("https://example.com/"), Summary: "Clicked Buy", Timestamp: ts},
		{Type: contract.EventAction, ActionID: "", ActionType: contract.ActExtract, RiskLevel: contract.RiskLow, Summary: "", Timestamp: ts},
		{Type: contract.EventScreenshot, URL: strp("artifacts/shot-1.png"), Width: intp(1280), Height: intp(800), Timestamp: ts},
		{Type: contract.EventScreenshot, URL: strp(""), Timestamp: ts},
		{Type: contract.EventApprovalRequired, ActionID: "act-2", ActionType: contract.ActType, Summary: "Type the e-mail", URL: strp(""), Timestamp: ts},
		{Type: contract.EventApprovalRequired, ActionID: "act-2", ActionType: contract.ActNavigate, Summary: "Open settings", Timestamp: ts},
		{Type: contract.EventApprovalResolved, ActionID: "act-2", Decision: contract.ApprovalApprove, Timestamp: ts},
		{Type: contract.EventApprovalResolved, ActionID: "act-3", Decision: contract.ApprovalDeny, Timestamp: ts},
		{Type: contract.EventSessionEnded, Status: contract.SessionFailed, Summary: "Gave up", Timestamp: ts},
		{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "", Timestamp: ts},
		{Type: contract.EventError, Code: "navigation_timeout", Message: "no response in 30 s", Timestamp: ts},
	}
}

func TestStreamEventMarshalWritesExactlyItsTypesFields(t *testing.T) {
	const ts = `"timestamp":"2026-01-23T10:15:30.123Z"`
	want := []string{
		`{"type":"session.started","computerUseSessionId":"cus_1",` + ts + `}`,
		`{"type":"action","actionId":"act-1","actionType":"click","riskLevel":"medium","url":"https://example.com/","summary":"Clicked Buy",` + ts + `}`,
		`{"type":"action","actionId":"","actionType":"extract","riskLevel":"low","summary":"",` + ts + `}`,
		`{"type":"screenshot","url":"artifacts/shot-1.png","width":1280,"height":800,` + ts + `}`,
		`{"type":"screenshot","url":"",` + ts + `}`,
		`{"type":"approval_required","actionId":"act-2","actionType":"type","summary":"Type the e-mail","url":"",` + ts + `}`,
		`{"type":"approval_required","actionId":"act-2","actionType":"navigate","summary":"Open settings",` + ts + `}`,
		`{"type":"approval_resolved","actionId":"act-2","decision":"approve",` + ts + `}`,
		`{"type":"approval_resolved","actionId":"act-3","decision":"deny",` + ts + `}`,
		`{"type":"session.ended","status":"failed","summary":"Gave up",` + ts + `}`,
		`{"type":"session.ended","status":"completed","summary":"",` + ts + `}`,
		`{"type":"error","code":"navigation_timeout","message":"no response in 30 s",` + ts + `}`,
	}
	events := handEvents()
	if len(events) != len(want) {
		t.Fatalf("%d events, %d expectations", len(events), len(want))
	}
	for i, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if got, want := string(b), want[i]; got != want {
			t.Errorf("%d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestStreamEventMarshalRefuses(t *testing.T) {
	const ts = "2026-01-23T10:15:30Z"
	tests := []struct {
		name string
		e    contract.StreamEvent
		want string
	}{
		{"unknown type", contract.StreamEvent{Type: "session.paused", Timestamp: ts}, `unknown type "session.paused"`},
		{"no type", contract.StreamEvent{Timestamp: ts}, `unknown type ""`},
		{"decision on an action", contract.StreamEvent{Type: contract.EventAction, ActionType: contract.ActClick, RiskLevel: contract.RiskLow, Decision: contract.ApprovalApprove, Timestamp: ts}, `field "decision" does not belong`},
		{"risk level on an approval request", contract.StreamEvent{Type: contract.EventApprovalRequired, ActionType: contract.ActClick, RiskLevel: contract.RiskHigh, Timestamp: ts}, `field "riskLevel" does not belong`},
		{"session id on an error", contract.StreamEvent{Type: contract.EventError, ComputerUseSessionID: "cus_1", Timestamp: ts}, `field "computerUseSessionId" does not belong`},
		{"width on an action", contract.StreamEvent{Type: contract.EventAction, Width: intp(1), Timestamp: ts}, `field "width" does not belong`},
		{"screenshot without url", contract.StreamEvent{Type: contract.EventScreenshot, Timestamp: ts}, `missing field "url"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := json.Marshal(tt.e)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestStreamEventUnmarshalStrict(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"not an object", `["session.started"]`, "want a JSON object"},
		{"missing type", `{"computerUseSessionId":"c","timestamp":"t"}`, `missing field "type"`},
		{"unknown type", `{"type":"paused","timestamp":"t"}`, `unknown type "paused"`},
		{"type is a number", `{"type":1,"timestamp":"t"}`, `field "type"`},
		{"duplicate key", `{"type":"error","code":"a","code":"b","message":"m","timestamp":"t"}`, `duplicate field "code"`},
		{"null member", `{"type":"error","code":null,"message":"m","timestamp":"t"}`, `field "code" is null`},
		{"foreign member", `{"type":"error","code":"a","message":"m","timestamp":"t","decision":"approve"}`, `field "decision" does not belong`},
		{"unknown member", `{"type":"error","code":"a","message":"m","timestamp":"t","x":1}`, `field "x" does not belong`},
		{"missing required", `{"type":"screenshot","timestamp":"t"}`, `missing field "url"`},
		{"wrong JSON type", `{"type":"screenshot","url":"u","width":"1","timestamp":"t"}`, `field "width"`},
		{"fractional integer", `{"type":"screenshot","url":"u","width":1.5,"timestamp":"t"}`, `field "width"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e contract.StreamEvent
			err := e.UnmarshalJSON([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// A successful decode replaces the whole value: no field of an
	// earlier event survives.
	e := contract.StreamEvent{Type: contract.EventAction, Decision: contract.ApprovalDeny, Width: intp(3)}
	if err := json.Unmarshal([]byte(`{"type":"error","code":"c","message":"m","timestamp":"t"}`), &e); err != nil {
		t.Fatal(err)
	}
	if got, want := e, (contract.StreamEvent{Type: contract.EventError, Code: "c", Message: "m", Timestamp: "t"}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestControlRequestMarshal(t *testing.T) {
	tests := []struct {
		name string
		c    contract.ControlRequest
		want string // "" = an error is wanted, containing wantErr
		err  string
	}{
		{"abort", contract.ControlRequest{Action: contract.ControlAbort, ComputerUseSessionID: "cus_1"}, `{"action":"abort","computerUseSessionId":"cus_1"}`, ""},
		{"abort with empty reason", contract.ControlRequest{Action: contract.ControlAbort, ComputerUseSessionID: "cus_1", Reason: strp("")}, `{"action":"abort","computerUseSessionId":"cus_1","reason":""}`, ""},
		{"decision", contract.ControlRequest{Action: contract.ControlDecision, ComputerUseSessionID: "cus_1", ActionID: "act-2", Decision: contract.ApprovalDeny}, `{"action":"decision","computerUseSessionId":"cus_1","actionId":"act-2","decision":"deny"}`, ""},
		{"decision with empty ids", contract.ControlRequest{Action: contract.ControlDecision, Decision: contract.ApprovalApprove}, `{"action":"decision","computerUseSessionId":"","actionId":"","decision":"approve"}`, ""},
		{"reason on a decision", contract.ControlRequest{Action: contract.ControlDecision, Reason: strp("x"), Decision: contract.ApprovalApprove}, "", `field "reason" does not belong`},
		{"decision on an abort", contract.ControlRequest{Action: contract.ControlAbort, Decision: contract.ApprovalApprove}, "", `field "decision" does not belong`},
		{"unknown action", contract.ControlRequest{Action: "pause"}, "", `unknown action "pause"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.c)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %s, %v, want an error containing %q", b, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(b), tt.want; got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func TestControlRequestUnmarshalStrict(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"missing action", `{"computerUseSessionId":"c"}`, `missing field "action"`},
		{"unknown action", `{"action":"pause","computerUseSessionId":"c"}`, `unknown action "pause"`},
		{"foreign member", `{"action":"abort","computerUseSessionId":"c","actionId":"a"}`, `field "actionId" does not belong`},
		{"missing decision", `{"action":"decision","computerUseSessionId":"c","actionId":"a"}`, `missing field "decision"`},
		{"null reason", `{"action":"abort","computerUseSessionId":"c","reason":null}`, `field "reason" is null`},
		{"trailing data", `{"action":"abort","computerUseSessionId":"c"} {}`, "data after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c contract.ControlRequest
			err := c.UnmarshalJSON([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestOutputExtraMembers(t *testing.T) {
	o := contract.Output{
		ComputerUseSessionID: "cus_1", Status: contract.SessionCompleted, Summary: "done", ActionsExecuted: 2, DurationMs: 10,
		Extra: map[string]json.RawMessage{"zeta": json.RawMessage(`null`), "alpha": json.RawMessage(`{"a": [1, 2]}`)},
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"computerUseSessionId":"cus_1","status":"completed","summary":"done","actionsExecuted":2,"durationMs":10,"alpha":{"a":[1,2]},"zeta":null}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}

	o.Extra = map[string]json.RawMessage{"summary": json.RawMessage(`"shadow"`)}
	if _, err := json.Marshal(o); err == nil || !strings.Contains(err.Error(), "shadows") {
		t.Errorf("shadowing extra member: got %v, want an error", err)
	}
	o.Extra = map[string]json.RawMessage{"x": json.RawMessage(`{`)}
	if _, err := json.Marshal(o); err == nil {
		t.Error("extra member that is not JSON: got no error")
	}

	for _, tt := range []struct{ name, doc, want string }{
		{"null listed member", `{"computerUseSessionId":"c","status":"completed","summary":null,"actionsExecuted":0,"durationMs":0}`, `field "summary" is null`},
		{"missing required", `{"computerUseSessionId":"c","status":"completed","actionsExecuted":0,"durationMs":0}`, `missing field "summary"`},
		{"duplicate extra", `{"computerUseSessionId":"c","status":"completed","summary":"","actionsExecuted":0,"durationMs":0,"x":1,"x":2}`, `duplicate field "x"`},
	} {
		var out contract.Output
		if err := json.Unmarshal([]byte(tt.doc), &out); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestComputerUseGoValuesRoundTrip proves the Go-to-schema direction:
// hand-written values (every event type, both control actions) and values
// drawn at random marshal to schema-valid documents that decode back to
// equal values.
func TestComputerUseGoValuesRoundTrip(t *testing.T) {
	type tc struct {
		kind schemas.Kind
		name string
		v    any
	}
	var cases []tc
	for i, e := range handEvents() {
		cases = append(cases, tc{schemas.KindEvent, fmt.Sprintf("hand/event/%d-%s", i, e.Type), e})
	}
	seen := map[contract.EventType]bool{}
	for _, e := range handEvents() {
		seen[e.Type] = true
	}
	for _, typ := range contract.EventTypes() {
		if !seen[typ] {
			t.Errorf("no hand-written %s event", typ)
		}
	}
	cases = append(cases,
		tc{schemas.KindControl, "hand/abort", contract.ControlRequest{Action: contract.ControlAbort, ComputerUseSessionID: "cus_1", Reason: strp("closed")}},
		tc{schemas.KindControl, "hand/decision", contract.ControlRequest{Action: contract.ControlDecision, ComputerUseSessionID: "cus_1", ActionID: "act-2", Decision: contract.ApprovalApprove}},
		tc{schemas.KindInput, "hand/input", contract.Input{Goal: "Find the price", URLs: []string{"https://example.com/pricing"}, MaxActions: intp(20), MaxDurationMs: intp(60000), Hints: json.RawMessage(`{"steps":["open the pricing page"]}`)}},
		tc{schemas.KindInput, "hand/minimal input", contract.Input{Goal: "g", URLs: []string{"about:blank"}}},
		tc{schemas.KindOutput, "hand/output", contract.Output{ComputerUseSessionID: "cus_1", Status: contract.SessionActionLimitExceeded, Summary: "", LastURL: strp(""), ActionsExecuted: 200, DurationMs: 1, Evidence: json.RawMessage(`{}`)}},
	)
	g := newGen(3003)
	for i := range 150 {
		cases = append(cases,
			tc{schemas.KindInput, fmt.Sprintf("random/input/%d", i), g.cuInput()},
			tc{schemas.KindOutput, fmt.Sprintf("random/output/%d", i), g.cuOutput()},
			tc{schemas.KindEvent, fmt.Sprintf("random/event/%d", i), g.cuEvent()},
			tc{schemas.KindControl, fmt.Sprintf("random/control/%d", i), g.cuControl()},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGoRoundTrip(t, c.kind, c.v, computerUseKinds[c.kind]) })
	}
}

// TestComputerUseEnumsMatchSchema ties the Go constants to the schemas'
// enumerations.
func TestComputerUseEnumsMatchSchema(t *testing.T) {
	strs := func(xs ...any) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = fmt.Sprint(x)
		}
		return out
	}
	var events []any
	for _, e := range contract.EventTypes() {
		events = append(events, e)
	}
	outputStatuses := strs(contract.SessionCompleted, contract.SessionAborted, contract.SessionDurationExceeded, contract.SessionActionLimitExceeded)
	tests := []struct {
		file string
		path []string
		want []string
	}{
		{"computer-use.schema.json", []string{"$defs", "ComputerUseStreamEvent", "properties", "type"}, strs(events...)},
		{"computer-use.schema.json", []string{"$defs", "ComputerUseControlRequest", "properties", "action"}, strs(contract.ControlAbort, contract.ControlDecision)},
		{"computer-use.schema.json", []string{"$defs", "ApprovalDecision"}, strs(contract.ApprovalApprove, contract.ApprovalDeny)},
		{"computer-use.schema.json", []string{"$defs", "ComputerUseOutput", "properties", "status"}, outputStatuses},
		{"computer-use.schema.json", []string{"$defs", "SessionEndedEvent", "properties", "status"}, append(outputStatuses, string(contract.SessionFailed))},
		{"evidence-manifest.schema.json", []string{"properties", "status"}, append(outputStatuses, string(contract.SessionFailed), string(contract.SessionRunning))},
		{"evidence-manifest.schema.json", []string{"properties", "driver"}, strs(contract.ModeExtension, contract.ModePlaywright, contract.ModeSandbox)},
		{"governance.schema.json", []string{"definitions", "ComputerUseActionType"}, strs(actionTypesAny()...)},
		{"ledger-entry.schema.json", []string{"properties", "kind"}, strs(ledgerKindsAny()...)},
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
}

func actionTypesAny() []any {
	var out []any
	for _, a := range contract.ActionTypes() {
		out = append(out, a)
	}
	return out
}

// The generators below extend gen (gen_test.go) with the seed 003 shapes;
// every value they draw is valid under the schema.

// rawObject draws a small JSON object in canonical form (RFC 8785), the
// form Decode leaves in a RawMessage, so that it survives a round trip
// unchanged.
func (g *gen) rawObject() json.RawMessage {
	m := map[string]any{}
	for range g.between(0, 4) {
		var v any
		switch g.r.IntN(6) {
		case 0:
			v = nil
		case 1:
			v = g.chance(0.5)
		case 2:
			v = g.r.Int64()
		case 3:
			v = []string{g.text(0, 40), g.text(0, 40)}
		case 4:
			v = map[string]any{"n": g.r.Float64(), "s": g.text(0, 20)}
		default:
			v = g.text(0, 200)
		}
		m[g.text(0, 12)] = v
	}
	if g.chance(0.3) {
		steps := []string{}
		for range g.between(0, 5) {
			steps = append(steps, g.text(1, 100))
		}
		m["steps"] = steps
	}
	b, err := canonjson.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *gen) cuInput() contract.Input {
	in := contract.Input{Goal: g.text(1, 1000), MaxActions: g.optInt(1, 200), MaxDurationMs: g.optInt(1000, 1800000)}
	for range g.length(1, 16) {
		in.URLs = append(in.URLs, g.url())
	}
	if g.chance(0.5) {
		in.Hints = g.rawObject()
	}
	return in
}

func (g *gen) optString(s func() string) *string {
	if g.chance(0.4) {
		return nil
	}
	v := s()
	return &v
}

// outputMembers are the members ComputerUseOutput names; Extra holds the
// others.
var outputMembers = map[string]bool{
	"computerUseSessionId": true, "status": true, "summary": true, "lastUrl": true,
	"actionsExecuted": true, "durationMs": true, "evidence": true,
}

func (g *gen) cuOutput() contract.Output {
	o := contract.Output{
		ComputerUseSessionID: g.text(1, 80),
		Status:               oneOf(g, contract.SessionCompleted, contract.SessionAborted, contract.SessionDurationExceeded, contract.SessionActionLimitExceeded),
		Summary:              g.text(0, 2000),
		LastURL:              g.optString(func() string { return oneOf(g, g.url(), g.text(0, 30)) }),
		ActionsExecuted:      g.between(0, 1<<30),
		DurationMs:           g.between(0, 1<<40),
	}
	if g.chance(0.5) {
		o.Evidence = g.rawObject()
	}
	if g.chance(0.4) {
		o.Extra = map[string]json.RawMessage{}
		for range g.between(1, 4) {
			name := oneOf(g, g.text(0, 16), "model", "traceId", "summary ", "Status")
			if outputMembers[name] {
				continue
			}
			o.Extra[name] = oneOf(g, json.RawMessage(`null`), json.RawMessage(`[1,"two",{"3":false}]`), g.rawObject())
		}
		if len(o.Extra) == 0 {
			o.Extra = nil
		}
	}
	return o
}

func (g *gen) cuEvent() contract.StreamEvent {
	e := contract.StreamEvent{Type: oneOf(g, contract.EventTypes()...), Timestamp: g.timestamp()}
	switch e.Type {
	case contract.EventSessionStarted:
		e.ComputerUseSessionID = g.text(0, 80)
	case contract.EventAction:
		e.ActionID, e.ActionType, e.RiskLevel = g.text(0, 40), oneOf(g, contract.ActionTypes()...), oneOf(g, contract.RiskLow, contract.RiskMedium, contract.RiskHigh)
		e.URL, e.Summary = g.optString(g.url), g.text(0, 500)
	case contract.EventScreenshot:
		e.URL = strp(oneOf(g, g.url(), "artifacts/"+g.id()+".png", ""))
		e.Width, e.Height = g.optInt(1, 1<<20), g.optInt(1, 1<<20)
	case contract.EventApprovalRequired:
		e.ActionID, e.ActionType, e.Summary = g.text(0, 40), oneOf(g, contract.ActionTypes()...), g.text(0, 500)
		e.URL = g.optString(func() string { return g.text(0, 60) })
	case contract.EventApprovalResolved:
		e.ActionID, e.Decision = g.text(0, 40), oneOf(g, contract.ApprovalApprove, contract.ApprovalDeny)
	case contract.EventSessionEnded:
		e.Status = oneOf(g, contract.SessionCompleted, contract.SessionAborted, contract.SessionDurationExceeded, contract.SessionActionLimitExceeded, contract.SessionFailed)
		e.Summary = g.text(0, 2000)
	case contract.EventError:
		e.Code, e.Message = g.text(0, 40), g.text(0, 500)
	}
	return e
}

func (g *gen) cuControl() contract.ControlRequest {
	if g.chance(0.5) {
		return contract.ControlRequest{Action: contract.ControlAbort, ComputerUseSessionID: g.text(0, 80), Reason: g.optString(func() string { return g.text(0, 200) })}
	}
	return contract.ControlRequest{
		Action: contract.ControlDecision, ComputerUseSessionID: g.text(0, 80), ActionID: g.text(0, 40),
		Decision: oneOf(g, contract.ApprovalApprove, contract.ApprovalDeny),
	}
}
