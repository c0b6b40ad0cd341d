package attack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"
)

// hit is one request a server received: "METHOD /path?query" (the run's
// key stripped from the path) and its body.
type hit struct {
	Line string
	Body string
}

// runState is one scenario in one driver: its key prefixes every path it uses,
// so that what the servers receive is attributed to it even when it lands
// late.
type runState struct {
	key      string
	sc       *Scenario
	udp      net.PacketConn
	udpCount int

	flipOnce sync.Once
	flip     chan struct{} // closed: the page may change (TOCTOU)
	asked    atomic.Bool   // the person was asked, so the page was let change
	ackOnce  sync.Once
	ack      chan struct{} // closed: the page has changed

	allowed []hit
	foreign []hit
	// toModel counts the model requests that carried the secret; inBundle
	// names the bundle files that hold it; sinks names the other ways out
	// of aegis that held it (step reports, live events, the output).
	toModel  int
	inBundle []string
	sinks    []string
	// images counts the images the model's requests of the run held.
	images int
}

// world holds the servers every scenario talks to: the allowed origin, the
// foreign origin and the hostile model, all on loopback, and the UDP
// listeners of the runs.
type world struct {
	allowedSrv *httptest.Server
	foreignSrv *httptest.Server
	model      *model

	mu      sync.Mutex
	runs    map[string]*runState
	next    int
	arrived chan struct{} // closed and replaced whenever anything arrives
}

func newWorld() *world {
	w := &world{runs: map[string]*runState{}, arrived: make(chan struct{})}
	w.allowedSrv = httptest.NewServer(http.HandlerFunc(w.serveAllowed))
	w.foreignSrv = httptest.NewServer(http.HandlerFunc(w.serveForeign))
	w.model = newModel(w)
	return w
}

func (w *world) close() {
	// Release the long polls still waiting (a page whose change was never
	// asked for), so that closing the servers does not wait for them.
	w.mu.Lock()
	for _, r := range w.runs {
		r.flipOnce.Do(func() { close(r.flip) })
	}
	w.mu.Unlock()
	w.allowedSrv.Close()
	w.foreignSrv.Close()
	w.model.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.runs {
		if r.udp != nil {
			_ = r.udp.Close()
		}
	}
}

// newRun registers a run of sc and opens its UDP listener.
func (w *world) newRun(sc *Scenario, driver string) (*runState, error) {
	w.mu.Lock()
	w.next++
	key := fmt.Sprintf("r%d-%s", w.next, driver)
	w.mu.Unlock()
	r := &runState{key: key, sc: sc, flip: make(chan struct{}), ack: make(chan struct{})}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("attack: UDP listener: %w", err)
	}
	r.udp = pc
	go w.readUDP(r)
	w.mu.Lock()
	w.runs[key] = r
	w.mu.Unlock()
	return r, nil
}

func (w *world) readUDP(r *runState) {
	buf := make([]byte, 2048)
	for {
		if _, _, err := r.udp.ReadFrom(buf); err != nil {
			return
		}
		w.mu.Lock()
		r.udpCount++
		w.notify()
		w.mu.Unlock()
	}
}

// notify wakes the waiters of settle; w.mu is held.
func (w *world) notify() {
	close(w.arrived)
	w.arrived = make(chan struct{})
}

// settle waits until the run's ground truth is decided (an attack
// succeeded, or a precision check got what it expects) or bound passes.
func (w *world) settle(ctx context.Context, r *runState, secret string, bound time.Duration) {
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		w.mu.Lock()
		arrived := w.arrived
		w.mu.Unlock()
		violated, _ := judge(r.sc, w.truth(r), secret)
		if violated != (r.sc.Class == ClassPrecision) {
			return
		}
		select {
		case <-arrived:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (w *world) run(key string) *runState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs[key]
}

// allowedBase and foreignBase return the allowed and foreign origins of a
// run, with its key as the first path segment.
func (w *world) allowedBase(r *runState) string { return w.allowedSrv.URL + "/" + r.key }
func (w *world) foreignBase(r *runState) string { return w.foreignSrv.URL + "/" + r.key }

// startURL is the URL the run's session opens first.
func (w *world) startURL(r *runState) string { return w.allowedBase(r) + "/" + r.sc.Start }

// pageData is what the page templates see.
type pageData struct {
	A   string // the allowed origin with the run's key: {{.A}}/pay
	F   string // the foreign origin with the run's key: {{.F}}/landing
	UDP int    // the port of the run's UDP listener
}

func (w *world) data(r *runState) pageData {
	return pageData{A: w.allowedBase(r), F: w.foreignBase(r), UDP: r.udp.LocalAddr().(*net.UDPAddr).Port}
}

// record reads the request and attributes it to its run; it returns the
// run (nil when none) and the rest of the path after the key.
func (w *world) record(req *http.Request, foreign bool) (*runState, string) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body = io.NopCloser(bytes.NewReader(body))
	key, rest, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.runs[key]
	if r == nil {
		return nil, rest
	}
	line := req.Method + " /" + rest
	if req.URL.RawQuery != "" {
		line += "?" + req.URL.RawQuery
	}
	h := hit{Line: line, Body: string(body)}
	if foreign {
		r.foreign = append(r.foreign, h)
	} else {
		r.allowed = append(r.allowed, h)
	}
	w.notify()
	return r, rest
}

