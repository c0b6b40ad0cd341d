package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The records' encoding: canonical JSON of the Go value, its free text
// masked, a secret anywhere else refused with its place named.

// obsSecrets are the values of the equivalence tests: ASCII, one that
// canonical JSON escapes, non-ASCII, a PIN of digits.
var obsSecrets = map[string]string{
	"API": "sk-live-0123456789",
	"Q":   `x"y\z<&>`,
	"U":   "pässwörd-日本",
	"PIN": "2026",
}

// nameSecrets are values equal to member names of the records (some
// always written, some only when their member is set), so that a record
// is refused for a member name, not only for a string.
var nameSecrets = map[string]string{
	"N1": "riskReasons",
	"N2": "exceptionId",
	"N3": "captureLatencyMs",
	"N4": "windowId",
	"N5": "computerUseSessionId",
	"N6": "error",
	"N7": "amountPx",
}

// TestCanonicalRecordCases checks the edges of the small records one by
// one: what is written, what is masked, and that a refusal names its
// place.
func TestCanonicalRecordCases(t *testing.T) {
	secrets := map[string]string{"SPAN": `b","rule":"r`}
	for k, v := range obsSecrets {
		secrets[k] = v
	}
	m, err := newMasker(secrets)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]string{}
	for k, v := range nameSecrets {
		named[k] = v
	}
	mn, err := newMasker(named)
	if err != nil {
		t.Fatal(err)
	}
	click := contract.Action{ID: "a1", Type: contract.ActClick, Reason: "buy it", Selector: "#buy"}
	dec := func(f func(d *contract.DecisionRecord)) contract.DecisionRecord {
		d := decision("d1", click, contract.ResultAllowed)
		f(&d)
		return d
	}
	line := func(f func(a *contract.Action, r *contract.ToolResult)) actionLine {
		a := click
		r := result(a, true)
		f(&a, &r)
		return actionLine{Action: a, Result: r}
	}
	event := func(f func(ev *contract.StreamEvent)) contract.StreamEvent {
		ev := contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: contract.ActClick, RiskLevel: contract.RiskLow, Summary: "clicked", Timestamp: "2026-01-23T10:15:00Z"}
		f(&ev)
		return ev
	}
	call := func(f func(mc *contract.ModelCall)) contract.ModelCall {
		mc := modelCall(1, contract.ModelPurposeNavigate)
		f(&mc)
		return mc
	}
	empty, big := "", 1<<53+1
	nan, negZero, huge := math.NaN(), math.Copysign(0, -1), 1e21
	tests := []struct {
		name    string
		v       any
		m       *masker
		wantErr string // a substring of the error; "" for none
		secret  bool
		wantIn  string // a substring of the bytes, when written
	}{
		{"decision: nil reasons", dec(func(d *contract.DecisionRecord) { d.Reasons = nil }), m, "", false, `"reasons":[]`},
		{"decision: empty lists omitted", dec(func(d *contract.DecisionRecord) {
			d.Waived, d.RiskReasons, d.Exceptions = []contract.Reason{}, []contract.Reason{}, []contract.ExceptionUse{}
		}), m, "", false, `"policyVersion"`},
		{"decision: every member", dec(func(d *contract.DecisionRecord) {
			d.Reasons = []contract.Reason{{Rule: "r", Message: "m"}}
			d.Waived = []contract.Reason{{Rule: "r", Message: "m", ExceptionID: "exc-1"}}
			d.RiskReasons = []contract.Reason{{Rule: "r", Message: "m"}}
			d.ApprovalReasons = []contract.Reason{{Rule: "r", Message: "m"}}
			d.Exceptions = []contract.ExceptionUse{{ID: "exc-1", Rule: "r", Reason: "why not", ExpiresAt: "2026-02-01T00:00:00Z", DecisionLogID: "dlog-1", Status: contract.ExceptionApplied, Why: "ok"}, {Status: contract.ExceptionMalformed, Why: ""}}
			d.Approval = &contract.ApprovalRef{ID: "apr-1", Approver: "alice", ApprovedAt: "2026-01-23T10:15:02Z", ExpiresAt: "2026-01-23T10:20:02Z", ActionHash: d.ActionHash}
			d.Permission, d.DecisionLogID, d.FailClosed, d.Error = "control", "dlog-1", true, "timeout"
		}), m, "", false, `{"status":"malformed","why":""}`},
		{"decision: escapes, non-ASCII, invalid UTF-8", dec(func(d *contract.DecisionRecord) {
			d.Error = "a\"b\\c\n\x01<>&\u2028é😀\uE000\xff\xed\xa0\x80"
		}), m, "", false, `\u0001<>&`},
		{"decision: secret in error masked", dec(func(d *contract.DecisionRecord) { d.Error = "key sk-live-0123456789" }), m, "", false, "{{secret:API}}"},
		{"decision: secret in a reason's message masked", dec(func(d *contract.DecisionRecord) {
			d.RiskReasons = []contract.Reason{{Rule: "r", Message: `x"y\z<&>`}}
		}), m, "", false, "{{secret:Q}}"},
		{"decision: secret in decisionId", dec(func(d *contract.DecisionRecord) { d.DecisionID = "sk-live-0123456789" }), m, "/decisionId is not free text", true, ""},
		{"decision: secret in approval id", dec(func(d *contract.DecisionRecord) {
			d.Approval = &contract.ApprovalRef{ID: "pässwörd-日本", Approver: "a", ApprovedAt: "t", ExpiresAt: "t", ActionHash: "h"}
		}), m, "/approval/id is not free text", true, ""},
		{"decision: secret in a reason's rule", dec(func(d *contract.DecisionRecord) {
			d.Reasons = []contract.Reason{{Rule: "sk-live-0123456789", Message: "m"}}
		}), m, "/reasons/*/rule is not free text", true, ""},
		{"decision: secret in an exception's status", dec(func(d *contract.DecisionRecord) {
			d.Exceptions = []contract.ExceptionUse{{Status: "sk-live-0123456789"}}
		}), m, "/exceptions/*/status is not free text", true, ""},
		{"decision: secret across two strings", dec(func(d *contract.DecisionRecord) {
			d.Reasons = []contract.Reason{{Rule: "r", Message: "ab"}}
		}), m, "in the bytes of the record", true, ""},
		{"decision: PIN in a time and a number", dec(func(d *contract.DecisionRecord) { d.EvaluatedAt, d.DurationUs = "2026-01-23T10:15:01Z", 2026 }), m, "", false, `"durationUs":2026`},
		{"decision: PIN elsewhere", dec(func(d *contract.DecisionRecord) { d.PolicySource = "x2026" }), m, "/policySource is not free text", true, ""},
		{"decision: big numbers", dec(func(d *contract.DecisionRecord) { d.DurationUs, d.StepIndex = math.MaxInt64, big }), m, "", false, `"durationUs":9223372036854776000`},
		{"decision: member name", dec(func(d *contract.DecisionRecord) {
			d.RiskReasons = []contract.Reason{{Rule: "r", Message: "m"}}
		}), mn, "a member name of /", true, ""},
		{"decision: member name of a reason", dec(func(d *contract.DecisionRecord) {
			d.Waived = []contract.Reason{{Rule: "r", Message: "m", ExceptionID: "exc-1"}}
		}), mn, "a member name of /waived/*", true, ""},
		{"action: unknown type", line(func(a *contract.Action, r *contract.ToolResult) { a.Type = "hover" }), m, `unknown type "hover"`, false, ""},
		{"action: member of another type", line(func(a *contract.Action, r *contract.ToolResult) { a.URL = "https://a.example/" }), m, "does not belong to a click action", false, ""},
		{"action: type with redact false", line(func(a *contract.Action, r *contract.ToolResult) { a.Type, a.Text = contract.ActType, "hello" }), m, "", false, `"redact":false`},
		{"action: nil policy tags", line(func(a *contract.Action, r *contract.ToolResult) { a.PolicyTags = nil }), m, "", false, `"policyTags":[]`},
		{"action: optional members", line(func(a *contract.Action, r *contract.ToolResult) {
			*a = contract.Action{ID: "a1", Type: contract.ActScroll, Direction: "down", AmountPx: 300, PolicyTags: []string{"x"}}
		}), m, "", false, `{"amountPx":300,"direction":"down","id":"a1","policyTags":["x"],"reason":"","type":"scroll"}`},
		{"action: extract of the whole page", line(func(a *contract.Action, r *contract.ToolResult) {
			*a = contract.Action{ID: "a1", Type: contract.ActExtract, Extract: contract.ExtractText}
		}), m, "", false, `"extract":"text","id"`},
		{"action: secret in a policy tag", line(func(a *contract.Action, r *contract.ToolResult) { a.PolicyTags = []string{"ok", "sk-live-0123456789"} }), m, "/action/policyTags/* is not free text", true, ""},
		{"action: secret in the selector masked", line(func(a *contract.Action, r *contract.ToolResult) { a.Selector = "#sk-live-0123456789" }), m, "", false, "#{{secret:API}}"},
		{"action: secret in an error code", line(func(a *contract.Action, r *contract.ToolResult) {
			r.OK, r.Error = false, &contract.ToolError{Code: "sk-live-0123456789", Message: "m"}
		}), m, "/result/error/code is not free text", true, ""},
		{"action: secret in an error message masked", line(func(a *contract.Action, r *contract.ToolResult) {
			r.OK, r.Error = false, &contract.ToolError{Code: contract.CodeTimeout, Message: "pässwörd-日本"}
		}), m, "", false, "{{secret:U}}"},
		{"action: secret in an artifact id", line(func(a *contract.Action, r *contract.ToolResult) { r.ArtifactIDs = []string{"sk-live-0123456789"} }), m, "/result/artifactIds/* is not free text", true, ""},
		{"action: NaN latency", line(func(a *contract.Action, r *contract.ToolResult) { r.InputLatencyMs = &nan }), m, "unsupported value: NaN", false, ""},
		{"action: numbers", line(func(a *contract.Action, r *contract.ToolResult) {
			r.CaptureLatencyMs, r.InputLatencyMs, r.WindowID, r.TabID = &negZero, &huge, &big, &big
		}), m, "", false, `"captureLatencyMs":0,`},
		{"action: member name of the result", line(func(a *contract.Action, r *contract.ToolResult) { r.CaptureLatencyMs = &huge }), mn, "a member name of /result", true, ""},
		{"event: unknown type", event(func(ev *contract.StreamEvent) { ev.Type = "nope" }), m, `unknown type "nope"`, false, ""},
		{"event: member of another type", event(func(ev *contract.StreamEvent) { ev.Code = "x" }), m, `field "code" does not belong`, false, ""},
		{"event: screenshot without url", contract.StreamEvent{Type: contract.EventScreenshot, Timestamp: "2026-01-23T10:15:00Z"}, m, `missing field "url"`, false, ""},
		{"event: empty optional url written", event(func(ev *contract.StreamEvent) { ev.URL = &empty }), m, "", false, `"url":""`},
		{"event: required members empty", contract.StreamEvent{Type: contract.EventError}, m, "", false, `{"code":"","message":"","timestamp":"","type":"error"}`},
		{"event: screenshot", contract.StreamEvent{Type: contract.EventScreenshot, URL: &empty, Width: &big, Timestamp: "t"}, m, "", false, `"width":9007199254740992}`},
		{"event: secret in summary masked", event(func(ev *contract.StreamEvent) { ev.Summary = "typed sk-live-0123456789" }), m, "", false, "{{secret:API}}"},
		{"event: secret in action id", event(func(ev *contract.StreamEvent) { ev.ActionID = "sk-live-0123456789" }), m, "/actionId is not free text", true, ""},
		{"event: member name", contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: testSession, Timestamp: "t"}, mn, "a member name of /", true, ""},
		{"model call: NaN latency", call(func(mc *contract.ModelCall) { mc.LatencyMs = nan }), m, "unsupported value: NaN", false, ""},
		{"model call: negative zero and large latency", call(func(mc *contract.ModelCall) { mc.LatencyMs = negZero }), m, "", false, `"latencyMs":0,`},
		{"model call: 1e21", call(func(mc *contract.ModelCall) { mc.LatencyMs = huge }), m, "", false, `"latencyMs":1e+21,`},
		{"model call: secret in error masked", call(func(mc *contract.ModelCall) { mc.Error = "401 for sk-live-0123456789" }), m, "", false, "{{secret:API}}"},
		{"model call: secret in model", call(func(mc *contract.ModelCall) { mc.Model = "sk-live-0123456789" }), m, "/model is not free text", true, ""},
		{"model call: member name", call(func(mc *contract.ModelCall) { mc.Error = "failed" }), mn, "a member name of /", true, ""},
		{"model call: no error, no name", call(func(mc *contract.ModelCall) {}), mn, "", false, `"attempts":1`},
		{"decision: large", dec(func(d *contract.DecisionRecord) { d.Error = strings.Repeat("<&x", 1<<19) }), m, "", false, `<&x<&x`},
		{"event: large", event(func(ev *contract.StreamEvent) { ev.Summary = strings.Repeat("\x01", 1<<21) }), m, "", false, `\u0001\u0001`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var shape string
			switch tc.v.(type) {
			case contract.DecisionRecord:
				shape = string(schemas.KindDecision)
			case actionLine:
				shape = shapeActionLine
			case contract.StreamEvent:
				shape = string(schemas.KindEvent)
			case contract.ModelCall:
				shape = string(schemas.KindModelCall)
			default:
				t.Fatalf("no record shape for %T", tc.v)
			}
			got, _, gotErr := canonicalize(shape, tc.v, tc.m)
			if tc.wantErr == "" && gotErr != nil {
				t.Fatalf("got error %v, want none", gotErr)
			}
			if tc.wantErr != "" && (gotErr == nil || !strings.Contains(gotErr.Error(), tc.wantErr)) {
				t.Fatalf("got error %v, want one containing %q", gotErr, tc.wantErr)
			}
			if got, want := errors.Is(gotErr, ErrSecret), tc.secret; got != want {
				t.Fatalf("got error %v: ErrSecret %v, want %v", gotErr, got, want)
			}
			if gotErr == nil && !bytes.Contains(got, []byte(tc.wantIn)) {
				t.Fatalf("got %s, want it to hold %s", got, tc.wantIn)
			}
		})
	}
}

