package nativehost_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/nativehost"
)

// The host tests run host mode (nativehost.Serve) against a fake
// extension over pipes: the real session loop, gate and evidence, with a
// page the fake describes. The end-to-end tests (e2e_test.go) do the same
// with the real extension in Chromium.

const fakeSite = "http://127.0.0.1:9"

// fakePage is the observer's answer for a billing page with one dangerous
// button.
var fakePage = mustJSON(map[string]any{
	"ok": true, "url": fakeSite + "/billing", "title": "Billing",
	"viewport":    map[string]any{"width": 1280, "height": 720, "dpr": 1},
	"text":        "Billing\nPay now",
	"affordances": []map[string]any{{"selector": "#pay", "role": "button", "text": "Pay now", "hint": "click"}},
	"stats":       map[string]any{},
	"snapshot": map[string]any{"v": 1, "truncated": map[string]any{"walk": false, "depth": 0, "snapshot": 0},
		"root": []any{"#document", map[string]any{"url": fakeSite + "/billing"}, []any{"button", map[string]any{"id": "pay"}, "Pay now"}}},
})

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type event struct {
	name string
	data json.RawMessage
}

// fakeExt is the extension's end of a conversation with a host run by
// Serve in the test.
type fakeExt struct {
	t      *testing.T
	conn   *nativehost.Conn
	raw    *nativehost.Writer
	toHost io.WriteCloser
	events chan event
	served chan error // Serve's result
	mu     sync.Mutex
	calls  []string
	// hold, when set, makes the tab call of that function wait for the
	// conversation's end, telling held when it starts waiting.
	hold string
	held chan struct{}
}

// HandleRequest plays the extension's side of the driver's calls.
func (f *fakeExt) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		TabID int    `json:"tabId"`
		Fn    string `json:"fn"`
		URL   string `json:"url"`
	}
	_ = json.Unmarshal(params, &p)
	f.mu.Lock()
	f.calls = append(f.calls, strings.TrimSpace(method+" "+p.Fn))
	hold, held := f.hold, f.held
	f.mu.Unlock()
	if method == nativehost.MethodTabCall && p.Fn != "" && p.Fn == hold {
		close(held)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	info := map[string]any{"tabId": 7, "windowId": 1, "url": fakeSite + "/billing", "title": "Billing", "active": true, "status": "complete"}
	switch method {
	case nativehost.MethodTabInfo, nativehost.MethodTabNavigate:
		return info, nil
	case nativehost.MethodBoundarySet:
		return map[string]any{"rules": 3}, nil
	case nativehost.MethodBoundaryClear:
		return map[string]any{}, nil
	case nativehost.MethodTabCall:
		value := `{"ok":true}`
		switch p.Fn {
		case "observe":
			value = fakePage
		case "describe":
			value = `{"ok":true,"element":{"tag":"button","id":"pay","role":"button","label":"Pay now","text":"Pay now"}}`
		case "click":
			value = `{"ok":true,"navigating":false}`
		}
		return map[string]any{"value": value, "url": fakeSite + "/billing", "navigated": false}, nil
	}
	return nil, &nativehost.Error{Code: nativehost.CodeUnknownMethod, Message: method}
}

func (f *fakeExt) HandleEvent(ctx context.Context, name string, data json.RawMessage) {
	select {
	case f.events <- event{name, data}:
	default:
		f.t.Errorf("event %s dropped: the test does not read events", name)
	}
}

