package driver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// factsBody is a page whose elements' facts differ from what their
// attributes, or a selector's words, would suggest.
const factsBody = `<!doctype html><html><head><meta charset="utf-8"><title>Facts</title>
<style>
#css-pay::before { content: "Pay now"; }
#css-attr::after { content: " " attr(data-what); }
#css-escape::before { content: "P\0430y "; }
#css-alt::before { content: "\2192" / "Delete account"; }
#css-gone::before { content: "Hidden"; display: none; }
#css-split::before { content: "Pa"; }
#css-block::before { content: "Pay"; display: block; }
</style></head><body>
<input id="upper" type="PassWord">
<input id="bogus" type="bogus" name="q">
<input id="bare">
<input id="switched" type="text">
<input id="vault" class="vault" type="text">
<input id="search" type="search" name="q">
<button id="go">Go</button>
<button id="css-pay"></button>
<button id="css-attr" data-what="now">Pay</button>
<button id="css-escape">now</button>
<button id="css-alt"></button>
<button id="css-gone">Keep</button>
<button id="css-split">y now</button>
<button id="css-block">now</button>
<script>document.getElementById('switched').type = 'password';</script>
</body></html>`

// describeFacts checks what Describe reports about factsBody's elements on
// d, opened with the sensitive selectors "#nope" and ".vault": an input's
// or button's current type (its type property), and the first sensitive
// selector the browser found the element to match, whatever selector
// addressed it.
func describeFacts(t *testing.T, d driver.Driver, page string) {
	t.Helper()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: page}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		sel               string
		typ, sensitiveSel string
	}{
		{"#upper", "password", ""},
		{"#bogus", "text", ""},
		{"#bare", "text", ""},
		{"#switched", "password", ""},
		{"#vault", "text", ".vault"},
		{"input.vault", "text", ".vault"},
		// The selector's words decide nothing.
		{"#search:not([name=password])", "search", ""},
		{"#search:not(.vault)", "search", ""},
		{"#go", "submit", ""},
	}
	for _, tt := range tests {
		got, err := d.Describe(ctx, tt.sel)
		if err != nil {
			t.Fatalf("Describe(%q): %v", tt.sel, err)
		}
		if got.Type != tt.typ || got.SensitiveSelector != tt.sensitiveSel {
			t.Errorf("Describe(%q) = type %q, sensitive selector %q; want %q, %q", tt.sel, got.Type, got.SensitiveSelector, tt.typ, tt.sensitiveSel)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Describe(%q): %v", tt.sel, err)
		}
	}
	// Names include CSS generated content, as the accessible name does.
	for _, tt := range generatedNames {
		got, err := d.Describe(ctx, tt.sel)
		if err != nil {
			t.Fatalf("Describe(%q): %v", tt.sel, err)
		}
		if got.Label != tt.name || got.Text != tt.name {
			t.Errorf("Describe(%q) = label %q, text %q; want %q", tt.sel, got.Label, got.Text, tt.name)
		}
	}
}

// generatedNames are the names of factsBody's buttons captioned by CSS.
var generatedNames = []struct{ sel, name string }{
	{"#css-pay", "Pay now"},
	{"#css-attr", "Pay now"},
	{"#css-escape", "P\u0430y now"},
	{"#css-alt", "Delete account"},
	{"#css-gone", "Keep"},
	{"#css-split", "Pay now"},
	{"#css-block", "Pay now"},
}

func factsSite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, factsBody)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var factsSensitive = []string{"#nope", ".vault"}

func TestDescribeReportsElementFacts(t *testing.T) {
	for _, mode := range []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox} {
		t.Run(string(mode), func(t *testing.T) {
			site := factsSite(t)
			d := open(t, mode, site, func(c *driver.Config) { c.SensitiveSelectors = factsSensitive })
			closeDriver(t, d)
			describeFacts(t, d, site+"/facts")
		})
	}
}

// TestGeneratedContentInAffordances: an affordance's name includes CSS
// generated content too.
func TestGeneratedContentInAffordances(t *testing.T) {
	site := factsSite(t)
	d := open(t, contract.ModePlaywright, site)
	closeDriver(t, d)
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/facts"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range generatedNames {
		a, ok := findAff(obs, tt.sel)
		if !ok || a.Text != tt.name {
			t.Errorf("affordance %s = %+v (found %v), want text %q", tt.sel, a, ok, tt.name)
		}
	}
}

func TestDescribeReportsElementFactsExtension(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	b := nativehosttest.Start(t, nativehosttest.Options{Relay: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := b.ConnectDriver(ctx)
	if err != nil {
		t.Fatalf("%v\nhost log:\n%s", err, b.HostLog())
	}
	site := factsSite(t)
	d, err := driver.OpenExtension(ctx, driver.Config{
		Mode: contract.ModeExtension, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second,
		SensitiveSelectors: factsSensitive,
	}, driver.ExtensionTarget{Port: conn})
	if err != nil {
		t.Fatalf("open the extension driver: %v", err)
	}
	closeDriver(t, d)
	describeFacts(t, d, site+"/facts")
}
