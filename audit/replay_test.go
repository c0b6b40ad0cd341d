package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// approveAll approves every request, as name, and counts them.
type approveAll struct {
	name  string
	asked []audit.ApprovalRequest
}

func (a *approveAll) Approve(_ context.Context, req audit.ApprovalRequest) (audit.ApprovalAnswer, error) {
	a.asked = append(a.asked, req)
	return audit.ApprovalAnswer{Approved: true, Approver: a.name}, nil
}

func replay(t *testing.T, bundle string, opts audit.ReplayOptions) *audit.ReplayReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts.Browser = browser(t)
	if opts.EvidenceRoot == "" {
		opts.EvidenceRoot = t.TempDir()
	}
	opts.ActionTimeout = 5 * time.Second
	rep, err := audit.Replay(ctx, bundle, opts)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return rep
}

func logReport(t *testing.T, rep *audit.ReplayReport) {
	t.Helper()
	for _, s := range rep.Steps {
		t.Logf("step %d %s %s: %s recorded=%s now=%s reasons=%v notes=%v", s.Step, s.ActionID, s.ActionType, s.Status, s.Recorded, s.Decision, s.Reasons, s.Notes)
		for _, d := range s.Differences {
			t.Logf("    %s (dom/%d): want %q got %q\n%s", d.Field, d.Observation, d.Want, d.Got, d.TextDiff)
		}
	}
}

func TestReplayUnchanged(t *testing.T) {
	bundle, _ := demoBundle(t)
	ap := &approveAll{name: "bob@example.com"}
	rep := replay(t, bundle, audit.ReplayOptions{Approver: ap})
	logReport(t, rep)
	if !rep.Reproduced() || rep.Diverged != 0 {
		t.Fatalf("replay of the unchanged site: %d diverged, reproduced=%v", rep.Diverged, rep.Reproduced())
	}
	if got, want := len(rep.Steps), 12; got != want {
		t.Fatalf("%d steps, want %d", got, want)
	}
	// The recorded denial stays denied, and is not executed.
	s10 := rep.Steps[9]
	if s10.Status != audit.StepBlocked || !s10.RecordedDenial || s10.Decision != "" || s10.Reasons[0].Rule != "origin_not_allowed" {
		t.Errorf("step 10 = %+v, want blocked by the recorded denial", s10)
	}
	// Both recorded approvals were asked again, naming who gave them.
	if len(ap.asked) != 2 {
		t.Fatalf("approver asked %d times, want 2", len(ap.asked))
	}
	for _, req := range ap.asked {
		if req.Recorded == nil || req.Recorded.Approver != "alice@example.com" {
			t.Errorf("approval request for step %d: recorded approval %+v, want alice's", req.Step, req.Recorded)
		}
	}
	if rep.Steps[7].Approver != "bob@example.com" || rep.Steps[7].Decision != contract.ResultApproved {
		t.Errorf("step 8 = %+v, want approved again by bob", rep.Steps[7])
	}
	checkReplayBundle(t, rep)
}

