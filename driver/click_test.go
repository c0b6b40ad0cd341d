package driver_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// clickScript counts, in #log, the events of a click that reach each
// element it names, and any click event that reaches the document at all.
const clickScript = `<script>
const counts = {};
function count(k) { counts[k] = (counts[k] || 0) + 1; document.getElementById('log').textContent = Object.keys(counts).sort().map((n) => n + '=' + counts[n]).join(' '); }
function watch(el, name) { for (const t of ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click']) el.addEventListener(t, () => count(name + '.' + t)); }
document.addEventListener('click', () => count('document.click'));
</script>`

// clickPages are the pages of the click tests, by path. Each button #b is
// harmless; what the page does when the press reaches it is the test.
var clickPages = map[string]string{
	// The page opens a full-page dialog as the button goes down: the
	// click did its job, and the dialog gets nothing of it.
	"/overlay": `<!doctype html><html><body style="margin:0">` + clickScript + `
<p id="log">none</p>
<button id="b" type="button" style="position:absolute;left:40px;top:80px;width:200px;height:50px">Open</button>
<div id="ov" style="display:none;position:fixed;left:0;top:0;right:0;bottom:0;z-index:10;background:rgba(0,0,0,.3)"></div>
<script>
const b = document.getElementById('b'), ov = document.getElementById('ov');
watch(b, 'b'); watch(ov, 'ov');
b.addEventListener('mousedown', () => { ov.style.display = 'block'; });
</script></body></html>`,
	// As the button goes down, the page covers it with a Pay button
	// that pays on every event of a click it gets (a GET of /pay and a
	// POST of /pay/now).
	"/swap-cover": `<!doctype html><html><body style="margin:0">` + clickScript + swapScript + `
<script>b.addEventListener('mousedown', () => { pay.style.zIndex = '10'; document.body.append(pay); });</script></body></html>`,
	// The same, the Pay button taking the harmless one's place.
	"/swap-replace": `<!doctype html><html><body style="margin:0">` + clickScript + swapScript + `
<script>b.addEventListener('mousedown', () => { b.replaceWith(pay); });</script></body></html>`,
	// The button is under a transparent cover from the start.
	"/covered": `<!doctype html><html><body style="margin:0">` + clickScript + `
<p id="log">none</p>
<button id="b" type="button" style="position:absolute;left:40px;top:80px;width:200px;height:50px">Open</button>
<div id="cov" style="position:absolute;left:0;top:60px;width:400px;height:120px;z-index:10"></div>
<script>watch(document.getElementById('b'), 'b'); watch(document.getElementById('cov'), 'cov');</script></body></html>`,
	// The button gets covered as the pointer arrives, before the press.
	"/covered-on-arrival": `<!doctype html><html><body style="margin:0">` + clickScript + `
<p id="log">none</p>
<button id="b" type="button" style="position:absolute;left:300px;top:220px;width:200px;height:50px">Open</button>
<div id="cov" style="display:none;position:absolute;left:260px;top:200px;width:300px;height:100px;z-index:10"></div>
<script>
const b = document.getElementById('b'), cov = document.getElementById('cov');
watch(b, 'b'); watch(cov, 'cov');
for (const t of ['pointerover', 'pointermove', 'mousemove']) b.addEventListener(t, () => { cov.style.display = 'block'; });
</script></body></html>`,
	// A same-origin frame, hidden until the pointer arrives, then shown
	// over the button: the whole click would land inside it.
	"/frame-on-arrival": `<!doctype html><html><body style="margin:0">` + clickScript + `
<p id="log">none</p>
<button id="b" type="button" style="position:absolute;left:120px;top:380px;width:200px;height:50px">Open</button>
<iframe id="f" style="display:none;position:absolute;left:80px;top:360px;width:300px;height:100px;border:0;z-index:10"
 srcdoc="<body style='margin:0'><div id='inner' style='position:fixed;left:0;top:0;right:0;bottom:0'></div><script>for (const t of ['pointerdown','mousedown','pointerup','mouseup','click']) document.getElementById('inner').addEventListener(t, () => parent.count('f.' + t));</script></body>"></iframe>
<script>
const b = document.getElementById('b'), f = document.getElementById('f');
watch(b, 'b');
for (const t of ['pointerover', 'pointermove', 'mousemove']) b.addEventListener(t, () => { f.style.display = 'block'; });
</script></body></html>`,
	// A frame the page creates over the button as the pointer arrives,
	// after the guard was armed: the guard never sees the click.
	"/new-frame-on-arrival": `<!doctype html><html><body style="margin:0">` + clickScript + `
<p id="log">none</p>
<button id="b" type="button" style="position:absolute;left:120px;top:380px;width:200px;height:50px">Open</button>
<script>
const b = document.getElementById('b');
watch(b, 'b');
let made = false;
for (const t of ['pointerover', 'pointermove', 'mousemove']) b.addEventListener(t, () => {
  if (made) return;
  made = true;
  const f = document.createElement('iframe');
  f.style.cssText = 'position:absolute;left:80px;top:360px;width:300px;height:100px;border:0;z-index:10';
  document.body.append(f);
  f.contentDocument.body.style.margin = '0';
  f.contentDocument.body.innerHTML = '<div id="inner" style="position:fixed;left:0;top:0;right:0;bottom:0"></div>';
  watch(f.contentDocument.getElementById('inner'), 'nf');
});
</script></body></html>`,
	// As "Show details" goes down, the page moves its caption into a link
	// that deletes the account: the rest of the click must not follow it.
	"/span-into-link": `<!doctype html><html><body style="margin:0">` + clickScript + markScript + `
<button id="go" type="button" style="position:absolute;left:40px;top:80px;width:200px;height:50px"><span id="s">Show details</span></button>
<a id="del" href="/account/delete?confirm=1" style="position:absolute;left:40px;top:200px">Delete account: </a>
<script>
const go = document.getElementById('go'), s = document.getElementById('s');
watch(go, 'go');
go.addEventListener('mousedown', () => { document.getElementById('del').append(s); });
</script></body></html>`,
	// As the button goes down, the page rewrites its caption to "Pay now"
	// and makes it the submit button of a form that pays.
	"/pay-on-press": `<!doctype html><html><body style="margin:0">` + clickScript + markScript + `
<form id="fm" method="post" action="/pay/now"><input type="hidden" name="amount" value="900">
<button id="b" type="button" style="position:absolute;left:40px;top:80px;width:200px;height:50px">Show details</button></form>
<script>
const b = document.getElementById('b');
watch(b, 'b');
b.addEventListener('pointerdown', () => { b.textContent = 'Pay now'; b.type = 'submit'; });
</script></body></html>`,
	// As the button goes down, the page wraps it in a link that deletes
	// the account.
	"/link-on-press": `<!doctype html><html><body style="margin:0">` + clickScript + markScript + `
<button id="b" type="button" style="position:absolute;left:40px;top:80px;width:200px;height:50px">Show details</button>
<script>
const b = document.getElementById('b');
watch(b, 'b');
b.addEventListener('pointerdown', () => { const a = document.createElement('a'); a.href = '/account/delete?confirm=1'; b.before(a); a.append(b); });
</script></body></html>`,
	// As the submit button of no form goes down, the page makes it the
	// submit button of a form that pays (its form attribute).
	"/form-on-press": `<!doctype html><html><body style="margin:0">` + clickScript + markScript + `
<form id="payf" method="post" action="/pay/now"><input type="hidden" name="amount" value="900"></form>
<button id="b" type="submit" style="position:absolute;left:40px;top:80px;width:200px;height:50px">Show details</button>
<script>
const b = document.getElementById('b');
watch(b, 'b');
b.addEventListener('pointerdown', () => { b.setAttribute('form', 'payf'); });
</script></body></html>`,
}

