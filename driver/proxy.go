package driver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// filterProxy is the boundary's second wall: an HTTP proxy on loopback that
// a bounded browser context (sandbox, or playwright with allowed origins)
// sends every request through (Playwright forces loopback through a
// context proxy too). Playwright's request
// routing sees only the first request of a redirect chain; the proxy sees
// every hop, every WebSocket (tunnelled with CONNECT) and every request the
// routing does not, and refuses any whose origin is not allowed.
type filterProxy struct {
	allowed func(u *url.URL) bool
	// allowedHostPort is the check for a CONNECT tunnel, which names a
	// host and port but no scheme.
	allowedHostPort func(hostport string) bool
	record          func(raw, resourceType, reason string)
	// refused, when set, is told of every request the proxy refused, as
	// an effect, with the reason.
	refused func(e contract.Effect, reason string)
	// hold, when set, sees every request to an allowed origin before it
	// is forwarded and may refuse it: a state-changing request that
	// request routing did not judge (a redirect hop, a beacon sent on
	// unload).
	hold func(r *http.Request) error

	ln    net.Listener
	srv   *http.Server
	rp    *httputil.ReverseProxy
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// startFilterProxy starts a proxy on the loopback listener listen opens
// (Browser.listen: in the browser's network namespace when it has one).
func startFilterProxy(listen func() (net.Listener, error), allowed func(*url.URL) bool, allowedHostPort func(string) bool, record func(raw, resourceType, reason string)) (*filterProxy, error) {
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	p := &filterProxy{allowed: allowed, allowedHostPort: allowedHostPort, record: record, ln: ln, conns: map[net.Conn]struct{}{}}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.RequestURI = ""
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is what the browser context is told to use as its proxy.
func (p *filterProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *filterProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() || !p.allowed(r.URL) {
		p.refuse(r.URL.String(), "proxy", effectFor(proxyKind(r.Header), r.Method, r.URL.String(), ""))
		http.Error(w, "blocked by the aegis sandbox", http.StatusForbidden)
		return
	}
	if p.hold != nil {
		if err := p.hold(r); err != nil {
			http.Error(w, "refused by the aegis policy", http.StatusForbidden)
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

func (p *filterProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	if !p.allowedHostPort(hostport) {
		p.refuse("//"+hostport, "tunnel", tunnelEffect(hostport))
		http.Error(w, "blocked by the aegis sandbox", http.StatusForbidden)
		return
	}
	upstream, err := (&net.Dialer{Timeout: 30 * time.Second}).DialContext(r.Context(), "tcp", hostport)
	if err != nil {
		http.Error(w, "upstream unreachable", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	p.track(client, true)
	p.track(upstream, true)
	go func() {
		defer p.track(client, false)
		defer p.track(upstream, false)
		done := make(chan struct{}, 2)
		go func() {
			if n := buf.Reader.Buffered(); n > 0 {
				b, _ := buf.Reader.Peek(n)
				_, _ = upstream.Write(b)
			}
			_, _ = io.Copy(upstream, client)
			done <- struct{}{}
		}()
		go func() { _, _ = io.Copy(client, upstream); done <- struct{}{} }()
		<-done
		client.Close()
		upstream.Close()
		<-done
	}()
}

// reasonProxy is why the proxy refuses a request.
const reasonProxy = reasonOrigin + " (seen by the boundary proxy)"

// refuse keeps a refused request in the blocked log and reports it.
func (p *filterProxy) refuse(raw, resourceType string, e contract.Effect) {
	p.record(raw, resourceType, reasonProxy)
	if p.refused != nil {
		p.refused(e, reasonProxy)
	}
}

// tunnelEffect is the effect of a refused CONNECT tunnel, which names a
// host and port only: the browser tunnels TLS and WebSockets, so the
// origin is taken as https unless the port is 80.
func tunnelEffect(hostport string) contract.Effect {
	scheme := "https"
	if _, port, err := net.SplitHostPort(hostport); err == nil && port == "80" {
		scheme = "http"
	}
	e := effectFor(contract.EffectRequest, http.MethodConnect, scheme+"://"+hostport+"/", "")
	e.Path = ""
	return e
}

func (p *filterProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

// Close stops the proxy and every tunnel it holds.
func (p *filterProxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = p.srv.Close()
	}
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	if t, ok := p.rp.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return err
}

// hostPortAllowed reports whether a CONNECT target host:port belongs to an
// allowed origin of either scheme.
func hostPortAllowed(allowed map[string]bool, hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	for _, scheme := range []string{"http", "https"} {
		u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}
		if o, ok := originOf(u); ok && allowed[o] {
			return true
		}
	}
	return false
}
