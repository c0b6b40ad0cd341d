package session

import (
	"testing"

	"github.com/aegis-run/aegis/contract"
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
