package gate

import (
	"context"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// commonRequests are the actions a session takes most, each allowed
// without approval.
func commonRequests() map[string]Request {
	with := func(a contract.Action, target *contract.Element) Request {
		req := baseRequest()
		a.ID, a.Reason, a.PolicyTags = "a1", "r", []string{}
		req.Action, req.Target = a, target
		return req
	}
	input := &contract.Element{Tag: "input", Type: "text", Name: "name", ID: "name", Label: "Full name"}
	return map[string]Request{
		"click":         baseRequest(),
		"click_box":     with(contract.Action{Type: contract.ActClick, Selector: "#gift"}, &contract.Element{Tag: "input", Type: "checkbox", ID: "gift", Label: "Gift wrap"}),
		"type":          with(contract.Action{Type: contract.ActType, Selector: "#name", Text: "Customer 4"}, input),
		"select":        with(contract.Action{Type: contract.ActSelect, Selector: "#shipping", Value: "express"}, &contract.Element{Tag: "select", Name: "shipping", ID: "shipping", Label: "Shipping"}),
		"extract_page":  with(contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText}, nil),
		"extract_table": with(contract.Action{Type: contract.ActExtract, Selector: "#orders", Extract: contract.ExtractTable}, &contract.Element{Tag: "table", ID: "orders"}),
		"scroll":        with(contract.Action{Type: contract.ActScroll, Direction: contract.ScrollDown, AmountPx: 300}, nil),
		"wait":          with(contract.Action{Type: contract.ActWait, DurationMs: 500}, nil),
		"navigate":      with(contract.Action{Type: contract.ActNavigate, URL: "https://shop.example/products"}, nil),
	}
}

// TestCommonActionsAllowed: every common action of a session is allowed,
// without approval.
func TestCommonActionsAllowed(t *testing.T) {
	ctx := context.Background()
	g := sharedGate(t)
	for name, req := range commonRequests() {
		t.Run(name, func(t *testing.T) {
			if d := g.Decide(ctx, req); d.Result != contract.ResultAllowed {
				t.Fatalf("got %s %v, want allowed", d.Result, d.Reasons)
			}
		})
	}
}
