package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/planner"
	"github.com/aegis-run/aegis/session"
)

// The loop's tests run on a fake browser: a few pages shaped like the demo
// site's, whose elements the fake describes as the observer would, and
// whose clicks change what the next observation shows. The gate is the real
// one (the embedded policy, real OPA) and the evidence a real bundle in a
// temporary directory: only the browser is faked.

// fakeOrigin is the fake site's origin.
const fakeOrigin = "http://shop.test"

// fakeEl is one element of a fake page.
type fakeEl struct {
	sel  string
	el   contract.Element
	hint contract.ActionHint
}

// fakePage is one page of the fake site.
type fakePage struct {
	title, text string
	els         []fakeEl
}

func button(id, text string) fakeEl {
	return fakeEl{"#" + id, contract.Element{Tag: "button", Type: "button", ID: id, Role: "button", Label: text, Text: text}, contract.HintClick}
}

func input(id, typ, label string) fakeEl {
	return fakeEl{"#" + id, contract.Element{Tag: "input", Type: typ, ID: id, Name: id, Role: "textbox", Label: label}, contract.HintType}
}

// fakePages are the pages of the fake site, by path.
var fakePages = map[string]fakePage{
	"/": {"Demo shop", "Welcome to the demo shop", []fakeEl{
		{"#nav-login", contract.Element{Tag: "a", ID: "nav-login", Role: "link", Label: "Sign in", Text: "Sign in"}, contract.HintClick},
	}},
	"/login": {"Sign in", "Sign in Username Password", []fakeEl{
		input("username", "text", "Username"), input("password", "password", "Password"), button("sign-in", "Sign in"),
	}},
	"/form": {"Order form", "Order Full name Notes Shipping Gift wrap Place order", []fakeEl{
		input("name", "text", "Full name"), input("notes", "text", "Notes"),
		{"#gift", contract.Element{Tag: "input", Type: "checkbox", ID: "gift", Name: "gift", Role: "checkbox", Label: "Gift wrap"}, contract.HintClick},
		{"#submit", contract.Element{Tag: "button", Type: "submit", ID: "submit", Role: "button", Label: "Place order", Text: "Place order"}, contract.HintClick},
	}},
	"/orders": {"Orders", "Orders A-1001 A-1003 A-1005", []fakeEl{
		{"#orders", contract.Element{Tag: "table", ID: "orders", Role: "table", Label: "Orders"}, ""},
	}},
	"/checkout": {"Checkout", "Checkout Your basket", []fakeEl{
		button("continue", "Continue"),
	}},
	"/basket": {"Basket", "Basket One lamp", []fakeEl{
		button("add", "Continue"), button("next", "Next"),
	}},
	"/danger": {"Billing", "Billing Your plan renews soon.", []fakeEl{
		button("pay", "Pay now"), button("delete", "Delete account"), button("harmless", "Say thanks"),
		{"#out", contract.Element{Tag: "p", ID: "out", Role: "status"}, ""},
	}},
}

// fakeSite opens fake drivers and keeps what they did: the requests a real
// site would have received.
type fakeSite struct {
	mu      sync.Mutex
	opened  []driver.Config
	ran     []contract.Action // every action a driver ran, with secrets resolved
	openErr error

	// What the pages do on the network by themselves, reported to the
	// session's driver.Effects as a real driver's boundary would: by
	// trigger: "click SELECTOR" while the click runs, "after click
	// SELECTOR" before the next observation after it (a timer firing while
	// the model thinks), "close" while the page closes (a beacon on
	// pagehide).
	effects map[string][]fakeEffect
	// reached are the effects that went through (Judge allowed them): what
	// the servers received.
	reached []contract.Effect
	// origins are the document origins Describe reports, by selector ("":
	// none reported).
	origins map[string]string
	// changed are the selectors whose action finds another page or element
	// than the one decided on: Act fails with target_changed.
	changed map[string]bool
	// same are the selectors DescribeObserved reports as the element the
	// last observation listed (driver.ObservedSame); any other is unknown.
	same map[string]bool
}

// fakeEffect is one effect a fake page causes: judged (a held
// state-changing request: Effects.Judge) or refused by the boundary
// (Effects.Refused); n copies at once, each from its own goroutine, all
// done before the trigger returns (0 means one).
type fakeEffect struct {
	effect contract.Effect
	judge  bool
	n      int
}

