package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// guardWait only stops a broken test from hanging: every wait below ends
// on an event (a refusal reported, a request received).
const guardWait = 30 * time.Second

// extRecorder is an HTTP server on 127.0.0.1 that records every request it
// receives: the ground truth of what left the browser.
type extRecorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string // "METHOD /path"
	hit chan string
}

func newExtRecorder(t *testing.T, h http.Handler) *extRecorder {
	r := &extRecorder{hit: make(chan string, 64)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		_ = q.ParseForm()
		line := q.Method + " " + q.URL.Path
		r.mu.Lock()
		r.got = append(r.got, line)
		r.mu.Unlock()
		select {
		case r.hit <- line:
		default:
		}
		if h != nil {
			h.ServeHTTP(w, q)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>foreign</title><p>foreign page</p>")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *extRecorder) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// extEffects records what the driver's boundary reports, and answers Judge
// with judge.
type extEffects struct {
	mu      sync.Mutex
	judged  []contract.Effect
	refused chan contract.Effect
	judge   func(contract.Effect) error
}

func newExtEffects(judge func(contract.Effect) error) *extEffects {
	return &extEffects{refused: make(chan contract.Effect, 256), judge: judge}
}

func (e *extEffects) Judge(ctx context.Context, eff contract.Effect) error {
	e.mu.Lock()
	e.judged = append(e.judged, eff)
	e.mu.Unlock()
	return e.judge(eff)
}

func (e *extEffects) Refused(eff contract.Effect) { e.refused <- eff }

func (e *extEffects) judgedSoFar() []contract.Effect {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.judged)
}

// waitRefused waits for a refusal that matches want.
func (e *extEffects) waitRefused(t *testing.T, what string, want func(contract.Effect) bool) contract.Effect {
	t.Helper()
	timer := time.NewTimer(guardWait)
	defer timer.Stop()
	var seen []contract.Effect
	for {
		select {
		case eff := <-e.refused:
			if want(eff) {
				return eff
			}
			seen = append(seen, eff)
		case <-timer.C:
			t.Fatalf("no refusal of %s was reported; saw %+v", what, seen)
		}
	}
}

// TestExtensionBoundary drives the extension driver in real headless
// Chromium (through the extension harness) on pages that try to reach a
// foreign origin (another server on 127.0.0.1, another port) by a link, a
// frame, a beacon, a form post and a window, and a same-origin form post
// that must be judged before the click.
func TestExtensionBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	foreign := newExtRecorder(t, nil)
	F := foreign.srv.URL
	stun := newUDPSink(t)
	rtc := fmt.Sprintf(rtcPage, stun.port())
	rtcDone := make(chan string, 16)
	pages := map[string]string{
		"/link":   `<a id="out" href="` + F + `/link?q=1">out</a>`,
		"/frame":  `<iframe src="` + F + `/frame"></iframe><p>framed</p>`,
		"/beacon": `<button id="b" onclick="navigator.sendBeacon('` + F + `/beacon', 'data')">send</button>`,
		"/postx":  `<form method="post" action="` + F + `/pay"><input name="card"><button id="go">Continue</button></form>`,
		"/post":   `<form method="post" action="/pay?x=1"><input name="card" value="4111"><input name="amount"><button id="go">Pay</button></form>`,
		"/fetch":  `<button id="f" onclick="fetch('/api', {method: 'POST', body: 'x'})">fetch</button>`,
		"/popup":  `<button id="p" onclick="window.open('` + F + `/popup')">open</button>`,
		"/ws":     `<script>new WebSocket('ws` + strings.TrimPrefix(F, "http") + `/ws')</script><p>ws</p>`,
		"/meta":   `<meta http-equiv="refresh" content="0;url=` + F + `/meta"><p>meta</p>`,
		"/swap":   `<button id="go">Go</button><button id="swap" onclick="document.getElementById('go').textContent = 'Delete account'">swap</button>`,
		"/rtc":    rtc,
		// The attempt as the page loads, before the driver calls into it.
		"/rtcload": rtc + `<script>call(window.RTCPeerConnection).then(report)</script>`,
	}
	site := newExtRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.URL.Path == "/done" {
			rtcDone <- q.URL.Query().Get("r")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if q.URL.Path == "/pay" {
			fmt.Fprint(w, "<!doctype html><title>paid</title><p>paid</p>")
			return
		}
		fmt.Fprint(w, "<!doctype html><title>t</title>"+pages[q.URL.Path])
	}))
	S := site.srv.URL

	b := nativehosttest.Start(t, nativehosttest.Options{Relay: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := b.ConnectDriver(ctx)
	if err != nil {
		t.Fatalf("%v\nhost log:\n%s", err, b.HostLog())
	}
	openWith := func(t *testing.T, eff driver.Effects, allowWebRTC bool) driver.Driver {
		t.Helper()
		octx, ocancel := context.WithTimeout(context.Background(), guardWait)
		defer ocancel()
		d, err := driver.OpenExtension(octx, driver.Config{
			Mode: contract.ModeExtension, AllowedOrigins: []string{S}, ActionTimeout: 3 * time.Second, Effects: eff,
			AllowWebRTC: allowWebRTC,
		}, driver.ExtensionTarget{Port: conn})
		if err != nil {
			t.Fatalf("open the extension driver: %v", err)
		}
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), guardWait)
			defer ccancel()
			_ = d.Close(cctx)
		})
		return d
	}
	open := func(t *testing.T, eff driver.Effects) driver.Driver {
		t.Helper()
		return openWith(t, eff, false)
	}
	act := func(t *testing.T, d driver.Driver, a contract.Action) error {
		t.Helper()
		actx, acancel := context.WithTimeout(context.Background(), guardWait)
		defer acancel()
		a.Reason = "test"
		_, err := d.Act(actx, a)
		return err
	}
	do := func(t *testing.T, d driver.Driver, a contract.Action) {
		t.Helper()
		if err := act(t, d, a); err != nil {
			t.Fatalf("%s %s%s: %v", a.Type, a.URL, a.Selector, err)
		}
	}
	nav := func(path string) contract.Action {
		return contract.Action{ID: "n" + strings.Trim(path, "/"), Type: contract.ActNavigate, URL: S + path}
	}
	click := func(sel string) contract.Action {
		return contract.Action{ID: "c1", Type: contract.ActClick, Selector: sel}
	}
	never := func(err error) func(contract.Effect) error {
		return func(contract.Effect) error { return err }
	}
	foreignOrigin := strings.TrimSuffix(F, "/")
	refusedAt := func(kind contract.EffectKind, path string) func(contract.Effect) bool {
		return func(e contract.Effect) bool {
			return e.Kind == kind && e.Origin == foreignOrigin && e.Path == path && e.Refused == "origin not in the allowlist"
		}
	}

	t.Run("Link", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/link"))
		do(t, d, click("#out"))
		got := eff.waitRefused(t, "the link", refusedAt(contract.EffectNavigation, "/link"))
		octx, ocancel := context.WithTimeout(context.Background(), guardWait)
		defer ocancel()
		obs, oerr := d.Observe(octx, driver.ObserveOptions{})
		if oerr != nil || obs.State.ActiveURL != S+"/link" {
			t.Errorf("after the refused navigation: observe = %v, page %q, want %s/link", oerr, obs.State.ActiveURL, S)
		}
		if got.Method != "GET" || got.ResourceType != "document" {
			t.Errorf("refusal %+v", got)
		}
		bl := d.(driver.Blocker).BlockedRequests()
		if len(bl) == 0 || bl[0].Origin != foreignOrigin || bl[0].Reason != "origin not in the allowlist" {
			t.Errorf("BlockedRequests() = %+v", bl)
		}
	})
	t.Run("Frame", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/frame"))
		got := eff.waitRefused(t, "the frame", refusedAt(contract.EffectFrame, "/frame"))
		if got.ResourceType != "document" {
			t.Errorf("refusal %+v", got)
		}
	})
	t.Run("Beacon", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/beacon"))
		do(t, d, click("#b"))
		got := eff.waitRefused(t, "the beacon", refusedAt(contract.EffectRequest, "/beacon"))
		if got.Method != "POST" || got.ResourceType != "ping" {
			t.Errorf("refusal %+v", got)
		}
	})
	t.Run("WebSocket", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/ws"))
		got := eff.waitRefused(t, "the WebSocket", refusedAt(contract.EffectRequest, "/ws"))
		if got.ResourceType != "websocket" {
			t.Errorf("refusal %+v", got)
		}
	})
	t.Run("MetaRefresh", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		_ = act(t, d, nav("/meta"))
		eff.waitRefused(t, "the meta refresh", refusedAt(contract.EffectNavigation, "/meta"))
		// Sent back once, refused again, and left there: not a loop.
		eff.waitRefused(t, "the meta refresh, again", refusedAt(contract.EffectNavigation, "/meta"))
	})
	t.Run("ForeignFormPost", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/postx"))
		do(t, d, click("#go"))
		got := eff.waitRefused(t, "the foreign post", refusedAt(contract.EffectNavigation, "/pay"))
		if res, err := d.Act(context.Background(), contract.Action{ID: "w1", Type: contract.ActWait, Reason: "test", TimeoutMs: 1}); err != nil || res.URL != S+"/postx" {
			t.Errorf("after the refused post the tab shows %q (%v), want %s/postx", res.URL, err, S)
		}
		if got.Method != "POST" {
			t.Errorf("refusal %+v", got)
		}
		if j := eff.judgedSoFar(); len(j) != 0 {
			t.Errorf("a submission to a foreign origin was judged: %+v", j)
		}
	})
	t.Run("Popup", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/popup"))
		do(t, d, click("#p"))
		eff.waitRefused(t, "the popup", func(e contract.Effect) bool {
			return e.Kind == contract.EffectNavigation && strings.Contains(e.Refused, "new window")
		})
		// The window is closed: wait until no tab shows the foreign origin.
		if _, err := b.Worker.Evaluate(`(prefix) => new Promise((resolve) => {
  const check = async () => {
    if (!(await chrome.tabs.query({})).some((t) => (t.url || t.pendingUrl || '').startsWith(prefix))) resolve(true);
  };
  chrome.tabs.onRemoved.addListener(check);
  check();
})`, F+"/"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ScriptPostHeld", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/fetch"))
		do(t, d, click("#f"))
		got := eff.waitRefused(t, "the script's POST", func(e contract.Effect) bool { return e.Path == "/api" })
		if got.Method != "POST" || got.Kind != contract.EffectRequest || got.Origin != S || !strings.Contains(got.Refused, "held only for predicted form submissions") {
			t.Errorf("refusal %+v", got)
		}
		if slices.Contains(site.received(), "POST /api") {
			t.Error("the script's POST reached the server")
		}
	})
	t.Run("FormPostRefusedByJudge", func(t *testing.T) {
		eff := newExtEffects(never(errors.New("payment needs approval")))
		d := open(t, eff)
		do(t, d, nav("/post"))
		err := act(t, d, click("#go"))
		if driver.CodeOf(err) != contract.CodeNavigationBlocked || !strings.Contains(err.Error(), "payment needs approval") {
			t.Fatalf("click = %v, want navigation_blocked with the judge's reason", err)
		}
		want := contract.Effect{Kind: contract.EffectNavigation, Method: "POST", Origin: S, Path: "/pay", Fields: []string{"amount", "card"}, ResourceType: "document"}
		if j := eff.judgedSoFar(); len(j) != 1 || !equalEffect(j[0], want) {
			t.Errorf("judged %+v, want %+v", j, want)
		}
		if slices.Contains(site.received(), "POST /pay") {
			t.Error("the refused POST reached the server")
		}
	})
	t.Run("FormPostAllowedByJudge", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/post"))
		do(t, d, click("#go"))
		if !slices.Contains(site.received(), "POST /pay") {
			t.Fatalf("the allowed POST did not reach the server: %v", site.received())
		}
		if j := eff.judgedSoFar(); len(j) != 1 || j[0].Path != "/pay" {
			t.Errorf("judged %+v", j)
		}
	})
	t.Run("TargetChanged", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := open(t, eff)
		do(t, d, nav("/swap"))
		dctx, dcancel := context.WithTimeout(context.Background(), guardWait)
		defer dcancel()
		if _, err := d.Describe(dctx, "#go"); err != nil {
			t.Fatal(err)
		}
		do(t, d, click("#swap"))
		if err := act(t, d, click("#go")); driver.CodeOf(err) != contract.CodeTargetChanged {
			t.Fatalf("click on a changed target = %v, want target_changed", err)
		}
		// Described again, it is what the gate judges now.
		if _, err := d.Describe(dctx, "#go"); err != nil {
			t.Fatal(err)
		}
		do(t, d, click("#go"))
	})
	// WebRTC: the page's attempt (its own constructor, one from a fresh
	// about:blank frame, one made as the page loads) gets NotSupportedError,
	// the STUN server on a loopback UDP port receives nothing, and the next
	// observation reports exactly one refused peer effect.
	rtcWait := func(t *testing.T) string {
		t.Helper()
		select {
		case r := <-rtcDone:
			return r
		case <-time.After(guardWait):
			t.Fatal("the page never reported its WebRTC attempt")
		}
		return ""
	}
	peers := func(t *testing.T, d driver.Driver, eff *extEffects) []contract.Effect {
		t.Helper()
		octx, ocancel := context.WithTimeout(context.Background(), guardWait)
		defer ocancel()
		if _, err := d.Observe(octx, driver.ObserveOptions{}); err != nil {
			t.Fatal(err)
		}
		var got []contract.Effect
		for {
			select {
			case e := <-eff.refused:
				if e.Kind == contract.EffectPeer {
					got = append(got, e)
				}
			default:
				return got
			}
		}
	}
	wantPeer := contract.Effect{Kind: contract.EffectPeer, Refused: "WebRTC is off"}
	for _, c := range []struct{ name, page, sel string }{
		{"WebRTC", "/rtc", "#rtc"},
		{"WebRTCFrame", "/rtc", "#rtc-frame"},
		{"WebRTCOnLoad", "/rtcload", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			eff := newExtEffects(never(nil))
			d := open(t, eff)
			do(t, d, nav(c.page))
			if c.sel != "" {
				do(t, d, click(c.sel))
			}
			if got := rtcWait(t); got != "NotSupportedError" {
				t.Errorf("the page's WebRTC attempt ended with %q, want NotSupportedError", got)
			}
			if n := stun.received(t); n != 0 {
				t.Errorf("the STUN server received %d datagrams, want none", n)
			}
			if got := peers(t, d, eff); len(got) != 1 || !equalEffect(got[0], wantPeer) {
				t.Errorf("refused peer effects = %+v, want one %+v", got, wantPeer)
			}
			if got := peers(t, d, eff); len(got) != 0 {
				t.Errorf("the next observation reported %+v again", got)
			}
		})
	}
	t.Run("WebRTCAllowed", func(t *testing.T) {
		eff := newExtEffects(never(nil))
		d := openWith(t, eff, true)
		do(t, d, nav("/rtc"))
		do(t, d, click("#rtc"))
		// The page's own WebRTC, which the browser still keeps off UDP.
		if got := rtcWait(t); got != "gathered" {
			t.Errorf("with WebRTC allowed the page's attempt ended with %q, want gathered", got)
		}
		if n := stun.received(t); n != 0 {
			t.Errorf("the STUN server received %d datagrams, want none", n)
		}
		if got := peers(t, d, eff); len(got) != 0 {
			t.Errorf("refused peer effects %+v with WebRTC allowed", got)
		}
	})
	t.Run("RulesRemovedAfterSession", func(t *testing.T) {
		d := open(t, newExtEffects(never(nil)))
		if n := sessionRules(t, b); n == 0 {
			t.Fatal("no session rules while the driver is open")
		}
		cctx, ccancel := context.WithTimeout(context.Background(), guardWait)
		defer ccancel()
		if err := d.Close(cctx); err != nil {
			t.Fatal(err)
		}
		if n := sessionRules(t, b); n != 0 {
			t.Errorf("%d session rules after the session", n)
		}
	})
	if got := foreign.received(); len(got) != 0 {
		t.Errorf("the foreign server received %v", got)
	}
}

func equalEffect(a, b contract.Effect) bool {
	return a.Kind == b.Kind && a.Method == b.Method && a.Origin == b.Origin && a.Path == b.Path &&
		slices.Equal(a.Fields, b.Fields) && a.ResourceType == b.ResourceType && a.Refused == b.Refused
}

// sessionRules returns how many declarativeNetRequest session rules the
// extension holds.
func sessionRules(t *testing.T, b *nativehosttest.Browser) int {
	t.Helper()
	v, err := b.Worker.Evaluate(`async () => (await chrome.declarativeNetRequest.getSessionRules()).length`)
	if err != nil {
		t.Fatal(err)
	}
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	t.Fatalf("getSessionRules length %v", v)
	return 0
}
