package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// widgetAffordance is what the model tells affordances apart by: the
// fixtures' expected lists hold these, in order (selectors may vary).
type widgetAffordance struct {
	Role       string              `json:"role,omitempty"`
	Text       string              `json:"text,omitempty"`
	ActionHint contract.ActionHint `json:"actionHint,omitempty"`
	Generic    bool                `json:"generic,omitempty"`
}

// widgetFixture is a page of testdata/widgets and its expected affordance
// list (NAME.html and NAME.want.json).
type widgetFixture struct {
	name string
	page string
	want []widgetAffordance
}

// widgetFixtures reads the fixtures of testdata/widgets.
func widgetFixtures(t *testing.T) []widgetFixture {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("testdata", "widgets", "*.html"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no widget fixtures: %v", err)
	}
	var out []widgetFixture
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".html")
		page, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		wb, err := os.ReadFile(strings.TrimSuffix(p, ".html") + ".want.json")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want []widgetAffordance
		d := json.NewDecoder(bytes.NewReader(wb))
		d.DisallowUnknownFields()
		if err := d.Decode(&want); err != nil {
			t.Fatalf("%s.want.json: %v", name, err)
		}
		out = append(out, widgetFixture{name: name, page: string(page), want: want})
	}
	return out
}

// TestWidgetAffordances observes each page of testdata/widgets (dialogs,
// tabs, accordions, custom checkboxes, spinners, date and time inputs,
// unlabeled and sibling-labelled fields, overlapping buttons) in real
// Chromium, in the Playwright driver and the extension driver, and
// compares its affordances (role, name, action hint, generic mark, in
// order) with the fixture's expected list: names as the accessibility
// tree computes them, never a container's from the control inside it,
// and a container listed only for an event handler after the controls it
// holds, marked generic.
func TestWidgetAffordances(t *testing.T) {
	fixtures := widgetFixtures(t)
	pages := map[string]string{"": "<!doctype html><title>done</title><p>Done</p>"}
	for _, f := range fixtures {
		pages["/widgets/"+f.name+".html"] = f.page
	}
	site := servePages(t, pages)
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) {
		for _, f := range fixtures {
			t.Run(f.name, func(t *testing.T) {
				if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/widgets/" + f.name + ".html"}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				obs, err := d.Observe(ctx, driver.ObserveOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got := make([]widgetAffordance, 0, len(obs.Affordances))
				for _, a := range obs.Affordances {
					got = append(got, widgetAffordance{Role: a.Role, Text: a.Text, ActionHint: a.ActionHint, Generic: a.Generic})
				}
				if !reflect.DeepEqual(got, f.want) {
					gb, _ := json.MarshalIndent(got, "", "  ")
					wb, _ := json.MarshalIndent(f.want, "", "  ")
					t.Errorf("affordances:\n got %s\nwant %s", gb, wb)
				}
			})
		}
	})
}

// rowLabelPage has fields named by the text before them in their rows,
// next to text the session marks sensitive (#acct, #box).
const rowLabelPage = `<!doctype html><html><body><form>
<div><label>Login</label><input id="login" name="login"></div>
<div><span id="acct">ACCT-4242-9911</span><input id="after-acct"></div>
<div id="box"><div><span>Card holder</span><input id="in-box"></div></div>
<div><label>Password</label><input type="password" id="pw" value="pre-filled-value"></div>
</form></body></html>`

// TestRowLabelsKeepSecrets checks that naming a field by the text before
// it weakens no masking: sensitive text never names the field after it, a
// field inside a sensitive element is not named by the text around it, a
// password field is named by its row label and never by its value, and a
// field a secret was typed into is named by its <label>s only (here: none).
// In both drivers.
func TestRowLabelsKeepSecrets(t *testing.T) {
	site := servePages(t, map[string]string{"": rowLabelPage})
	opts := driver.ObserveOptions{SensitiveSelectors: []string{"#acct", "#box"}}
	names := func(t *testing.T, d driver.Driver) map[string]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		obs, err := d.Observe(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		noLeak(t, "observation", obs)
		b, _ := json.Marshal(obs.Affordances)
		for _, s := range []string{"ACCT-4242", "pre-filled-value", "Card holder"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the affordances hold %q: %s", s, b)
			}
		}
		out := map[string]string{}
		for _, a := range obs.Affordances {
			out[a.Selector] = a.Text
		}
		return out
	}
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) {
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/"}); err != nil {
			t.Fatal(err)
		}
		got := names(t, d)
		want := map[string]string{"#login": "Login", "#after-acct": "", "#in-box": "", "#pw": "Password"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("before typing: got %q, want %q", got, want)
		}
		if err := typeSecretAt(t, d, site, "/", "#login"); err != nil {
			t.Fatal(err)
		}
		got = names(t, d)
		want["#login"] = ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("after typing a secret: got %q, want %q", got, want)
		}
	})
}

// sensitiveLabelPage has a sensitive field (#pin, by its name) whose
// <label> holds text the session marks sensitive (#acct), and a password
// field named by the label before it in its row (#pw).
const sensitiveLabelPage = `<!doctype html><html><body><form>
<label for="pin">PIN for <span id="acct">ACCT-5555-0101</span></label><input id="pin" name="pin">
<div><label>Password</label><input type="password" id="pw"></div>
</form></body></html>`

// TestSensitiveFieldNames checks that a sensitive field's name leaves out
// the sensitive text inside its <label> (in the observation, both
// drivers, and in the label describe gives the gate), and that describe
// names a sensitive field as the observation does, with its row label.
func TestSensitiveFieldNames(t *testing.T) {
	site := servePages(t, map[string]string{"": sensitiveLabelPage})
	sensitive := []string{"#acct"}
	want := map[string]string{"#pin": "PIN for", "#pw": "Password"}
	observed := func(t *testing.T, d driver.Driver) {
		t.Helper()
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/"}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		obs, err := d.Observe(ctx, driver.ObserveOptions{SensitiveSelectors: sensitive})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(obs.Affordances); bytes.Contains(b, []byte("ACCT-5555")) {
			t.Errorf("the affordances hold the sensitive text: %s", b)
		}
		got := map[string]string{}
		for _, a := range obs.Affordances {
			got[a.Selector] = a.Text
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("observed names: got %q, want %q", got, want)
		}
	}
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) { observed(t, d) })
	t.Run("describe", func(t *testing.T) {
		d := open(t, contract.ModePlaywright, site, func(c *driver.Config) { c.SensitiveSelectors = sensitive })
		closeDriver(t, d)
		observed(t, d)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for sel, label := range want {
			el, err := d.Describe(ctx, sel)
			if err != nil {
				t.Fatal(err)
			}
			if el.Label != label {
				t.Errorf("Describe(%s).Label = %q, want %q", sel, el.Label, label)
			}
		}
	})
}