// checkReplayBundle: the replay's own bundle verifies, links the recorded
// session in its task hints, and holds no action the record denied.
func checkReplayBundle(t *testing.T, rep *audit.ReplayReport) {
	t.Helper()
	if _, err := evidence.Verify(context.Background(), rep.ReplayBundle, evidence.VerifyOptions{}); err != nil {
		t.Fatalf("the replay's bundle does not verify: %v", err)
	}
	b, err := audit.Open(context.Background(), rep.ReplayBundle, audit.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var hints struct {
		ReplayOf struct {
			SessionID  string `json:"sessionId"`
			MerkleRoot string `json:"merkleRoot"`
		} `json:"replayOf"`
	}
	if err := json.Unmarshal(b.Manifest.Task.Hints, &hints); err != nil {
		t.Fatal(err)
	}
	if hints.ReplayOf.SessionID != rep.SessionID || len(hints.ReplayOf.MerkleRoot) != 64 {
		t.Errorf("replay bundle hints %s, want replayOf %s with its merkle root", b.Manifest.Task.Hints, rep.SessionID)
	}
	for _, s := range b.Steps {
		if s.Action != nil && s.Action.ID == "a10" {
			t.Errorf("the replay executed the recorded denial a10")
		}
	}
	want := contract.SessionCompleted
	if !rep.Reproduced() {
		want = contract.SessionFailed
	}
	if b.End == nil || b.End.Status != want {
		t.Errorf("replay bundle status %+v, want %s", b.End, want)
	}
}

func diverged(rep *audit.ReplayReport) []int {
	var out []int
	for _, s := range rep.Steps {
		if s.Status == audit.StepDiverged {
			out = append(out, s.Step)
		}
	}
	return out
}

// TestReplayChangedPage: the orders page changed (one row); exactly the
// steps that see it diverge: the navigation to it and the extraction of
// its table, with a text diff naming the row.
func TestReplayChangedPage(t *testing.T) {
	bundle, site := demoBundle(t)
	site.Reset(rewrite("/orders", "<td>A-1003</td><td>2026-01-19</td><td>Shipped</td>", "<td>A-1003</td><td>2026-01-19</td><td>Lost in transit</td>"))
	rep := replay(t, bundle, audit.ReplayOptions{Approver: &approveAll{name: "bob"}})
	logReport(t, rep)
	if got, want := diverged(rep), []int{11, 12}; !slices.Equal(got, want) {
		t.Fatalf("diverged steps %v, want %v", got, want)
	}
	if rep.Reproduced() {
		t.Error("Reproduced() = true for a changed page")
	}
	var sawDiff bool
	for _, d := range rep.Steps[10].Differences {
		if d.Field == audit.FieldDOMHash && strings.Contains(d.TextDiff, "+ ") && strings.Contains(d.TextDiff, "Lost in transit") && strings.Contains(d.TextDiff, "- ") {
			sawDiff = true
		}
		if d.Field == audit.FieldURL || d.Field == audit.FieldTitle {
			t.Errorf("step 11: unexpected %s difference %+v", d.Field, d)
		}
	}
	if !sawDiff {
		t.Errorf("step 11 differences %+v: want a domHash difference with a text diff naming the changed row", rep.Steps[10].Differences)
	}
	var target bool
	for _, d := range rep.Steps[11].Differences {
		target = target || d.Field == audit.FieldTarget
	}
	if !target {
		t.Errorf("step 12 differences %+v: want the targeted table to differ", rep.Steps[11].Differences)
	}
	checkReplayBundle(t, rep)
}

// TestReplayMapOrigin: a bundle recorded on one port replays on another
// with --map-origin, without divergence.
func TestReplayMapOrigin(t *testing.T) {
	bundle, recorded := demoBundle(t)
	other := newSite(t)
	var m audit.OriginMap
	if err := m.Add(recorded.URL + "=" + other.URL + "/"); err != nil {
		t.Fatal(err)
	}
	rep := replay(t, bundle, audit.ReplayOptions{Approver: &approveAll{name: "bob"}, Origins: m})
	logReport(t, rep)
	if !rep.Reproduced() {
		t.Fatalf("replay on %s: diverged steps %v", other.URL, diverged(rep))
	}
	b, err := audit.Open(context.Background(), rep.ReplayBundle, audit.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.Steps[0].Action.URL; got != other.URL+"/login" {
		t.Errorf("replayed navigation to %s, want %s/login", got, other.URL)
	}
	if got := b.Manifest.Task.URLs[0]; got != other.URL+"/" {
		t.Errorf("replay task url %s, want %s/", got, other.URL)
	}
	// Without the mapping, the replay against the other port is not
	// possible: the recorded origin is down.
}

// TestReplayApprovalDenied: without an approver, a recorded approval is
// not granted again: the steps that needed one are blocked, and what
// follows them diverges.
func TestReplayApprovalDenied(t *testing.T) {
	bundle, _ := demoBundle(t)
	rep := replay(t, bundle, audit.ReplayOptions{})
	logReport(t, rep)
	if rep.Reproduced() {
		t.Fatal("Reproduced() = true although approvals were refused")
	}
	for _, i := range []int{3, 8} {
		s := rep.Steps[i-1]
		if s.Status != audit.StepBlocked || s.RecordedDenial || s.Recorded != contract.ResultApproved || s.Reasons[0].Rule != "approval_denied" {
			t.Errorf("step %d = %+v, want blocked: approval refused", i, s)
		}
	}
	checkReplayBundle(t, rep)
}

// TestReplayRefusesTampered: a bundle changed after the seal is refused,
// naming the place.
func TestReplayRefusesTampered(t *testing.T) {
	bundle, _ := demoBundle(t)
	p := filepath.Join(bundle, "decisions.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"result":"denied"`, `"result":"allowed"`, 1))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = audit.Replay(context.Background(), bundle, audit.ReplayOptions{EvidenceRoot: t.TempDir()})
	var te *audit.TamperedError
	var ve *evidence.VerifyError
	if !errors.As(err, &te) || !errors.As(err, &ve) || ve.File != "decisions.jsonl" || ve.Line == 0 {
		t.Fatalf("replay of a tampered bundle: %v, want a TamperedError naming decisions.jsonl and its line", err)
	}
	if !strings.Contains(err.Error(), "decisions.jsonl line") {
		t.Errorf("error %q does not name the place", err)
	}
}

// TestReplayUnsealed: an unsealed bundle is refused unless allowed.
func TestReplayUnsealed(t *testing.T) {
	bundle, _ := demoBundle(t)
	unseal(t, bundle)
	_, err := audit.Replay(context.Background(), bundle, audit.ReplayOptions{EvidenceRoot: t.TempDir()})
	if !errors.Is(err, evidence.ErrUnsealed) {
		t.Fatalf("replay of an unsealed bundle: %v, want ErrUnsealed", err)
	}
	rep := replay(t, bundle, audit.ReplayOptions{AllowUnsealed: true, Approver: &approveAll{name: "bob"}})
	if !rep.Reproduced() || len(rep.Steps) != 12 {
		t.Fatalf("replay of the unsealed bundle: reproduced=%v, %d steps", rep.Reproduced(), len(rep.Steps))
	}
}

// TestReplayPolicyFromBundle: --policy-from-bundle needs the policy of the
// recorded version.
func TestReplayPolicyFromBundle(t *testing.T) {
	bundle, _ := demoBundle(t)
	dir := policyDir(t, func(c map[string]any) { c["version"] = "changed" })
	_, err := audit.Replay(context.Background(), bundle, audit.ReplayOptions{EvidenceRoot: t.TempDir(), PolicyPath: dir, PolicyFromBundle: true})
	if err == nil || !strings.Contains(err.Error(), "judged by policy") {
		t.Fatalf("replay with another policy and PolicyFromBundle: %v, want a refusal", err)
	}
	rep := replay(t, bundle, audit.ReplayOptions{PolicyFromBundle: true, Approver: &approveAll{name: "bob"}})
	if !rep.Reproduced() || rep.PolicyVersion != rep.RecordedPolicyVersion {
		t.Fatalf("replay with the recorded policy: reproduced=%v, versions %s / %s", rep.Reproduced(), rep.PolicyVersion, rep.RecordedPolicyVersion)
	}
}

// TestReplayStricterPolicy: under a policy that blocks the demo's host,
// every executed step is blocked by the gate now.
func TestReplayStricterPolicy(t *testing.T) {
	bundle, _ := demoBundle(t)
	dir := policyDir(t, func(c map[string]any) {
		c["urls"].(map[string]any)["blocked_domains"] = []any{"127.0.0.1"}
	})
	rep := replay(t, bundle, audit.ReplayOptions{PolicyPath: dir, Approver: &approveAll{name: "bob"}})
	if rep.Reproduced() || rep.Steps[0].Status != audit.StepBlocked || rep.Steps[0].RecordedDenial || rep.Steps[0].Reasons[0].Rule != "blocked_domain" {
		t.Fatalf("step 1 under a policy blocking 127.0.0.1: %+v", rep.Steps[0])
	}
}

// TestReplayPredatesTargets: a bundle recorded before decisions held their
// target element verifies and replays without divergence (the live target
// is compared by the recorded action hash, or the affordance, and the
// steps say so); policy diff cannot judge its decisions on an element
// again, and says the bundle predates target recording.
func TestReplayPredatesTargets(t *testing.T) {
	s := newSite(t)
	bundle := record(t, recording{site: s, actions: demoActions(s.URL), approver: "alice@example.com", noTargets: true})
	s.Reset(nil)
	rep := replay(t, bundle, audit.ReplayOptions{Approver: &approveAll{name: "bob"}})
	logReport(t, rep)
	if !rep.Reproduced() || rep.Diverged != 0 {
		t.Fatalf("replay of the bundle without targets: diverged steps %v", diverged(rep))
	}
	for _, i := range []int{2, 3, 4, 6, 7, 8, 12} {
		if notes := rep.Steps[i-1].Notes; !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "predates target recording") }) {
			t.Errorf("step %d notes %v, want one saying the bundle predates target recording", i, notes)
		}
	}
	r, err := audit.DiffPolicy(context.Background(), bundle, audit.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var predates []int
	for _, u := range r.Unevaluated {
		if strings.Contains(u.Why, "predates target recording") {
			predates = append(predates, u.Step)
		}
	}
	if want := []int{2, 3, 4, 6, 7, 8, 12}; !slices.Equal(predates, want) {
		t.Errorf("steps not judged again for want of a target %v, want %v (unevaluated %+v)", predates, want, r.Unevaluated)
	}
	if len(r.Changes) != 0 || r.Evaluated != 4 {
		t.Errorf("%d changes, %d evaluated; want the 3 navigations that ran and the screenshot judged again, unchanged", len(r.Changes), r.Evaluated)
	}
}
