package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/contract"
)

// The fixtures: a session that writes one record of every kind, with a
// fixed clock and a fixed key, so that its bundle is byte-for-byte the same
// on every run.

const testSession = "cus_01HZX4K9"

// testKey is a fixed Ed25519 key (seed 0x01 0x02 ...).
func testKey() ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// fixedClock returns a clock that starts at 2026-01-23T10:15:00Z and
// advances by one second per call.
func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 23, 10, 15, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func testManifest() contract.Manifest {
	max := 20
	return contract.Manifest{
		SessionID: testSession,
		Task:      contract.Input{Goal: "Find the monthly price of the Pro plan", URLs: []string{"https://example.com/pricing"}, MaxActions: &max},
		Driver:    contract.ModePlaywright,
		StartedAt: "2026-01-23T10:15:00Z",
		Versions:  contract.Versions{Aegis: "v0.1.0", Policy: hex64("policy"), Model: "gpt-4o-2024-08-06"},
	}
}

// hex64 is the SHA-256 of s, in hex: a stand-in hash for test records.
func hex64(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func sha(s string) string { return hex64(s) }

// testPNG returns a small real PNG image.
func testPNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, x%h, color.RGBA{200, 30, 30, 255})
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// examplePNG is a 4x3 PNG written once by image/png and kept as bytes,
// so that the example bundle does not change with Go's zlib.
func examplePNG() []byte {
	b, _ := hex.DecodeString("89504e470d0a1a0a0000000d4948445200000004000000030806000000b4f4aec60000001b49444154789c623a2127f79f010ae06c644106745940000000ffffeeb4080f691bf44f0000000049454e44ae426082")
	return b
}

// testJPEG returns a small real JPEG image.
func testJPEG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	jpeg.Encode(&b, img, &jpeg.Options{Quality: 50})
	return b.Bytes()
}

// testWebP returns a minimal lossless WebP header (VP8L) of w x h.
func testWebP(w, h int) []byte {
	v := uint32(w-1) | uint32(h-1)<<14
	payload := []byte{0x2f, byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24), 0, 0, 0}
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8L")
	b = append(b, byte(len(payload)), 0, 0, 0)
	b = append(b, payload...)
	n := len(b) - 8
	b[4], b[5], b[6], b[7] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return b
}

func testState(step int, snapshot string) contract.State {
	return contract.State{
		SessionID: testSession, Mode: contract.ModePlaywright, ActiveURL: "https://example.com/pricing",
		Title: "Pricing", Viewport: contract.Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
		Timestamp: fmt.Sprintf("2026-01-23T10:15:%02dZ", step), DOMHash: sha(snapshot),
		PolicyContext: contract.PolicyContext{Classification: contract.ClassPublic, MaxStepBudget: 25, DecisionLogID: "dlog-1"},
	}
}

func testObservation(step int, snapshot string) contract.Observation {
	return contract.Observation{
		State:       testState(step, snapshot),
		DOMText:     "Pro plan $20 / month",
		DOMSnapshot: snapshot,
		Affordances: []contract.Affordance{{Selector: "#buy", Role: "button", Text: "Buy", ActionHint: contract.HintClick}},
	}
}

// testActiveURL is the page the fixture's decisions were judged on.
const testActiveURL = "https://example.com/pricing"

// decision returns a decision record for an action, which records the
// action and the page it was judged on, and the action's plain hash
// (FORMAT.md, section 8, rule 15).
func decision(id string, a contract.Action, result contract.DecisionResult) contract.DecisionRecord {
	judged, url := a, testActiveURL
	d := contract.DecisionRecord{
		DecisionID: "dec-" + sha(id)[:32], SessionID: testSession, StepIndex: 1, ActionID: a.ID,
		Action: &judged, ActiveURL: &url, ActionHash: actionhash.Of(testSession, url, a, nil, nil),
		ActionName: a.PolicyName(), PolicyVersion: hex64("policy"),
		PolicySource: "embedded", Result: result, Risk: contract.RiskLow,
		EvaluatedAt: "2026-01-23T10:15:01Z", DurationUs: 42,
	}
	switch result {
	case contract.ResultAllowed:
		d.Allow = true
	case contract.ResultApproved:
		d.Allow, d.RequiresApproval = true, true
		d.Approval = &contract.ApprovalRef{ID: "apr-" + sha(id)[:32], Approver: "alice", ApprovedAt: "2026-01-23T10:15:02Z", ExpiresAt: "2026-01-23T10:20:02Z", ActionHash: d.ActionHash}
	case contract.ResultPaused:
		d.RequiresApproval = true
		d.ApprovalReasons = []contract.Reason{{Rule: "high_risk", Message: "navigation needs an approval"}}
	case contract.ResultDenied:
		d.Reasons = []contract.Reason{{Rule: "origin_not_allowed", Message: "https://evil.example is not allowed"}}
	}
	return d
}

