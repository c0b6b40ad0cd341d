package audit

import (
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestDecisionApprovalChannel: the report's approval line says where the
// approval was given when the approval names its channel.
func TestDecisionApprovalChannel(t *testing.T) {
	approved := func(ch contract.ApprovalChannel, result contract.DecisionResult) contract.DecisionRecord {
		return contract.DecisionRecord{Result: result, Approval: &contract.ApprovalRef{Approver: "alice", ApprovedAt: "2026-01-23T10:15:02Z", Channel: ch}}
	}
	for _, tt := range []struct {
		d    contract.DecisionRecord
		want string
	}{
		{approved(contract.ApprovalChannelLive, contract.ResultApproved), "approved by alice in the live console at 2026-01-23T10:15:02Z"},
		{approved(contract.ApprovalChannelPopup, contract.ResultApproved), "approved by alice in the extension's popup at"},
		{approved(contract.ApprovalChannelTerminal, contract.ResultApproved), "approved by alice at the terminal at"},
		{approved(contract.ApprovalChannelRule, contract.ResultApproved), "approved by alice (a rule: no person was asked) at"},
		{approved("", contract.ResultApproved), "approved by alice at 2026-01-23T10:15:02Z"},
		{approved(contract.ApprovalChannelPopup, contract.ResultDenied), "an approval by alice in the extension's popup was presented and refused"},
	} {
		if got := decisionFacts(tt.d).Approval; !strings.HasPrefix(got, tt.want) {
			t.Errorf("approval line %q, want it to start %q", got, tt.want)
		}
	}
}
