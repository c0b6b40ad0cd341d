package live

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/palette"
	"github.com/aegis-run/aegis/session"
)

// Defaults of Options.
const (
	// DefaultClientBuffer is how many events may wait for a client between
	// the session's event history and its socket.
	DefaultClientBuffer = 256
	// DefaultWriteTimeout bounds one write to a client: a client that
	// accepts nothing for this long is dropped.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultPingInterval is how often the server pings; a client that
	// answers no ping, and sends nothing, for two intervals is dropped.
	DefaultPingInterval = 15 * time.Second
	// DefaultReadLimit is the largest control request accepted, in bytes;
	// a larger frame closes the connection (close code 1009).
	DefaultReadLimit = 64 << 10
	// DefaultMaxClients bounds the connections open at once.
	DefaultMaxClients = 64
	// DefaultDecideWait bounds how long a decision waits for the session
	// to ask the approval its client was shown (the event comes first).
	DefaultDecideWait = 2 * time.Second
	// MaxSessions is how many sessions a server lists; adding more
	// forgets the oldest.
	MaxSessions = 32
)

// Subprotocol is the WebSocket subprotocol of the live channel. A browser,
// which cannot set an Authorization header on a WebSocket, offers it
// together with TokenProtocolPrefix+token, and the server answers with
// Subprotocol.
const Subprotocol = "aegis.v1"

// TokenProtocolPrefix prefixes the token when it travels as a WebSocket
// subprotocol.
const TokenProtocolPrefix = "aegis.token."

// Options configure a Server. The zero value is usable: a random token and
// the defaults above.
type Options struct {
	// Token is the bearer token every request must present; "" means a
	// new random one (Server.Token).
	Token string
	// Log receives a line per client joining, leaving or being dropped,
	// and per control request; nil discards them.
	Log io.Writer
	// AnyHost turns off the Host header check. Leave it off when the
	// server listens on loopback: the check (Host must be a loopback name
	// or address) stops DNS-rebinding pages from reaching the server.
	AnyHost bool
	// ClientBuffer, WriteTimeout, PingInterval, ReadLimit, MaxClients and
	// DecideWait default to the constants above when zero.
	ClientBuffer int
	WriteTimeout time.Duration
	PingInterval time.Duration
	ReadLimit    int64
	MaxClients   int
	DecideWait   time.Duration
}

// Session is what the server needs of a session: *session.Session has it.
type Session interface {
	// ID returns the session id.
	ID() string
	// Bus returns the session's event bus.
	Bus() *session.Bus
	// Abort stops the session with status aborted.
	Abort(reason string)
}

// SessionOptions say what else the server offers for a session.
type SessionOptions struct {
	// Approver takes the clients' decisions on approvals; nil when the
	// session's approvals are answered elsewhere (a decision then gets
	// an approvals_elsewhere error).
	Approver *Approver
	// Dir is the session's evidence bundle: its screenshots are served
	// from Dir/artifacts, and its decision records go to the clients that
	// ask for them (DecisionFrame); "" serves neither.
	Dir string
	// Goal is shown in the session list and the console's header.
	Goal string
}

// Server serves the live channel of the sessions added to it. Its methods
// are safe for concurrent use.
type Server struct {
	opts     Options
	token    string
	upgrader websocket.Upgrader
	mux      *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*entry
	order    []string // session ids, oldest first
	clients  int
	seq      int // client numbers
	closed   bool
	conns    map[*websocket.Conn]struct{}
	wg       sync.WaitGroup
	http     *http.Server
}

type entry struct {
	s         Session
	opts      SessionOptions
	added     time.Time
	decisions *decisionLog // nil without a bundle directory
}