// markScript is #mark, whose POST /mark is the tests' barrier (see
// barrier).
const markScript = `
<p id="log">none</p>
<button id="mark" type="button" style="position:absolute;left:40px;top:300px;width:100px;height:30px">mark</button>
<script>document.getElementById('mark').addEventListener('click', () => { fetch('/mark', { method: 'POST' }); });</script>`

// swapScript is the harmless #b ("Show details"), the Pay button it gets
// swapped for, and #mark, whose POST /mark is the tests' barrier.
const swapScript = `
<p id="log">none</p>
<button id="b" type="button" style="position:absolute;left:40px;top:80px;width:200px;height:50px">Show details</button>
<button id="mark" type="button" style="position:absolute;left:40px;top:300px;width:100px;height:30px">mark</button>
<script>
const b = document.getElementById('b');
const pay = document.createElement('button');
pay.id = 'pay'; pay.type = 'button'; pay.textContent = 'Pay';
pay.style.cssText = 'position:absolute;left:30px;top:70px;width:220px;height:70px';
const payNow = () => { fetch('/pay?amount=900'); fetch('/pay/now', { method: 'POST', body: 'amount=900' }); };
for (const t of ['pointerup', 'mouseup', 'click']) pay.addEventListener(t, payNow);
watch(b, 'b'); watch(pay, 'pay');
document.getElementById('mark').addEventListener('click', () => { fetch('/mark', { method: 'POST' }); });
</script>`

// clickSite serves clickPages and records every request but the pages'.
type clickSite struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string // "POST /mark", "GET /pay?amount=900"...
}

