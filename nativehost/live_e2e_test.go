package nativehost_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/nativehost"
	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

var liveStream = regexp.MustCompile(`on the live channel: \S+ and (ws://\S+/stream)`)

// TestLiveChannelInHostMode: with "listen" in the host configuration, a
// session started from the popup is on the live channel too: a watcher
// sees its events, and its decision (not the popup's) approves the order.
func TestLiveChannelInHostMode(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium (go run ./cmd/aegis setup)")
	}
	shop := newSite(t, demosite.Handler())
	tokenFile := filepath.Join(t.TempDir(), "live-token")
	b := nativehosttest.Start(t, nativehosttest.Options{Binary: aegisBinary(t), Config: nativehost.Config{Listen: "127.0.0.1:0", LiveTokenFile: tokenFile}})
	posts := shop.count("POST /form")
	r := startFromPopup(t, b, shop.URL+"/form", "place the order", `type "Ada Lovelace" into "Full name"`, `click "Place order"`, `expect "Thank you, Ada Lovelace!"`)

	var stream string
	r.until("the live channel in the host log", func() bool {
		m := liveStream.FindStringSubmatch(b.HostLog())
		if m != nil {
			stream = m[1]
		}
		return m != nil
	})
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	c, _, err := websocket.DefaultDialer.Dial(stream+"?client=ci-bot", http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(tok))}})
	if err != nil {
		t.Fatalf("dial %s: %v", stream, err)
	}
	defer c.Close()
	var sid string
	for {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		var ev contract.StreamEvent
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("stream ended before the approval request: %v\nhost log:\n%s", err, b.HostLog())
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == contract.EventSessionStarted {
			sid = ev.ComputerUseSessionID
		}
		if ev.Type == contract.EventApprovalRequired {
			if !r.visible("#approval") {
				r.until("the popup's prompt too", func() bool { return r.visible("#approval") })
			}
			if err := c.WriteJSON(contract.ControlRequest{Action: contract.ControlDecision, ComputerUseSessionID: sid, ActionID: ev.ActionID, Decision: contract.ApprovalApprove}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	status, dir := r.ended()
	if status != contract.SessionCompleted {
		t.Fatalf("status %s: %s", status, r.text("#summary"))
	}
	verify(t, dir, contract.SessionCompleted)
	if got := shop.count("POST /form") - posts; got != 1 {
		t.Errorf("%d orders placed, want 1", got)
	}
	decisions, _ := os.ReadFile(filepath.Join(dir, evidence.FileDecisions))
	if !strings.Contains(string(decisions), `\"ci-bot\"`) {
		t.Errorf("the approval does not name the live client ci-bot:\n%s", decisions)
	}
	if !strings.Contains(string(decisions), `"channel":"live"`) {
		t.Errorf("the approval does not name the live console as its channel:\n%s", decisions)
	}
}