// startHost runs Serve on pipes and returns the fake extension's end.
func startHost(t *testing.T, mutate ...func(*nativehost.Options)) *fakeExt {
	t.Helper()
	g, approvals := testGate(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, err := nativehost.Install(nativehost.InstallOptions{Dir: dir, ExtensionIDs: []string{extension.ID()}, Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	extToHostR, extToHostW := io.Pipe()
	hostToExtR, hostToExtW := io.Pipe()
	o := nativehost.Options{
		In: extToHostR, Out: hostToExtW, Log: io.Discard,
		Origin:     extension.Origin(),
		Config:     nativehost.Config{EvidenceDir: filepath.Join(dir, "evidence")},
		ConfigPath: filepath.Join(dir, "host.json"),
		Executable: exe,
		Manifests:  []string{res.Path},
		Version:    "test",
		Gate:       g, Approvals: approvals,
	}
	o.Driver.ActionTimeout = time.Second
	for _, m := range mutate {
		m(&o)
	}
	f := &fakeExt{t: t, toHost: extToHostW, events: make(chan event, 1000), served: make(chan error, 1), raw: nativehost.NewWriter(extToHostW)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		err := nativehost.Serve(ctx, o)
		hostToExtW.Close()
		f.served <- err
	}()
	f.conn = nativehost.NewConn(hostToExtR, extToHostW, nativehost.ConnOptions{Handler: f})
	go func() { _ = f.conn.Serve(ctx) }()
	t.Cleanup(func() { extToHostW.Close() })
	return f
}

func (f *fakeExt) call(method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.conn.Call(ctx, method, params)
}

func (f *fakeExt) hello() {
	f.t.Helper()
	if _, err := f.call(nativehost.MethodHello, nativehost.HelloParams{Protocol: []int{1}, Extension: "test"}); err != nil {
		f.t.Fatalf("hello: %v", err)
	}
}

// waitEvent returns the next event named name, failing after 20 s.
func (f *fakeExt) waitEvent(name string) json.RawMessage {
	f.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-f.events:
			if ev.name == name {
				return ev.data
			}
		case <-timeout:
			f.t.Fatalf("no %s event", name)
		}
	}
}

func wantCode(t *testing.T, err error, code nativehost.Code) {
	t.Helper()
	var e *nativehost.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

// payTask is a steps task that clicks the dangerous button: the gate
// pauses it for approval.
func payTask() nativehost.StartParams {
	return nativehost.StartParams{TabID: 7, Goal: "pay the bill", Origins: []string{fakeSite}, StartURL: fakeSite + "/billing", Steps: []string{`click "Pay now"`}}
}

func (f *fakeExt) start(p nativehost.StartParams) nativehost.StartResult {
	f.t.Helper()
	raw, err := f.call(nativehost.MethodStart, p)
	if err != nil {
		f.t.Fatalf("session.start: %v", err)
	}
	var r nativehost.StartResult
	if err := json.Unmarshal(raw, &r); err != nil {
		f.t.Fatal(err)
	}
	return r
}

func verifyBundle(t *testing.T, dir string, status contract.SessionStatus) map[string][]byte {
	t.Helper()
	rep, err := evidence.Verify(context.Background(), dir, evidence.VerifyOptions{})
	if err != nil {
		t.Fatalf("bundle %s does not verify: %v", dir, err)
	}
	if rep.Status != status {
		t.Errorf("bundle status %s, want %s", rep.Status, status)
	}
	files := map[string][]byte{}
	for _, name := range []string{"decisions.jsonl", "events.jsonl", "actions.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		files[name] = b
	}
	return files
}

func decisions(t *testing.T, b []byte) []contract.DecisionRecord {
	var out []contract.DecisionRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var d contract.DecisionRecord
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestHandshakeRequired(t *testing.T) {
	f := startHost(t)
	_, err := f.call(nativehost.MethodStart, payTask())
	wantCode(t, err, nativehost.CodeHandshakeRequired)
	_, err = f.call(nativehost.MethodHello, nativehost.HelloParams{Protocol: []int{2}})
	wantCode(t, err, nativehost.CodeUnsupportedVersion)
	f.hello()
	_, err = f.call("session.explode", nil)
	wantCode(t, err, nativehost.CodeUnknownMethod)
	_, err = f.call(nativehost.MethodAbort, nil)
	wantCode(t, err, nativehost.CodeNoSession)
	_, err = f.call(nativehost.MethodApprove, nativehost.ApprovalAnswerParams{ActionID: "a", ActionHash: "h", Decision: contract.ApprovalApprove})
	wantCode(t, err, nativehost.CodeNoSession)
}

func TestStartRefusesBadParams(t *testing.T) {
	f := startHost(t)
	f.hello()
	tests := []struct {
		name   string
		mutate func(*nativehost.StartParams)
		code   nativehost.Code
	}{
		{"no goal", func(p *nativehost.StartParams) { p.Goal = " " }, nativehost.CodeBadParams},
		{"no origins", func(p *nativehost.StartParams) { p.Origins = nil }, nativehost.CodeBadParams},
		{"file origin", func(p *nativehost.StartParams) { p.Origins = []string{"file:///etc"} }, nativehost.CodeBadParams},
		{"start outside", func(p *nativehost.StartParams) { p.StartURL = "https://bank.example/" }, nativehost.CodeBadParams},
		{"javascript start", func(p *nativehost.StartParams) { p.StartURL = "javascript:alert(1)" }, nativehost.CodeBadParams},
		{"no tab", func(p *nativehost.StartParams) { p.TabID = 0 }, nativehost.CodeBadParams},
		{"bad preset", func(p *nativehost.StartParams) { p.Preset = "yolo" }, nativehost.CodeBadParams},
		{"bad step", func(p *nativehost.StartParams) { p.Steps = []string{"teleport home"} }, nativehost.CodeBadParams},
		{"no model", func(p *nativehost.StartParams) { p.Steps = nil }, nativehost.CodeConfig},
	}
	for _, tt := range tests {
		p := payTask()
		tt.mutate(&p)
		_, err := f.call(nativehost.MethodStart, p)
		var e *nativehost.Error
		if !errors.As(err, &e) || e.Code != tt.code {
			t.Errorf("%s: error = %v, want %s", tt.name, err, tt.code)
		}
	}
}

// TestApprovalApproved: the popup's approval of the exact hash lets the
// action run once; the session completes and its bundle verifies.
func TestApprovalApproved(t *testing.T) {
	f := startHost(t)
	f.hello()
	res := f.start(payTask())
	var req nativehost.ApprovalRequestEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventApproval), &req); err != nil {
		t.Fatal(err)
	}
	if req.Risk != contract.RiskHigh || req.Target == nil || req.Target.ID != "pay" || len(req.ActionHash) != 64 || len(req.Reasons) == 0 || !strings.Contains(req.Action, "#pay") {
		t.Fatalf("approval request = %+v", req)
	}
	if _, err := f.call(nativehost.MethodApprove, nativehost.ApprovalAnswerParams{ActionID: req.ActionID, ActionHash: req.ActionHash, Decision: contract.ApprovalApprove}); err != nil {
		t.Fatal(err)
	}
	var ended nativehost.EndedEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventEnded), &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Status != contract.SessionCompleted || !ended.Evidence.Sealed || ended.Evidence.Dir != res.Evidence {
		t.Fatalf("ended = %+v, start said %+v", ended, res)
	}
	files := verifyBundle(t, ended.Evidence.Dir, contract.SessionCompleted)
	approved := 0
	for _, d := range decisions(t, files["decisions.jsonl"]) {
		if d.Result == contract.ResultApproved {
			approved++
			if d.Approval == nil || d.Approval.ActionHash != req.ActionHash || !strings.HasPrefix(d.Approval.Approver, "popup chrome-extension://") ||
				d.Approval.Channel != contract.ApprovalChannelPopup || len(d.Approval.MAC) != 64 {
				t.Errorf("approval = %+v", d.Approval)
			}
		}
	}
	if approved != 1 {
		t.Errorf("%d approved decisions, want 1", approved)
	}
	f.mu.Lock()
	calls := strings.Join(f.calls, ",")
	f.mu.Unlock()
	if !strings.Contains(calls, "tab.call click") {
		t.Errorf("the approved click never ran: %s", calls)
	}
}