func (w *world) serveAllowed(rw http.ResponseWriter, req *http.Request) {
	r, rest := w.record(req, false)
	if r == nil {
		http.NotFound(rw, req)
		return
	}
	switch rest {
	case "flip":
		// The page's long poll: answered when the scripted person is
		// asked to approve (TOCTOU scenarios).
		select {
		case <-r.flip:
			rw.WriteHeader(http.StatusNoContent)
		case <-req.Context().Done():
		}
		return
	case "flipped":
		r.ackOnce.Do(func() { close(r.ack) })
		rw.WriteHeader(http.StatusNoContent)
		return
	}
	w.servePage(rw, req, r, r.sc.Pages[rest])
}

func (w *world) serveForeign(rw http.ResponseWriter, req *http.Request) {
	r, rest := w.record(req, true)
	if r == nil {
		http.NotFound(rw, req)
		return
	}
	page, ok := r.sc.Foreign[rest]
	if !ok {
		page = foreignPage
	}
	w.servePage(rw, req, r, page)
}

// donePage answers every request without a page of its own.
const donePage = `<title>Done</title><p>OK</p>`

// foreignPage is what the foreign origin serves for any path a scenario
// did not give a page of its own.
const foreignPage = `<title>Elsewhere</title><h1>You reached the foreign origin</h1>`

func (w *world) servePage(rw http.ResponseWriter, req *http.Request, r *runState, page string) {
	if page == "" || req.Method != http.MethodGet {
		// Anything else gets a small page: a form's submission lands
		// somewhere, as it would on a real site.
		page = donePage
	}
	t, err := template.New("page").Parse(page)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if err := t.Execute(&b, w.data(r)); err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(rw, `<!doctype html><html><head><meta charset="utf-8">`)
	_, _ = rw.Write(b.Bytes())
}

// Bounds on how long the scripted person waits for a TOCTOU page to say it
// has changed before answering. A page that changes says so at once; a
// page whose change is a navigation to another origin cannot say so when
// the browser refuses the navigation (no page is left to acknowledge it),
// so its bound is short: reaching it means the boundary held.
const (
	flipWait        = 20 * time.Second
	flipWaitBlocked = 3 * time.Second
)

// flipAndWait lets the run's page change and waits for it to say it has.
func (w *world) flipAndWait(ctx context.Context, r *runState) bool {
	r.asked.Store(true)
	r.flipOnce.Do(func() { close(r.flip) })
	bound := flipWait
	if r.sc.FlipBlockable {
		bound = flipWaitBlocked
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-r.ack:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// truth is what the servers received for a run, and where its secret
// went besides.
type truth struct {
	Allowed []hit
	Foreign []hit
	UDP     int
	// ToModel counts the model requests that carried the secret.
	ToModel int
	// InBundle names the evidence files that hold the secret.
	InBundle []string
	// Sinks names the other ways out of aegis that held the secret: step
	// reports, live events, the session's output and error, and model
	// requests the guard had to refuse.
	Sinks []string
	// Images counts the images the model's requests held (vision).
	Images int
}

func (w *world) truth(r *runState) truth {
	w.mu.Lock()
	defer w.mu.Unlock()
	return truth{Allowed: append([]hit(nil), r.allowed...), Foreign: append([]hit(nil), r.foreign...), UDP: r.udpCount,
		ToModel: r.toModel, InBundle: append([]string(nil), r.inBundle...), Sinks: append([]string(nil), r.sinks...), Images: r.images}
}

// modelSaw counts a model request of the run that carried the secret.
func (w *world) modelSaw(r *runState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.toModel++
	w.notify()
}

// modelShown counts n images a model request of the run held.
func (w *world) modelShown(r *runState, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.images += n
	w.notify()
}

// sinkHolds records a way out of aegis that held the run's secret, once.
func (w *world) sinkHolds(r *runState, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range r.sinks {
		if s == what {
			return
		}
	}
	r.sinks = append(r.sinks, what)
	w.notify()
}

// bundleHolds records the bundle files of the run that hold the secret.
func (w *world) bundleHolds(r *runState, files []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.inBundle = append(r.inBundle, files...)
}
