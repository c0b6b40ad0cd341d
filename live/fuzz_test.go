package live

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// FuzzControl feeds arbitrary frames to the control request handler: it
// never panics, answers everything but a well-formed request for this
// session with an error event valid under seed 003, and aborts the session
// only on a valid abort request.
func FuzzControl(f *testing.F) {
	for _, s := range []string{
		`{"action":"abort","computerUseSessionId":"s-fuzz"}`,
		`{"action":"abort","computerUseSessionId":"s-fuzz","reason":"stop"}`,
		`{"action":"decision","computerUseSessionId":"s-fuzz","actionId":"a1","decision":"approve"}`,
		`{"action":"decision","computerUseSessionId":"s-other","actionId":"a1","decision":"deny"}`,
		`{"action":"abort","action":"abort","computerUseSessionId":"s-fuzz"}`,
		`{"action":"abort","computerUseSessionId":"s-fuzz"} trailing`,
		`{"action":"abort","computerUseSessionId":"s-fuzz","reason":1e999999}`,
		"\xff\xfe", `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	srv, err := NewServer(Options{DecideWait: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := newFakeSession("s-fuzz")
		c := &client{srv: srv, e: &entry{s: fs, opts: SessionOptions{Approver: NewApprover()}}, name: "fuzz"}
		reply := c.control(context.Background(), data)
		var req contract.ControlRequest
		valid := json.Unmarshal(data, &req) == nil && req.ComputerUseSessionID == "s-fuzz"
		aborted := len(fs.aborts()) > 0
		if aborted && !(valid && req.Action == contract.ControlAbort) {
			t.Fatalf("%q aborted the session", data)
		}
		if reply == nil {
			if !aborted {
				t.Fatalf("%q: no error and no effect", data)
			}
			return
		}
		b, err := json.Marshal(reply)
		if err != nil {
			t.Fatal(err)
		}
		checkSeed(t, b)
		if reply.Type != contract.EventError || reply.Code == "" || strings.TrimSpace(reply.Message) == "" {
			t.Fatalf("%q: reply %+v", data, reply)
		}
	})
}