// TestApprovalForAnotherHash: an approval for another action's hash is
// refused and recorded, and the pending action denied: it never runs.
func TestApprovalForAnotherHash(t *testing.T) {
	f := startHost(t)
	f.hello()
	f.start(payTask())
	var req nativehost.ApprovalRequestEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventApproval), &req); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("0", 64)
	_, err := f.call(nativehost.MethodApprove, nativehost.ApprovalAnswerParams{ActionID: req.ActionID, ActionHash: other, Decision: contract.ApprovalApprove})
	wantCode(t, err, nativehost.CodeApprovalMismatch)
	// A second answer finds nothing pending.
	_, err = f.call(nativehost.MethodApprove, nativehost.ApprovalAnswerParams{ActionID: req.ActionID, ActionHash: req.ActionHash, Decision: contract.ApprovalApprove})
	if err == nil {
		t.Fatal("the right hash was accepted after the mismatch")
	}
	var ended nativehost.EndedEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventEnded), &ended); err != nil {
		t.Fatal(err)
	}
	files := verifyBundle(t, ended.Evidence.Dir, ended.Status)
	var refused bool
	for _, d := range decisions(t, files["decisions.jsonl"]) {
		if d.Result == contract.ResultApproved {
			t.Errorf("an approved decision: %+v", d)
		}
		for _, r := range d.Reasons {
			if d.Result == contract.ResultDenied && r.Rule == "approval_unavailable" && strings.Contains(r.Message, "approval_mismatch") && strings.Contains(r.Message, other) {
				refused = true
			}
		}
	}
	if !refused {
		t.Errorf("no denied decision records the refused approval:\n%s", files["decisions.jsonl"])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c == "tab.call click" {
			t.Errorf("the click ran without a valid approval")
		}
	}
}

