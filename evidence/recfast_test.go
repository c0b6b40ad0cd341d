package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The fast paths of the decision, the action line, the event and the
// model call (recfast.go) are held to the general path (canonicalize,
// prepareRecord), which stays the reference: same bytes, same masking,
// same refusals naming a place the general path may name, same other
// errors word for word.

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

// recPieces are the pieces of random strings: those of the observation's
// tests and the member names above.
var recPieces = func() []string {
	out := append([]string{}, pieces...)
	for _, v := range nameSecrets {
		out = append(out, v)
	}
	return out
}()

// recGen makes random values; wild ones are mostly invalid or refused,
// the others mostly valid.
type recGen struct {
	r    *rand.Rand
	wild bool
}

// text returns a random string of up to five pieces.
func (g recGen) text() string {
	var b strings.Builder
	for n := g.r.IntN(6); n > 0; n-- {
		b.WriteString(recPieces[g.r.IntN(len(recPieces))])
	}
	return b.String()
}

// structural returns valid, or when wild now and then a random string.
func (g recGen) structural(valid string) string {
	if g.wild && g.r.IntN(8) == 0 {
		return g.text()
	}
	return valid
}

// maybe returns s or, one time in three, "".
func (g recGen) maybe(s string) string {
	if g.r.IntN(3) == 0 {
		return ""
	}
	return s
}

// integer returns a small integer (the PIN 2026 among them) or, when
// wild, one of the edges of the int range and of the doubles.
func (g recGen) integer() int {
	if g.wild && g.r.IntN(4) == 0 {
		big := []int{-1, 0, 1 << 53, 1<<53 + 1, -(1<<53 + 1), math.MaxInt64, math.MinInt64, 123456789012345678}
		return big[g.r.IntN(len(big))]
	}
	if g.r.IntN(8) == 0 {
		return 2026
	}
	return g.r.IntN(5000)
}

// intPtr returns nil or a pointer to an integer.
func (g recGen) intPtr() *int {
	if g.r.IntN(2) == 0 {
		return nil
	}
	n := g.integer()
	return &n
}

// float returns a number; when wild, an edge of the doubles or one with
// no JSON form.
func (g recGen) float() float64 {
	if g.wild && g.r.IntN(4) == 0 {
		edges := []float64{math.Copysign(0, -1), 1e21, 1e-7, 5e-324, math.MaxFloat64, 123456.789e300, math.NaN(), math.Inf(1), math.Inf(-1)}
		return edges[g.r.IntN(len(edges))]
	}
	return []float64{0, 1.5, 12.25, 1873.5, 0.1, 2026, 0.000001}[g.r.IntN(7)]
}

// floatPtr returns nil or a pointer to a number.
func (g recGen) floatPtr() *float64 {
	if g.r.IntN(2) == 0 {
		return nil
	}
	f := g.float()
	return &f
}

// reasons returns nil, an empty list or a few reasons, with exception ids
// when waived.
func (g recGen) reasons(waived bool) []contract.Reason {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []contract.Reason{}
	}
	var out []contract.Reason
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		rs := contract.Reason{Rule: g.structural("origin_not_allowed"), Message: g.text()}
		if waived || g.wild && g.r.IntN(4) == 0 {
			rs.ExceptionID = g.maybe(g.structural("exc-1"))
		}
		out = append(out, rs)
	}
	return out
}

