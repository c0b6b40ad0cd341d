package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// The extension driver's boundary. When the driver opens on a tab it asks
// the extension to install the tab's boundary (boundary.set): Chrome's
// declarativeNetRequest session rules, scoped to the tab, block every
// request of the tab (navigations, frames, fetches, beacons, WebSockets,
// of every resource type) to an origin outside Config.AllowedOrigins,
// and, when Config.Effects is set, every state-changing request (not GET,
// HEAD or OPTIONS). Each refusal comes back as a boundary.refused event;
// the driver keeps it in its BlockedRequests log and tells
// Config.Effects.Refused. Windows the page opens are closed by the
// extension and reported the same way. Unless Config.AllowWebRTC, the
// extension also runs the WebRTC guard (extension/webrtc.js) in the
// session's pages, and Observe reports the attempts it refused as peer
// effects, as the Playwright driver does. Close removes the boundary.
//
// A content script cannot hold a request while a policy judges it (that
// would take the debugger), so state-changing requests are judged before
// they exist: before a click, the driver asks the page which form
// submission the click would cause (the submit control under the
// element's centre: method, action URL, field names), asks
// Config.Effects.Judge about it, and only if it is allowed runs the click
// with a rule that lets exactly that method and URL through for the length
// of the click. A refused submission fails the click (navigation_blocked,
// with the judge's reason) before anything is dispatched. Any other
// state-changing request stays blocked and is reported as refused.

// Extension protocol methods of the boundary (nativehost/PROTOCOL.md).
const (
	extBoundarySet   = "boundary.set"
	extBoundaryClear = "boundary.clear"
	extEventRefused  = "boundary.refused"
)

// ExtensionEvents is implemented by an ExtensionPort that also delivers
// the extension's events (nativehost.Conn does). The extension driver
// subscribes to learn what its tab's boundary refused; over a port without
// it the boundary still blocks, but refusals are not reported.
type ExtensionEvents interface {
	// Subscribe calls fn with the name and data of every event the
	// extension sends, until cancel is called. fn does not block.
	Subscribe(fn func(name string, data json.RawMessage)) (cancel func())
}

// Why the extension's boundary refused something (boundary.js).
const (
	refusedOrigin = "origin not in the allowlist"
	refusedHeld   = "state-changing requests are held only for predicted form submissions in extension mode"
	refusedPopup  = "the page opened a new window, which was closed: the session acts on its own tab only"
)

type extBoundaryParams struct {
	TabID   int      `json:"tabId"`
	Origins []string `json:"origins"`
	Hold    bool     `json:"hold"`
	// AllowWebRTC leaves WebRTC to the page (Config.AllowWebRTC); by
	// default the extension runs the WebRTC guard in the session's pages.
	AllowWebRTC bool `json:"allowWebRTC,omitempty"`
}

type extBoundaryResult struct {
	Rules int `json:"rules"`
}

// extAllow lets one judged form submission through the boundary for the
// length of one tab.call.
type extAllow struct {
	Method string `json:"method"`
	URL    string `json:"url"`
}

// extRefused is a boundary.refused event (nativehost.BoundaryRefusedEvent).
type extRefused struct {
	TabID   int    `json:"tabId"`
	URL     string `json:"url"`
	Method  string `json:"method"`
	Type    string `json:"type"`
	FrameID int    `json:"frameId"`
	Reason  string `json:"reason"`
}

// extSubmit is a form submission the executor predicted for a click.
type extSubmit struct {
	Method string   `json:"method"`
	URL    string   `json:"url"`
	Fields []string `json:"fields"`
}

// extSubmission is the executor's answer to submission.
type extSubmission struct {
	OK     bool       `json:"ok"`
	Code   string     `json:"code"`
	Msg    string     `json:"msg"`
	Count  int        `json:"count"`
	Final  bool       `json:"final"`
	Submit *extSubmit `json:"submit"`
}

// extExpect is what click, type and select re-check in the page before
// acting: the element Describe reported (as the observer described it)
// and the describe options.
type extExpect struct {
	Element   contract.Element `json:"element"`
	Sensitive []string         `json:"sensitive"`
}

// maxExpected bounds the remembered Describe results.
const maxExpected = 256

// boundary is the extension driver's side of its tab's boundary.
type boundary struct {
	effects Effects
	hold    bool // state-changing requests are blocked and judged

	mu       sync.Mutex
	blocked  []BlockedRequest
	dropped  int
	queue    []contract.Effect
	expected map[string]contract.Element
	wake     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}
	cancel   func()
}