// TestCanonicalObservationCases checks the edges of an observation one by
// one: what is refused, and that a refusal names its place.
func TestCanonicalObservationCases(t *testing.T) {
	secrets := map[string]string{"SPAN": `b","selector":"#a`, "NAME": "sourceSelector"}
	for k, v := range obsSecrets {
		secrets[k] = v
	}
	m, err := newMasker(secrets)
	if err != nil {
		t.Fatal(err)
	}
	tab := 7
	base := func(f func(o *contract.Observation)) contract.Observation {
		o := testObservation(3, "")
		o.DOMSnapshot = ""
		f(&o)
		return o
	}
	tests := []struct {
		name    string
		obs     contract.Observation
		wantErr string // a substring of the error; "" for none
		secret  bool
	}{
		{"plain", base(func(o *contract.Observation) {}), "", false},
		{"nil affordances", base(func(o *contract.Observation) { o.Affordances = nil }), "", false},
		{"empty artifacts", base(func(o *contract.Observation) { o.ExtractedArtifacts = []contract.Artifact{} }), "", false},
		{"tab id", base(func(o *contract.Observation) { o.State.TabID = &tab }), "", false},
		{"escapes and non-ASCII", base(func(o *contract.Observation) { o.DOMText = "a\"b\\c\n\x01<>&\u2028é😀\uE000" }), "", false},
		{"invalid UTF-8", base(func(o *contract.Observation) { o.State.Title = "a\xffb\xed\xa0\x80c\xe6\x97" }), "", false},
		{"secret in free text", base(func(o *contract.Observation) {
			o.Affordances[0].Text = "key sk-live-0123456789 here"
			o.State.Title = `x"y\z<&>`
		}), "", false},
		{"secret in session id", base(func(o *contract.Observation) { o.State.SessionID = "sk-live-0123456789" }), "/state/sessionId is not free text", true},
		{"secret in action hint", base(func(o *contract.Observation) { o.Affordances[0].ActionHint = "pässwörd-日本" }), "/affordances/*/actionHint is not free text", true},
		{"secret in artifact id", base(func(o *contract.Observation) {
			o.ExtractedArtifacts = []contract.Artifact{{ID: "sk-live-0123456789", Type: "text", Value: "v", SourceURL: "https://a.example/", Hash: sha("v")}}
		}), "/extractedArtifacts/*/id is not free text", true},
		{"secret in the snapshot member", base(func(o *contract.Observation) { o.DOMSnapshot = "sk-live-0123456789" }), "/domSnapshot is not free text", true},
		{"secret across two strings", base(func(o *contract.Observation) {
			o.Affordances = []contract.Affordance{{Role: "ab", Selector: "#a"}}
		}), "in the bytes of the record", true},
		{"PIN in a time", base(func(o *contract.Observation) { o.State.Timestamp = "2026-01-23T10:15:00Z" }), "", false},
		{"PIN in the budget", base(func(o *contract.Observation) { o.State.PolicyContext.MaxStepBudget = 2026 }), "", false},
		{"NaN", base(func(o *contract.Observation) { o.State.Viewport.DeviceScaleFactor = math.NaN() }), "unsupported value: NaN", false},
		{"infinity", base(func(o *contract.Observation) { o.State.Viewport.DeviceScaleFactor = math.Inf(1) }), "unsupported value: +Inf", false},
		{"secret as a member name", base(func(o *contract.Observation) {
			o.ExtractedArtifacts = []contract.Artifact{{ID: "a1", Type: "text", Value: "v", SourceURL: "https://a.example/", SourceSelector: "#v", Hash: sha("v")}}
		}), "a member name of /extractedArtifacts/*", true},
		{"member name absent", base(func(o *contract.Observation) {
			o.ExtractedArtifacts = []contract.Artifact{{ID: "a1", Type: "text", Value: "v", SourceURL: "https://a.example/", Hash: sha("v")}}
		}), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, gotErr := canonicalize(string(schemas.KindObservation), tc.obs, m)
			if tc.wantErr == "" && gotErr != nil {
				t.Fatalf("got error %v, want none", gotErr)
			}
			if tc.wantErr != "" && (gotErr == nil || !strings.Contains(gotErr.Error(), tc.wantErr)) {
				t.Fatalf("got error %v, want one containing %q", gotErr, tc.wantErr)
			}
			if errors.Is(gotErr, ErrSecret) != tc.secret {
				t.Fatalf("got error %v, ErrSecret %v, want %v", gotErr, !tc.secret, tc.secret)
			}
			if gotErr == nil {
				if _, err := canonjson.ParseCanonical(got); err != nil {
					t.Fatalf("got %s: %v", got, err)
				}
			}
		})
	}
}