// randDecision returns a decision record built on the fixture's.
func randDecision(g recGen) contract.DecisionRecord {
	results := []contract.DecisionResult{contract.ResultAllowed, contract.ResultDenied, contract.ResultPaused, contract.ResultApproved}
	a := contract.Action{ID: fmt.Sprintf("a%d", g.r.IntN(100)), Type: contract.ActClick, Selector: "#buy"}
	d := decision(fmt.Sprint(g.r.IntN(1000)), a, results[g.r.IntN(len(results))])
	d.DecisionID = g.structural(d.DecisionID)
	d.SessionID = g.structural(g.maybe(d.SessionID))
	d.ActionID = g.structural(g.maybe(d.ActionID))
	d.ActionHash = g.structural(d.ActionHash)
	d.ActionName = g.structural(d.ActionName)
	d.PolicyVersion = g.structural(d.PolicyVersion)
	d.PolicySource = g.structural(d.PolicySource)
	d.Result = contract.DecisionResult(g.structural(string(d.Result)))
	d.Risk = contract.RiskTag(g.structural(string(d.Risk)))
	d.EvaluatedAt = g.structural(d.EvaluatedAt)
	d.StepIndex = g.integer()
	d.DurationUs = int64(g.integer())
	d.Permission = g.structural(g.maybe("control"))
	d.DecisionLogID = g.structural(g.maybe("dlog-1"))
	// Reasons, a failure and the flags as the schema has them for the
	// result, unless wild.
	denied := d.Result == contract.ResultDenied
	if denied || g.wild {
		if rs := g.reasons(false); len(rs) > 0 || g.wild {
			d.Reasons = rs
		}
		if g.r.IntN(3) == 0 {
			d.FailClosed = true
			d.Error = g.text() + "e"
		}
	} else if g.r.IntN(2) == 0 {
		d.Reasons = []contract.Reason{}
	}
	if d.RequiresApproval || g.wild {
		if rs := g.reasons(false); len(rs) > 0 || g.wild {
			d.ApprovalReasons = rs
		}
	}
	d.RiskReasons = g.reasons(false)
	d.Waived = g.reasons(true)
	switch g.r.IntN(3) {
	case 0:
		d.Exceptions = []contract.ExceptionUse{}
	case 1:
		statuses := []contract.ExceptionStatus{contract.ExceptionApplied, contract.ExceptionExpired, contract.ExceptionMalformed, contract.ExceptionOutOfScope}
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			d.Exceptions = append(d.Exceptions, contract.ExceptionUse{
				ID: g.maybe(g.structural("exc-1")), Rule: g.maybe(g.structural("origin_not_allowed")), Reason: g.maybe(g.text()),
				ExpiresAt: g.maybe(g.structural("2026-02-01T00:00:00Z")), DecisionLogID: g.maybe(g.structural("dlog-1")),
				Status: contract.ExceptionStatus(g.structural(string(statuses[g.r.IntN(len(statuses))]))), Why: g.text(),
			})
		}
	}
	if d.Approval != nil || g.r.IntN(4) == 0 {
		d.Approval = &contract.ApprovalRef{
			ID: g.structural("apr-" + sha("x")[:32]), Approver: g.text(), ApprovedAt: g.structural("2026-01-23T10:15:02Z"),
			ExpiresAt: g.structural("2026-01-23T10:20:02Z"), ActionHash: g.structural(d.ActionHash),
		}
	}
	if g.wild {
		d.Allow, d.RequiresApproval = g.r.IntN(2) == 0, g.r.IntN(2) == 0
	}
	return d
}

// setActionMember sets the type-specific member bit of a to a value
// other than its zero.
func setActionMember(a *contract.Action, bit uint16, g recGen) {
	switch bit {
	case actURL:
		a.URL = "https://shop.example/" + g.text()
	case actSelector:
		a.Selector = "#" + g.text()
	case actTimeoutMs:
		a.TimeoutMs = 1 + g.r.IntN(30000)
	case actText:
		a.Text = "t" + g.text()
	case actRedact:
		a.Redact = true
	case actValue:
		a.Value = "v" + g.text()
	case actDirection:
		a.Direction = contract.ScrollDirection(g.structural([]string{"up", "down"}[g.r.IntN(2)]))
	case actAmountPx:
		a.AmountPx = 1 + g.r.IntN(2000)
	case actDurationMs:
		a.DurationMs = 1 + g.r.IntN(5000)
	case actExtract:
		a.Extract = contract.ExtractKind(g.structural([]string{"text", "table", "link", "screenshot"}[g.r.IntN(4)]))
	}
}

