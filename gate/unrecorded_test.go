package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestUnrecordedActionDenied: an action the policy lets run or pause is
// denied, for action_unrecorded alone, when its decision cannot record the
// action or the active URL: the evidence could not check that what runs is
// what was decided (evidence/FORMAT.md, section 8, rule 15). A recordable
// one records both; a probe (nothing runs on it) is judged as it is.
func TestUnrecordedActionDenied(t *testing.T) {
	long := "https://shop.example/cart?q=" + strings.Repeat("x", maxRecordedURL)
	cases := []struct {
		name         string
		mutate       func(*Request)
		wantRecorded bool
		anyDeny      bool // the embedded policy denies it already (url_invalid): any denial will do
	}{
		{"plain click", nil, true, false},
		{"active URL over 2048 characters", func(r *Request) { r.ActiveURL = long }, false, true},
		{"navigate to a URL browser-action refuses", navigateTo("https://sh%6Fp.example/"), false, false},
		{"click with redact", func(r *Request) { r.Action.Redact = true }, false, false},
		{"click with redact, asked as a probe", func(r *Request) { r.Action.Redact, r.Probe = true, true }, true, false},
		{"high-risk click with redact (would pause)", func(r *Request) {
			r.Action.Redact = true
			r.Target = &contract.Element{Tag: "button", Type: "submit", ID: "pay", Text: "Pay now"}
			r.Action.Selector = "#pay"
		}, false, false},
	}
	g := sharedGate(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest()
			if tc.mutate != nil {
				tc.mutate(&req)
			}
			d := g.Decide(context.Background(), req)
			if tc.wantRecorded {
				if !d.Allow || (!req.Probe && (d.Action == nil || d.ActiveURL == nil)) {
					t.Fatalf("got %s %v, action %v, activeUrl %v; want allowed, with both recorded unless a probe", d.Result, d.Reasons, d.Action, d.ActiveURL)
				}
				return
			}
			if tc.anyDeny && d.Result == contract.ResultDenied {
				return
			}
			if got, want := ruleNames(d.Reasons), []string{RuleActionUnrecorded}; d.Allow || len(got) != 1 || got[0] != want[0] {
				t.Fatalf("got %s %v, want denied for %v alone", d.Result, got, want)
			}
		})
	}
}