// fire reports the effects of trigger to the session, concurrently, and
// waits for every answer.
func (s *fakeSite) fire(fx driver.Effects, trigger string) {
	s.mu.Lock()
	effs := s.effects[trigger]
	s.mu.Unlock()
	if fx == nil {
		return
	}
	var wg sync.WaitGroup
	for _, fe := range effs {
		for range max(fe.n, 1) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !fe.judge {
					fx.Refused(fe.effect)
					return
				}
				if fx.Judge(context.Background(), fe.effect) == nil {
					s.mu.Lock()
					s.reached = append(s.reached, fe.effect)
					s.mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
}

// reachedPaths returns the paths of the effects that went through.
func (s *fakeSite) reachedPaths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.reached {
		out = append(out, e.Method+" "+e.Origin+e.Path)
	}
	return out
}

func newFakeSite() *fakeSite { return &fakeSite{} }

// open is the session's OpenDriver.
func (s *fakeSite) open(ctx context.Context, cfg driver.Config) (driver.Driver, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened = append(s.opened, cfg)
	if s.openErr != nil {
		return nil, s.openErr
	}
	pc := cfg.PolicyContext
	if pc.Classification == "" {
		pc.Classification = contract.ClassPublic
	}
	cfg.PolicyContext = pc
	return &fakeDriver{site: s, cfg: cfg, url: "about:blank"}, nil
}

// actions returns the actions the drivers ran whose type and selector or
// URL match, such as ("click", "#pay").
func (s *fakeSite) actions(typ contract.ActionType, target string) []contract.Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []contract.Action
	for _, a := range s.ran {
		if a.Type == typ && (target == "" || a.Selector == target || strings.Contains(a.URL, target)) {
			out = append(out, a)
		}
	}
	return out
}

// fakeDriver is a driver.Driver on the fake site.
type fakeDriver struct {
	site *fakeSite
	cfg  driver.Config

	mu      sync.Mutex
	url     string
	marks   []string // what happened on the page since it loaded
	out     string   // the text of #out on /danger
	seq     int
	taken   []driver.Extracted
	pending []contract.Artifact
	closed  bool
	after   string // the trigger of the next observation's effects
}

func (d *fakeDriver) page() (fakePage, bool) {
	path := strings.TrimPrefix(d.url, fakeOrigin)
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if !strings.HasPrefix(d.url, fakeOrigin) {
		return fakePage{}, false
	}
	p, ok := fakePages[path]
	return p, ok
}

func (d *fakeDriver) Mode() contract.DriverMode { return d.cfg.Mode }

func (d *fakeDriver) Observe(ctx context.Context, _ driver.ObserveOptions) (contract.Observation, error) {
	d.mu.Lock()
	after := d.after
	d.after = ""
	d.mu.Unlock()
	if after != "" {
		d.site.fire(d.cfg.Effects, after)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return contract.Observation{}, driver.ErrPageClosed
	}
	p, ok := d.page()
	if !ok {
		p = fakePage{title: "Not found", text: "Not found"}
	}
	text := p.text
	if d.out != "" {
		text += " " + d.out
	}
	snapshot := fmt.Sprintf("<html><title>%s</title><body>%s<!--%s--></body></html>", p.title, text, strings.Join(d.marks, ";"))
	h := sha256.Sum256([]byte(snapshot))
	obs := contract.Observation{
		State: contract.State{
			SessionID: d.cfg.SessionID, Mode: d.cfg.Mode, ActiveURL: d.url, Title: p.title,
			Viewport:  contract.Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
			Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), DOMHash: hex.EncodeToString(h[:]),
			PolicyContext: d.cfg.PolicyContext,
		},
		DOMText: text, DOMSnapshot: snapshot, ExtractedArtifacts: d.pending,
	}
	d.pending = nil
	for _, e := range p.els {
		if e.hint != "" {
			obs.Affordances = append(obs.Affordances, contract.Affordance{Selector: e.sel, Role: e.el.Role, Text: e.el.Label, ActionHint: e.hint})
		}
	}
	return obs, nil
}

// DescribeObserved is Describe, the element unknown to the last
// observation unless the site says it is the same (fakeSite.same). The
// effects of trigger "describe SELECTOR" are reported first (a timer of
// the earlier action firing as the next one's target is resolved).
func (d *fakeDriver) DescribeObserved(ctx context.Context, selector string) (contract.Element, driver.Observed, error) {
	d.site.fire(d.cfg.Effects, "describe "+selector)
	el, err := d.Describe(ctx, selector)
	d.site.mu.Lock()
	same := d.site.same[selector]
	d.site.mu.Unlock()
	if err == nil && same {
		return el, driver.ObservedSame, nil
	}
	return el, driver.ObservedUnknown, err
}

