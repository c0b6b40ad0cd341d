package session

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/secrets"
)

// TestFilterEventTargetRequest: a live event, a described element and an
// approval request hold no secret value, spelled out or encoded, once
// filtered; the approval request keeps the hash it binds to.
func TestFilterEventTargetRequest(t *testing.T) {
	const value = `Hunter2-"x\y" &+9`
	set, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	spaced := "H u n t e r 2 x y 9"
	leaks := func(v any) bool {
		b, _ := json.Marshal(v)
		s := string(b)
		return strings.Contains(secrets.Normalize(s), secrets.Normalize(value)) || strings.Contains(s, "Hunter2-")
	}
	u := "https://shop.test/welcome?pw=" + strings.ReplaceAll(value, " ", "+")
	ev := filterEvent(set, contract.StreamEvent{Type: contract.EventAction, URL: &u, Summary: "click #m " + spaced, Message: "saw " + value})
	if leaks(ev) {
		t.Errorf("event %+v holds the value", ev)
	}
	el := filterTarget(set, &contract.Element{Tag: "p", ID: "m", Text: spaced, Label: value})
	if leaks(el) || el.Tag != "p" {
		t.Errorf("target %+v holds the value", el)
	}
	if filterTarget(set, nil) != nil {
		t.Error("a nil target is no longer nil")
	}
	req := filterRequest(set, ApprovalRequest{Action: contract.Action{ID: "c1", Type: contract.ActClick, Reason: spaced}, Target: &contract.Element{Text: value}, URL: u, ActionHash: "h1"})
	if leaks(req) || req.ActionHash != "h1" {
		t.Errorf("request %+v holds the value or lost its hash", req)
	}
}

// TestDriverMessage: a driver's error message is filtered before it is
// bounded, so that a value the message quotes (a selector, page text)
// straddling the bound is not cut short of what the filter knows.
func TestDriverMessage(t *testing.T) {
	const value = "Zq9-s3cr3t-PA55"
	set, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	ph := secrets.Placeholder("PW")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"plain error", errors.New("typed " + value + " into #x"), "typed " + ph + " into #x"},
		{"driver error, message only", &driver.Error{Code: contract.CodeTimeout, Selector: "#" + value, Msg: "no " + value}, "selector \"#" + ph + "\": no " + ph},
		{"nil set", errors.New("plain"), "plain"},
	}
	for _, tc := range tests {
		s := set
		if tc.name == "nil set" {
			s = nil
		}
		if got := driverMessage(s, tc.err); got != tc.want {
			t.Errorf("%s: driverMessage = %q, want %q", tc.name, got, tc.want)
		}
	}
	// The bound falls 3 bytes into the value: cut first, only those 3
	// bytes would be left, too few for the filter to know them.
	long := errors.New(strings.Repeat("x", 994) + value + " more")
	if got := driverMessage(set, long); strings.Contains(got, "x"+value[:3]) {
		t.Errorf("driverMessage of a long message keeps the start of the value: %q", got[980:])
	}
}