func newClickSite(t *testing.T) *clickSite {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	s := &clickSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if page, ok := clickPages[r.URL.Path]; ok && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page)
			return
		}
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *clickSite) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// clickOn opens path, describes sel (as the session does before it
// judges a click) and clicks it.
func clickOn(t *testing.T, d driver.Driver, site, path, sel string) (contract.ToolResult, error) {
	t.Helper()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + path}); err != nil {
		t.Fatal(err)
	}
	describe(t, d, sel)
	return act(t, d, contract.Action{Type: contract.ActClick, Selector: sel, TimeoutMs: 500})
}

// pageLog is the text of the page's #log: the events its elements got.
func pageLog(t *testing.T, d driver.Driver) string {
	t.Helper()
	d.TakeArtifacts()
	if _, err := act(t, d, contract.Action{Type: contract.ActExtract, Extract: contract.ExtractText, Selector: "#log"}); err != nil {
		t.Fatal(err)
	}
	arts := d.TakeArtifacts()
	if len(arts) != 1 {
		t.Fatalf("extract #log made %d artifacts", len(arts))
	}
	return arts[0].Artifact.Value
}

// wantEvents checks that log (see clickScript) holds every entry of want
// and no entry of any element in none.
func wantEvents(t *testing.T, log string, want []string, none ...string) {
	t.Helper()
	fields := strings.Fields(log)
	for _, w := range want {
		if !slices.Contains(fields, w) {
			t.Errorf("the page's log %q lacks %s", log, w)
		}
	}
	for _, f := range fields {
		for _, n := range none {
			if strings.HasPrefix(f, n+".") || f == n {
				t.Errorf("the page's log %q has %s", log, f)
			}
		}
	}
}

// TestClickCoveredAfterPress: a click whose press (pointerdown,
// mousedown) reached the element is a success whatever the page did next;
// the rest of it reaches nothing else, and the result's note says so.
func TestClickCoveredAfterPress(t *testing.T) {
	s := newClickSite(t)
	site := s.srv.URL
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, mode contract.DriverMode) {
		t.Run("dialog opened on mousedown", func(t *testing.T) {
			res, err := clickOn(t, d, site, "/overlay", "#b")
			if err != nil || !res.OK {
				t.Fatalf("click: %v (%+v), want a success", err, res)
			}
			if !strings.Contains(res.Note, "covered or moved the element after mousedown") || !strings.Contains(res.Note, `<div id="ov">`) {
				t.Errorf("note %q, want it to say the page covered the element and the rest went to the dialog", res.Note)
			}
			wantEvents(t, pageLog(t, d), []string{"b.pointerdown=1", "b.mousedown=1"}, "ov", "document.click")
		})

		for _, c := range []struct{ path, how string }{
			{"/swap-cover", "covered or moved"},
			{"/swap-replace", "removed"},
		} {
			t.Run("Pay swapped in on mousedown "+c.path, func(t *testing.T) {
				res, err := clickOn(t, d, site, c.path, "#b")
				if err != nil || !res.OK {
					t.Fatalf("click: %v (%+v), want a success", err, res)
				}
				if !strings.Contains(res.Note, "the page "+c.how+" the element after mousedown") || !strings.Contains(res.Note, "stopped") && !strings.Contains(res.Note, "not dispatched") {
					t.Errorf("note %q, want it to say the page %s the element and the rest of the click was stopped", res.Note, c.how)
				}
				wantEvents(t, pageLog(t, d), []string{"b.pointerdown=1", "b.mousedown=1"}, "pay", "document.click")
				// The page sends /mark after anything the click could
				// have made it send.
				if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#mark"}); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the page's barrier request", func() bool { return slices.Contains(s.received(), "POST /mark") })
				for _, g := range s.received() {
					if g != "POST /mark" {
						t.Errorf("the server got %q", g)
					}
				}
				s.mu.Lock()
				s.got = nil
				s.mu.Unlock()
			})
		}

		t.Run("covered before the pointer arrived", func(t *testing.T) {
			res, err := clickOn(t, d, site, "/covered", "#b")
			wantNotInteractable(t, res, err, `<div id="cov">`)
			wantEvents(t, pageLog(t, d), nil, "b", "document.click")
		})

		if mode != contract.ModePlaywright {
			// The extension dispatches the click at the element: no
			// pointer travels there first.
			return
		}
		t.Run("covered as the pointer arrived", func(t *testing.T) {
			res, err := clickOn(t, d, site, "/covered-on-arrival", "#b")
			wantNotInteractable(t, res, err, `<div id="cov">`)
			wantEvents(t, pageLog(t, d), nil, "b", "cov", "document.click")
		})
		t.Run("a frame shown as the pointer arrived", func(t *testing.T) {
			res, err := clickOn(t, d, site, "/frame-on-arrival", "#b")
			wantNotInteractable(t, res, err, `<div id="inner">`)
			wantEvents(t, pageLog(t, d), nil, "b", "f", "document.click")
		})
		t.Run("a frame created as the pointer arrived", func(t *testing.T) {
			res, err := clickOn(t, d, site, "/new-frame-on-arrival", "#b")
			wantNotInteractable(t, res, err, "did not reach the element")
			wantEvents(t, pageLog(t, d), nil, "b", "document.click")
		})
	})
}