// startBoundary installs the boundary of d's tab and subscribes to its
// refusals. With no allowed origins, no Effects and WebRTC allowed there
// is nothing to enforce, and nothing is installed.
func (d *extDriver) startBoundary(ctx context.Context) error {
	b := &boundary{effects: d.cfg.Effects, hold: d.cfg.Effects != nil, expected: map[string]contract.Element{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	d.bound = b
	go b.deliver()
	if !d.enforces() {
		return nil
	}
	if ev, ok := d.port.(ExtensionEvents); ok {
		tab := d.tabID
		b.cancel = ev.Subscribe(func(name string, data json.RawMessage) {
			if name == extEventRefused {
				b.refused(tab, data)
			}
		})
	}
	var r extBoundaryResult
	p := extBoundaryParams{TabID: d.tabID, Origins: d.origins, Hold: b.hold, AllowWebRTC: d.cfg.AllowWebRTC}
	if err := d.callJSON(ctx, extBoundarySet, p, &r); err != nil {
		b.close(ctx)
		return fmt.Errorf("driver: install the boundary of tab %d: %w", d.tabID, err)
	}
	return nil
}

// enforces reports whether d's tab needs a boundary: allowed origins to
// keep it in, state-changing requests to hold, or WebRTC to keep off.
func (d *extDriver) enforces() bool {
	return len(d.origins) > 0 || d.cfg.Effects != nil || !d.cfg.AllowWebRTC
}

// stopBoundary removes the boundary of the person's tab (a tab the driver
// opened takes its boundary along when it closes) and stops reporting.
func (d *extDriver) stopBoundary(ctx context.Context) error {
	b := d.bound
	if b == nil {
		return nil
	}
	defer b.close(ctx)
	if d.own || !d.enforces() {
		return nil
	}
	if _, err := d.port.Call(ctx, extBoundaryClear, extTabRef{TabID: d.tabID}); err != nil && ctx.Err() == nil {
		if c := codeOfExt(err); c == contract.CodePageClosed {
			return nil // the tab, or the conversation, is gone: so are its rules
		}
		return fmt.Errorf("driver: remove the boundary of tab %d: %w", d.tabID, err)
	}
	return nil
}

// close stops the subscription and the delivery of refusals, after the
// queued ones are delivered or ctx ends.
func (b *boundary) close(ctx context.Context) {
	b.mu.Lock()
	if b.cancel != nil {
		b.cancel()
		b.cancel = nil
	}
	select {
	case <-b.stop:
		b.mu.Unlock()
		return
	default:
	}
	close(b.stop)
	b.mu.Unlock()
	select {
	case <-b.stopped:
	case <-ctx.Done():
	}
}

// refused takes one boundary.refused event of the conversation: one of
// tab's is logged and queued for Effects.Refused. It runs on the port's
// reading goroutine and does not block.
func (b *boundary) refused(tab int, data json.RawMessage) {
	var ev extRefused
	if err := json.Unmarshal(data, &ev); err != nil || ev.TabID != tab {
		return
	}
	e, br := refusedEffect(ev)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.blocked) < MaxBlocked {
		b.blocked = append(b.blocked, br)
	} else {
		b.dropped++
	}
	if b.effects == nil {
		return
	}
	if len(b.queue) >= MaxBlocked {
		return // Effects.Refused is stuck; the log keeps the refusals
	}
	b.queue = append(b.queue, e)
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// deliver calls Effects.Refused with the queued refusals, in order, off
// the port's reading goroutine.
func (b *boundary) deliver() {
	defer close(b.stopped)
	for {
		b.mu.Lock()
		q := b.queue
		b.queue = nil
		b.mu.Unlock()
		for _, e := range q {
			b.effects.Refused(e)
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-b.wake:
		case <-b.stop:
			b.mu.Lock()
			q := b.queue
			b.queue = nil
			b.mu.Unlock()
			for _, e := range q {
				b.effects.Refused(e)
			}
			return
		}
	}
}

// refusedEffect turns a refusal into the Effect and the log entry.
func refusedEffect(ev extRefused) (contract.Effect, BlockedRequest) {
	e := contract.Effect{
		Method:       strings.ToUpper(text.CutRunes(ev.Method, contract.MaxEffectMethod)),
		ResourceType: resourceType(ev.Type),
	}
	switch ev.Type {
	case "main_frame":
		e.Kind = contract.EffectNavigation
	case "sub_frame":
		e.Kind = contract.EffectFrame
	default:
		e.Kind = contract.EffectRequest
	}
	if e.Method == "" {
		e.Method = "GET"
	}
	switch ev.Reason {
	case refusedOrigin, refusedHeld, refusedPopup:
		e.Refused = ev.Reason
	default:
		e.Refused = "refused by the browser: " + text.CutRunes(strings.ToValidUTF8(ev.Reason, "\uFFFD"), 200)
	}
	if u, err := url.Parse(ev.URL); err == nil {
		if o, ok := originOf(u); ok {
			e.Origin = text.CutRunes(o, contract.MaxEffectOrigin)
		}
		e.Path = effectPath(u)
	}
	br := BlockedRequest{
		URL:          boundURL(ev.URL),
		Origin:       e.Origin,
		ResourceType: e.ResourceType,
		Reason:       e.Refused,
		Time:         time.Now(),
	}
	return e, br
}

// resourceType names Chrome's webRequest resource types as the other
// drivers do ("document", "fetch"...).
func resourceType(t string) string {
	switch t {
	case "main_frame", "sub_frame":
		return "document"
	case "xmlhttprequest":
		return "fetch"
	case "":
		return "other"
	}
	return text.CutRunes(strings.ToValidUTF8(t, "\uFFFD"), contract.MaxEffectResourceType)
}

// BlockedRequests returns what the tab's boundary refused so far, oldest
// first, at most MaxBlocked entries.
func (d *extDriver) BlockedRequests() []BlockedRequest {
	b := d.bound
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BlockedRequest(nil), b.blocked...)
}

// remember keeps the element Describe reported for sel, which the next
// click, type or select on sel re-checks in the page before acting.
func (d *extDriver) remember(sel string, el contract.Element) {
	b := d.bound
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.expected) >= maxExpected {
		clear(b.expected)
	}
	b.expected[sel] = el
}