// TestResultForActionNeverSent: a response to a request the host never
// sent is refused (an error event), and the running session is aborted
// with the violation recorded in its sealed evidence.
func TestResultForActionNeverSent(t *testing.T) {
	f := startHost(t)
	f.hello()
	f.start(payTask())
	f.waitEvent(nativehost.EventApproval) // the session is waiting
	b, _ := nativehost.Message{Kind: nativehost.KindResponse, ID: 424242, Result: json.RawMessage(`{"value":"{\"ok\":true}"}`)}.Encode()
	if err := f.raw.WriteFrame(b); err != nil {
		t.Fatal(err)
	}
	var werr nativehost.WireError
	if err := json.Unmarshal(f.waitEvent(nativehost.EventError), &werr); err != nil {
		t.Fatal(err)
	}
	if werr.Code != nativehost.CodeUnexpectedResponse || !strings.Contains(werr.Message, "424242") {
		t.Fatalf("host.error = %+v", werr)
	}
	var ended nativehost.EndedEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventEnded), &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Status != contract.SessionAborted || !strings.Contains(ended.Summary, "protocol violation") {
		t.Fatalf("ended = %+v", ended)
	}
	files := verifyBundle(t, ended.Evidence.Dir, contract.SessionAborted)
	if !bytes.Contains(files["events.jsonl"], []byte("unexpected_response")) {
		t.Errorf("the evidence does not record the violation:\n%s", files["events.jsonl"])
	}
}