// randAction returns an action of a random type with its members set or
// zero at random; when wild, now and then an unknown type or a member of
// another type.
func randAction(g recGen) contract.Action {
	types := contract.ActionTypes()
	a := contract.Action{ID: g.structural(fmt.Sprintf("a%d", g.r.IntN(100))), Type: types[g.r.IntN(len(types))], Reason: g.text()}
	if g.wild && g.r.IntN(10) == 0 {
		a.Type = contract.ActionType(g.text())
	}
	if members, ok := actionMembers[a.Type]; ok {
		for bit := uint16(1); bit <= actExtract; bit <<= 1 {
			if members.allowed&bit != 0 && g.r.IntN(4) > 0 {
				setActionMember(&a, bit, g)
			}
		}
	}
	if g.wild && g.r.IntN(6) == 0 {
		setActionMember(&a, 1<<g.r.IntN(10), g)
	}
	switch g.r.IntN(3) {
	case 0:
		a.PolicyTags = []string{}
	case 1:
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			a.PolicyTags = append(a.PolicyTags, g.structural("checkout"))
		}
	}
	return a
}

// randResult returns the result of an action built on the fixture's.
func randResult(g recGen, a contract.Action) contract.ToolResult {
	r := result(a, g.r.IntN(3) > 0)
	r.ActionID = g.structural(r.ActionID)
	r.Action = g.structural(r.Action)
	r.RiskTag = contract.RiskTag(g.structural(string(r.RiskTag)))
	r.SessionID = g.structural(r.SessionID)
	r.StartedAt = g.structural(r.StartedAt)
	r.EndedAt = g.structural(r.EndedAt)
	r.URL = g.maybe("https://example.com/" + g.text())
	r.FrameID = g.structural(g.maybe("frame-1"))
	if r.Error != nil {
		r.Error.Code = contract.ErrorCode(g.structural(string(r.Error.Code)))
		r.Error.Message = g.text()
	}
	r.CaptureLatencyMs, r.InputLatencyMs = g.floatPtr(), g.floatPtr()
	r.WindowID, r.TabID = g.intPtr(), g.intPtr()
	switch g.r.IntN(3) {
	case 0:
		r.ArtifactIDs = []string{}
	case 1:
		for n := 1 + g.r.IntN(3); n > 0; n-- {
			r.ArtifactIDs = append(r.ArtifactIDs, g.structural(fmt.Sprintf("art-%d", g.r.IntN(100))))
		}
	}
	return r
}

// setEventMember sets the member bit of ev to a value other than its
// zero.
func setEventMember(ev *contract.StreamEvent, bit uint16, g recGen) {
	switch bit {
	case evComputerUseSessionID:
		ev.ComputerUseSessionID = g.structural(testSession)
	case evActionID:
		ev.ActionID = g.structural("a1")
	case evActionType:
		ev.ActionType = contract.ActionType(g.structural("click"))
	case evRiskLevel:
		ev.RiskLevel = contract.RiskTag(g.structural("low"))
	case evURL:
		u := g.maybe("https://shop.example/" + g.text())
		ev.URL = &u
	case evSummary:
		ev.Summary = "s" + g.text()
	case evWidth:
		w := 1 + g.r.IntN(4000)
		ev.Width = &w
	case evHeight:
		h := 1 + g.r.IntN(4000)
		ev.Height = &h
	case evDecision:
		ev.Decision = contract.ApprovalDecision(g.structural("approve"))
	case evStatus:
		ev.Status = contract.SessionStatus(g.structural("completed"))
	case evCode:
		ev.Code = g.structural("evidence.secret_masked")
	case evMessage:
		ev.Message = "m" + g.text()
	case evTimestamp:
		ev.Timestamp = g.structural("2026-01-23T10:15:00Z")
	}
}

// randEvent returns an event of a random type, its required members set
// (now and then empty) and its optional ones at random; when wild, now
// and then an unknown type, a member of another type or a screenshot
// without its url.
func randEvent(g recGen) contract.StreamEvent {
	types := contract.EventTypes()
	ev := contract.StreamEvent{Type: types[g.r.IntN(len(types))]}
	if g.wild && g.r.IntN(10) == 0 {
		ev.Type = contract.EventType(g.text())
	}
	if members, ok := eventMembers[ev.Type]; ok {
		for bit := uint16(1); bit <= evTimestamp; bit <<= 1 {
			switch {
			case members.allowed&bit == 0:
			case members.required&bit != 0 && (!g.wild || g.r.IntN(10) > 0):
				setEventMember(&ev, bit, g)
			case g.r.IntN(2) == 0:
				setEventMember(&ev, bit, g)
			}
		}
	}
	if g.wild && g.r.IntN(6) == 0 {
		setEventMember(&ev, 1<<g.r.IntN(13), g)
	}
	return ev
}