// expect returns (and forgets) what the action on sel must find, nil when
// the session did not describe sel.
func (d *extDriver) expect(sel string) *extExpect {
	b := d.bound
	b.mu.Lock()
	defer b.mu.Unlock()
	el, ok := b.expected[sel]
	if !ok {
		return nil
	}
	delete(b.expected, sel)
	return &extExpect{Element: el, Sensitive: nonNil(d.cfg.SensitiveSelectors)}
}

// judgeSubmission asks the page which form submission a click on sel
// would cause and, for a state-changing one to an allowed origin, asks
// Effects.Judge. It returns the prediction (for the click to re-check) and
// the allowance to run the click with (nil for none). A refused
// submission is a final navigation_blocked error.
func (d *extDriver) judgeSubmission(ctx context.Context, sel string, judged *judgedSubmit) (*extSubmit, *extAllow, error) {
	r, err := d.call(ctx, sel, "submission", nil, sel)
	if err != nil {
		return nil, nil, err
	}
	var s extSubmission
	if err := json.Unmarshal([]byte(r.Value), &s); err != nil {
		return nil, nil, newErr(contract.CodeInternal, sel, "the executor answered submission with malformed JSON", err)
	}
	if !s.OK {
		err := pageError(s.Code, sel, s.Msg, s.Count)
		if e, ok := err.(*Error); ok {
			e.final = s.Final
		}
		return nil, nil, err
	}
	if s.Submit == nil {
		return nil, nil, nil
	}
	u, err := url.Parse(s.Submit.URL)
	if err != nil {
		return nil, nil, newErr(contract.CodeInternal, sel, "the executor predicted a submission to a malformed URL", err)
	}
	eff := contract.Effect{
		Kind:         contract.EffectNavigation,
		Method:       strings.ToUpper(text.CutRunes(s.Submit.Method, contract.MaxEffectMethod)),
		Path:         effectPath(u),
		Fields:       effectFields(s.Submit.Fields),
		ResourceType: "document",
	}
	o, ok := originOf(u)
	if !ok || !eff.ChangesState() || !d.allowedURL(u) {
		// Not held (a GET), or refused by the boundary anyway (and
		// reported) without a judge.
		return s.Submit, nil, nil
	}
	eff.Origin = text.CutRunes(o, contract.MaxEffectOrigin)
	if judged.effect == nil || !sameEffect(*judged.effect, eff) {
		if err := d.cfg.Effects.Judge(ctx, eff); err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctxErr(ctx)
			}
			e := newErr(contract.CodeNavigationBlocked, sel, "the form submission "+eff.Method+" "+eff.Origin+eff.Path+" was refused: "+text.CutRunes(err.Error(), 512), err)
			e.final = true
			return nil, nil, e
		}
		judged.effect = &eff
	}
	return s.Submit, &extAllow{Method: eff.Method, URL: o + u.EscapedPath()}, nil
}

// judgedSubmit remembers, across the attempts of one click, the
// submission Judge allowed, so that it is not asked twice.
type judgedSubmit struct {
	effect *contract.Effect
}

func sameEffect(a, b contract.Effect) bool {
	if a.Kind != b.Kind || a.Method != b.Method || a.Origin != b.Origin || a.Path != b.Path || len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i] != b.Fields[i] {
			return false
		}
	}
	return true
}

// effectFields bounds, sorts and deduplicates field names.
func effectFields(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		n = text.CutRunes(strings.ToValidUTF8(n, "\uFFFD"), contract.MaxEffectField)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) > contract.MaxEffectFields {
		out = out[:contract.MaxEffectFields]
	}
	return out
}
