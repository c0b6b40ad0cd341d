package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/internal/browsertest"
	"github.com/aegis-run/aegis/policy"
)

// One Chromium for the whole test binary; each session opens its own
// browser context in it.
var shared browsertest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if demo.root != "" {
		os.RemoveAll(demo.root)
	}
	shared.Close()
	os.Exit(code)
}

func browser(t testing.TB) *driver.Browser {
	t.Helper()
	return shared.Browser(t)
}

// site serves a fresh demo shop (optionally changed by a middleware) on a
// fixed loopback address: Reset swaps the handler, so a replay can run
// against the same origin as the recording, with the shop's state (order
// numbers, sign-ins) new again.
type site struct {
	URL string
	h   atomic.Pointer[http.Handler]
	srv *http.Server
}

func newSite(t testing.TB) *site {
	t.Helper()
	s := newSiteUnmanaged(t)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// Reset serves a new demo shop, wrapped by mw when not nil.
func (s *site) Reset(mw func(http.Handler) http.Handler) {
	h := demosite.Handler()
	if mw != nil {
		h = mw(h)
	}
	s.h.Store(&h)
}

// rewrite returns a middleware that replaces old by new in the body of the
// page at path.
func rewrite(path, old, new string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				next.ServeHTTP(w, r)
				return
			}
			rec := &bodyRecorder{header: http.Header{}, code: http.StatusOK}
			next.ServeHTTP(rec, r)
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			body := strings.ReplaceAll(rec.body.String(), old, new)
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.code)
			_, _ = w.Write([]byte(body))
		})
	}
}

type bodyRecorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *bodyRecorder) Header() http.Header         { return r.header }
func (r *bodyRecorder) WriteHeader(code int)        { r.code = code }
func (r *bodyRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// recording configures a mini session loop: a fixed list of actions on the
// demo shop, each described, gated, approved when the gate pauses it (by
// approver), run and observed, all recorded as the session does.
type recording struct {
	site     *site
	actions  []contract.Action
	preset   string
	approver string // who approves paused actions; "" refuses
	policy   fs.FS  // nil: the embedded policy
	goal     string
	signer   evidence.Signer
	root     string // where the bundle is created; "" a test temporary directory
	// noTargets records the decisions as a gate that did not record the
	// target element wrote them (a bundle that predates target recording).
	noTargets bool
	// status and summary end the session; "" completed, with the demo's
	// summary.
	status  contract.SessionStatus
	summary string
}

const testDecisionLog = "dlog-audit-test"

// record runs the mini loop and returns the sealed bundle's directory.
func record(t testing.TB, rc recording) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store := gate.NewApprovals()
	g, err := gate.New(ctx, gate.Options{PolicyFS: rc.policy, Approvals: store})
	if err != nil {
		t.Fatal(err)
	}
	sid := fmt.Sprintf("rec-%d", time.Now().UnixNano())
	goal := rc.goal
	if goal == "" {
		goal = "Sign in, place an order with express shipping, and read the orders table."
	}
	maxActions := 50
	task := contract.Input{Goal: goal, URLs: []string{rc.site.URL + "/"}, MaxActions: &maxActions}
	root := rc.root
	if root == "" {
		root = t.TempDir()
	}
	m := contract.Manifest{
		SessionID: sid, Task: task, Driver: contract.ModePlaywright,
		Versions: contract.Versions{Aegis: "test", Policy: g.PolicyVersion()},
	}
	if rc.noTargets {
		m.FormatVersion = contract.ManifestFormatVersion1 // decisions without their action were written before aegis-evidence/2
	}
	w, err := evidence.Create(root, m, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	now := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: sid, Timestamp: now()}))
	drv, err := driver.Open(ctx, driver.Config{
		Mode: contract.ModePlaywright, SessionID: sid, Browser: browser(t),
		AllowedOrigins: []string{rc.site.URL}, ActionTimeout: 5 * time.Second,
		PolicyContext: contract.PolicyContext{MaxStepBudget: maxActions, DecisionLogID: testDecisionLog},
	})
	must(err)
	defer drv.Close(context.Background())
	must(w.Plan(contract.Plan{Goal: goal, Steps: []contract.PlanStep{
		{ID: "p1", Description: "Sign in", SuccessCriteria: "the account page says Signed in"},
		{ID: "p2", Description: "Place an order", SuccessCriteria: "an order number is shown"},
		{ID: "p3", Description: "Read the orders", SuccessCriteria: "the orders table is extracted"},
	}}))
	cur, executed, seq := "about:blank", 0, 0
	for _, a := range rc.actions {
		var target *contract.Element
		if a.Type == contract.ActClick || a.Type == contract.ActType || a.Type == contract.ActSelect || (a.Type == contract.ActExtract && a.Selector != "") {
			el, err := drv.Describe(ctx, a.Selector)
			must(err)
			target = &el
		}
		req := gate.Request{
			SessionID: sid, StepIndex: executed + 1, Action: a, Target: target, ActiveURL: cur,
			Session: gate.Session{AllowedOrigins: task.URLs, Preset: rc.preset, MaxStepBudget: maxActions, DecisionLogID: testDecisionLog},
			Now:     time.Now(),
		}
		d := g.Decide(ctx, req)
		must(w.Decision(decisionOf(rc, d)))
		if d.Result == contract.ResultPaused {
			u := cur
			must(w.Event(contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: a.ID, ActionType: a.Type, URL: &u, Summary: "approve " + a.ID, Timestamp: now()}))
			answer := contract.ApprovalDeny
			if rc.approver != "" {
				grant, err := store.Grant(d.ActionHash, rc.approver, time.Now(), time.Minute)
				must(err)
				req.ApprovalID, req.Now = grant.ID, time.Now()
				d = g.Decide(ctx, req)
				must(w.Decision(decisionOf(rc, d)))
				answer = contract.ApprovalApprove
			} else {
				at := time.Now().UTC()
				d.Allow, d.Result = false, contract.ResultDenied
				d.Reasons = []contract.Reason{{Rule: "approval_denied", Message: "nobody approved"}}
				d.EvaluatedAt = at.Format(time.RFC3339Nano)
				d.DecisionID = gate.DecisionID(d.PolicyVersion, d.ActionHash, d.StepIndex, at)
				must(w.Decision(decisionOf(rc, d)))
			}
			must(w.Event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: a.ID, Decision: answer, Timestamp: now()}))
		}
		if !d.Allow {
			must(w.Event(contract.StreamEvent{Type: contract.EventError, Code: "policy.denied", Message: "action " + a.ID + " denied", Timestamp: now()}))
			continue
		}
		res, _ := drv.Act(ctx, a)
		res.RiskTag = d.Risk
		must(w.Action(a, res))
		executed++
		if res.URL != "" {
			cur = res.URL
		}
		u := cur
		must(w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: a.ID, ActionType: a.Type, RiskLevel: d.Risk, URL: &u, Summary: "did " + a.ID, Timestamp: now()}))
		shots := map[string]string{}
		if a.Type == contract.ActExtract {
			for _, ex := range drv.TakeArtifacts() {
				art := ex.Artifact
				if ex.Image != nil {
					rec, err := w.Image(art.ID+"-image", ex.Data, evidence.ImageMeta{SourceURL: ex.Image.SourceURL, ActionID: a.ID})
					must(err)
					shots[art.Value] = rec.URI
					art.Value, art.Hash = rec.URI, ""
				}
				if err := w.Artifact(art); err != nil && !errors.Is(err, evidence.ErrQuarantined) {
					t.Fatal(err)
				}
			}
		}
		obs, err := drv.Observe(ctx, driver.ObserveOptions{})
		must(err)
		for i, x := range obs.ExtractedArtifacts {
			if u, ok := shots[x.Value]; ok {
				obs.ExtractedArtifacts[i].Value = u
			}
		}
		must(w.Observation(seq, obs))
		seq++
		if obs.State.ActiveURL != "" {
			cur = obs.State.ActiveURL
		}
	}
	status, summary := rc.status, rc.summary
	if status == "" {
		status, summary = contract.SessionCompleted, "The order A-1001 was placed; the orders table lists 5 orders."
	}
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: status, Summary: summary, Timestamp: now()}))
	_, err = w.Seal(ctx, status, time.Now(), rc.signer)
	must(err)
	return w.Dir()
}

