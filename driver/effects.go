package driver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// The Playwright driver's network and navigation boundary. Whenever the
// session has allowed origins (always in sandbox mode, and in playwright
// mode when the caller gives any), every request of the browser context
// (pages, popups, frames, workers) passes the context's request routing,
// and, for a locally launched browser, the loopback filtering proxy
// (proxy.go). A request to an origin outside the allowlist is aborted
// whatever caused it, kept in BlockedRequests and reported to
// Config.Effects.Refused. A state-changing request to an allowed origin is
// held until Config.Effects.Judge answers.

// reasonOrigin is why the boundary refuses a request to another origin.
const reasonOrigin = "origin not in the allowlist"

// reasonDownload is why the boundary refuses a download.
const reasonDownload = "downloads are refused"

// bounded reports whether the session filters the network: it has allowed
// origins.
func (d *pwDriver) bounded() bool { return len(d.allowed) > 0 }

// effectFor returns the facts of a request to raw as an Effect: method in
// upper case, origin, the decoded path without query or fragment ("/" for
// an http(s) URL without one), every string within its contract bound.
// Origin and Path are empty for a URL without an http(s) origin (data:,
// blob:, a malformed URL).
func effectFor(kind contract.EffectKind, method, raw, resourceType string) contract.Effect {
	e := contract.Effect{
		Kind:         kind,
		Method:       bound(strings.ToUpper(method), contract.MaxEffectMethod),
		ResourceType: bound(resourceType, contract.MaxEffectResourceType),
	}
	u, err := url.Parse(raw)
	if err != nil {
		return e
	}
	o, ok := originOf(u)
	if !ok {
		return e
	}
	e.Origin = bound(o, contract.MaxEffectOrigin)
	e.Path = effectPath(u)
	return e
}

// effectPath is an effect's path: u's path decoded ("/%61dmin" is
// "/admin", as the policy's words are), "/" when empty, bounded. Every
// driver writes an effect's path with it, so one policy sees the same
// path whichever driver reported it.
func effectPath(u *url.URL) string {
	if u.Path == "" {
		return "/"
	}
	return bound(u.Path, contract.MaxEffectPath)
}

// bound makes s valid UTF-8 of at most n runes.
func bound(s string, n int) string {
	return text.CutRunes(strings.ToValidUTF8(s, "\uFFFD"), n)
}

// requestKind tells a top-level navigation from a frame's navigation and
// from any other request. A navigation request whose frame is not known
// yet (the first navigation of a popup) counts as top-level.
func requestKind(req playwright.Request) contract.EffectKind {
	if !req.IsNavigationRequest() {
		return contract.EffectRequest
	}
	if f := req.Frame(); f != nil && f.ParentFrame() != nil {
		return contract.EffectFrame
	}
	return contract.EffectNavigation
}

// refuse keeps a request the boundary refused by itself in the blocked log
// and reports it to Config.Effects.Refused, with reason.
func (d *pwDriver) refuse(raw string, e contract.Effect, reason string) {
	d.recordBlocked(raw, e.ResourceType, reason)
	d.reportRefused(e, reason)
}

// reportRefused tells Config.Effects, when set, of a refused effect.
func (d *pwDriver) reportRefused(e contract.Effect, reason string) {
	if d.cfg.Effects == nil {
		return
	}
	e.Refused = bound(reason, contract.MaxEffectReason)
	d.cfg.Effects.Refused(e)
}

// route is the context's request routing: every request of every page
// of the context passes here first.
func (d *pwDriver) route(r playwright.Route) {
	req := r.Request()
	raw := req.URL()
	if !d.allowedURL(raw) {
		e := effectFor(requestKind(req), req.Method(), raw, req.ResourceType())
		d.refuse(raw, e, reasonOrigin)
		d.abort(r, e.Kind)
		return
	}
	if d.cfg.Effects == nil {
		_ = r.Continue()
		return
	}
	e := effectFor(requestKind(req), req.Method(), raw, req.ResourceType())
	if e.Origin == "" || !e.ChangesState() {
		_ = r.Continue()
		return
	}
	body, _ := req.PostDataBuffer()
	e.Fields = bodyFields(req.Headers()["content-type"], body)
	if err := d.judge(e); err != nil {
		d.recordBlocked(raw, e.ResourceType, bound(err.Error(), contract.MaxEffectReason))
		d.abort(r, e.Kind)
		return
	}
	if d.proxy == nil {
		_ = r.Continue()
		return
	}
	// Tell the proxy that this request was judged, so that it judges only
	// what routing did not see.
	h := req.Headers()
	h[markHeader] = d.heldMark(req.Method(), raw)
	_ = r.Continue(playwright.RouteContinueOptions{Headers: h})
}

// markHeader carries heldMark from request routing to the proxy, which
// removes it.
const markHeader = "X-Aegis-Judged"

// heldMark signs the method and URL of a request that request routing
// judged, with the session's secret key. A redirect hop (another URL) or
// a request routing never saw (a beacon sent on unload) has no valid
// mark, and the proxy judges it itself.
func (d *pwDriver) heldMark(method, raw string) string {
	if u, err := url.Parse(raw); err == nil {
		u.Fragment, u.RawFragment = "", ""
		raw = u.String()
	}
	m := hmac.New(sha256.New, d.markKey)
	m.Write([]byte(strings.ToUpper(method) + " " + raw))
	return hex.EncodeToString(m.Sum(nil))
}

// maxHeldBody bounds the body of a request the proxy holds for judging;
// a longer one is refused (its fields could not all be named).
const maxHeldBody = 8 << 20

