package live

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/contract"
)

// readFrames reads frames until the server closes the connection: each
// one's type, and for a decision its action id and step.
func readFrames(t *testing.T, c *websocket.Conn) []string {
	t.Helper()
	var out []string
	for {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, raw, err := c.ReadMessage()
		if err != nil {
			return out
		}
		var f struct {
			Type      string `json:"type"`
			ActionID  string `json:"actionId"`
			StepIndex int    `json:"stepIndex"`
			Result    string `json:"result"`
			Risk      string `json:"risk"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("frame %s: %v", raw, err)
		}
		if f.Type == DecisionFrame {
			out = append(out, "decision "+f.ActionID+" step "+itoa(f.StepIndex)+" "+f.Result+" "+f.Risk)
			continue
		}
		checkSeed(t, raw)
		out = append(out, f.Type+" "+f.ActionID)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestDecisionFrames: a client that asks (?decisions=1) receives each
// decision the bundle records just before the first event recorded after
// it, live or joining late; a client that does not ask receives the seed
// events only.
func TestDecisionFrames(t *testing.T) {
	srv, err := NewServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := newFakeSession("s-dec-1")
	b := newFakeBundle(t, fs)
	srv.Add(fs, SessionOptions{Dir: b.dir, Goal: "read the orders"})
	hs := serve(t, srv)
	dialQ := func(q string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial(streamURL(hs, fs.id)+q, http.Header{"Authorization": {"Bearer " + srv.Token()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	live := dialQ("?decisions=1")
	plain := dialQ("")

	b.event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: fs.id})
	b.decision("a1", contract.ActNavigate, 1, contract.ResultAllowed, contract.RiskLow)
	b.event(actionEvent(1))
	b.decision("a2", contract.ActClick, 2, contract.ResultDenied, contract.RiskHigh, "payment_blocked")
	b.event(contract.StreamEvent{Type: contract.EventError, Code: "policy.denied", Message: "action a2 (click) denied"})
	b.decision("a3", contract.ActClick, 2, contract.ResultPaused, contract.RiskHigh)
	b.event(contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: "a3", ActionType: contract.ActClick, Summary: "click Pay"})
	b.decision("a3", contract.ActClick, 2, contract.ResultApproved, contract.RiskHigh)
	b.event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: "a3", Decision: contract.ApprovalApprove})
	b.event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "done"})
	fs.bus.Close()

	want := []string{
		"session.started ",
		"decision a1 step 1 allowed low",
		"action a1",
		"decision a2 step 2 denied high",
		"error ",
		"decision a3 step 2 paused high",
		"approval_required a3",
		"decision a3 step 2 approved high",
		"approval_resolved a3",
		"session.ended ",
	}
	late := dialQ("?decisions=1")
	for name, c := range map[string]*websocket.Conn{"live": live, "late": late} {
		if got := readFrames(t, c); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s client got\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	var seedOnly []string
	for _, w := range want {
		if !strings.HasPrefix(w, "decision ") {
			seedOnly = append(seedOnly, w)
		}
	}
	if got := readFrames(t, plain); strings.Join(got, "\n") != strings.Join(seedOnly, "\n") {
		t.Errorf("a client that did not ask got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(seedOnly, "\n"))
	}
}

// TestDecisionFramesWithoutBundle: a session without a bundle directory,
// or whose bundle cannot be read, streams its events all the same.
func TestDecisionFramesWithoutBundle(t *testing.T) {
	for _, dir := range []string{"", "missing", "garbage"} {
		srv, err := NewServer(Options{})
		if err != nil {
			t.Fatal(err)
		}
		fs := newFakeSession("s-dec-2")
		so := SessionOptions{}
		if dir != "" {
			so.Dir = t.TempDir() + "/" + dir
		}
		if dir == "garbage" {
			if err := os.MkdirAll(filepath.Join(so.Dir, "provenance"), 0o755); err != nil {
				t.Fatal(err)
			}
			// A decision entry whose line decisions.jsonl lacks, then junk.
			if err := os.WriteFile(filepath.Join(so.Dir, "provenance", "ledger.json"), []byte("{\"kind\":\"decision\",\"line\":1}\n{\"kind\":\"event\",\"line\":1}\nnot json\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		srv.Add(fs, so)
		hs := serve(t, srv)
		c, _, err := websocket.DefaultDialer.Dial(streamURL(hs, fs.id)+"?decisions=1", http.Header{"Authorization": {"Bearer " + srv.Token()}})
		if err != nil {
			t.Fatal(err)
		}
		fs.bus.Publish(actionEvent(1))
		fs.bus.Close()
		if got := readFrames(t, c); strings.Join(got, ",") != "action a1" {
			t.Errorf("dir %q: got %q", dir, got)
		}
		c.Close()
	}
}
