package navigator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

func mustSteps(t *testing.T, opts navigator.StepsOptions, lines ...string) *navigator.Steps {
	t.Helper()
	steps, err := navigator.ParseSteps(lines)
	if err != nil {
		t.Fatal(err)
	}
	s, err := navigator.NewSteps(steps, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// brief renders a batch compactly: "type #username alice; click #sign-in".
func brief(actions []contract.Action) string {
	var parts []string
	for _, a := range actions {
		s := string(a.Type)
		switch a.Type {
		case contract.ActNavigate:
			s += " " + a.URL
		case contract.ActClick:
			s += " " + a.Selector
		case contract.ActType:
			s += fmt.Sprintf(" %s %s redact=%v", a.Selector, a.Text, a.Redact)
		case contract.ActSelect:
			s += " " + a.Selector + " " + a.Value
		case contract.ActScroll:
			s += fmt.Sprintf(" %s %d", a.Direction, a.AmountPx)
		case contract.ActWait:
			s += fmt.Sprintf(" %dms", a.DurationMs)
		case contract.ActExtract:
			s += " " + string(a.Extract) + " " + a.Selector
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func TestStepsBatches(t *testing.T) {
	s := mustSteps(t, navigator.StepsOptions{BaseURL: "http://shop.test/"},
		`navigate /login`,
		`type "alice" into "username"`,
		`type "{{secret:PASSWORD}}" into "Password"`,
		`click "Sign in"`,
		`expect "Signed in as alice"`,
	)
	ctx := context.Background()
	blank := page(t, "about:blank", "")
	signedIn := page(t, "http://shop.test/account", "Account\nSigned in as  ALICE")
	tests := []struct {
		obs        contract.Observation
		want       string
		wantStatus contract.Status
	}{
		{blank, "navigate http://shop.test/login", contract.StatusContinue},
		{loginPage(t), "type #username alice redact=false; type #password {{secret:PASSWORD}} redact=true; click #sign-in", contract.StatusContinue},
		{signedIn, "wait 1ms", contract.StatusDone},
	}
	for i, tc := range tests {
		resp, err := s.Next(ctx, navigator.Request{Step: i + 1, Observation: tc.obs})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if got := brief(resp.Actions); got != tc.want || resp.Status != tc.wantStatus {
			t.Errorf("call %d = %q %s, want %q %s", i+1, got, resp.Status, tc.want, tc.wantStatus)
		}
		if len(resp.Calls) != 0 {
			t.Errorf("offline navigator recorded model calls")
		}
	}
	if _, err := s.Next(ctx, navigator.Request{Observation: signedIn}); !errors.Is(err, navigator.ErrFinished) {
		t.Errorf("after done: err = %v, want ErrFinished", err)
	}
}

func TestStepsMaxBatchOne(t *testing.T) {
	s := mustSteps(t, navigator.StepsOptions{MaxBatch: 1}, `type "a" into "Username"`, `type "b" into "Password"`)
	for i, want := range []string{"type #username a redact=false", "type #password b redact=false"} {
		resp, err := s.Next(context.Background(), navigator.Request{Observation: loginPage(t)})
		if err != nil || brief(resp.Actions) != want {
			t.Fatalf("call %d = %q, %v; want %q", i, brief(resp.Actions), err, want)
		}
	}
}

func TestStepsExpectWaitsThenFails(t *testing.T) {
	s := mustSteps(t, navigator.StepsOptions{ExpectRounds: 2, ExpectWait: 200e6}, `expect "Thank you"`, `click "Sign in"`)
	o := page(t, "http://shop.test/form", "Placing your order...")
	for i := 1; i <= 2; i++ {
		resp, err := s.Next(context.Background(), navigator.Request{Observation: o})
		if err != nil || brief(resp.Actions) != "wait 200ms" || resp.Actions[0].ID != fmt.Sprintf("step1-wait%d", i) {
			t.Fatalf("round %d = %q (%v), %v", i, brief(resp.Actions), resp.Actions, err)
		}
	}
	_, err := s.Next(context.Background(), navigator.Request{Observation: o})
	var ee *navigator.ExpectError
	var se *navigator.StepError
	if !errors.As(err, &ee) || !errors.As(err, &se) || !errors.Is(err, navigator.ErrExpectFailed) {
		t.Fatalf("err = %v, want a StepError wrapping an ExpectError", err)
	}
	if ee.Rounds != 3 || se.Step.Line != 1 || !strings.Contains(err.Error(), `step 1 (expect "Thank you"): expected text "Thank you" is not on the page http://shop.test/form after 3 observations`) {
		t.Errorf("err = %v", err)
	}
}

func TestStepsExpectFoundLater(t *testing.T) {
	s := mustSteps(t, navigator.StepsOptions{}, `expect "Thank you"`, `click "Sign in"`)
	if resp, err := s.Next(context.Background(), navigator.Request{Observation: page(t, "http://shop.test/", "loading")}); err != nil || resp.Actions[0].Type != contract.ActWait {
		t.Fatalf("first = %v, %v", resp, err)
	}
	o := loginPage(t)
	o.DOMText = "Thank you, alice!"
	resp, err := s.Next(context.Background(), navigator.Request{Observation: o})
	if err != nil || brief(resp.Actions) != "click #sign-in" || resp.Status != contract.StatusDone {
		t.Fatalf("second = %q %s, %v", brief(resp.Actions), resp.Status, err)
	}
}

func TestStepsTargetErrors(t *testing.T) {
	dup := page(t, "http://shop.test/widgets", "",
		aff(":root > body > main > button:nth-of-type(4)", "button", "Duplicate", contract.HintClick),
		aff(":root > body > main > button:nth-of-type(5)", "button", "Duplicate", contract.HintClick),
		aff("#sign-out", "button", "Sign out", contract.HintClick),
		aff("#sign-in", "button", "Sign in", contract.HintClick),
	)
	tests := []struct {
		step      string
		obs       contract.Observation
		ambiguous bool
		want      string
	}{
		{`click "Duplicate"`, dup, true, `target "Duplicate" is ambiguous: 2 elements match (exact match): "Duplicate" (button :root > body > main > button:nth-of-type(4)), "Duplicate" (button :root > body > main > button:nth-of-type(5))`},
		{`click "sign"`, dup, true, `2 elements match (substring match): "Sign out" (button #sign-out), "Sign in" (button #sign-in)`},
		{`click "Checkout"`, loginPage(t), false, `no element to click named "Checkout" on the page; closest: `},
		{`type "x" into "Sign in"`, loginPage(t), false, `no field to type into named "Sign in" on the page; closest: "Username" (textbox #username), "Password" (textbox #password); "Sign in" is a button (#sign-in), not field to type into`},
		{`select "Express" in "Shipping"`, loginPage(t), false, `no select element named "Shipping" on the page`},
		{`extract table "Orders"`, loginPage(t), false, `no table named "Orders" on the page; the page has no table`},
	}
	for _, tc := range tests {
		s := mustSteps(t, navigator.StepsOptions{}, tc.step)
		_, err := s.Next(context.Background(), navigator.Request{Observation: tc.obs})
		var te *navigator.TargetError
		if !errors.As(err, &te) || te.Ambiguous != tc.ambiguous {
			t.Errorf("%s: err = %v, want a TargetError (ambiguous %v)", tc.step, err, tc.ambiguous)
			continue
		}
		if tc.ambiguous != errors.Is(err, navigator.ErrTargetAmbiguous) || tc.ambiguous == errors.Is(err, navigator.ErrTargetNotFound) {
			t.Errorf("%s: errors.Is does not match the kind", tc.step)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "step 1 (") {
			t.Errorf("%s:\n got %v\nwant %s", tc.step, err, tc.want)
		}
	}
}

func TestStepsMatchLevels(t *testing.T) {
	o := page(t, "http://shop.test/", "",
		aff("#order", "link", "Order", contract.HintClick),
		aff("#orders", "link", "Orders", contract.HintClick),
		aff("#your", "link", "Your   orders", contract.HintClick),
		aff("#place", "link", "Place an order", contract.HintClick),
	)
	tests := []struct{ target, want string }{
		{"order", "#order"},           // exact, ignoring case, beats the substrings
		{"ORDERS", "#orders"},         // exact
		{"your orders", "#your"},      // normalized white space
		{"place an", "#place"},        // substring, unique
		{"css=#custom", "#custom"},    // selector as is
		{"  Orders  ", "#orders"},     // the step's name is trimmed
		{"Place  An Order", "#place"}, // normalized
	}
	for _, tc := range tests {
		s := mustSteps(t, navigator.StepsOptions{}, fmt.Sprintf("click %q", tc.target))
		resp, err := s.Next(context.Background(), navigator.Request{Observation: o})
		if err != nil || resp.Actions[0].Selector != tc.want {
			t.Errorf("click %q = %v, %v; want %s", tc.target, resp.Actions, err, tc.want)
		}
	}
}

func TestStepsFeedbackStops(t *testing.T) {
	s := mustSteps(t, navigator.StepsOptions{}, `click "Sign in"`, `click "Orders"`)
	if _, err := s.Next(context.Background(), navigator.Request{Observation: loginPage(t)}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Next(context.Background(), navigator.Request{Observation: loginPage(t), Feedback: []navigator.Feedback{
		{ActionID: "step1", Kind: navigator.FeedbackDenied, Code: "deny.origin", Reasons: []string{"origin not allowed"}},
	}})
	var re *navigator.RejectedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `step 1 (click "Sign in"): the previous batch did not complete: action step1 denied (deny.origin): origin not allowed`) {
		t.Errorf("err = %v", err)
	}
}

func TestStepsRelativeURL(t *testing.T) {
	tests := []struct {
		base, current, ref, want, wantErr string
	}{
		{"http://shop.test/", "about:blank", "/login", "http://shop.test/login", ""},
		{"", "http://127.0.0.1:8080/form", "/orders?x=1", "http://127.0.0.1:8080/orders?x=1", ""},
		{"http://other.test/", "https://shop.test/a/b", "/c", "https://shop.test/c", ""},
		{"", "about:blank", "/login", "", "no base URL is set"},
		{"", "about:blank", "https://shop.test/x", "https://shop.test/x", ""},
	}
	for _, tc := range tests {
		s := mustSteps(t, navigator.StepsOptions{BaseURL: tc.base}, "navigate "+tc.ref)
		resp, err := s.Next(context.Background(), navigator.Request{Observation: page(t, tc.current, "")})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("navigate %s from %s: err = %v, want %q", tc.ref, tc.current, err, tc.wantErr)
			}
			continue
		}
		if err != nil || resp.Actions[0].URL != tc.want {
			t.Errorf("navigate %s from %s = %v, %v; want %s", tc.ref, tc.current, resp.Actions, err, tc.want)
		}
	}
	if _, err := navigator.NewSteps([]navigator.Step{{Op: navigator.OpWait, Amount: 1}}, navigator.StepsOptions{BaseURL: "file:///etc"}); err == nil {
		t.Error("file base URL accepted")
	}
}

func TestStepsUnknownSecret(t *testing.T) {
	set, _ := secrets.NewSet(map[string]string{"PASSWORD": "pw-123456"})
	steps, _ := navigator.ParseSteps([]string{`type "{{secret:PASSWRD}}" into "Password"`})
	_, err := navigator.NewSteps(steps, navigator.StepsOptions{Secrets: set})
	var ue *secrets.UnknownError
	if !errors.As(err, &ue) || ue.Name != "PASSWRD" {
		t.Errorf("err = %v, want unknown secret PASSWRD", err)
	}
}

func TestScript(t *testing.T) {
	var script []map[string]any
	for i := 1; i <= 12; i++ {
		script = append(script, map[string]any{"id": fmt.Sprintf("a%d", i), "type": "wait", "reason": "r", "policyTags": []string{}, "durationMs": i})
	}
	script[3]["id"] = "a1" // a duplicate id splits the batch
	script = append(script, map[string]any{"id": "pw", "type": "type", "reason": "r", "policyTags": []string{}, "selector": "#password", "text": "{{secret:PASSWORD}}", "redact": false})
	hints, _ := json.Marshal(map[string]any{"script": script})
	s, err := navigator.NewScriptFromHints(hints, navigator.ScriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var last navigator.Response
	for {
		resp, err := s.Next(context.Background(), navigator.Request{Observation: loginPage(t)})
		if errors.Is(err, navigator.ErrFinished) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(resp.Actions))
		last = resp
	}
	if fmt.Sprint(sizes) != "[3 10]" {
		t.Errorf("batch sizes = %v, want [3 10]", sizes)
	}
	pw := last.Actions[len(last.Actions)-1]
	if last.Status != contract.StatusDone || !pw.Redact || pw.Text != "{{secret:PASSWORD}}" {
		t.Errorf("last batch = %s %+v", last.Status, pw)
	}
}

func TestScriptErrors(t *testing.T) {
	tests := []struct{ hints, want string }{
		{`{"script":[{"id":"a","type":"click","reason":"r","policyTags":[],"selector":"#x","url":"http://x/"}]}`, "script action 0"},
		{`{"script":[{"id":"a","type":"wait","reason":"r","policyTags":[],"durationMs":5},{"id":"b","type":"hover"}]}`, "script action 1"},
		{`{"script":[]}`, "no actions"},
		{`{"script":{}}`, "want a JSON array"},
		{`{"script":[{"id":"a","type":"navigate","reason":"r","policyTags":[],"url":"http://x/?{{secret:T}}"}]}`, "secret placeholders are allowed only in the text of a type action"},
		{`{"steps":[]}`, "hints.script is missing"},
	}
	for _, tc := range tests {
		_, err := navigator.NewScriptFromHints(json.RawMessage(tc.hints), navigator.ScriptOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewScriptFromHints(%s) = %v, want %q", tc.hints, err, tc.want)
		}
	}
	s, err := navigator.NewScript([]contract.Action{{ID: "a", Type: contract.ActWait, Reason: "r", DurationMs: 1}}, navigator.ScriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background(), navigator.Request{Feedback: []navigator.Feedback{{ActionID: "a", Kind: navigator.FeedbackError, Message: "boom"}}}); err == nil {
		t.Error("feedback ignored")
	}
}

func TestValidate(t *testing.T) {
	set, _ := secrets.NewSet(map[string]string{"PASSWORD": "pw-123456"})
	typ := func(text string) contract.Action {
		return contract.Action{ID: "t", Type: contract.ActType, Reason: "r", Selector: "#p", Text: text}
	}
	tests := []struct {
		name    string
		actions []contract.Action
		want    string // "" = valid
	}{
		{"ok", []contract.Action{typ("alice")}, ""},
		{"placeholder redacted", []contract.Action{typ("{{secret:PASSWORD}}")}, ""},
		{"unknown secret", []contract.Action{typ("{{secret:TOKEN}}")}, "/actions/0/text: unknown secret TOKEN: the known secrets are PASSWORD"},
		{"malformed placeholder", []contract.Action{typ("{{secret:pw}}")}, "/actions/0/text: malformed secret placeholder"},
		{"placeholder in url", []contract.Action{{ID: "n", Type: contract.ActNavigate, Reason: "r", URL: "https://x.test/?p={{secret:PASSWORD}}"}}, "/actions/0/url: secret placeholders are allowed only"},
		{"placeholder in select", []contract.Action{{ID: "n", Type: contract.ActSelect, Reason: "r", Selector: "#s", Value: "{{secret:PASSWORD}}"}}, "/actions/0/value"},
		{"duplicate ids", []contract.Action{typ("a"), typ("b")}, "/actions/1/id: duplicate action id \"t\""},
		{"empty batch", []contract.Action{}, "/actions: minimum 1 items"},
		{"null batch", nil, "/actions: expected array"},
		{"eleven", func() []contract.Action {
			var as []contract.Action
			for i := 0; i < 11; i++ {
				as = append(as, contract.Action{ID: fmt.Sprint("w", i), Type: contract.ActWait, Reason: "r", DurationMs: 1})
			}
			return as
		}(), "/actions: 11 actions: at most 10"},
		{"wait too long", []contract.Action{{ID: "w", Type: contract.ActWait, Reason: "r", DurationMs: 600000}}, "/actions/0/durationMs"},
	}
	for _, tc := range tests {
		out, err := navigator.Validate(contract.NavigatorResponse{Actions: tc.actions, Status: contract.StatusContinue}, set)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			for _, a := range out.Actions {
				if secrets.Contains(a.Text) && !a.Redact {
					t.Errorf("%s: placeholder not redacted", tc.name)
				}
			}
			continue
		}
		problems := llm.ProblemsOf(err)
		var all []string
		for _, p := range problems {
			all = append(all, p.String())
		}
		if err == nil || !strings.Contains(strings.Join(all, "\n"), tc.want) {
			t.Errorf("%s: problems %v, want %q", tc.name, all, tc.want)
		}
	}
}

func TestEncodeObservation(t *testing.T) {
	var affs []contract.Affordance
	for i := 0; i < 40; i++ {
		affs = append(affs, aff(fmt.Sprintf("#b%d", i), "button", fmt.Sprintf("Button <%d> & \"more\"", i), contract.HintClick))
	}
	o := page(t, "http://shop.test/big", strings.Repeat("Some visible text é ", 4000), affs...)
	o.DOMSnapshot = strings.Repeat(`["div",{"class":"x<y"},"text"]`, 5000)
	o.ExtractedArtifacts = []contract.Artifact{{ID: "art-1", Type: contract.ArtifactTable, Value: strings.Repeat("row;", 3000), SourceURL: "http://shop.test/big", Hash: strings.Repeat("cd", 32)}}
	full, _ := json.Marshal(o)
	tests := []struct {
		budget                 int
		snap, text, arts, over bool
	}{
		{len(full) + 10, false, false, false, false},
		{len(full) - 1000, true, false, false, false},
		{60000, true, true, false, false},
		{9000, true, true, true, false},
		{3000, true, true, true, true}, // the affordances alone are larger
	}
	for _, tc := range tests {
		b, tr, err := navigator.EncodeObservation(o, tc.budget, nil)
		if err != nil {
			t.Fatalf("budget %d: %v", tc.budget, err)
		}
		if err := schemas.Validate(schemas.KindObservation, b); err != nil {
			t.Errorf("budget %d: trimmed document invalid: %v", tc.budget, err)
		}
		if tr.Bytes != len(b) || (len(b) > tc.budget) != tc.over || tr.OverBudget != tc.over {
			t.Errorf("budget %d: %d bytes, report %+v", tc.budget, len(b), tr)
		}
		if tr.Snapshot != tc.snap || tr.Text != tc.text || tr.Artifacts != tc.arts {
			t.Errorf("budget %d: trimmed %+v, want snapshot %v text %v artifacts %v", tc.budget, tr, tc.snap, tc.text, tc.arts)
		}
		var got contract.Observation
		if err := contract.Decode(schemas.KindObservation, b, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Affordances) != len(affs) || got.Affordances[39] != affs[39] {
			t.Errorf("budget %d: affordances cut", tc.budget)
		}
		if tc.text && got.DOMText != "" && !strings.HasSuffix(got.DOMText, navigator.TextTrimmedMarker) {
			t.Errorf("budget %d: trimmed text has no marker", tc.budget)
		}
		if !tc.snap && got.DOMSnapshot != o.DOMSnapshot {
			t.Errorf("budget %d: snapshot changed", tc.budget)
		}
		if tc.snap && !tc.text && (got.DOMText != o.DOMText || !strings.HasSuffix(got.DOMSnapshot, navigator.SnapshotTrimmedMarker)) {
			t.Errorf("budget %d: the text was cut before the snapshot was", tc.budget)
		}
	}
}

func TestEncodeObservationScrubsSecrets(t *testing.T) {
	set, _ := secrets.NewSet(map[string]string{"USER": "alice-the-admin"})
	o := page(t, "http://shop.test/account?u=alice-the-admin", "Signed in as alice-the-admin",
		aff("#who", "button", "alice-the-admin menu", contract.HintClick))
	o.DOMSnapshot = `{"root":["input",{"$value":"alice-the-admin"}]}`
	b, _, err := navigator.EncodeObservation(o, 0, set)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "alice-the-admin") || !strings.Contains(string(b), "{{secret:USER}}") {
		t.Errorf("secret not scrubbed: %s", b)
	}
}

// TestStepsGoOnAfterAnEffectDenied: feedback that only says an effect of
// an action was refused (the action ran) does not stop the offline
// agents; a denial or an error does.
func TestStepsGoOnAfterAnEffectDenied(t *testing.T) {
	for _, tt := range []struct {
		name string
		fb   []navigator.Feedback
		want bool
	}{
		{"none", nil, false},
		{"effect only", []navigator.Feedback{{ActionID: "step1", Kind: navigator.FeedbackEffect, Code: "effect_refused"}}, false},
		{"denied", []navigator.Feedback{{ActionID: "step1", Kind: navigator.FeedbackDenied, Code: "origin_not_allowed"}}, true},
		{"effect and error", []navigator.Feedback{{ActionID: "step1", Kind: navigator.FeedbackEffect}, {ActionID: "step2", Kind: navigator.FeedbackError, Code: "timeout"}}, true},
	} {
		if got := navigator.Stops(tt.fb); got != tt.want {
			t.Errorf("%s: Stops = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestStepsPreferControlToGeneric resolves a name that a control and
// elements listed only for an event handler share to the control when
// the generic ones are listed right after it (where the observer lists
// the containers of a control), and stays ambiguous when two controls
// share it or a generic one is listed elsewhere (page content next to a
// widget, such as a post's "Delete" link and the widget's generic
// "Delete").
func TestStepsPreferControlToGeneric(t *testing.T) {
	generic := func(a contract.Affordance) contract.Affordance { a.Generic = true; return a }
	tests := []struct {
		name string
		affs []contract.Affordance
		want string // "" when ambiguous
	}{
		{"control after a generic", []contract.Affordance{
			aff("#cb", "checkbox", "Accept terms", contract.HintClick),
			generic(aff("#cb-label", "", "Accept terms", contract.HintClick)),
		}, "click #cb"},
		{"generic before the control", []contract.Affordance{
			generic(aff("#row", "", "Accept terms", contract.HintClick)),
			aff("#cb", "checkbox", "Accept terms", contract.HintClick),
		}, ""},
		{"nested containers after the control", []contract.Affordance{
			aff("#other", "button", "Cancel", contract.HintClick),
			aff("#cb", "checkbox", "Accept terms", contract.HintClick),
			generic(aff("#inner", "", "", contract.HintClick)),
			generic(aff("#row", "", "Accept terms", contract.HintClick)),
			generic(aff("#card", "", "Accept terms", contract.HintClick)),
		}, "click #cb"},
		{"a control between", []contract.Affordance{
			aff("#cb", "checkbox", "Accept terms", contract.HintClick),
			aff("#other", "button", "Cancel", contract.HintClick),
			generic(aff("#row", "", "Accept terms", contract.HintClick)),
		}, ""},
		{"a post's link and the widget's generic", []contract.Affordance{
			aff("#post-link", "link", "Accept terms", contract.HintClick),
			aff("#reply", "button", "Reply", contract.HintClick),
			generic(aff("#widget-accept", "", "Accept terms", contract.HintClick)),
		}, ""},
		{"a post's link right before the widget's generic", []contract.Affordance{
			generic(aff("#widget-accept", "", "Accept terms", contract.HintClick)),
			aff("#post-link", "link", "Accept terms", contract.HintClick),
			generic(aff("#widget-row", "", "", contract.HintClick)),
		}, ""},
		{"a lone generic", []contract.Affordance{
			generic(aff("#row", "", "Accept terms", contract.HintClick)),
			aff("#other", "button", "Cancel", contract.HintClick),
		}, "click #row"},
		{"two controls", []contract.Affordance{
			aff("#a", "checkbox", "Accept terms", contract.HintClick),
			aff("#b", "checkbox", "Accept terms", contract.HintClick),
			generic(aff("#row", "", "Accept terms", contract.HintClick)),
		}, ""},
		{"a generic matching better", []contract.Affordance{
			generic(aff("#row", "", "Accept terms", contract.HintClick)),
			aff("#cb", "checkbox", "Accept terms and conditions", contract.HintClick),
		}, "click #row"},
	}
	for _, tc := range tests {
		s := mustSteps(t, navigator.StepsOptions{}, `click "Accept terms"`)
		resp, err := s.Next(context.Background(), navigator.Request{Observation: page(t, "http://shop.test/", "", tc.affs...)})
		if tc.want == "" {
			if !errors.Is(err, navigator.ErrTargetAmbiguous) {
				t.Errorf("%s: err = %v, want ambiguous", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := brief(resp.Actions); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestGenericMarkReachesTheModel checks that an affordance listed only
// for an event handler reaches the model marked "generic": true after its
// control, that a control carries no mark, and that the system prompt
// tells the model what the mark means.
func TestGenericMarkReachesTheModel(t *testing.T) {
	bar := aff("#titlebar", "", "Settings", contract.HintClick)
	bar.Generic = true
	o := page(t, "http://shop.test/dialog", "Settings Close", aff("#close", "button", "Close", contract.HintClick), bar)
	b, _, err := navigator.EncodeObservation(o, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"selector":"#close","role":"button","text":"Close","actionHint":"click"}`,
		`{"selector":"#titlebar","text":"Settings","actionHint":"click","generic":true}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the observation lacks %s:\n%s", want, b)
		}
	}
	if !strings.Contains(navigator.SystemPrompt, `"generic": true is not a control`) {
		t.Error("the system prompt does not explain the generic mark")
	}
}

// TestScriptResumesSkipped: the actions of a batch that the session
// skipped are handed out again, in order, before the rest.
func TestScriptResumesSkipped(t *testing.T) {
	var script []contract.Action
	for i := 1; i <= 5; i++ {
		script = append(script, contract.Action{ID: fmt.Sprintf("a%d", i), Type: contract.ActWait, Reason: "r", PolicyTags: []string{}, DurationMs: i})
	}
	s, err := navigator.NewScript(script, navigator.ScriptOptions{MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	var progress []navigator.Progress
	ask := func(step int, ran int) (ids string, status contract.Status, err error) {
		resp, err := s.Next(context.Background(), navigator.Request{Step: step, Progress: progress})
		if err != nil {
			return "", "", err
		}
		var out []string
		for i, a := range resp.Actions {
			out = append(out, a.ID)
			o := navigator.OutcomeOK
			if i >= ran {
				o = navigator.OutcomeSkipped
			}
			progress = append(progress, navigator.Progress{Step: step, Action: a, Outcome: o})
		}
		if it := s.Item(0); it.N != 0 && it.String() != fmt.Sprintf("script %d/5", it.N) {
			t.Errorf("item %v", it)
		}
		return strings.Join(out, " "), resp.Status, nil
	}
	tests := []struct {
		ran        int // how many of the answer's actions run; the rest are skipped
		want       string
		wantStatus contract.Status
		wantItem   string
	}{
		{1, "a1 a2 a3 a4", contract.StatusContinue, "script 1/5"},
		{0, "a2 a3 a4 a5", contract.StatusDone, "script 2/5"},
		{2, "a2 a3 a4 a5", contract.StatusDone, "script 2/5"},
		{3, "a4 a5", contract.StatusDone, "script 4/5"},
	}
	for i, tc := range tests {
		got, status, err := ask(i+1, tc.ran)
		if err != nil || got != tc.want || status != tc.wantStatus || s.Item(0).String() != tc.wantItem {
			t.Fatalf("answer %d = %q %s %v (item %s), want %q %s (item %s)", i+1, got, status, err, s.Item(0), tc.want, tc.wantStatus, tc.wantItem)
		}
	}
	if _, _, err := ask(len(tests)+1, 0); !errors.Is(err, navigator.ErrFinished) {
		t.Errorf("after the last action ran: %v, want ErrFinished", err)
	}
}

// TestStepsResumeSkipped: the steps whose actions the session skipped
// are carried out again, resolved on the page now, before the rest; a
// skipped final answer is given again.
func TestStepsResumeSkipped(t *testing.T) {
	s := mustSteps(t, navigator.StepsOptions{},
		`type "alice" into "username"`,
		`type "pw" into "Password"`,
		`click "Sign in"`,
	)
	ctx := context.Background()
	var progress []navigator.Progress
	tests := []struct {
		ran        int // how many of the answer's actions ran; the rest were skipped
		want       string
		wantStatus contract.Status
		wantItem   string
	}{
		{1, "type #username alice redact=false; type #password pw redact=false; click #sign-in", contract.StatusDone, "steps 1/3"},
		{1, "type #password pw redact=false; click #sign-in", contract.StatusDone, "steps 2/3"},
		{1, "click #sign-in", contract.StatusDone, "steps 3/3"},
	}
	for i, tc := range tests {
		resp, err := s.Next(ctx, navigator.Request{Step: i + 1, Progress: progress, Observation: loginPage(t)})
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if got := brief(resp.Actions); got != tc.want || resp.Status != tc.wantStatus || s.Item(0).String() != tc.wantItem {
			t.Errorf("call %d = %q %s (item %s), want %q %s (item %s)", i+1, got, resp.Status, s.Item(0), tc.want, tc.wantStatus, tc.wantItem)
		}
		for j, a := range resp.Actions {
			o := navigator.OutcomeOK
			if j >= tc.ran {
				o = navigator.OutcomeSkipped
			}
			progress = append(progress, navigator.Progress{Step: i + 1, Action: a, Outcome: o})
		}
	}
	if _, err := s.Next(ctx, navigator.Request{Step: len(tests) + 1, Progress: progress, Observation: loginPage(t)}); !errors.Is(err, navigator.ErrFinished) {
		t.Errorf("after every step ran: err = %v, want ErrFinished", err)
	}
}
