package navigator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/secrets"
)

// One Chromium and one demo site for the whole test binary; each test
// opens its own browser context.
var shared struct {
	once sync.Once
	b    *driver.Browser
	site *demosite.Server
	err  error
}

func demo(t *testing.T) (driver.Driver, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		shared.site, shared.err = demosite.Start(context.Background(), "127.0.0.1:0")
		if shared.err != nil {
			return
		}
		shared.b, shared.err = driver.Launch(ctx, driver.BrowserOptions{Isolate: true})
	})
	if shared.err != nil {
		t.Fatalf("launch Chromium (run \"go run ./cmd/aegis setup\"): %v", shared.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := driver.Open(ctx, driver.Config{
		// A generous action timeout: an action waits for its element and for
		// the navigation a click starts, events a passing run never waits
		// 30 s for, however loaded the machine; a short one let a click
		// return before its navigation committed, and the next observation
		// saw the old page.
		Mode: contract.ModeSandbox, Browser: shared.b, AllowedOrigins: []string{shared.site.URL()}, ActionTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
	return d, shared.site.URL()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := shared.b.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "close browser:", err)
		}
		cancel()
	}
	if shared.site != nil {
		_ = shared.site.Close()
	}
	os.Exit(code)
}

// drive runs nav against d as the session would (without the gate):
// observe, ask, resolve secret placeholders at the last moment, act; until
// done. It returns the actions as the navigator proposed them and every
// observation made.
func drive(t *testing.T, d driver.Driver, nav navigator.Navigator, set *secrets.Set) ([]contract.Action, []contract.Observation, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var proposed []contract.Action
	var seen []contract.Observation
	for step := 1; step <= 30; step++ {
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		if err != nil {
			t.Fatalf("observe: %v", err)
		}
		seen = append(seen, obs)
		resp, err := nav.Next(ctx, navigator.Request{Step: step, Observation: obs})
		if err != nil {
			return proposed, seen, err
		}
		for _, a := range resp.Actions {
			proposed = append(proposed, a)
			run := a
			if a.Type == contract.ActType {
				if run.Text, err = set.Resolve(a.Text); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.Act(ctx, run); err != nil {
				t.Fatalf("act %s %s: %v", a.Type, a.Selector, err)
			}
		}
		if resp.Status == contract.StatusDone {
			obs, err := d.Observe(ctx, driver.ObserveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return proposed, append(seen, obs), nil
		}
	}
	t.Fatal("no done after 30 steps")
	return nil, nil, nil
}

func stepsFor(t *testing.T, base string, set *secrets.Set, lines ...string) *navigator.Steps {
	t.Helper()
	steps, err := navigator.ParseSteps(lines)
	if err != nil {
		t.Fatal(err)
	}
	// An expect waits up to 100 rounds of 200 ms: a page slow under load
	// gets 20 s, a quick one costs no more.
	s, err := navigator.NewSteps(steps, navigator.StepsOptions{BaseURL: base, Secrets: set, ExpectWait: 200 * time.Millisecond, ExpectRounds: 100})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDemoSignIn(t *testing.T) {
	d, site := demo(t)
	const pw = "Zq9-s3cr3t-PA55-w0rd"
	set, _ := secrets.NewSet(map[string]string{"PASSWORD": pw})
	nav := stepsFor(t, site, set,
		`navigate /login`,
		`type "alice" into "Username"`,
		`type "{{secret:PASSWORD}}" into "Password"`,
		`click "Sign in"`,
		`expect "Signed in as alice"`,
	)
	actions, seen, err := drive(t, d, nav, set)
	if err != nil {
		t.Fatal(err)
	}
	got := brief(actions)
	want := fmt.Sprintf("navigate %s/login; type #username alice redact=false; type #password {{secret:PASSWORD}} redact=true; click #sign-in; wait 1ms", site)
	if got != want {
		t.Errorf("actions:\n got %s\nwant %s", got, want)
	}
	last := seen[len(seen)-1]
	if !strings.HasSuffix(last.State.ActiveURL, "/account") || !strings.Contains(last.DOMText, "Signed in as alice") {
		t.Errorf("not signed in: %s %q", last.State.ActiveURL, last.DOMText)
	}
	for _, o := range seen {
		if b, _, _ := navigator.EncodeObservation(o, 1<<20, nil); strings.Contains(string(b), pw) {
			t.Errorf("the password appears in an observation of %s", o.State.ActiveURL)
		}
	}
}

func TestDemoOrderForm(t *testing.T) {
	d, site := demo(t)
	nav := stepsFor(t, site, nil,
		`navigate /form`,
		`type "Ada" into "Full name"`,
		`select "Express" in "Shipping"`,
		`click "Gift wrap"`,
		`click "Place order"`,
		`expect "Thank you, Ada!"`,
		`expect "Shipping: Express"`,
	)
	actions, seen, err := drive(t, d, nav, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := brief(actions[1:5]), "type #name Ada redact=false; select #shipping Express; click #gift; click #submit"; got != want {
		t.Errorf("actions:\n got %s\nwant %s", got, want)
	}
	if last := seen[len(seen)-1]; !strings.Contains(last.DOMText, "Gift wrap: yes") {
		t.Errorf("order page: %q", last.DOMText)
	}
}

func TestDemoExtractTable(t *testing.T) {
	d, site := demo(t)
	nav := stepsFor(t, site, nil, `navigate /orders`, `extract table "Orders"`)
	actions, seen, err := drive(t, d, nav, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := brief(actions[1:]); got != "extract table #orders" {
		t.Errorf("extract = %s", got)
	}
	arts := seen[len(seen)-1].ExtractedArtifacts
	if len(arts) != 1 || arts[0].Type != contract.ArtifactTable || !strings.Contains(arts[0].Value, "A-1003") || arts[0].SourceSelector != "#orders" {
		t.Errorf("artifacts = %+v", arts)
	}
}

// TestDemoTargetErrors: on real pages, an ambiguous target and a missing
// one stop the run with errors naming the candidates; nothing is clicked.
func TestDemoTargetErrors(t *testing.T) {
	d, site := demo(t)
	tests := []struct {
		path, step string
		ambiguous  bool
		want       []string
	}{
		{"/widgets", `click "Duplicate"`, true, []string{
			`target "Duplicate" is ambiguous: 3 elements match (exact match)`,
			`"Duplicate" (button :root > body > main > button:nth-of-type(4))`,
			`"Duplicate" (button :root > body > main > button:nth-of-type(6))`,
		}},
		{"/", `click "orders"`, false, nil}, // exact "Orders" beats "Your orders": not an error
		{"/login", `click "Checkout"`, false, []string{`no element to click named "Checkout" on the page; closest: `, `"Account" (link :root > body > header > nav > a:nth-of-type(3))`}},
		{"/login", `type "x" into "Sign in"`, false, []string{`"Sign in" is a button (#sign-in), not field to type into`}},
		{"/form", `select "Express" in "Gift"`, false, []string{`no select element named "Gift" on the page; closest: "Shipping" (combobox #shipping); "Gift wrap" is a checkbox (#gift), not select element`}},
		{"/orders", `extract table "Invoices"`, false, []string{`no table named "Invoices" on the page; closest: "Orders" (table #orders)`}},
	}
	for _, tc := range tests {
		t.Run(tc.path+" "+tc.step, func(t *testing.T) {
			nav := stepsFor(t, site, nil, "navigate "+tc.path, tc.step)
			_, _, err := drive(t, d, nav, nil)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var te *navigator.TargetError
			if !errors.As(err, &te) || te.Ambiguous != tc.ambiguous {
				t.Fatalf("err = %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
