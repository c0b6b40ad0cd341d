package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// swapPage is served by every origin of the target tests. #go submits a
// POST to /pay; #swap (or, with ?hover, the pointer arriving on #go)
// turns #go into a button of another caption; #q reports every value typed
// into it to /typed; #pick reports a change to /picked; #away follows a
// link to the other origin's copy of the page; #mark posts /mark.
const swapPage = `<!doctype html><html><head><meta charset="utf-8"><title>Swap</title></head><body>
<form id="f" method="post" action="/pay"><input type="hidden" name="amount" value="10">
<button id="go" type="submit">Continue</button></form>
<button id="swap" type="button">swap</button>
<label for="q">Search</label><input id="q" name="q">
<label for="pick">Size</label><select id="pick"><option value="s">S</option><option value="l">L</option></select>
<a id="away" href="%s/swap">elsewhere</a>
<button id="mark" type="button">mark</button>
<style>#arrow:hover::after { content: " \2192"; }</style><button id="arrow" type="button">Learn more</button>
<script>
document.getElementById('arrow').addEventListener('click', () => { fetch('/arrow', { method: 'POST' }); });
document.getElementById('mark').addEventListener('click', () => { fetch('/mark', { method: 'POST' }); });
const go = document.getElementById('go');
function swap() { go.textContent = 'Pay now'; }
document.getElementById('swap').addEventListener('click', swap);
if (location.search.includes('hover')) go.addEventListener('pointerover', swap);
document.getElementById('q').addEventListener('input', (e) => { fetch('/typed', { method: 'POST', body: e.target.value }); });
document.getElementById('pick').addEventListener('change', (e) => { fetch('/picked', { method: 'POST', body: e.target.value }); });
if (location.search.includes('relabel')) {
  document.getElementById('swap').addEventListener('click', () => { document.querySelector('label[for=pick]').textContent = 'Plan'; document.querySelector('label[for=q]').textContent = 'Card number'; });
}
</script></body></html>`

// swapSite is one origin serving swapPage and recording what reached it.
type swapSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []string // "POST /pay", "POST /typed <body>"...
	peer string   // the other origin
}

func newSwapSite(t *testing.T) *swapSite {
	t.Helper()
	s := &swapSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.got = append(s.got, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(b)))
			s.mu.Unlock()
			if r.URL.Path == "/pay" {
				http.Redirect(w, r, "/swap", http.StatusSeeOther)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, swapPage, s.peer)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *swapSite) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// twoOrigins starts two origins whose pages link to each other.
func twoOrigins(t *testing.T) (a, b *swapSite) {
	a, b = newSwapSite(t), newSwapSite(t)
	a.peer, b.peer = b.srv.URL, a.srv.URL
	return a, b
}

func describe(t *testing.T, d driver.Driver, sel string) contract.Element {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	el, err := d.Describe(ctx, sel)
	if err != nil {
		t.Fatalf("Describe(%q): %v", sel, err)
	}
	return el
}

func wantTargetChanged(t *testing.T, res contract.ToolResult, err error) {
	t.Helper()
	if !errors.Is(err, driver.ErrTargetChanged) {
		t.Errorf("err = %v, want target_changed", err)
	}
	if res.OK || res.Error == nil || res.Error.Code != contract.CodeTargetChanged {
		t.Errorf("result = %+v, want a failed result with target_changed", res)
	}
}

// barrier waits until the page, after the action under test, has had a
// request of its own reach the server: it clicks #mark (never described,
// so acted on as before) and waits for its POST, which the page sends after
// anything the action could have made it send.
func barrier(t *testing.T, d driver.Driver, s *swapSite) {
	t.Helper()
	if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#mark"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the page's barrier request", func() bool {
		for _, g := range s.received() {
			if g == "POST /mark" {
				return true
			}
		}
		return false
	})
}

// nothingBut fails when s received anything but the barrier's POST, and
// forgets what it received.
func nothingBut(t *testing.T, s *swapSite) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.got {
		if g != "POST /mark" {
			t.Errorf("the server got %q", g)
		}
	}
	s.got = nil
}

