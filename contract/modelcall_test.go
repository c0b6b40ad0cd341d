package contract_test

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

func newModelCall() any { return new(contract.ModelCall) }

// TestModelCallVectors: every valid model-call vector decodes into
// ModelCall and re-encodes to the same JSON value, schema-valid; every
// invalid one is refused by Decode.
func TestModelCallVectors(t *testing.T) {
	checkVectorsBothWays(t, schemas.KindModelCall, newModelCall)
}

func handModelCall() contract.ModelCall {
	return contract.ModelCall{
		SessionID: "cus_01HZX4K9", Step: 3, Purpose: contract.ModelPurposeNavigate, Model: "gpt-4o-2024-08-06",
		PromptHash: hex64(0x5d), PromptTokens: 1834, CompletionTokens: 212, TotalTokens: 2046,
		LatencyMs: 1873, Attempts: 1, Mode: contract.ModelOutputJSONSchema, Time: "2026-01-23T10:15:07.412Z",
	}
}

// TestModelCallGoValuesRoundTrip: Go values, by hand and drawn at random,
// encode to schema-valid documents that decode back to equal values.
func TestModelCallGoValuesRoundTrip(t *testing.T) {
	failed := handModelCall()
	failed.Purpose, failed.Step, failed.Attempts, failed.LatencyMs = contract.ModelPurposePlan, 0, 4, 30512.5
	failed.PromptTokens, failed.CompletionTokens, failed.TotalTokens = 0, 0, 0
	failed.Mode, failed.Error = contract.ModelOutputJSONObject, "llm: 503 Service Unavailable"
	cases := map[string]contract.ModelCall{"hand/ok": handModelCall(), "hand/failed": failed}
	g := newGen(4004)
	for i := range 200 {
		cases[fmt.Sprintf("random/%d", i)] = g.modelCall()
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkGoRoundTrip(t, schemas.KindModelCall, c, newModelCall) })
	}
}

// TestModelCallOmitsOnlyError: a successful call writes every member but
// error, in the order of the Go type.
func TestModelCallOmitsOnlyError(t *testing.T) {
	b, err := contract.Encode(schemas.KindModelCall, handModelCall())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sessionId":"cus_01HZX4K9","step":3,"purpose":"navigate","model":"gpt-4o-2024-08-06","promptHash":"` + hex64(0x5d) +
		`","promptTokens":1834,"completionTokens":212,"totalTokens":2046,"latencyMs":1873,"attempts":1,"mode":"json_schema","time":"2026-01-23T10:15:07.412Z"}`
	if got := string(b); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestModelCallBoundsMatchSchema ties the Go bounds and enumerations to
// the schema's.
func TestModelCallBoundsMatchSchema(t *testing.T) {
	b, err := fs.ReadFile(schemas.FS(), "model-call.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := schemas.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	props := v.(map[string]any)["properties"].(map[string]any)
	prop := func(name, kw string) string { return fmt.Sprint(props[name].(map[string]any)[kw]) }
	for _, c := range []struct{ got, want string }{
		{prop("purpose", "enum"), fmt.Sprint([]any{string(contract.ModelPurposePlan), string(contract.ModelPurposeNavigate)})},
		{prop("mode", "enum"), fmt.Sprint([]any{string(contract.ModelOutputJSONSchema), string(contract.ModelOutputJSONObject), string(contract.ModelOutputNone)})},
		{prop("error", "maxLength"), fmt.Sprint(contract.MaxModelCallError)},
		{prop("model", "maxLength"), fmt.Sprint(contract.MaxModelIDLen)},
		{prop("latencyMs", "maximum"), fmt.Sprint(contract.MaxModelLatencyMs)},
	} {
		if c.got != c.want {
			t.Errorf("schema says %s, Go says %s", c.got, c.want)
		}
	}
	// A record never carries the prompt or the answer.
	for _, f := range reflect.VisibleFields(reflect.TypeFor[contract.ModelCall]()) {
		if name := strings.ToLower(f.Name); strings.Contains(name, "content") || name == "prompt" || name == "answer" {
			t.Errorf("ModelCall has a field %s", f.Name)
		}
	}
}

func (g *gen) modelCall() contract.ModelCall {
	c := contract.ModelCall{
		SessionID: g.id(), Step: g.between(0, 2147483647),
		Purpose: oneOf(g, contract.ModelPurposePlan, contract.ModelPurposeNavigate),
		Model:   g.text(1, contract.MaxModelIDLen), PromptHash: g.hash(),
		PromptTokens: g.between(0, 1<<53-1), CompletionTokens: g.between(0, 200000), TotalTokens: g.between(0, 1<<53-1),
		LatencyMs: oneOf(g, 0, float64(g.between(0, contract.MaxModelLatencyMs)), float64(g.r.IntN(contract.MaxModelLatencyMs*1000))/1000),
		Attempts:  g.between(1, 2147483647),
		Mode:      oneOf(g, contract.ModelOutputJSONSchema, contract.ModelOutputJSONObject, contract.ModelOutputNone),
		Time:      g.timestamp(),
	}
	if g.chance(0.3) {
		c.Error = g.text(1, contract.MaxModelCallError)
	}
	return c
}