// randModelCall returns a model-call record built on the fixture's.
func randModelCall(g recGen) contract.ModelCall {
	purposes := []contract.ModelPurpose{contract.ModelPurposePlan, contract.ModelPurposeNavigate}
	mc := modelCall(g.r.IntN(30), purposes[g.r.IntN(2)])
	mc.SessionID = g.structural(mc.SessionID)
	mc.Purpose = contract.ModelPurpose(g.structural(string(mc.Purpose)))
	mc.Model = g.structural(mc.Model)
	mc.PromptHash = g.structural(mc.PromptHash)
	mc.Mode = contract.ModelOutputMode(g.structural(string(mc.Mode)))
	mc.Time = g.structural(mc.Time)
	mc.Step, mc.Attempts = g.integer(), g.integer()
	mc.PromptTokens, mc.CompletionTokens, mc.TotalTokens = g.integer(), g.integer(), g.integer()
	mc.LatencyMs = g.float()
	if g.r.IntN(3) == 0 {
		mc.Error = g.text()
	}
	return mc
}

// randRecord is one random record: the value the general path is given
// and the fast path's functions for it.
type randRecord struct {
	v         any
	canonical func(m *masker, buf []byte) ([]byte, bool, error)
	prepare   func(m *masker, sc *obsScratch) ([]byte, rec, bool, error)
}

// recordKinds are the four records, each with its shape (as canonicalize
// and prepareRecord take it), its generator, and what its Writer method
// checks on the parsed record.
var recordKinds = []struct {
	name      string
	shape     string // canonicalize's
	prepShape string // prepareRecord's
	gen       func(g recGen) randRecord
	check     func(r rec) string
}{
	{
		"decision", string(schemas.KindDecision), string(schemas.KindDecision),
		func(g recGen) randRecord {
			d := randDecision(g)
			return randRecord{d,
				func(m *masker, buf []byte) ([]byte, bool, error) { return canonicalDecision(&d, m, buf) },
				func(m *masker, sc *obsScratch) ([]byte, rec, bool, error) { return prepareDecision(&d, m, sc) }}
		},
		func(r rec) string {
			d := decisionOf(r)
			return fmt.Sprintf("%s %v", describe(d), d.check(testSession, map[string]bool{}))
		},
	},
	{
		"action", shapeActionLine, "",
		func(g recGen) randRecord {
			a := randAction(g)
			res := randResult(g, a)
			return randRecord{actionLine{Action: a, Result: res},
				func(m *masker, buf []byte) ([]byte, bool, error) { return canonicalActionLine(&a, &res, m, buf) },
				func(m *masker, sc *obsScratch) ([]byte, rec, bool, error) { return prepareActionLine(&a, &res, m, sc) }}
		},
		func(r rec) string {
			if err := validateActionLine(r); err != nil {
				return err.Error()
			}
			facts, err := checkActionLine(r, testSession)
			return fmt.Sprintf("%+v %v", facts, err)
		},
	},
	{
		"event", string(schemas.KindEvent), string(schemas.KindEvent),
		func(g recGen) randRecord {
			ev := randEvent(g)
			return randRecord{ev,
				func(m *masker, buf []byte) ([]byte, bool, error) { return canonicalEvent(&ev, m, buf) },
				func(m *masker, sc *obsScratch) ([]byte, rec, bool, error) { return prepareEvent(&ev, m, sc) }}
		},
		func(r rec) string { return fmt.Sprint(checkEvent(r, testSession)) },
	},
	{
		"modelcall", string(schemas.KindModelCall), string(schemas.KindModelCall),
		func(g recGen) randRecord {
			mc := randModelCall(g)
			return randRecord{mc,
				func(m *masker, buf []byte) ([]byte, bool, error) { return canonicalModelCall(&mc, m, buf) },
				func(m *masker, sc *obsScratch) ([]byte, rec, bool, error) { return prepareModelCall(&mc, m, sc) }}
		},
		func(r rec) string { return fmt.Sprint(checkModelCall(r, testSession)) },
	},
}