// decisionOf is the record of d as the recording writes it.
func decisionOf(rc recording, d gate.Decision) contract.DecisionRecord {
	if rc.noTargets { // a bundle written before targets were recorded, and actions and active URLs with them
		d.Target, d.Action, d.ActiveURL = nil, nil, nil
	}
	return d.DecisionRecord
}

// demoActions is the fixed session the tests record: sign in, order with
// express shipping (the "Place order" click needs an approval), a
// screenshot, a navigation the policy denies, the orders table.
func demoActions(base string) []contract.Action {
	tags := []string{}
	return []contract.Action{
		{ID: "a1", Type: contract.ActNavigate, Reason: "open the sign-in page", PolicyTags: tags, URL: base + "/login"},
		{ID: "a2", Type: contract.ActType, Reason: "enter the user name", PolicyTags: tags, Selector: "#username", Text: "ada"},
		{ID: "a3", Type: contract.ActType, Reason: "enter the password", PolicyTags: tags, Selector: "#password", Text: "correct-horse", Redact: true},
		{ID: "a4", Type: contract.ActClick, Reason: "sign in", PolicyTags: tags, Selector: "#sign-in"},
		{ID: "a5", Type: contract.ActNavigate, Reason: "open the order form", PolicyTags: tags, URL: base + "/form"},
		{ID: "a6", Type: contract.ActType, Reason: "enter the name", PolicyTags: tags, Selector: "#name", Text: "Ada Lovelace"},
		{ID: "a7", Type: contract.ActSelect, Reason: "choose express shipping", PolicyTags: tags, Selector: "#shipping", Value: "express"},
		{ID: "a8", Type: contract.ActClick, Reason: "place the order", PolicyTags: tags, Selector: "#submit"},
		{ID: "a9", Type: contract.ActExtract, Reason: "keep the confirmation", PolicyTags: tags, Extract: contract.ExtractScreenshot},
		{ID: "a10", Type: contract.ActNavigate, Reason: "look for a better deal", PolicyTags: tags, URL: "http://evil.example/deals"},
		{ID: "a11", Type: contract.ActNavigate, Reason: "open the orders", PolicyTags: tags, URL: base + "/orders"},
		{ID: "a12", Type: contract.ActExtract, Reason: "read the orders table", PolicyTags: tags, Selector: "#orders", Extract: contract.ExtractTable},
	}
}

// policyDir writes the embedded policy to a new directory, with its data
// changed by edit (the data.json document, decoded).
func policyDir(t testing.TB, edit func(config map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(policy.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		b, err := fs.ReadFile(policy.FS(), p)
		if err != nil {
			return err
		}
		if p == "data.json" && edit != nil {
			b = editData(t, b, edit)
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func editData(t testing.TB, b []byte, edit func(config map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["aegis"].(map[string]any)["config"].(map[string]any))
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// demoBundle records the demo session once per test binary (it takes a few
// seconds) and returns a fresh copy of it each time, with the site it was
// recorded on (reset to a fresh shop).
var demo struct {
	once sync.Once
	site *site
	root string
	dir  string
}

func demoBundle(t *testing.T) (string, *site) {
	t.Helper()
	demo.once.Do(func() {
		demo.site = newSiteUnmanaged(t)
		root, err := os.MkdirTemp("", "aegis-audit-demo-")
		if err != nil {
			t.Fatal(err)
		}
		demo.root = root
		demo.dir = record(t, recording{site: demo.site, actions: demoActions(demo.site.URL), approver: "alice@example.com", root: root})
	})
	if demo.dir == "" {
		t.Fatal("the demo bundle could not be recorded")
	}
	demo.site.Reset(nil)
	dst := filepath.Join(t.TempDir(), filepath.Base(demo.dir))
	copyDir(t, demo.dir, dst)
	return dst, demo.site
}

// newSiteUnmanaged is newSite without a cleanup: the shared demo site
// lives as long as the test binary.
func newSiteUnmanaged(t testing.TB) *site {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{URL: "http://" + ln.Addr().String()}
	s.Reset(nil)
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*s.h.Load()).ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