// wantNotInteractable checks that a click failed as not_interactable,
// naming what covered its element.
func wantNotInteractable(t *testing.T, res contract.ToolResult, err error, cover string) {
	t.Helper()
	if !errors.Is(err, driver.ErrNotInteractable) || res.OK || res.Error == nil || res.Error.Code != contract.CodeNotInteractable {
		t.Fatalf("click: %v (%+v), want not_interactable", err, res)
	}
	if !strings.Contains(res.Error.Message, cover) {
		t.Errorf("message %q, want it to name %s", res.Error.Message, cover)
	}
	if res.Note != "" {
		t.Errorf("a failed click has the note %q", res.Note)
	}
}

// barrier clicks #mark and waits for its POST /mark, which the page sends
// after anything an earlier click could have made it send; it returns
// every other request the server got since the last barrier.
func (s *clickSite) barrier(t *testing.T, d driver.Driver) []string {
	t.Helper()
	if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#mark"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the page's barrier request", func() bool { return slices.Contains(s.received(), "POST /mark") })
	s.mu.Lock()
	defer s.mu.Unlock()
	var other []string
	for _, g := range s.got {
		if g != "POST /mark" {
			other = append(other, g)
		}
	}
	s.got = nil
	return other
}

// TestClickTargetMovedOutAfterPress: the page moves the caption the
// events go to out of the judged button, into a link that deletes the
// account, as the button goes down. The click reached the button (a
// success), and nothing of it follows the link.
func TestClickTargetMovedOutAfterPress(t *testing.T) {
	s := newClickSite(t)
	site := s.srv.URL
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, mode contract.DriverMode) {
		res, err := clickOn(t, d, site, "/span-into-link", "#go")
		if err != nil || !res.OK {
			t.Fatalf("click: %v (%+v), want a success", err, res)
		}
		if mode == contract.ModeExtension && (!strings.Contains(res.Note, "not dispatched") || !strings.Contains(res.Note, `<span id="s"> was moved out of the element`)) {
			t.Errorf("note %q, want it to say the rest of the click was withheld as its target left the element", res.Note)
		}
		wantEvents(t, pageLog(t, d), []string{"go.pointerdown=1", "go.mousedown=1"}, "go.click")
		if got := s.barrier(t, d); len(got) != 0 {
			t.Errorf("the server got %q, want nothing but the barrier", got)
		}
	})
}

// TestClickFactsChangedOnPress: a pointerdown handler changes what a click
// on the judged "Show details" button activates: rewrites it into "Pay
// now", the submit button of a paying form; wraps it in a link that
// deletes the account; makes it the submit button of a paying form by its
// form attribute. The click is stopped before it activates the button,
// reported as target_changed, and nothing is sent.
func TestClickFactsChangedOnPress(t *testing.T) {
	s := newClickSite(t)
	site := s.srv.URL
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, mode contract.DriverMode) {
		for _, c := range []struct {
			path, changed string
			// orStopped: in Playwright, Chromium sends the rest of a
			// real click after the element moved in the DOM on
			// pointerdown elsewhere, where the guard stops it; the
			// press reached the element, so that is a success.
			orStopped bool
		}{
			{"/pay-on-press", "type", false},
			{"/link-on-press", "link", true},
			{"/form-on-press", "form", false},
		} {
			t.Run(c.path, func(t *testing.T) {
				res, err := clickOn(t, d, site, c.path, "#b")
				switch {
				case c.orStopped && mode == contract.ModePlaywright && err == nil && res.OK:
					if !strings.Contains(res.Note, "was stopped there") {
						t.Errorf("note %q, want it to say the rest of the click was stopped", res.Note)
					}
				case !errors.Is(err, driver.ErrTargetChanged) || res.OK || res.Error == nil || res.Error.Code != contract.CodeTargetChanged:
					t.Fatalf("click: %v (%+v), want target_changed", err, res)
				case !strings.Contains(res.Error.Message, c.changed):
					t.Errorf("message %q, want it to name the changed %s", res.Error.Message, c.changed)
				}
				wantEvents(t, pageLog(t, d), []string{"b.pointerdown=1"}, "b.click", "document.click")
				if got := s.barrier(t, d); len(got) != 0 {
					t.Errorf("the server got %q, want nothing but the barrier", got)
				}
			})
		}
	})
}