// testMaskers returns the masker setups of the equivalence tests: none,
// secrets, secrets and a redacted text, and secrets equal to member
// names.
func testMaskers(t testing.TB) []*masker {
	t.Helper()
	none, err := newMasker(nil)
	if err != nil {
		t.Fatal(err)
	}
	withSecrets, err := newMasker(obsSecrets)
	if err != nil {
		t.Fatal(err)
	}
	redacted, err := newMasker(obsSecrets)
	if err != nil {
		t.Fatal(err)
	}
	redacted.addRedacted("item 42")
	all := map[string]string{}
	for k, v := range obsSecrets {
		all[k] = v
	}
	for k, v := range nameSecrets {
		all[k] = v
	}
	names, err := newMasker(all)
	if err != nil {
		t.Fatal(err)
	}
	return []*masker{none, withSecrets, redacted, names}
}

// secretPlaces returns the error of every refusal maskRecord may report
// for v (it walks maps in no fixed order, so with two places it may name
// either): each member name and each string that is not free text and
// holds a known value.
func secretPlaces(shape string, v any, m *masker) map[string]bool {
	out := map[string]bool{}
	b, err := json.Marshal(v)
	if err != nil || m.r == nil {
		return out
	}
	tree, err := schemas.Parse(b)
	if err != nil {
		return out
	}
	free := freeTextOf(shape, tree)
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case string:
			if free[path] || isBelowFree(free, path) {
				return
			}
			if _, found := m.findIn([]byte(t)); found {
				out[fmt.Errorf("%w: %s is not free text", ErrSecret, pointer(path)).Error()] = true
			}
		case []any:
			for _, x := range t {
				walk(x, join(path, "*"))
			}
		case map[string]any:
			for k, x := range t {
				if _, found := m.findIn([]byte(k)); found {
					out[fmt.Errorf("%w: a member name of %s", ErrSecret, pointer(path)).Error()] = true
				}
				walk(x, join(path, k))
			}
		}
	}
	walk(tree, "")
	return out
}

// outcomeDiff says how the fast path's outcome differs from the general
// path's for v, or "" when they agree: the same bytes and masking report;
// a refusal (ErrSecret) exactly when the general path refuses, naming a
// place it may name; another error, word for word, exactly when it has
// one.
func outcomeDiff(shape string, v any, m *masker, got []byte, gotMasked bool, gotErr error, want []byte, wantMasked bool, wantErr error) string {
	if g, w := secretKind(gotErr), secretKind(wantErr); g != w {
		return fmt.Sprintf("got error %v (%s), want %v (%s)", gotErr, g, wantErr, w)
	}
	switch secretKind(wantErr) {
	case "ok":
		if !bytes.Equal(got, want) || gotMasked != wantMasked {
			return fmt.Sprintf("got masked=%v\n%s\nwant masked=%v\n%s", gotMasked, got, wantMasked, want)
		}
	case "error":
		if gotErr.Error() != wantErr.Error() {
			return fmt.Sprintf("got error %q, want %q", gotErr, wantErr)
		}
	case "secret":
		if gotErr.Error() != wantErr.Error() && !secretPlaces(shape, v, m)[gotErr.Error()] {
			return fmt.Sprintf("got error %q, want %q (or another place the general path may name: %v)", gotErr, wantErr, secretPlaces(shape, v, m))
		}
	}
	return ""
}

// describe renders a record for a failure message: the members that are
// set, pointers followed, nil and empty slices told apart.
func describe(v any) string {
	var b strings.Builder
	describeValue(&b, reflect.ValueOf(v))
	return b.String()
}

