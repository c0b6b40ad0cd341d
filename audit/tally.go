package audit

import "github.com/aegis-run/aegis/contract"

// Tally is what a session did, counted as the report's summary counts it
// ("5 actions proposed: 4 executed, 1 not executed (denied); 1 approved"):
// the one count the report and a suite's index (package suite) share.
type Tally struct {
	// Proposed counts the proposed actions: the steps.
	Proposed int
	// Executed counts those that ran; Denied those that did not (denied
	// by the policy, or refused: an approval not given, a secret
	// misdirected).
	Executed, Denied int
	// Approved counts the step decisions that approved an action.
	Approved int
}

// Tally counts the bundle's steps as the report's summary does.
func (b *Bundle) Tally() Tally {
	var t Tally
	for _, s := range b.Steps {
		t.Proposed++
		if s.Executed() {
			t.Executed++
		} else {
			t.Denied++
		}
		for _, d := range s.Decisions {
			t.Approved += boolInt(approves(d))
		}
	}
	return t
}

// approves reports whether d approved its action with an approval.
func approves(d contract.DecisionRecord) bool {
	return d.Approval != nil && d.Result == contract.ResultApproved
}
