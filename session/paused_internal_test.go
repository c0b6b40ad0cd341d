package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
)

// TestIntentKey: what the model or the page may vary at will (the
// selector's spelling for the same element, the page's query and
// fragment) does not make a refused action new; what it does does.
func TestIntentKey(t *testing.T) {
	pay := &contract.Element{Tag: "button", ID: "pay", Text: "Pay now"}
	other := &contract.Element{Tag: "button", ID: "pay", Text: "Pay later"}
	click := func(sel string) contract.Action {
		return contract.Action{ID: "a", Type: contract.ActClick, Selector: sel, Reason: "r"}
	}
	post := &contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "http://shop.test", Path: "/pay"}
	base := intentKey(click("#pay"), pay, "http://shop.test/bill", nil)
	tests := []struct {
		name string
		key  string
		same bool
	}{
		{"another spelling of the selector", intentKey(click("button#pay"), pay, "http://shop.test/bill", nil), true},
		{"another id and reason", intentKey(contract.Action{ID: "b", Type: contract.ActClick, Selector: "#pay", Reason: "again"}, pay, "http://shop.test/bill", nil), true},
		{"a query and a fragment", intentKey(click("#pay"), pay, "http://shop.test/bill?t=1#x", nil), true},
		{"another element", intentKey(click("#pay"), other, "http://shop.test/bill", nil), false},
		{"another page", intentKey(click("#pay"), pay, "http://shop.test/other", nil), false},
		{"another type", intentKey(contract.Action{Type: contract.ActType, Selector: "#pay", Text: "x"}, pay, "http://shop.test/bill", nil), false},
		{"an effect of it", intentKey(click("#pay"), pay, "http://shop.test/bill", post), false},
	}
	for _, tt := range tests {
		if got := tt.key == base; got != tt.same {
			t.Errorf("%s: same key %v, want %v", tt.name, got, tt.same)
		}
	}
	if intentKey(click("button#pay"), nil, "http://shop.test/bill", nil) == intentKey(click("#pay"), nil, "http://shop.test/bill", nil) {
		t.Error("without a resolved element, two selectors made one key")
	}
}

// TestApprovalChannel: the channel an answer is recorded under, and what
// a rule may not approve.
func TestApprovalChannel(t *testing.T) {
	for _, tt := range []struct {
		ans  ApprovalAnswer
		want contract.ApprovalChannel
	}{
		{ApprovalAnswer{Approver: "terminal:alice", Channel: ChannelTerminal}, contract.ApprovalChannelTerminal},
		{ApprovalAnswer{Approver: "popup chrome-extension://abc", Channel: ChannelPopup}, contract.ApprovalChannelPopup},
		{ApprovalAnswer{Approver: "alice", Channel: ChannelLive}, contract.ApprovalChannelLive},
		{ApprovalAnswer{Approver: "policy:low-and-medium-only", Channel: "the --approve=low-and-medium-only rule (no person was asked)"}, contract.ApprovalChannelRule},
		{ApprovalAnswer{Approver: "tester"}, contract.ApprovalChannelProgram},
		{ApprovalAnswer{Approver: "bob", Channel: "a person somewhere"}, contract.ApprovalChannelProgram},
	} {
		if got := tt.ans.via(); got != tt.want {
			t.Errorf("%+v: channel %q, want %q", tt.ans, got, tt.want)
		}
	}
	ans, _ := PolicyApprover{Mode: ApproveLowAndMedium}.Approve(context.Background(), ApprovalRequest{Risk: contract.RiskMedium})
	if got := ans.via(); !ans.Approved || got != contract.ApprovalChannelRule {
		t.Errorf("the low-and-medium-only rule's yes: approved %v, channel %q; want a yes on the rule channel", ans.Approved, got)
	}
	// A rule's yes to a high-risk action is not granted, whoever claims to
	// be one.
	r := &run{cfg: &Config{Approvals: gate.NewApprovals(), Clock: time.Now}}
	paused := gate.Decision{DecisionRecord: contract.DecisionRecord{ActionHash: strings.Repeat("a", 64), Risk: contract.RiskHigh}}
	id, rule, msg := r.grantFor(paused, ApprovalAnswer{Approved: true, Approver: "policy:mine"})
	if id != "" || rule != RuleApprovalUnavailable || !strings.Contains(msg, "no rule approves a high-risk action") {
		t.Errorf("grantFor a rule's yes at high risk: id %q, rule %q, msg %q", id, rule, msg)
	}
	if id, rule, _ := r.grantFor(paused, ApprovalAnswer{Approved: true, Approver: "alice", Channel: ChannelLive}); id == "" || rule != "" {
		t.Errorf("grantFor a person's yes at high risk: id %q, rule %q", id, rule)
	}
	// A person's yes named like a rule's is not granted, on any channel
	// but the rule's.
	low := gate.Decision{DecisionRecord: contract.DecisionRecord{ActionHash: strings.Repeat("b", 64), Risk: contract.RiskLow}}
	for _, ch := range []string{ChannelTerminal, ChannelPopup, ChannelLive} {
		id, rule, msg := r.grantFor(low, ApprovalAnswer{Approved: true, Approver: "policy:low-and-medium-only", Channel: ch})
		if id != "" || rule != RuleApprovalUnavailable || !strings.Contains(msg, "the name of a rule") {
			t.Errorf("grantFor a yes named like a rule's in %q: id %q, rule %q, msg %q", ch, id, rule, msg)
		}
	}
	if id, rule, _ := r.grantFor(low, ApprovalAnswer{Approved: true, Approver: "policy:low-and-medium-only"}); id == "" || rule != "" {
		t.Errorf("grantFor the rule's yes at low risk: id %q, rule %q", id, rule)
	}
}