func (d *fakeDriver) Describe(ctx context.Context, selector string) (contract.Element, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, _ := d.page()
	for _, e := range p.els {
		if e.sel == selector {
			el := e.el
			d.site.mu.Lock()
			el.Origin = d.site.origins[selector]
			d.site.mu.Unlock()
			return el, nil
		}
	}
	return contract.Element{}, &driver.Error{Code: contract.CodeElementNotFound, Selector: selector, Msg: "no element matches"}
}

func (d *fakeDriver) Act(ctx context.Context, a contract.Action) (contract.ToolResult, error) {
	start := time.Now()
	res := contract.ToolResult{ActionID: a.ID, Action: a.PolicyName(), RiskTag: driver.DefaultRisk(a.Type), SessionID: d.cfg.SessionID, StartedAt: stampMs(start)}
	if a.Type == contract.ActWait {
		select {
		case <-time.After(time.Duration(a.DurationMs) * time.Millisecond):
		case <-ctx.Done():
			res.EndedAt, res.Error = stampMs(time.Now()), &contract.ToolError{Code: contract.CodeTimeout, Message: "the wait was cut short"}
			return res, &driver.Error{Code: contract.CodeTimeout, Msg: "the wait was cut short", Err: ctx.Err()}
		}
	}
	d.site.mu.Lock()
	changed := d.site.changed[a.Selector]
	d.site.mu.Unlock()
	if changed {
		res.EndedAt = stampMs(time.Now())
		res.Error = &contract.ToolError{Code: contract.CodeTargetChanged, Message: "the element's document is now on another origin"}
		return res, &driver.Error{Code: contract.CodeTargetChanged, Selector: a.Selector, Msg: "the element's document is now on another origin"}
	}
	d.site.mu.Lock()
	d.site.ran = append(d.site.ran, a)
	d.site.mu.Unlock()
	if a.Type == contract.ActClick {
		d.site.fire(d.cfg.Effects, "click "+a.Selector)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.Type == contract.ActClick {
		d.after = "after click " + a.Selector
	}
	switch a.Type {
	case contract.ActNavigate:
		d.url, d.marks, d.out = a.URL, nil, ""
	case contract.ActClick:
		d.marks = append(d.marks, "clicked "+a.Selector)
		switch a.Selector {
		case "#pay":
			d.out = "Paid"
		case "#delete":
			d.out = "Deleted"
		case "#harmless":
			d.out = "Thanks"
		}
	case contract.ActType:
		d.marks = append(d.marks, "typed into "+a.Selector)
	case contract.ActExtract:
		p, _ := d.page()
		value := p.text
		if a.Selector == "#out" {
			value = d.out
		}
		d.seq++
		vh := sha256.Sum256([]byte(value))
		art := contract.Artifact{ID: fmt.Sprintf("art-%06d", d.seq), Type: contract.ArtifactType(a.Extract), Value: value, SourceSelector: a.Selector, SourceURL: d.url, Hash: hex.EncodeToString(vh[:])}
		d.taken = append(d.taken, driver.Extracted{Artifact: art})
		d.pending = append(d.pending, art)
		res.ArtifactIDs = []string{art.ID}
	}
	res.OK, res.URL, res.EndedAt = true, d.url, stampMs(time.Now())
	return res, nil
}

func (d *fakeDriver) TakeArtifacts() []driver.Extracted {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.taken
	d.taken = nil
	return out
}

func (d *fakeDriver) Close(ctx context.Context) error {
	d.site.fire(d.cfg.Effects, "close")
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

func stampMs(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// The real gate, shared by the fake sessions.
var fakeGate struct {
	once      sync.Once
	g         *gate.Gate
	approvals *gate.Approvals
	err       error
}

func realGate(t testing.TB) (*gate.Gate, *gate.Approvals) {
	t.Helper()
	fakeGate.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		fakeGate.approvals = gate.NewApprovals()
		fakeGate.g, fakeGate.err = gate.New(ctx, gate.Options{Approvals: fakeGate.approvals})
	})
	if fakeGate.err != nil {
		t.Fatalf("load the policy: %v", fakeGate.err)
	}
	return fakeGate.g, fakeGate.approvals
}

// fakeCfg returns a session config for task on site, with the real gate,
// evidence in a temporary directory, and the given agents.
func fakeCfg(t testing.TB, site *fakeSite, task contract.Input, pl planner.Planner, nav navigator.Navigator) session.Config {
	t.Helper()
	g, approvals := realGate(t)
	return session.Config{
		Task:       task,
		Driver:     driver.Config{Mode: contract.ModeSandbox},
		OpenDriver: site.open,
		Gate:       g,
		Approvals:  approvals,
		Planner:    pl,
		Navigator:  nav,
		Evidence:   session.EvidenceDir(evRoot(t)),
	}
}
