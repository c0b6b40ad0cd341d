package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// pinRequest is a model typing a PIN, redacted, into a password field: a
// high-risk action that pauses for approval.
func pinRequest(pin string) Request {
	r := baseRequest()
	typeInto("#pin", &contract.Element{Tag: "input", Type: "password", Name: "pin"}, true)(&r)
	r.Action.Text = pin
	return r
}

// oldActionHash is the unkeyed formula: SHA-256 of the canonical JSON of
// the plain document, the text included as it is.
func oldActionHash(t testing.TB, r Request) string {
	t.Helper()
	doc := map[string]any{"action": actionhash.Action(r.Action), "activeUrl": r.ActiveURL, "sessionId": r.SessionID, "target": nil}
	if r.Target != nil {
		doc["target"] = actionhash.Element(r.Target)
	}
	b, err := canonjson.EncodeValue(doc)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestRedactedActionHash: the hash of a redacted action binds its text
// within a gate, but is not the plain SHA-256 of the document, so the
// bundle's copy of it cannot be brute-forced over a small text space.
func TestRedactedActionHash(t *testing.T) {
	g := sharedGate(t)
	const pin = "4821"
	req := pinRequest(pin)
	h := g.ActionHash(req)
	if !isSHA256Hex(h) {
		t.Fatalf("hash %q", h)
	}
	if again := g.ActionHash(pinRequest(pin)); again != h {
		t.Errorf("same redacted action, another hash: %s, %s", h, again)
	}
	d := g.Decide(context.Background(), req)
	if d.ActionHash != h || d.Result != contract.ResultPaused {
		t.Fatalf("decision %s with hash %s, want paused with %s", d.Result, d.ActionHash, h)
	}
	if got := DecisionID(d.PolicyVersion, d.ActionHash, d.StepIndex, testNow); got != d.DecisionID {
		t.Errorf("decision id %s does not derive from the recorded hash (%s)", d.DecisionID, got)
	}
	// Another text, another hash, in every digit position.
	for i := range pin {
		other := []byte(pin)
		other[i] = '0' + (other[i]-'0'+1)%10
		if g.ActionHash(pinRequest(string(other))) == h {
			t.Errorf("texts %s and %s hash alike", pin, other)
		}
	}
	// The unkeyed formula over the whole 4-digit space does not find it.
	for n := range 10000 {
		guess := fmt.Sprintf("%04d", n)
		if oldActionHash(t, pinRequest(guess)) == h {
			t.Fatalf("the PIN %s is found by brute force from the recorded hash", guess)
		}
	}
	// Nor is the text, or the key, in the record.
	b, err := json.Marshal(d.DecisionRecord)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), pin) || strings.Contains(string(b), hex.EncodeToString(g.redact)) {
		t.Errorf("the record holds the text or the key: %s", b)
	}
	// Each gate has its own key.
	g2, err := New(context.Background(), Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if g2.ActionHash(req) == h {
		t.Error("two gates hash a redacted action alike: the key is not the gate's")
	}
	if len(g.redact) != redactKeySize || string(g.redact) == string(g2.redact) {
		t.Errorf("redaction keys %x and %x", g.redact, g2.redact)
	}
}

// TestUnredactedActionHashUnchanged: without redact the hash is the plain
// SHA-256 of the document, the same in every gate (and a nil one), and the
// text counts.
func TestUnredactedActionHashUnchanged(t *testing.T) {
	g := sharedGate(t)
	var zero *Gate
	for _, req := range []Request{baseRequest(), func() Request { r := pinRequest("4821"); r.Action.Redact = false; return r }()} {
		want := oldActionHash(t, req)
		if got := g.ActionHash(req); got != want {
			t.Errorf("%s: got %s, want the plain hash %s", req.Action.Type, got, want)
		}
		if got := zero.ActionHash(req); got != want {
			t.Errorf("%s: nil gate: got %s, want %s", req.Action.Type, got, want)
		}
		if got := g.Decide(context.Background(), req).ActionHash; got != want {
			t.Errorf("%s: recorded %s, want %s", req.Action.Type, got, want)
		}
	}
	// A redacted click carries no text: nothing to key, the plain hash.
	click := baseRequest()
	click.Action.Redact = true
	if got, want := g.ActionHash(click), oldActionHash(t, click); got != want {
		t.Errorf("redacted click: got %s, want %s", got, want)
	}
	// A nil gate keys redacted texts too, with a random key.
	if h := zero.ActionHash(pinRequest("4821")); h == oldActionHash(t, pinRequest("4821")) {
		t.Error("a nil gate hashes a redacted text without a key")
	}
}

// TestRedactedApprovalBinds: an approval granted for one redacted text is
// refused (and burnt) when presented with another; granted for the text
// typed, it approves it once.
func TestRedactedApprovalBinds(t *testing.T) {
	store := NewApprovals()
	g, err := New(context.Background(), Options{Approvals: store, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(r Request) Decision { return g.Decide(context.Background(), r) }
	paused := decide(pinRequest("4821"))
	if paused.Result != contract.ResultPaused {
		t.Fatalf("result %s %v, want paused", paused.Result, paused.Reasons)
	}
	grant := func() string {
		a, err := store.Grant(paused.ActionHash, "alice@example.com", testNow, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	other := pinRequest("4822")
	other.ApprovalID = grant()
	if d := decide(other); d.Allow || !hasRule(d.Reasons, RuleApprovalInvalid) || !strings.Contains(d.Reasons[0].Message, "different action") {
		t.Errorf("approval of 4821 presented for 4822: %s %v", d.Result, d.Reasons)
	}
	same := pinRequest("4821")
	same.ApprovalID = other.ApprovalID
	if d := decide(same); d.Allow {
		t.Error("the burnt approval was accepted")
	}
	same.ApprovalID = grant()
	d := decide(same)
	if !d.Allow || d.Result != contract.ResultApproved || d.Approval == nil || d.Approval.ActionHash != paused.ActionHash {
		t.Errorf("approval of the text typed: %s %v %+v", d.Result, d.Reasons, d.Approval)
	}
}
