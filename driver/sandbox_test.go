package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
)

func startSite(t *testing.T) *demosite.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := demosite.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-s.Done() })
	return s
}

func act(t *testing.T, d driver.Driver, a contract.Action) (contract.ToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if a.ID == "" {
		a.ID = "a1"
	}
	if a.Reason == "" {
		a.Reason = "test"
	}
	return d.Act(ctx, a)
}

func closeDriver(t *testing.T, d driver.Driver) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = d.Close(ctx)
	})
}

// blockedLike reports whether d's blocked log holds an entry whose URL has
// prefix and whose resource type is typ ("" for any).
func blockedLike(d driver.Driver, prefix, typ string) bool {
	for _, b := range d.(driver.Blocker).BlockedRequests() {
		if strings.HasPrefix(b.URL, prefix) && (typ == "" || b.ResourceType == typ) {
			return true
		}
	}
	return false
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(guardWait) // a guard against hanging, never reached by a passing run
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBoundaryBlocksOutsideOrigins: with allowed origins, both Playwright
// modes refuse every other origin at the browser.
func TestBoundaryBlocksOutsideOrigins(t *testing.T) {
	for _, mode := range boundaryModes {
		t.Run(string(mode), func(t *testing.T) { testBlocksOutsideOrigins(t, mode) })
	}
}

func testBlocksOutsideOrigins(t *testing.T, mode contract.DriverMode) {
	site := startSite(t)
	d := open(t, mode, site.URL())
	closeDriver(t, d)

	// A navigation outside the allowlist is refused before the browser sees it.
	_, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: demosite.ExternalOrigin + "/"})
	if !errors.Is(err, driver.ErrNavigationBlocked) {
		t.Fatalf("navigate outside the allowlist: %v, want navigation_blocked", err)
	}
	if !blockedLike(d, demosite.ExternalOrigin+"/", "document") {
		t.Errorf("refused navigation not recorded: %+v", d.(driver.Blocker).BlockedRequests())
	}

	// A subresource of an allowed page.
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/external"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the tracking pixel is recorded as blocked", func() bool { return blockedLike(d, demosite.ExternalOrigin+"/pixel.gif", "image") })

	// A link the page offers is cancelled by request routing: the page
	// stays where it was. A redirect from an allowed origin: the
	// redirect's second hop is invisible to request routing, the proxy
	// sees it and answers it with its refusal.
	for _, tc := range []struct{ sel, blocked, wantText string }{
		{"#partner", demosite.ExternalOrigin + "/", "We work with partners outside this site."},
		{"#partner-redirect", demosite.ExternalOrigin + "/landing", "blocked"},
	} {
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/external"}); err != nil {
			t.Fatal(err)
		}
		if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: tc.sel}); err != nil {
			t.Fatalf("click %s: %v", tc.sel, err)
		}
		eventually(t, tc.blocked+" recorded as blocked", func() bool { return blockedLike(d, tc.blocked, "") })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		cancel()
		if err == nil && !strings.Contains(obs.DOMText, tc.wantText) {
			t.Errorf("after clicking %s the page shows: %s; want it to contain %q", tc.sel, obs.DOMText, tc.wantText)
		}
	}

	// Downloads are refused.
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/external"}); err != nil {
		t.Fatal(err)
	}
	if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#invoice"}); err != nil {
		t.Fatalf("click the download link: %v", err)
	}
	eventually(t, "the download is recorded as refused", func() bool { return blockedLike(d, site.URL()+"/download", "download") })

	for _, b := range d.(driver.Blocker).BlockedRequests() {
		if strings.HasPrefix(b.URL, site.URL()) && b.ResourceType != "download" {
			t.Errorf("an allowed-origin request was blocked: %+v", b)
		}
	}
}

func TestSandboxIsEphemeral(t *testing.T) {
	site := startSite(t)
	d1 := open(t, contract.ModeSandbox, site.URL())
	closeDriver(t, d1)
	for _, a := range []contract.Action{
		{Type: contract.ActNavigate, URL: site.URL() + "/login"},
		{Type: contract.ActType, Selector: "#username", Text: "alice", Redact: true},
		{Type: contract.ActType, Selector: "#password", Text: "pw", Redact: true},
		{Type: contract.ActClick, Selector: "#sign-in"},
	} {
		if _, err := act(t, d1, a); err != nil {
			t.Fatalf("%s: %v", a.Type, err)
		}
	}
	d2 := open(t, contract.ModeSandbox, site.URL())
	closeDriver(t, d2)
	if _, err := act(t, d2, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/account"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs, err := d2.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(obs.DOMText, "Not signed in") {
		t.Errorf("a new sandbox session sees another session's state:\n%s", obs.DOMText)
	}
}

// TestPlaywrightModeWithoutOriginsLeavesAllowlistToGate: playwright mode
// with no allowed origins runs no boundary.
func TestPlaywrightModeWithoutOriginsLeavesAllowlistToGate(t *testing.T) {
	site := startSite(t)
	d := open(t, contract.ModePlaywright, site.URL(), func(c *driver.Config) { c.AllowedOrigins = nil })
	closeDriver(t, d)
	// Not refused by the driver: the browser tries and fails (no DNS here).
	_, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: demosite.ExternalOrigin + "/"})
	var de *driver.Error
	if !errors.As(err, &de) || de.Code != contract.CodeNavigationBlocked || !strings.Contains(de.Msg, "net::ERR_") {
		t.Fatalf("navigate to an unresolvable host: %v, want navigation_blocked with the browser's net:: error", err)
	}
	if _, ok := d.(driver.Blocker); !ok {
		t.Fatal("the Playwright driver does not expose its blocked log")
	}
}

func TestOpenRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]driver.Config{
		"no mode":              {},
		"sandbox no allowlist": {Mode: contract.ModeSandbox},
		"bad origin":           {Mode: contract.ModePlaywright, AllowedOrigins: []string{"ftp://x"}},
		"origin with path":     {Mode: contract.ModePlaywright, AllowedOrigins: []string{"http://x/path"}},
		"bad session":          {Mode: contract.ModePlaywright, SessionID: "../etc"},
		"bad endpoint":         {Mode: contract.ModePlaywright, BrowserEndpoint: "http://x"},
		"unknown mode":         {Mode: "selenium"},
	} {
		if d, err := driver.Open(ctx, cfg); err == nil {
			_ = d.Close(ctx)
			t.Errorf("%s: Open succeeded", name)
		}
	}
	_, err := driver.Open(ctx, driver.Config{Mode: contract.ModeExtension})
	if !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("extension mode through Open (it needs OpenExtension and a port): %v, want unsupported", err)
	}
}