// NewServer returns a server with the options' defaults filled in.
func NewServer(opts Options) (*Server, error) {
	if opts.Token == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("live: token: %w", err)
		}
		opts.Token = base64.RawURLEncoding.EncodeToString(b[:])
	}
	if !validToken(opts.Token) {
		return nil, errors.New("live: a token must be 16 to 256 characters of A-Z, a-z, 0-9, - and _")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.ClientBuffer <= 0 {
		opts.ClientBuffer = DefaultClientBuffer
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.ReadLimit <= 0 {
		opts.ReadLimit = DefaultReadLimit
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = DefaultMaxClients
	}
	if opts.DecideWait <= 0 {
		opts.DecideWait = DefaultDecideWait
	}
	s := &Server{opts: opts, token: opts.Token, sessions: map[string]*entry{}, conns: map[*websocket.Conn]struct{}{}}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
		Subprotocols:     []string{Subprotocol},
		// The origin was checked before the upgrade (checkRequest).
		CheckOrigin: func(*http.Request) bool { return true },
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			httpError(w, status, "websocket_handshake", reason.Error())
		},
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.serveConsole)
	s.mux.HandleFunc("GET /console.js", s.serveConsole)
	s.mux.HandleFunc("GET /console.css", s.serveConsole)
	s.mux.HandleFunc("GET /"+palette.FileName, s.serveConsole)
	s.mux.HandleFunc("GET /v1/sessions", s.serveSessions)
	s.mux.HandleFunc("GET /v1/sessions/{id}/stream", s.serveStream)
	s.mux.HandleFunc("GET /v1/sessions/{id}/artifacts/{name}", s.serveArtifact)
	return s, nil
}

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{16,256}$`)

func validToken(t string) bool { return tokenRE.MatchString(t) }

// Token returns the bearer token.
func (s *Server) Token() string { return s.token }

// Add offers a session on the live channel. Add it before it runs, so that
// its whole history is there for clients that join late.
func (s *Server) Add(sess Session, o SessionOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := sess.ID()
	if _, ok := s.sessions[id]; !ok {
		s.order = append(s.order, id)
	}
	e := &entry{s: sess, opts: o, added: time.Now()}
	if o.Dir != "" {
		e.decisions = newDecisionLog(o.Dir)
	}
	s.sessions[id] = e
	for len(s.order) > MaxSessions {
		delete(s.sessions, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *Server) session(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// Handler returns the server's HTTP handler: the console at /, the
// session list at /v1/sessions, a session's stream at
// /v1/sessions/{id}/stream and its screenshots at
// /v1/sessions/{id}/artifacts/{name}.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		if !s.opts.AnyHost && !loopbackHost(r.Host) {
			httpError(w, http.StatusMisdirectedRequest, "host_refused", "the Host header must name a loopback address")
			return
		}
		if !sameOrigin(r) {
			httpError(w, http.StatusForbidden, "origin_refused", "cross-origin requests are refused")
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Listen listens on addr, loopback unless addr names another host: "8765"
// and ":8765" mean 127.0.0.1:8765, and port 0 picks a free port. It
// reports whether the address is loopback.
func Listen(addr string) (net.Listener, bool, error) {
	if _, err := strconv.Atoi(addr); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, fmt.Errorf("live: listen address %q: want HOST:PORT or PORT", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, false, fmt.Errorf("live: %w", err)
	}
	ap, ok := l.Addr().(*net.TCPAddr)
	return l, ok && ap.IP.IsLoopback(), nil
}

// Serve serves the handler on l until Close. It returns nil after Close.
func (s *Server) Serve(l net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.http = hs
	s.mu.Unlock()
	err := hs.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting connections and lets the connected clients read
// what their sessions still have for them (each session's stream ends
// with its bus) until ctx ends; then it closes what is left.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	hs := s.http
	s.mu.Unlock()
	var err error
	if hs != nil {
		// Shutdown does not wait for hijacked (WebSocket) connections.
		err = hs.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	return err
}

// authorized reports whether r carries the token, as an Authorization
// bearer or, for a WebSocket from a browser, as a subprotocol.
func (s *Server) authorized(r *http.Request) bool {
	want := []byte(s.token)
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), want) == 1
	}
	for _, p := range websocket.Subprotocols(r) {
		if tok, ok := strings.CutPrefix(p, TokenProtocolPrefix); ok {
			return subtle.ConstantTimeCompare([]byte(tok), want) == 1
		}
	}
	return false
}

// loopbackHost reports whether a Host header names a loopback address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a request has no Origin (not from a browser
// page) or comes from the server's own origin.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Path != "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// httpError writes a JSON error body {"code", "message"}.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

// SessionInfo is one entry of GET /v1/sessions.
type SessionInfo struct {
	// ID is the session id.
	ID string `json:"id"`
	// Goal is the session's goal, when given.
	Goal string `json:"goal,omitempty"`
	// Ended is true once the session's stream has ended.
	Ended bool `json:"ended"`
	// Added is when the session was added, RFC 3339.
	Added string `json:"added"`
}

func (s *Server) serveSessions(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		httpError(w, http.StatusUnauthorized, "unauthorized", "a bearer token is required")
		return
	}
	s.mu.Lock()
	list := make([]SessionInfo, 0, len(s.order))
	for _, id := range s.order {
		e := s.sessions[id]
		list = append(list, SessionInfo{ID: id, Goal: e.opts.Goal, Ended: e.s.Bus().Closed(), Added: e.added.UTC().Format(time.RFC3339)})
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"sessions": list})
}

// artifactName is the file name of a stored image (evidence/FORMAT.md).
var artifactName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.(png|jpg|webp)$`)

var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".webp": "image/webp"}

func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		httpError(w, http.StatusUnauthorized, "unauthorized", "a bearer token is required")
		return
	}
	e := s.session(r.PathValue("id"))
	name := r.PathValue("name")
	if e == nil || e.opts.Dir == "" || !artifactName.MatchString(name) || strings.Contains(name, "..") {
		httpError(w, http.StatusNotFound, "not_found", "no such screenshot")
		return
	}
	f, err := os.Open(filepath.Join(e.opts.Dir, "artifacts", name))
	if err != nil {
		httpError(w, http.StatusNotFound, "not_found", "no such screenshot")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", imageTypes[filepath.Ext(name)])
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	_, _ = io.Copy(w, io.LimitReader(f, 16<<20))
}

func (s *Server) logf(format string, args ...any) {
	fmt.Fprintf(s.opts.Log, "aegis live: "+format+"\n", args...)
}