func describeValue(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteByte('&')
		describeValue(b, v.Elem())
	case reflect.Struct:
		b.WriteString(v.Type().Name() + "{")
		sep := ""
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				continue
			}
			b.WriteString(sep + v.Type().Field(i).Name + ": ")
			describeValue(b, v.Field(i))
			sep = ", "
		}
		b.WriteByte('}')
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			describeValue(b, v.Index(i))
		}
		b.WriteByte(']')
	case reflect.String:
		fmt.Fprintf(b, "%q", v.String())
	default:
		fmt.Fprintf(b, "%v", v.Interface())
	}
}

// TestCanonicalRecordsMatchGeneralPath holds the fast encoders of the
// four records to canonicalize on random records, valid or not, with
// every masker setup: the same bytes and masking report, and a refusal
// or another error exactly when the general path has one.
func TestCanonicalRecordsMatchGeneralPath(t *testing.T) {
	maskers := testMaskers(t)
	for ki, kind := range recordKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(21, uint64(ki)))
			counts := map[string]int{}
			var buf []byte // reused, as the writer reuses its scratch
			for i := 0; i < 8000; i++ {
				m := maskers[i%len(maskers)]
				rr := kind.gen(recGen{r: r, wild: i%2 == 1})
				want, wantMasked, wantErr := canonicalize(kind.shape, rr.v, m)
				got, gotMasked, gotErr := rr.canonical(m, buf)
				if cap(got) > cap(buf) {
					buf = got
				}
				counts[secretKind(wantErr)]++
				if wantMasked {
					counts["masked"]++
				}
				if wantErr != nil && strings.Contains(wantErr.Error(), "member name") {
					counts["name"]++
				}
				if d := outcomeDiff(kind.shape, rr.v, m, got, gotMasked, gotErr, want, wantMasked, wantErr); d != "" {
					t.Fatalf("case %d (masker %d): %s\ninput: %s", i, i%len(maskers), d, describe(rr.v))
				}
			}
			t.Logf("outcomes: %v", counts)
			// The random cases must reach every outcome, or the test proves little.
			for _, k := range []string{"ok", "secret", "masked", "error", "name"} {
				if kind.name == "decision" && k == "error" {
					continue // encoding/json refuses no decision record
				}
				if counts[k] < 40 {
					t.Errorf("only %d cases of outcome %q: %v", counts[k], k, counts)
				}
			}
		})
	}
}

// TestPrepareRecordsMatchGeneralPath holds the fast prepare functions to
// prepareRecord on mostly valid random records: the same bytes, masking
// report and errors (validation's included), and the same verdict of what
// the Writer method checks on the parsed record.
func TestPrepareRecordsMatchGeneralPath(t *testing.T) {
	maskers := testMaskers(t)
	for ki, kind := range recordKinds {
		t.Run(kind.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(23, uint64(ki)))
			valid := 0
			var sc obsScratch // reused, as the writer reuses its scratch
			for i := 0; i < 3000; i++ {
				m := maskers[i%3] // no member-name secrets: mostly valid records
				rr := kind.gen(recGen{r: r, wild: i%4 == 0})
				want, wantRec, wantMasked, wantErr := prepareRecord(kind.prepShape, rr.v, m)
				got, gotRec, gotMasked, gotErr := rr.prepare(m, &sc)
				if d := outcomeDiff(kind.shape, rr.v, m, got, gotMasked, gotErr, want, wantMasked, wantErr); d != "" {
					t.Fatalf("case %d: %s\ninput: %s", i, d, describe(rr.v))
				}
				if wantErr != nil {
					continue
				}
				if g, w := kind.check(gotRec), kind.check(wantRec); g != w {
					t.Fatalf("case %d: checks of the parsed record: got %s, want %s\ninput: %s", i, g, w, describe(rr.v))
				}
				if !strings.Contains(kind.check(gotRec), "want") {
					valid++
				}
			}
			if valid < 500 {
				t.Errorf("only %d valid cases of 3000", valid)
			}
		})
	}
}

