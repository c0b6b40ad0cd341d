package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// isolationPage shows the cookies and the localStorage entry "k" the page
// sees; /set sets both (the cookie by the server), and the button sets
// them again from the page.
const isolationPage = `<!doctype html><html><head><meta charset="utf-8"><title>Isolation</title></head><body>
<p id="out"></p>
<button type="button" id="set" onclick="document.cookie='js=' + this.dataset.v; localStorage.setItem('k', this.dataset.v); show()" data-v="s2">Set again</button>
<script>
function show() { document.getElementById('out').textContent = 'cookie=[' + document.cookie + '] storage=[' + (localStorage.getItem('k') || '') + ']'; }
if (location.pathname === '/set') localStorage.setItem('k', 's1');
show();
</script>
</body></html>`

// cookieServer serves isolationPage and remembers the Cookie header of
// each request, by its ?who= parameter.
type cookieServer struct {
	URL string
	mu  sync.Mutex
	got map[string][]string
}

func newCookieServer(t *testing.T) *cookieServer {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	cs := &cookieServer{got: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		cs.mu.Lock()
		cs.got[r.URL.Query().Get("who")] = append(cs.got[r.URL.Query().Get("who")], r.Header.Get("Cookie"))
		cs.mu.Unlock()
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "srv", Value: "s1", Path: "/"})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, isolationPage)
	}))
	t.Cleanup(srv.Close)
	cs.URL = srv.URL
	return cs
}

func (cs *cookieServer) cookies(who string) []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]string(nil), cs.got[who]...)
}

// pageText navigates d to url (when not "") and returns the visible text.
func pageText(t *testing.T, d driver.Driver, url string) string {
	t.Helper()
	if url != "" {
		if res, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: url}); err != nil || !res.OK {
			t.Fatalf("navigate %s: %v %+v", url, err, res)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	return obs.DOMText
}

// TestBrowsersShareOneBrowserFreshContexts: two sessions that take their
// browser from one Browsers (opened at once) run in the same browser,
// launched once, and see nothing of each other: session 2 gets none of session 1's cookies
// (in the page or on the wire) nor its localStorage, and keeps working
// after session 1 closed. In both kinds of browser: plain (playwright)
// and isolated (sandbox).
func TestBrowsersShareOneBrowserFreshContexts(t *testing.T) {
	for _, mode := range []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox} {
		t.Run(string(mode), func(t *testing.T) {
			cs := newCookieServer(t)
			var bs driver.Browsers
			t.Cleanup(func() { _ = bs.Close(context.Background()) })
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cfg := driver.Config{Mode: mode, Browsers: &bs, AllowedOrigins: []string{cs.URL}, ActionTimeout: 3 * time.Second}
			before := driver.Launches()
			// Both at once: the second waits for the launch the first began.
			var ds [2]driver.Driver
			var errs [2]error
			var wg sync.WaitGroup
			for i := range ds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ds[i], errs[i] = driver.Open(ctx, cfg)
				}()
			}
			wg.Wait()
			for i, d := range ds {
				if d != nil {
					closeDriver(t, d)
				}
				if errors.Is(errs[i], driver.ErrNoNetworkIsolation) {
					t.Skipf("no network namespace here: %v", errs[i])
				}
				if errs[i] != nil {
					t.Fatalf("open session %d: %v", i+1, errs[i])
				}
			}
			d1, d2 := ds[0], ds[1]
			if got := driver.Launches() - before; got != 1 {
				t.Errorf("two sessions opened at once launched %d browsers, want 1", got)
			}
			b1, err := bs.For(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := b1.Isolated(), mode == contract.ModeSandbox; got != want {
				t.Errorf("the %s sessions' browser: isolated %v, want %v", mode, got, want)
			}

			pageText(t, d1, cs.URL+"/set?who=1")
			if got, want := pageText(t, d1, cs.URL+"/?who=1"), "cookie=[srv=s1] storage=[s1]"; !strings.Contains(got, want) {
				t.Fatalf("session 1 sees %q, want %q", got, want)
			}
			if got, want := pageText(t, d2, cs.URL+"/?who=2"), "cookie=[] storage=[]"; !strings.Contains(got, want) {
				t.Errorf("session 2 sees %q, want %q: session 1's cookies or storage leaked", got, want)
			}
			if got := cs.cookies("2"); len(got) != 1 || got[0] != "" {
				t.Errorf("session 2 sent the cookies %q, want one request with none", got)
			}

			if err := d1.Close(ctx); err != nil {
				t.Fatalf("close session 1: %v", err)
			}
			if res, err := act(t, d2, contract.Action{Type: contract.ActClick, Selector: "#set"}); err != nil || !res.OK {
				t.Fatalf("session 2 after session 1 closed: click: %v %+v", err, res)
			}
			if got, want := pageText(t, d2, ""), "cookie=[js=s2] storage=[s2]"; !strings.Contains(got, want) {
				t.Errorf("session 2 after session 1 closed sees %q, want %q", got, want)
			}
			if got := driver.Launches() - before; got != 1 {
				t.Errorf("%d browsers launched in all, want 1", got)
			}
		})
	}
}

// TestBrowsersRelaunchAndClose: a shared browser that went away is
// launched again for the next session; after Close, For fails and the
// browsers are closed.
func TestBrowsersRelaunchAndClose(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	var bs driver.Browsers
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := driver.Config{Mode: contract.ModePlaywright}
	b1, err := bs.For(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b2, err := bs.For(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b2 == b1 {
		t.Fatal("For returned the closed browser")
	}
	if err := bs.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bs.For(ctx, cfg); !errors.Is(err, driver.ErrBrowsersClosed) {
		t.Errorf("For after Close: %v, want ErrBrowsersClosed", err)
	}
	if _, err := driver.Open(ctx, driver.Config{Mode: contract.ModePlaywright, Browser: b2}); err == nil {
		t.Error("Open in a browser of closed Browsers succeeded")
	}
}

// TestBrowsersRetireBroken: a session of a shared browser whose context
// cannot be closed leaves the browser broken: the next session gets a
// freshly launched one, the broken one keeps running (other sessions may
// still be in it) until Browsers closes, and Close closes it too; so does
// it a browser replaced because it went away.
func TestBrowsersRetireBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	var bs driver.Browsers
	t.Cleanup(func() { _ = bs.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	site := servePages(t, map[string]string{"": "<!doctype html><title>x</title><p>x</p>"})
	cfg := driver.Config{Mode: contract.ModePlaywright, Browsers: &bs, AllowedOrigins: []string{site}, ActionTimeout: 3 * time.Second}
	d, err := driver.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := bs.For(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	driver.FailContextClose(d)
	if err := d.Close(ctx); err == nil {
		t.Fatal("closing a session whose context does not close succeeded")
	}
	b2, err := bs.For(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b2 == b1 {
		t.Fatal("For returned the broken browser")
	}
	if !driver.PlaywrightBrowser(b1).IsConnected() {
		t.Error("the broken browser was closed before Browsers closed (other sessions may run in it)")
	}
	// A browser that went away is replaced and retired as well.
	if err := b2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b3, err := bs.For(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b3 == b2 || b3 == b1 {
		t.Fatal("For returned a retired browser")
	}
	if err := bs.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	for i, b := range []*driver.Browser{b1, b3} {
		if driver.PlaywrightBrowser(b).IsConnected() {
			t.Errorf("browser %d still runs after Browsers.Close", i+1)
		}
	}
}