// TestWriterRecordsInParallel writes the same session with secrets
// through several writers at once:
// every bundle verifies and all are byte for byte the same.
func TestWriterRecordsInParallel(t *testing.T) {
	const writers = 4
	bundles := make([][]byte, writers)
	t.Run("group", func(t *testing.T) {
		for i := 0; i < writers; i++ {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				dir := buildBundle(t, t.TempDir(), fixture{secrets: testSecrets, steps: 25})
				if _, err := Verify(context.Background(), dir, VerifyOptions{}); err != nil {
					t.Fatal(err)
				}
				bundles[i] = bundleBytes(t, dir)
			})
		}
	})
	for i := 1; i < writers; i++ {
		if !bytes.Equal(bundles[i], bundles[0]) {
			t.Fatalf("bundle %d differs from bundle 0", i)
		}
	}
}

// TestSnapshotBoundMatchesSchema: the DOM snapshot, stored outside its
// observation, is held to the observation schema's own bound.
func TestSnapshotBoundMatchesSchema(t *testing.T) {
	b, err := fs.ReadFile(schemas.FS(), "browser-observation.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			DOMSnapshot struct {
				MaxLength int `json:"maxLength"`
			} `json:"domSnapshot"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Properties.DOMSnapshot.MaxLength != maxDOMSnapshotChars {
		t.Errorf("schema maxLength %d, maxDOMSnapshotChars %d", s.Properties.DOMSnapshot.MaxLength, maxDOMSnapshotChars)
	}
}