// TestDisconnectAbortsSealsAndExits: stdin EOF mid-session ends the
// session as aborted, seals the evidence, and Serve returns within a
// second.
func TestDisconnectAbortsSealsAndExits(t *testing.T) {
	f := startHost(t)
	f.hello()
	res := f.start(payTask())
	f.waitEvent(nativehost.EventApproval)
	start := time.Now()
	f.toHost.Close()
	select {
	case err := <-f.served:
		if err != nil {
			t.Errorf("Serve = %v, want nil after a disconnection", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the host did not exit")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the host exited %v after the disconnection, want within a second", d)
	}
	verifyBundle(t, res.Evidence, contract.SessionAborted)
}

// TestDisconnectDuringDriverCallAborts: the extension disconnects while
// the host waits for the answer to a driver call; the session ends as
// aborted (not failed by the call's error), sealed.
func TestDisconnectDuringDriverCallAborts(t *testing.T) {
	for _, fn := range []string{"observe", "describe"} {
		t.Run(fn, func(t *testing.T) {
			f := startHost(t)
			f.mu.Lock()
			f.hold, f.held = fn, make(chan struct{})
			held := f.held
			f.mu.Unlock()
			f.hello()
			res := f.start(payTask())
			select {
			case <-held:
			case <-time.After(20 * time.Second):
				t.Fatalf("the host never called %s", fn)
			}
			f.toHost.Close()
			select {
			case <-f.served:
			case <-time.After(5 * time.Second):
				t.Fatal("the host did not exit")
			}
			verifyBundle(t, res.Evidence, contract.SessionAborted)
		})
	}
}

// TestAbort: session.abort ends the session as aborted.
func TestAbort(t *testing.T) {
	f := startHost(t)
	f.hello()
	f.start(payTask())
	f.waitEvent(nativehost.EventApproval)
	if _, err := f.call(nativehost.MethodAbort, nativehost.AbortParams{Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	var ended nativehost.EndedEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventEnded), &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Status != contract.SessionAborted || !strings.Contains(ended.Summary, "stop") {
		t.Fatalf("ended = %+v", ended)
	}
	verifyBundle(t, ended.Evidence.Dir, contract.SessionAborted)
}

// TestOriginRefused: a caller whose origin no installed manifest of this
// host allows gets one error frame, and Serve refuses it.
func TestOriginRefused(t *testing.T) {
	exe, _ := os.Executable()
	dir := t.TempDir()
	other, err := nativehost.Install(nativehost.InstallOptions{Dir: filepath.Join(dir, "other"), ExtensionIDs: []string{extension.ID()}, Executable: "/usr/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := nativehost.Install(nativehost.InstallOptions{Dir: filepath.Join(dir, "mine"), ExtensionIDs: []string{strings.Repeat("a", 32)}, Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		origin    string
		manifests []string
	}{
		{"not an origin", "https://evil.example/", []string{mine.Path}},
		{"bad id", "chrome-extension://XYZ/", []string{mine.Path}},
		{"no trailing slash", "chrome-extension://" + strings.Repeat("a", 32), []string{mine.Path}},
		{"not allowed", extension.Origin(), []string{mine.Path}},
		{"manifest of another program", extension.Origin(), []string{other.Path}},
		{"no manifest", extension.Origin(), []string{filepath.Join(dir, "none.json")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := nativehost.Serve(context.Background(), nativehost.Options{
				In: strings.NewReader(""), Out: &out, Origin: tt.origin, Executable: exe, Manifests: tt.manifests,
			})
			if !errors.Is(err, nativehost.ErrOriginRefused) {
				t.Fatalf("Serve = %v, want origin_refused", err)
			}
			r := nativehost.NewReader(&out, 0)
			b, err := r.ReadFrame()
			if err != nil {
				t.Fatalf("no error frame: %v", err)
			}
			m, err := nativehost.DecodeMessage(b)
			if err != nil || m.Kind != nativehost.KindEvent || m.Event != nativehost.EventError || !bytes.Contains(m.Params, []byte(`"code":12`)) {
				t.Fatalf("frame = %s (%v)", b, err)
			}
			if _, err := r.ReadFrame(); err != io.EOF {
				t.Fatalf("more than one frame: %v", err)
			}
		})
	}
	// The allowed origin is served: hello works.
	f := startHost(t, func(o *nativehost.Options) { o.Manifests = append(o.Manifests, other.Path) })
	f.hello()
}

// billModel is a model that plans one step and reads the bill in one
// extract, then says done.
func billModel(t *testing.T) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(t)
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"x","steps":[{"id":"s1","description":"look at the bill","successCriteria":"seen"}]}`)(w, r)
			return
		}
		llmtest.Answer(`{"actions":[{"id":"x1","type":"extract","reason":"read the bill","policyTags":[],"extract":"text"}],"status":"done","summary":"the bill is there"}`)(w, r)
	})
	return srv
}

// TestGoalWithModel: a task without steps is planned and navigated by the
// model of the host's configuration (its key never leaves the host), and
// the model's name is recorded in the evidence.
func TestGoalWithModel(t *testing.T) {
	srv := billModel(t)
	f := startHost(t, func(o *nativehost.Options) {
		o.Config.Model = &nativehost.ModelConfig{BaseURL: srv.URL, Model: "test-model", APIKey: "sk-test-key"}
	})
	f.hello()
	p := payTask()
	p.Steps = nil
	res := f.start(p)
	var ended nativehost.EndedEvent
	if err := json.Unmarshal(f.waitEvent(nativehost.EventEnded), &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Status != contract.SessionCompleted || ended.Evidence.Dir != res.Evidence {
		t.Fatalf("ended = %+v", ended)
	}
	verifyBundle(t, ended.Evidence.Dir, contract.SessionCompleted)
	manifest, _ := os.ReadFile(filepath.Join(ended.Evidence.Dir, "manifest.json"))
	if !bytes.Contains(manifest, []byte(`"test-model"`)) || bytes.Contains(manifest, []byte("sk-test-key")) {
		t.Errorf("manifest.json: %s", manifest)
	}
	if len(srv.Requests()) < 2 {
		t.Errorf("the model was asked %d times", len(srv.Requests()))
	}
}
