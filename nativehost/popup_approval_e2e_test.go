package nativehost_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// TestPopupApprovalButtons: in the popup, a click on Approve or Deny
// disables both until another approval is shown, and a newly shown
// approval's buttons take no click for 750 ms (the pages' clock, moved by
// the test); a click on a disabled button sends nothing to the host. A
// second click meant for one approval never answers the next unseen.
func TestPopupApprovalButtons(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	shop := newSite(t, demosite.Handler())
	// A browser of its own: the fake clock is the whole context's.
	b := nativehosttest.Start(t, nativehosttest.Options{Binary: aegisBinary(t)})
	clock := b.Context.Clock()
	must(t, clock.Install())
	// Installed, the fake clock runs in real time: pause it, so that the
	// pages' timers move only when the test moves them.
	must(t, clock.PauseAt(time.Now().Add(time.Hour)))

	// The balanced preset asks before every navigation, typing and
	// selection: a run of approvals, one after the other.
	r := startWithPreset(t, b, "balanced", shop.URL+"/form", "fill in the form",
		`type "Ada Lovelace" into "Full name"`,
		`select "Express" in "Shipping"`,
	)
	pending := func() string {
		id, _ := r.popup.Locator("#approve").GetAttribute("data-action-id")
		if !r.visible("#approval") {
			return ""
		}
		return id
	}
	disabled := func(what string, want bool) {
		t.Helper()
		got, err := r.popup.Evaluate(`() => document.getElementById("approve").disabled + " " + document.getElementById("deny").disabled`)
		if w := map[bool]string{true: "true true", false: "false false"}[want]; err != nil || got != w {
			t.Errorf("%s: Approve and Deny disabled %v (%v), want %q", what, got, err, w)
		}
	}
	forceClick := func(id string) {
		t.Helper()
		// A click on the button, disabled or not, shown or not (the
		// panel hides between approvals).
		_, err := r.popup.Evaluate(`(id) => document.getElementById(id).click()`, id)
		must(t, err)
	}
	run := func(ms int) {
		t.Helper()
		must(t, clock.RunFor(ms))
	}
	answers := func() []string {
		var out []string
		for _, l := range strings.Split(b.HostLog(), "\n") {
			if i := strings.Index(l, "approval answer "); i >= 0 {
				out = append(out, l[i:])
			}
		}
		return out
	}

	r.until("the first approval", func() bool { return pending() != "" })
	first := pending()
	disabled("just shown", true)
	forceClick("approve")
	run(749)
	disabled("749 ms after it was shown", true)
	run(1)
	disabled("750 ms after it was shown", false)

	// One click answers; both buttons are disabled at once, and a second
	// click sends nothing, whatever is shown by then.
	must(t, r.popup.Locator("#approve").Click())
	disabled("right after the click", true)
	forceClick("approve")
	forceClick("deny")

	r.until("the next approval", func() bool { id := pending(); return id != "" && id != first })
	disabled("the next approval, just shown", true)
	forceClick("approve")
	run(750)
	disabled("the next approval, 750 ms after it was shown", false)
	must(t, r.popup.Locator("#deny").Click())
	disabled("right after the Deny", true)
	forceClick("approve")
	status, dir := r.ended()
	verify(t, dir, "")
	if status == "completed" {
		t.Error("a denied step completed the session")
	}
	// The host got two answers: the one per approval the person meant.
	got := answers()
	if len(got) != 2 || !strings.HasPrefix(got[0], `approval answer "approve" for action "`+first+`"`) || !strings.HasPrefix(got[1], `approval answer "deny"`) {
		t.Errorf("the host got the answers\n%s\nwant an approve of %s, then a deny", strings.Join(got, "\n"), first)
	}
}
