package audit

import (
	"errors"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// A snapshot as the observer writes it: a form with labels, a password
// field, a shadow root and a frame.
const testSnapshot = `{"root":["#document",{"url":"http://shop.example/"},["html",{},["head",{},["title",{},"Shop"]],["body",{},
["main",{"id":"m"},
 ["form",{"id":"f"},
  ["label",{"for":"user"},"User name"],["input",{"id":"user","name":"user","type":"text","autocomplete":"username","$value":""}],
  ["label",{},"Password ",["input",{"id":"pw","name":"pw","type":"password","placeholder":"secret","$value":"[masked]"}]],
  ["button",{"type":"submit","id":"go","class":"btn primary"},"Sign  in"],
  ["button",{"type":"button","aria-label":"Close dialog"},"×"],
  ["select",{"id":"ship","name":"ship"}],
  ["a",{"href":"/orders","data-testid":"orders"},"Your ",["b",{},"orders"]]
 ],
 ["coupon-widget",{"id":"coupon"},["#shadow-root",{"mode":"open"},["input",{"id":"code","type":"text","aria-labelledby":"lab"}],["span",{"id":"lab"},"Coupon code"],["button",{"id":"apply"},"Apply"]]],
 ["iframe",{"id":"nl"},["#document",{"url":"http://shop.example/inner"},["html",{},["body",{},["button",{"id":"sub"},"Subscribe"]]]]],
 ["p",{},"one"],["p",{},"two"]
]]]],"v":1}`

func TestResolveAndDescribe(t *testing.T) {
	root, err := parseSnapshot(testSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sel  string
		want contract.Element
		err  string
	}{
		{"#user", contract.Element{Tag: "input", Type: "text", Name: "user", ID: "user", Autocomplete: "username", Role: "textbox", Label: "User name"}, ""},
		{"input[type=password]", contract.Element{Tag: "input", Type: "password", Name: "pw", ID: "pw", Role: "textbox", Label: "Password"}, ""},
		{"form > button.primary", contract.Element{Tag: "button", Type: "submit", ID: "go", Role: "button", Label: "Sign in", Text: "Sign in"}, ""},
		{`button[aria-label="Close dialog"]`, contract.Element{Tag: "button", Type: "button", Role: "button", Label: "Close dialog", Text: "×"}, ""},
		{"#ship", contract.Element{Tag: "select", Name: "ship", ID: "ship", Role: "combobox"}, ""},
		{`[data-testid="orders"]`, contract.Element{Tag: "a", Role: "link", Label: "Your orders", Text: "Your orders"}, ""},
		{":root > body > main > p:nth-of-type(2)", contract.Element{Tag: "p", Label: "two", Text: "two"}, ""},
		{"#coupon >>> #code", contract.Element{Tag: "input", Type: "text", ID: "code", Role: "textbox", Label: "Coupon code"}, ""},
		{"#nl >>> #sub", contract.Element{Tag: "button", ID: "sub", Role: "button", Label: "Subscribe", Text: "Subscribe"}, ""},
		{"#\\75 ser", contract.Element{Tag: "input", Type: "text", Name: "user", ID: "user", Autocomplete: "username", Role: "textbox", Label: "User name"}, ""},
		{"p", contract.Element{}, "2 elements match"},
		{"#code", contract.Element{}, "no element"},
		{"button:hover", contract.Element{}, "supported subset"},
		{"#user >>> #x", contract.Element{}, "nothing to enter"},
	} {
		el, err := resolveSelector(root, tc.sel)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.sel, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.sel, err)
			continue
		}
		if got := describeSnapshot(el); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.sel, got, tc.want)
		}
	}
	if _, err := resolveSelector(root, "button:hover"); !errors.Is(err, errUnsupported) {
		t.Errorf("unsupported selector: %v", err)
	}
}

// FuzzSelector: selectors are the model's and snapshots the page's; the
// parser and the matcher never panic.
func FuzzSelector(f *testing.F) {
	for _, s := range []string{"#user", "form > button.primary", `a[href^="/o" i]`, ":root > body > main > p:nth-of-type(2)", "#coupon >>> #code", "a ~ b + c, d", "[x|=y]", "#\\31 23", `["`, "*:first-child:last-of-type"} {
		f.Add(s)
	}
	root, err := parseSnapshot(testSnapshot)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		if el, err := resolveSelector(root, sel); err == nil {
			_ = describeSnapshot(el)
		}
	})
}
