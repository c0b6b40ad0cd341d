package gate_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
)

// A session loop creates one Gate (the policy is compiled once) and asks it
// about every action before the driver runs it.
func Example() {
	ctx := context.Background()
	g, err := gate.New(ctx, gate.Options{
		Audit: func(e gate.Event) { fmt.Println("audit:", e.Kind, e.Reason) },
	})
	if err != nil {
		// g still exists and denies everything; a caller may go on.
		fmt.Println("policy failed to load:", err)
	}
	req := gate.Request{
		SessionID: "s-1",
		StepIndex: 1,
		Action: contract.Action{
			ID: "a1", Type: contract.ActNavigate, Reason: "open the shop", PolicyTags: []string{},
			URL: "https://shop.example@evil.example/",
		},
		ActiveURL: "about:blank",
		Session: gate.Session{
			AllowedOrigins: []string{"https://shop.example"},
			Preset:         "power",
			MaxStepBudget:  25,
			DecisionLogID:  "dec-2026-01-23-001",
		},
		Now: time.Date(2026, 1, 23, 10, 0, 0, 0, time.UTC),
	}
	d := g.Decide(ctx, req)
	fmt.Println(d.Allow, d.Result, d.ActionName, d.Risk)
	for _, r := range d.Reasons {
		fmt.Println("-", r.Rule)
	}

	req.Action.URL = "https://SHOP.example./products"
	d = g.Decide(ctx, req)
	fmt.Println(d.Allow, d.Result)
	// Output:
	// false denied browser.navigate medium
	// - origin_not_allowed
	// - url_floor
	// - url_userinfo
	// true allowed
}

// A high-risk action pauses; a human approves that exact action (its hash);
// the approval is presented once.
func ExampleApprovals() {
	ctx := context.Background()
	approvals := gate.NewApprovals()
	g, _ := gate.New(ctx, gate.Options{Approvals: approvals})
	now := time.Date(2026, 1, 23, 10, 0, 0, 0, time.UTC)
	req := gate.Request{
		SessionID: "s-1",
		StepIndex: 7,
		Action: contract.Action{
			ID: "a7", Type: contract.ActClick, Reason: "pay the order", PolicyTags: []string{},
			Selector: "#checkout button.primary",
		},
		Target:    &contract.Element{Tag: "button", Text: "Pay now"},
		ActiveURL: "https://shop.example/checkout",
		Session:   gate.Session{AllowedOrigins: []string{"https://shop.example"}, MaxStepBudget: 25, DecisionLogID: "dec-1"},
		Now:       now,
	}
	d := g.Decide(ctx, req)
	fmt.Println(d.Result, d.Risk, d.ApprovalReasons[0].Rule)

	a, err := approvals.Grant(d.ActionHash, "alice@example.com", now, 5*time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.ApprovalID = a.ID
	req.Now = now.Add(time.Minute)
	d = g.Decide(ctx, req)
	fmt.Println(d.Result, d.Allow, d.Approval.Approver)

	d = g.Decide(ctx, req) // the same approval again
	fmt.Println(d.Result, d.Reasons[0].Rule)
	// Output:
	// paused high risk_requires_approval
	// approved true alice@example.com
	// denied approval_invalid
}