// holdProxied is the proxy's hold: it removes routing's mark, and judges a
// state-changing request without a valid one (a redirect hop, a beacon
// sent on unload, anything request routing did not see), the same way
// route does, with what the proxy knows: the kind from the Fetch metadata
// headers, no resource type.
func (d *pwDriver) holdProxied(r *http.Request) error {
	mark := r.Header.Get(markHeader)
	r.Header.Del(markHeader)
	if d.cfg.Effects == nil {
		return nil
	}
	raw := r.URL.String()
	e := effectFor(proxyKind(r.Header), r.Method, raw, "")
	if !e.ChangesState() || hmac.Equal([]byte(mark), []byte(d.heldMark(r.Method, raw))) {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxHeldBody+1))
	if err == nil && len(body) > maxHeldBody {
		err = fmt.Errorf("the body is longer than %d bytes: it cannot be judged", maxHeldBody)
	}
	if err == nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		e.Fields = bodyFields(r.Header.Get("Content-Type"), body)
		err = d.judge(e)
	}
	if err != nil {
		d.recordBlocked(raw, "proxy", bound(err.Error(), contract.MaxEffectReason))
		return err
	}
	return nil
}

// abort aborts a refused request. A refused navigation is cancelled
// (net::ERR_ABORTED), which leaves the page or frame where it was rather
// than committing an error page that would race the session's next
// navigation; a refused top-level navigation also ends a click's wait for
// it (see awaitNavigation). Any other request fails as blocked.
func (d *pwDriver) abort(r playwright.Route, kind contract.EffectKind) {
	switch kind {
	case contract.EffectNavigation:
		_ = r.Abort("aborted")
		d.navSeq.Add(1)
	case contract.EffectFrame:
		_ = r.Abort("aborted")
	default:
		_ = r.Abort("blockedbyclient")
	}
}

// judge asks Config.Effects about a held state-changing request, counting
// it in flight meanwhile so that an action waiting for its navigation
// keeps waiting (see awaitNavigation). The call ends when the session
// closes.
func (d *pwDriver) judge(e contract.Effect) error {
	d.judging.Add(1)
	defer d.judging.Add(-1)
	return d.cfg.Effects.Judge(d.life, e)
}

// routeWebSocket is the context's WebSocket routing.
func (d *pwDriver) routeWebSocket(ws playwright.WebSocketRoute) {
	if d.allowedURL(ws.URL()) {
		_, _ = ws.ConnectToServer()
		return
	}
	d.refuse(ws.URL(), effectFor(contract.EffectRequest, http.MethodGet, ws.URL(), "websocket"), reasonOrigin)
	ws.Close()
}

// refuseDownload refuses a download, in every mode.
func (d *pwDriver) refuseDownload(dl playwright.Download) {
	d.refuse(dl.URL(), effectFor(contract.EffectDownload, "", dl.URL(), "download"), reasonDownload)
	go func() { _ = dl.Cancel() }()
}

// proxyKind tells what kind of request the proxy refused from the Fetch
// metadata the browser sent with it, when it sent any (browsers send it
// to potentially trustworthy origins only); a plain request otherwise.
func proxyKind(h http.Header) contract.EffectKind {
	if h.Get("Sec-Fetch-Mode") != "navigate" {
		return contract.EffectRequest
	}
	switch h.Get("Sec-Fetch-Dest") {
	case "document":
		return contract.EffectNavigation
	case "iframe", "frame", "embed", "object":
		return contract.EffectFrame
	}
	return contract.EffectRequest
}

// maxFieldNames bounds how many distinct names bodyFields collects before
// it sorts them and keeps the first contract.MaxEffectFields.
const maxFieldNames = 4096

// bodyFields returns the names, never the values, of what a request body
// sends: the form fields of an application/x-www-form-urlencoded or
// multipart/form-data body, else the top-level keys of a body that is a
// JSON object (whatever its declared type: a text/plain fetch carries JSON
// just as well). Names are valid UTF-8, at most contract.MaxEffectField
// runes each, non-empty, sorted, unique, at most contract.MaxEffectFields.
// The body comes from the page: anything malformed ends the scan with the
// names read so far.
func bodyFields(contentType string, body []byte) []string {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	names := map[string]bool{}
	add := func(n string) bool {
		n = bound(n, contract.MaxEffectField)
		if n != "" {
			names[n] = true
		}
		return len(names) < maxFieldNames
	}
	switch mt {
	case "application/x-www-form-urlencoded":
		formNames(body, add)
	case "multipart/form-data":
		multipartNames(body, params["boundary"], add)
	default:
		jsonKeys(body, add)
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) > contract.MaxEffectFields {
		out = out[:contract.MaxEffectFields]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// formNames passes the names of a urlencoded body to add until it returns
// false. A name that does not unescape is passed as it is.
func formNames(body []byte, add func(string) bool) {
	for len(body) > 0 {
		var pair []byte
		pair, body, _ = bytes.Cut(body, []byte("&"))
		name, _, _ := bytes.Cut(pair, []byte("="))
		n, err := url.QueryUnescape(string(name))
		if err != nil {
			n = string(name)
		}
		if !add(n) {
			return
		}
	}
}

// multipartNames passes the form names of a multipart body's parts to add
// until it returns false or the body ends or breaks.
func multipartNames(body []byte, boundary string, add func(string) bool) {
	if boundary == "" {
		return
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err != nil {
			return
		}
		n := p.FormName()
		_ = p.Close()
		if !add(n) {
			return
		}
	}
}

// jsonKeys passes the top-level keys of a JSON object body to add until
// it returns false or the body ends or breaks; a body that is not a JSON
// object has none.
func jsonKeys(body []byte, add func(string) bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return
		}
		k, ok := t.(string)
		if !ok || !add(k) {
			return
		}
		if err := skipValue(dec); err != nil {
			return
		}
	}
}

// skipValue reads one JSON value from dec without keeping it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