// effectDecision is decision about an effect of a: its hash covers the
// effect (FORMAT.md, section 8, rule 15), and so does an approval's.
func effectDecision(id string, a contract.Action, result contract.DecisionResult, e contract.Effect) contract.DecisionRecord {
	d := decision(id, a, result)
	d.Effect = &e
	d.ActionHash = actionhash.Of(testSession, testActiveURL, a, nil, &e)
	if d.Approval != nil {
		d.Approval.ActionHash = d.ActionHash
	}
	return d
}

// testApprovalKey is a fixed approval key (bytes 0xa0, 0xa1, ...): the
// fixture's bundle commits to it and reveals it (FORMAT.md, section 8,
// rule 16).
func testApprovalKey() []byte {
	key := make([]byte, ApprovalKeySize)
	for i := range key {
		key[i] = byte(0xa0 + i)
	}
	return key
}

// withChannel gives the approval of d the channel it was given on and its
// MAC under key, as the session does; with no key it leaves d as it is (a
// bundle without an approval key).
func withChannel(t testing.TB, d contract.DecisionRecord, ch contract.ApprovalChannel, key []byte) contract.DecisionRecord {
	t.Helper()
	if key == nil || d.Approval == nil {
		return d
	}
	a := *d.Approval
	a.Channel = ch
	mac, err := ApprovalMAC(key, d.DecisionID, a)
	if err != nil {
		t.Fatal(err)
	}
	a.MAC = mac
	d.Approval = &a
	return d
}

func result(a contract.Action, ok bool) contract.ToolResult {
	r := contract.ToolResult{
		ActionID: a.ID, Action: a.PolicyName(), RiskTag: contract.RiskLow, SessionID: testSession, OK: ok,
		URL: "https://example.com/pricing", StartedAt: "2026-01-23T10:15:03Z", EndedAt: "2026-01-23T10:15:04Z",
	}
	if !ok {
		r.Error = &contract.ToolError{Code: contract.CodeTimeout, Message: "the element did not appear"}
	}
	return r
}

// modelCall returns the record of a model call made for step.
func modelCall(step int, purpose contract.ModelPurpose) contract.ModelCall {
	return contract.ModelCall{
		SessionID: testSession, Step: step, Purpose: purpose, Model: "gpt-4o-2024-08-06",
		PromptHash: hex64(fmt.Sprint("prompt ", purpose, " ", step)), PromptTokens: 1834, CompletionTokens: 212, TotalTokens: 2046,
		LatencyMs: 1873.5, Attempts: 1, Mode: contract.ModelOutputJSONSchema, Time: fmt.Sprintf("2026-01-23T10:15:%02dZ", step),
	}
}

// actionEvent returns the action event the session emits after an action
// line (FORMAT.md, section 8, rule 12).
func actionEvent(a contract.Action, summary, ts string) contract.StreamEvent {
	return contract.StreamEvent{Type: contract.EventAction, ActionID: a.ID, ActionType: a.Type, RiskLevel: contract.RiskLow, Summary: summary, Timestamp: ts}
}

// fixture says how to build a test bundle.
type fixture struct {
	secrets map[string]string
	sign    bool
	// snapshot is the DOM snapshot of each observation.
	snapshot string
	// steps repeats the step loop (observation, decision, action, event).
	steps int
	// observeArtifacts adds, after the extracted artifacts, an observation
	// that embeds them (as the driver reports them: the writer stores the
	// copies its files hold).
	observeArtifacts bool
}

