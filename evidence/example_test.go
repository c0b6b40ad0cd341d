package evidence_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// A session writes its bundle record by record, seals and signs it; an
// auditor verifies it with the public key alone.
func Example() {
	root, err := os.MkdirTemp("", "evidence-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	// The session starts: the bundle is root/<session id>.
	w, err := evidence.Create(root, contract.Manifest{
		SessionID: "sess-1",
		Task:      contract.Input{Goal: "Read the price", URLs: []string{"https://example.com/"}},
		Driver:    contract.ModePlaywright,
		Versions:  contract.Versions{Aegis: "v0.1.0", Policy: fmt.Sprintf("%064x", 1)},
	}, evidence.Options{Secrets: map[string]string{"PASSWORD": "hunter2-pw"}})
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	// The gate allowed an action; the driver ran it.
	nav := contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open the page", PolicyTags: []string{}, URL: "https://example.com/"}
	// The decision records the action it judged, the page it judged it on
	// and their hash (the gate does all three: gate.Gate.Decide).
	page := "about:blank"
	if err := w.Decision(contract.DecisionRecord{
		DecisionID: "dec-" + fmt.Sprintf("%032x", 7), SessionID: "sess-1", ActionID: "a1",
		Action: &nav, ActiveURL: &page, ActionHash: actionhash.Of("sess-1", page, nav, nil, nil),
		ActionName: nav.PolicyName(), PolicyVersion: fmt.Sprintf("%064x", 1), PolicySource: "embedded",
		Allow: true, Result: contract.ResultAllowed, Risk: contract.RiskHigh, EvaluatedAt: now,
	}); err != nil {
		log.Fatal(err)
	}
	if err := w.Action(nav, contract.ToolResult{ActionID: "a1", Action: nav.PolicyName(), RiskTag: contract.RiskHigh,
		SessionID: "sess-1", OK: true, StartedAt: now, EndedAt: now}); err != nil {
		log.Fatal(err)
	}
	if err := w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: nav.Type, RiskLevel: contract.RiskHigh,
		Summary: "opened https://example.com/", Timestamp: now}); err != nil {
		log.Fatal(err)
	}
	if err := w.Event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "done", Timestamp: now}); err != nil {
		log.Fatal(err)
	}
	// The session ends: seal and sign.
	pub, priv, _ := ed25519.GenerateKey(nil)
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), evidence.NewEd25519Signer(priv)); err != nil {
		log.Fatal(err)
	}

	// The auditor.
	report, err := evidence.Verify(context.Background(), w.Dir(), evidence.VerifyOptions{PubKey: pub})
	if err != nil {
		var ve *evidence.VerifyError
		if errors.As(err, &ve) {
			log.Fatalf("invalid at %s line %d: %v", ve.File, ve.Line, err)
		}
		log.Fatal(err)
	}
	fmt.Println("sealed:", report.Sealed, "authenticated:", report.Authenticated)
	fmt.Println("entries:", report.Entries, "actions:", report.Counts.Actions, "decisions:", report.Counts.Decisions)
	// Output:
	// sealed: true authenticated: true
	// entries: 6 actions: 1 decisions: 1
}