// TestCanonicalRecordCases checks the edges one by one against the
// general path, and that a refusal names its place.
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
		{"decision: too large for the fast path", dec(func(d *contract.DecisionRecord) { d.Error = strings.Repeat("<&x", 1<<19) }), m, "", false, `<&x<&x`},
		{"event: too large for the fast path", event(func(ev *contract.StreamEvent) { ev.Summary = strings.Repeat("\x01", 1<<21) }), m, "", false, `\u0001\u0001`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			var gotMasked bool
			var gotErr error
			var shape string
			switch v := tc.v.(type) {
			case contract.DecisionRecord:
				shape = string(schemas.KindDecision)
				got, gotMasked, gotErr = canonicalDecision(&v, tc.m, nil)
			case actionLine:
				shape = shapeActionLine
				got, gotMasked, gotErr = canonicalActionLine(&v.Action, &v.Result, tc.m, nil)
			case contract.StreamEvent:
				shape = string(schemas.KindEvent)
				got, gotMasked, gotErr = canonicalEvent(&v, tc.m, nil)
			case contract.ModelCall:
				shape = string(schemas.KindModelCall)
				got, gotMasked, gotErr = canonicalModelCall(&v, tc.m, nil)
			default:
				t.Fatalf("no fast path for %T", tc.v)
			}
			want, wantMasked, wantErr := canonicalize(shape, tc.v, tc.m)
			if gotErr != nil && wantErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("got error %q, want %q\ninput: %s", gotErr, wantErr, describe(tc.v))
			}
			if d := outcomeDiff(shape, tc.v, tc.m, got, gotMasked, gotErr, want, wantMasked, wantErr); d != "" {
				t.Fatalf("%s\ninput: %s", d, describe(tc.v))
			}
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

// TestRecordTablesMatchContract holds the tables of recfast.go to what
// Action.MarshalJSON and StreamEvent.MarshalJSON do: the members each
// type allows (setting any other is an error), and those written even
// when zero (or refused when a nil pointer).
func TestRecordTablesMatchContract(t *testing.T) {
	g := recGen{r: rand.New(rand.NewPCG(1, 2))}
	names := func(b []byte) map[string]bool {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for k := range m {
			out[k] = true
		}
		return out
	}
	actionNames := map[uint16]string{actURL: "url", actSelector: "selector", actTimeoutMs: "timeoutMs", actText: "text", actRedact: "redact",
		actValue: "value", actDirection: "direction", actAmountPx: "amountPx", actDurationMs: "durationMs", actExtract: "extract"}
	for _, typ := range contract.ActionTypes() {
		var got struct{ allowed, required uint16 }
		for bit := range actionNames {
			a := contract.Action{ID: "a1", Type: typ}
			setActionMember(&a, bit, g)
			if _, err := a.MarshalJSON(); err == nil {
				got.allowed |= bit
			}
		}
		b, err := contract.Action{ID: "a1", Type: typ}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		for bit, name := range actionNames {
			if names(b)[name] {
				got.required |= bit
			}
		}
		if want := actionMembers[typ]; got != want {
			t.Errorf("action %s: got allowed %010b required %010b from contract, recfast.go has %010b %010b", typ, got.allowed, got.required, want.allowed, want.required)
		}
	}
	eventNames := map[uint16]string{evComputerUseSessionID: "computerUseSessionId", evActionID: "actionId", evActionType: "actionType",
		evRiskLevel: "riskLevel", evURL: "url", evSummary: "summary", evWidth: "width", evHeight: "height", evDecision: "decision",
		evStatus: "status", evCode: "code", evMessage: "message", evTimestamp: "timestamp"}
	for _, typ := range contract.EventTypes() {
		var got struct{ allowed, required uint16 }
		for bit := range eventNames {
			ev := contract.StreamEvent{Type: typ}
			setEventMember(&ev, bit, g)
			// A required url left nil is refused too, for another reason.
			if _, err := ev.MarshalJSON(); err == nil || !strings.Contains(err.Error(), "does not belong") {
				got.allowed |= bit
			}
		}
		for bit, name := range eventNames {
			if got.allowed&bit == 0 {
				continue
			}
			ev := contract.StreamEvent{Type: typ}
			for other := range eventNames {
				if other != bit && got.allowed&other != 0 {
					setEventMember(&ev, other, g)
				}
			}
			b, err := ev.MarshalJSON()
			if err != nil || names(b)[name] {
				got.required |= bit
			}
		}
		if want := eventMembers[typ]; got != want {
			t.Errorf("event %s: got allowed %013b required %013b from contract, recfast.go has %013b %013b", typ, got.allowed, got.required, want.allowed, want.required)
		}
	}
}

