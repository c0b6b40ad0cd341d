package navigator_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/navigator"
)

// The steps navigator resolves plain-language steps against the
// affordances of the observed page. Type and select steps batch up; a
// click ends the batch. The password stays a placeholder, and its type
// action is redacted.
func ExampleSteps() {
	steps, err := navigator.ParseSteps([]string{
		`type "alice" into "Username"`,
		`type "{{secret:PASSWORD}}" into "Password"`,
		`click "Sign in"`,
		`expect "Signed in as alice"`,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	nav, err := navigator.NewSteps(steps, navigator.StepsOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	obs := contract.Observation{
		State: contract.State{ActiveURL: "http://shop.test/login"},
		Affordances: []contract.Affordance{
			{Selector: "#username", Role: "textbox", Text: "Username", ActionHint: contract.HintType},
			{Selector: "#password", Role: "textbox", Text: "Password", ActionHint: contract.HintType},
			{Selector: "#sign-in", Role: "button", Text: "Sign in", ActionHint: contract.HintClick},
		},
	}
	resp, err := nav.Next(context.Background(), navigator.Request{Step: 1, Observation: obs})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range resp.Actions {
		fmt.Println(a.ID, a.Type, a.Selector, a.Text, a.Redact)
	}
	fmt.Println(resp.Status)

	// After the click, the account page.
	obs = contract.Observation{State: contract.State{ActiveURL: "http://shop.test/account"}, DOMText: "Signed in as alice"}
	resp, err = nav.Next(context.Background(), navigator.Request{Step: 2, Observation: obs})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, resp.Summary)
	// Output:
	// step1 type #username alice false
	// step2 type #password {{secret:PASSWORD}} true
	// step3 click #sign-in  false
	// continue
	// done hint 4: found "Signed in as alice"
}

// Step errors say where and what was expected.
func ExampleParseStep() {
	_, err := navigator.ParseStep(3, `type "alice" in "Username"`)
	fmt.Println(err)
	_, err = navigator.ParseStep(4, `select "Express" in "Shipping"`)
	fmt.Println(err)
	s, _ := navigator.ParseStep(5, `click css=form > button[type="submit"]`)
	fmt.Println(strings.TrimSpace(s.String()))
	// Output:
	// step 3, column 14: expected "into", found "in"
	// <nil>
	// click "css=form > button[type=\"submit\"]"
}