// writeSession writes a session with every kind of record through w: the
// caller seals. It fails the test on any unexpected error.
func writeSession(t testing.TB, w *Writer, f fixture) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ts := "2026-01-23T10:15:00Z"
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: testSession, Timestamp: ts}))
	plan := contract.Plan{Goal: "Find the monthly price of the Pro plan", Steps: []contract.PlanStep{{ID: "s1", Description: "Open the pricing page", SuccessCriteria: "The Pro plan is visible"}}}
	must(w.ModelCall(modelCall(0, contract.ModelPurposePlan)))
	must(w.Plan(plan))
	snapshot := f.snapshot
	if snapshot == "" {
		snapshot = `<html><body><h1>Pricing</h1><p class="pro">Pro $20</p></body></html>`
	}
	steps := max(f.steps, 1)
	for s := 0; s < steps; s++ {
		must(w.Observation(s, testObservation(s, snapshot)))
		must(w.ModelCall(modelCall(s, contract.ModelPurposeNavigate)))
		nav := contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open pricing", PolicyTags: []string{"nav"}, URL: "https://example.com/pricing"}
		must(w.Decision(decision(fmt.Sprint("nav", s), nav, contract.ResultAllowed)))
		must(w.Action(nav, result(nav, true)))
		must(w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: contract.ActNavigate, RiskLevel: contract.RiskLow, Summary: "opened the pricing page", Timestamp: ts}))
	}
	typ := contract.Action{ID: "a2", Type: contract.ActType, Reason: "fill the search box", PolicyTags: []string{}, Selector: "#q", Text: "hunter2-password", Redact: true}
	must(w.Decision(decision("typ", typ, contract.ResultAllowed)))
	must(w.Action(typ, result(typ, true)))
	must(w.Event(actionEvent(typ, "typed the search text", ts)))
	click := contract.Action{ID: "a3", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{"purchase"}, Selector: "#buy"}
	must(w.Decision(decision("click-paused", click, contract.ResultPaused)))
	must(w.Event(contract.StreamEvent{Type: contract.EventApprovalRequired, ActionID: "a3", ActionType: contract.ActClick, Summary: "buy needs approval", Timestamp: ts}))
	must(w.Event(contract.StreamEvent{Type: contract.EventApprovalResolved, ActionID: "a3", Decision: contract.ApprovalApprove, Timestamp: ts}))
	must(w.Decision(withChannel(t, decision("click-approved", click, contract.ResultApproved), contract.ApprovalChannelLive, w.opts.ApprovalKey)))
	must(w.Action(click, result(click, false)))
	must(w.Event(actionEvent(click, "the element did not appear", ts)))
	bad := contract.Action{ID: "a4", Type: contract.ActNavigate, Reason: "leave", PolicyTags: []string{}, URL: "https://evil.example/"}
	must(w.Decision(decision("deny", bad, contract.ResultDenied)))
	shot := examplePNG()
	img, err := w.Image("shot-1", shot, ImageMeta{SourceURL: "https://example.com/pricing", ActionID: "a1"})
	must(err)
	must(w.Artifact(contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "Pro $20 / month", SourceSelector: ".pro", SourceURL: "https://example.com/pricing"}))
	must(w.Artifact(contract.Artifact{ID: "art-2", Type: contract.ArtifactScreenshot, Value: img.URI, SourceURL: "https://example.com/pricing"}))
	if f.observeArtifacts {
		obs := testObservation(steps, snapshot)
		obs.ExtractedArtifacts = []contract.Artifact{
			{ID: "art-1", Type: contract.ArtifactText, Value: "Pro $20 / month", Hash: sha("Pro $20 / month"), SourceSelector: ".pro", SourceURL: "https://example.com/pricing"},
			{ID: "art-2", Type: contract.ArtifactScreenshot, Value: "artifacts/driver-shot.png", Hash: img.ContentHash, SourceURL: "https://example.com/pricing"},
		}
		must(w.Observation(steps, obs))
	}
	rev := 2
	plan.Revision = &rev
	must(w.Plan(plan))
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "Pro is $20 a month", Timestamp: ts}))
}

// buildBundle writes and seals a test bundle in root and returns its
// directory.
func buildBundle(t testing.TB, root string, f fixture) string {
	t.Helper()
	w, err := Create(root, testManifest(), Options{Clock: fixedClock(), Secrets: f.secrets, ApprovalKey: testApprovalKey()})
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, f)
	var signer Signer
	if f.sign {
		signer = NewEd25519Signer(testKey())
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 10, 0, time.UTC), signer); err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

func testPub() ed25519.PublicKey { return testKey().Public().(ed25519.PublicKey) }

// mustContain fails unless s contains every want.
func mustContain(t testing.TB, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%q does not contain %q", s, w)
		}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