// withScratch runs f with a scratch of the pool, as the Writer methods do.
func withScratch(f func(sc *obsScratch) ([]byte, rec, bool, error)) ([]byte, rec, bool, error) {
	sc := getRecScratch()
	defer putRecScratch(sc)
	return f(sc)
}

// BenchmarkRecords measures the CPU cost of preparing each small record
// (encoding, masking, parsing, validating: what its Writer method pays
// before it writes), on the general path and on the fast one, without
// secrets and with a few.
func BenchmarkRecords(b *testing.B) {
	click := contract.Action{ID: "a1", Type: contract.ActClick, Reason: "open the pricing page", Selector: "#pricing", PolicyTags: []string{"navigation"}}
	dec := decision("d1", click, contract.ResultAllowed)
	dec.Reasons = nil
	res := result(click, true)
	lat := 12.5
	res.InputLatencyMs, res.CaptureLatencyMs = &lat, &lat
	url := "https://example.com/pricing"
	ev := contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: contract.ActClick, RiskLevel: contract.RiskLow,
		URL: &url, Summary: "click #pricing", Timestamp: "2026-01-23T10:15:04Z"}
	mc := modelCall(1, contract.ModelPurposeNavigate)
	plain, withSecrets := benchMaskers(b)
	records := []struct {
		name    string
		general func(m *masker) ([]byte, rec, bool, error)
		fast    func(m *masker) ([]byte, rec, bool, error)
	}{
		{"decision",
			func(m *masker) ([]byte, rec, bool, error) { return prepareRecord(string(schemas.KindDecision), dec, m) },
			func(m *masker) ([]byte, rec, bool, error) {
				return withScratch(func(sc *obsScratch) ([]byte, rec, bool, error) { return prepareDecision(&dec, m, sc) })
			}},
		{"action",
			func(m *masker) ([]byte, rec, bool, error) {
				return prepareRecord("", actionLine{Action: click, Result: res}, m)
			},
			func(m *masker) ([]byte, rec, bool, error) {
				return withScratch(func(sc *obsScratch) ([]byte, rec, bool, error) { return prepareActionLine(&click, &res, m, sc) })
			}},
		{"event",
			func(m *masker) ([]byte, rec, bool, error) { return prepareRecord(string(schemas.KindEvent), ev, m) },
			func(m *masker) ([]byte, rec, bool, error) {
				return withScratch(func(sc *obsScratch) ([]byte, rec, bool, error) { return prepareEvent(&ev, m, sc) })
			}},
		{"modelcall",
			func(m *masker) ([]byte, rec, bool, error) { return prepareRecord(string(schemas.KindModelCall), mc, m) },
			func(m *masker) ([]byte, rec, bool, error) {
				return withScratch(func(sc *obsScratch) ([]byte, rec, bool, error) { return prepareModelCall(&mc, m, sc) })
			}},
	}
	for _, rc := range records {
		for _, mk := range []struct {
			name string
			m    *masker
		}{{"no-secrets", plain}, {"secrets", withSecrets}} {
			for _, path := range []struct {
				name string
				f    func(m *masker) ([]byte, rec, bool, error)
			}{{"general", rc.general}, {"fast", rc.fast}} {
				b.Run(rc.name+"/"+mk.name+"/"+path.name, func(b *testing.B) {
					b.ReportAllocs()
					defer reportCPU(b)()
					for i := 0; i < b.N; i++ {
						canon, _, _, err := path.f(mk.m)
						if err != nil {
							b.Fatal(err)
						}
						b.SetBytes(int64(len(canon)))
					}
				})
			}
		}
	}
}

// TestWriterRecordsInParallel writes the same session with secrets
// through several writers at once (the scratch pool is shared by all):
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