func TestTargetChangedBetweenDescribeAndAct(t *testing.T) {
	for _, mode := range []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox} {
		t.Run(string(mode), func(t *testing.T) {
			a, b := twoOrigins(t)
			d := open(t, mode, a.srv.URL, func(c *driver.Config) { c.AllowedOrigins = []string{a.srv.URL, b.srv.URL} })
			closeDriver(t, d)
			nav := func(u string) {
				t.Helper()
				if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: u}); err != nil {
					t.Fatal(err)
				}
			}

			t.Run("unchanged", func(t *testing.T) {
				nav(a.srv.URL + "/swap")
				el := describe(t, d, "#go")
				if el.Label != "Continue" || el.Origin != a.srv.URL {
					t.Fatalf("Describe(#go) = %+v", el)
				}
				if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#go"}); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the POST of an unchanged button", func() bool { return len(a.received()) > 0 })
				if got := a.received(); got[0] != "POST /pay amount=10" {
					t.Fatalf("the server got %q", got)
				}
				a.mu.Lock()
				a.got = nil
				a.mu.Unlock()
			})

			t.Run("caption restyled on hover", func(t *testing.T) {
				// Not a change: :hover content comes with the pointer.
				nav(a.srv.URL + "/swap")
				if el := describe(t, d, "#arrow"); el.Label != "Learn more" {
					t.Fatalf("Describe(#arrow) = %+v", el)
				}
				if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#arrow"}); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the click on a button restyled on hover", func() bool { return slices.Contains(a.received(), "POST /arrow") })
				a.mu.Lock()
				a.got = nil
				a.mu.Unlock()
			})

			t.Run("button swapped", func(t *testing.T) {
				nav(a.srv.URL + "/swap")
				describe(t, d, "#go")
				if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#swap"}); err != nil {
					t.Fatal(err)
				}
				res, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#go"})
				wantTargetChanged(t, res, err)
				barrier(t, d, a)
				nothingBut(t, a)
			})

			t.Run("button swapped under the pointer", func(t *testing.T) {
				nav(a.srv.URL + "/swap?hover")
				describe(t, d, "#go")
				res, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#go"})
				wantTargetChanged(t, res, err)
				barrier(t, d, a)
				nothingBut(t, a)
			})

			t.Run("field relabelled", func(t *testing.T) {
				nav(a.srv.URL + "/swap?relabel")
				describe(t, d, "#q")
				describe(t, d, "#pick")
				if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#swap"}); err != nil {
					t.Fatal(err)
				}
				res, err := act(t, d, contract.Action{Type: contract.ActType, Selector: "#q", Text: "hunter2"})
				wantTargetChanged(t, res, err)
				if err != nil && strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error quotes the text: %v", err)
				}
				res, err = act(t, d, contract.Action{Type: contract.ActSelect, Selector: "#pick", Value: "l"})
				wantTargetChanged(t, res, err)
				barrier(t, d, a)
				nothingBut(t, a)
			})

			t.Run("page moved to another origin", func(t *testing.T) {
				nav(a.srv.URL + "/swap")
				describe(t, d, "#go")
				describe(t, d, "#q")
				describe(t, d, "#pick")
				if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#away"}); err != nil {
					t.Fatal(err)
				}
				res, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#go"})
				wantTargetChanged(t, res, err)
				if !strings.HasPrefix(res.URL, b.srv.URL) {
					t.Errorf("the page is at %s, want the other origin %s", res.URL, b.srv.URL)
				}
				res, err = act(t, d, contract.Action{Type: contract.ActType, Selector: "#q", Text: "hunter2"})
				wantTargetChanged(t, res, err)
				res, err = act(t, d, contract.Action{Type: contract.ActSelect, Selector: "#pick", Value: "s"})
				wantTargetChanged(t, res, err)
				barrier(t, d, b)
				nothingBut(t, b)
				nothingBut(t, a)
			})
		})
	}
}

// TestObserverCheck: the observer's check, which the extension executor
// calls before it acts, answers whether a selector still addresses what
// describe reported.
func TestObserverCheck(t *testing.T) {
	a, _ := twoOrigins(t)
	d := open(t, contract.ModePlaywright, a.srv.URL)
	closeDriver(t, d)
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: a.srv.URL + "/swap"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := driver.CallObserver(ctx, d, "describe", "#go", map[string]any{"sensitive": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	var desc struct {
		Element    map[string]any `json:"element"`
		PageOrigin string         `json:"pageOrigin"`
	}
	if err := json.Unmarshal(raw, &desc); err != nil {
		t.Fatal(err)
	}
	if desc.PageOrigin != a.srv.URL || desc.Element["origin"] != a.srv.URL {
		t.Fatalf("describe = %s, want origin and pageOrigin %s", raw, a.srv.URL)
	}
	expect := func(mut func(e map[string]any)) map[string]any {
		e := map[string]any{}
		for k, v := range desc.Element {
			e[k] = v
		}
		x := map[string]any{"element": e, "pageOrigin": desc.PageOrigin, "sensitive": []string{}}
		if mut != nil {
			mut(x)
		}
		return x
	}
	tests := []struct {
		name    string
		expect  any
		ok      bool
		changed []string
	}{
		{"nothing expected", nil, true, []string{}},
		{"unchanged", expect(nil), true, []string{}},
		{"other label", expect(func(x map[string]any) { x["element"].(map[string]any)["label"] = "Pay now" }), false, []string{"label"}},
		{"other tag and id", expect(func(x map[string]any) {
			e := x["element"].(map[string]any)
			e["tag"], e["id"] = "a", "pay"
		}), false, []string{"tag", "id"}},
		{"other frame origin", expect(func(x map[string]any) { x["element"].(map[string]any)["origin"] = "http://elsewhere.test" }), false, []string{"origin"}},
		{"other page origin", expect(func(x map[string]any) { x["pageOrigin"] = "http://elsewhere.test" }), false, []string{"pageOrigin"}},
		{"sensitive now", expect(func(x map[string]any) { x["sensitive"] = []string{"#go"} }), false, []string{"label", "text", "sensitiveSelector"}},
	}
	for _, tt := range tests {
		raw, err := driver.CallObserver(ctx, d, "check", "#go", tt.expect)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			OK      bool     `json:"ok"`
			Code    string   `json:"code"`
			Changed []string `json:"changed"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got.OK != tt.ok || !slices.Equal(got.Changed, tt.changed) || (!tt.ok && got.Code != string(contract.CodeTargetChanged)) {
			t.Errorf("%s: check = %s, want ok %v, changed %v", tt.name, raw, tt.ok, tt.changed)
		}
	}
}
