package llm_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/schemas"
)

// validModelCall fails unless mc encodes to a schema-valid model-call
// record.
func validModelCall(t *testing.T, mc contract.ModelCall) {
	t.Helper()
	if _, err := contract.Encode(schemas.KindModelCall, mc); err != nil {
		t.Errorf("record is invalid: %v\n%+v", err, mc)
	}
}

func TestCallRecordModelCall(t *testing.T) {
	at := time.Date(2026, 1, 23, 11, 15, 7, 412000000, time.FixedZone("", 3600))
	rec := llm.CallRecord{
		Purpose: llm.PurposeNavigate, Model: "gpt-4o-2024-08-06", PromptHash: llm.PromptHash([]llm.Message{{Role: llm.RoleUser, Content: "hi"}}),
		PromptTokens: 1834, CompletionTokens: 212, TotalTokens: 2046, LatencyMs: 1873, Attempts: 2, Mode: llm.StructuredJSONObject,
	}
	got := rec.ModelCall("cus_01HZX4K9", 3, at)
	want := contract.ModelCall{
		SessionID: "cus_01HZX4K9", Step: 3, Purpose: contract.ModelPurposeNavigate, Model: "gpt-4o-2024-08-06", PromptHash: rec.PromptHash,
		PromptTokens: 1834, CompletionTokens: 212, TotalTokens: 2046, LatencyMs: 1873, Attempts: 2,
		Mode: contract.ModelOutputJSONObject, Time: "2026-01-23T10:15:07.412Z",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	validModelCall(t, got)
	// The purposes and modes map onto the contract's.
	for p, want := range map[llm.Purpose]contract.ModelPurpose{llm.PurposePlan: contract.ModelPurposePlan, llm.PurposeNavigate: contract.ModelPurposeNavigate} {
		r := rec
		r.Purpose = p
		if got := r.ModelCall("s", 0, at).Purpose; got != want {
			t.Errorf("purpose %s: got %s", p, got)
		}
	}
	for m, want := range map[llm.StructuredOutput]contract.ModelOutputMode{
		llm.StructuredJSONSchema: contract.ModelOutputJSONSchema, llm.StructuredJSONObject: contract.ModelOutputJSONObject, "": contract.ModelOutputNone,
	} {
		r := rec
		r.Mode = m
		if got := r.ModelCall("s", 0, at); got.Mode != want {
			t.Errorf("mode %q: got %s", m, got.Mode)
		} else {
			validModelCall(t, got)
		}
	}
}

// TestModelCallBounded: whatever a hostile endpoint reports, the record
// stays within the schema.
func TestModelCallBounded(t *testing.T) {
	rec := llm.CallRecord{
		Purpose: llm.PurposePlan, Model: strings.Repeat("m", 300) + "\xff", PromptHash: llm.PromptHash(nil),
		PromptTokens: -5, CompletionTokens: -1, TotalTokens: 1 << 60, LatencyMs: 1 << 40, Attempts: 0,
		Error: strings.Repeat("é", 3000) + "\xfe",
	}
	mc := rec.ModelCall("cus_1", 0, time.Time{})
	validModelCall(t, mc)
	switch {
	case mc.PromptTokens != 0 || mc.CompletionTokens != 0 || mc.TotalTokens != 1<<53-1:
		t.Errorf("tokens %d %d %d", mc.PromptTokens, mc.CompletionTokens, mc.TotalTokens)
	case mc.LatencyMs != contract.MaxModelLatencyMs:
		t.Errorf("latency %v", mc.LatencyMs)
	case mc.Attempts != 1:
		t.Errorf("attempts %d", mc.Attempts)
	case utf8.RuneCountInString(mc.Model) != contract.MaxModelIDLen || !strings.HasSuffix(mc.Model, "…"):
		t.Errorf("model %q", mc.Model)
	case utf8.RuneCountInString(mc.Error) != contract.MaxModelCallError || !utf8.ValidString(mc.Error):
		t.Errorf("error of %d characters", utf8.RuneCountInString(mc.Error))
	}
}

// TestModelCallOfRealCalls: the records of a call that succeeded and of
// one that failed before sending anything are valid, and hold neither the
// prompt nor the answer.
func TestModelCallOfRealCalls(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(validPlan))
	c, _ := newClient(t, srv)
	req := planRequest(t)
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	mc := resp.Record(nil).ModelCall("cus_1", 0, time.Now())
	validModelCall(t, mc)
	if mc.PromptHash != resp.PromptHash || mc.Attempts != 1 || mc.Mode != contract.ModelOutputJSONSchema {
		t.Errorf("record %+v of response %+v", mc, resp)
	}
	b, _ := json.Marshal(mc)
	for _, s := range []string{"sign in", "You plan.", validPlan} {
		if strings.Contains(string(b), s) {
			t.Errorf("the record holds %q: %s", s, b)
		}
	}
	// An empty request fails before any attempt.
	resp, err = c.Complete(context.Background(), llm.Request{Purpose: llm.PurposeNavigate})
	if err == nil {
		t.Fatal("an empty request succeeded")
	}
	mc = resp.Record(err).ModelCall("cus_1", 2, time.Now())
	validModelCall(t, mc)
	if mc.Attempts != 1 || mc.PromptHash != llm.PromptHash(nil) || mc.Error == "" || mc.Mode != contract.ModelOutputNone {
		t.Errorf("record of an empty request: %+v", mc)
	}
}

// TestModelCallCost: a priced call's cost goes to the record within the
// schema's bounds (0 to contract.MaxModelCallCostUSD, NaN as 0); an
// unpriced call's record has none.
func TestModelCallCost(t *testing.T) {
	at := time.Date(2026, 1, 23, 10, 15, 0, 0, time.UTC)
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name string
		cost *float64
		want *float64
	}{
		{"unpriced", nil, nil},
		{"local", f(0), f(0)},
		{"priced", f(0.006705), f(0.006705)},
		{"negative", f(-1), f(0)},
		{"too large", f(1e300), f(contract.MaxModelCallCostUSD)},
		{"NaN", f(math.NaN()), f(0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := llm.CallRecord{Purpose: llm.PurposePlan, Model: "m", PromptHash: llm.PromptHash(nil), Attempts: 1, CostUSD: tc.cost}
			got := rec.ModelCall("s", 0, at).CostUSD
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			validModelCall(t, rec.ModelCall("s", 0, at))
		})
	}
}
