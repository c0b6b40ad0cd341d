package session_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// TestExtractHoldingSecretRefused: an extract whose value spells out a
// secret (here only by its letters and digits) is refused: no artifact is
// stored or output, the step fails with an error naming the secret, an
// artifact.secret_refused event is recorded, and the observations in the
// bundle hold the placeholder where the page showed the value.
func TestExtractHoldingSecretRefused(t *testing.T) {
	const value = "A1003A1005" // the orders page shows "A-1003 A-1005"
	set, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	site := newFakeSite()
	srv := fakeModel(t, nil, script(
		answer("continue", aExtract("x1", "text", "#orders")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, set)
	cfg := fakeCfg(t, site, task("Read the orders", []string{fakeOrigin + "/orders"}, ""), pl, nav)
	cfg.Secrets = set
	var errs []string
	cfg.OnStep = func(r session.StepReport) {
		if r.Error != "" {
			errs = append(errs, r.Error)
		}
	}
	res, err := run(t, cfg)
	if err != nil {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if len(res.Artifacts) != 0 {
		t.Errorf("artifacts %+v, want none", res.Artifacts)
	}
	for name := range files {
		if strings.HasPrefix(name, "artifacts/") {
			t.Errorf("%s stored", name)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "holds the value of secret PW") {
		t.Errorf("step errors %q, want the refusal", errs)
	}
	refused := false
	for _, e := range events(t, files) {
		refused = refused || (e.Type == contract.EventError && e.Code == "artifact.secret_refused")
	}
	if !refused {
		t.Error("no artifact.secret_refused event")
	}
	for name, b := range files {
		if strings.Contains(secrets.Normalize(string(b)), strings.ToLower(value)) {
			t.Errorf("%s spells out the value", name)
		}
	}
	if obs := string(files["dom/1.json"]); !strings.Contains(obs, secrets.Placeholder("PW")) {
		t.Errorf("the observation does not hold the placeholder: %.300s", obs)
	}
}

// unjudging is a policy that allows a secret without judging it: the real
// gate, with the risk reason secret_typed taken out of its decisions, as
// a custom policy written before secrets were bound would answer.
type unjudging struct{ session.Decider }

func (u unjudging) Decide(ctx context.Context, req gate.Request) gate.Decision {
	d := u.Decider.Decide(ctx, req)
	var keep []contract.Reason
	for _, r := range d.RiskReasons {
		if r.Rule != session.RuleSecretTyped {
			keep = append(keep, r)
		}
	}
	d.RiskReasons = keep
	return d
}

// TestSecretUnjudgedRefused: whatever the policy, the session types a
// secret only under a decision that names secret_typed; the embedded
// policy does, so the same sign-in goes through under it.
func TestSecretUnjudgedRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unjudged  bool
		wantTyped bool
	}{
		{"embedded policy", false, true},
		{"policy without the secrets rules", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := secrets.NewSet(map[string]string{"PW": "Zq9-s3cr3t-PA55"})
			if err != nil {
				t.Fatal(err)
			}
			site := newFakeSite()
			srv := fakeModel(t, nil, script(
				answer("continue", aType("p1", "#password", "{{secret:PW}}", true)),
				answer("done", aWait("w1", 1)),
			))
			pl, nav := llmAgents(t, srv, set)
			cfg := fakeCfg(t, site, task("Sign in", []string{fakeOrigin + "/login"}, ""), pl, nav)
			cfg.Secrets = set
			if tc.unjudged {
				cfg.Gate = unjudging{cfg.Gate}
			}
			res, err := run(t, cfg)
			if err != nil {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			typed := false
			for _, a := range actions(t, files) {
				typed = typed || a.Action.ID == "p1"
			}
			var rules []string
			for _, d := range decisions(t, files) {
				for _, r := range d.Reasons {
					rules = append(rules, r.Rule)
				}
			}
			if got, want := typed, tc.wantTyped; got != want {
				t.Errorf("typed %v, want %v (denial rules %v)", got, want, rules)
			}
			if got, want := slices.Contains(rules, session.RuleSecretUnjudged), !tc.wantTyped; got != want {
				t.Errorf("rule %s among %v: %v, want %v", session.RuleSecretUnjudged, rules, got, want)
			}
		})
	}
}

// TestRefusedNotAskedAgain (issue 17): a person refuses a high-risk click;
// the model proposes the same click again under other ids and reasons:
// it is refused without a second question, and the session, left without
// a way forward, ends aborted by that refusal, not failed.
func TestRefusedNotAskedAgain(t *testing.T) {
	site := newFakeSite()
	replies := script(
		answer("continue", aClick("p1", "#pay")),
		answer("continue", aClick("p2", "#pay")),
		answer("continue", aClick("p3", "#pay")),
	)
	var mu sync.Mutex
	var told []string // what the navigator's requests after the first said
	srv := fakeModel(t, nil, func(n int, r *llmtest.Request) llmtest.Reply {
		if n > 0 {
			mu.Lock()
			var all []string
			for _, m := range r.Messages {
				all = append(all, m.Content)
			}
			told = append(told, strings.Join(all, "\n"))
			mu.Unlock()
		}
		return replies(n, r)
	})
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Pay the bill", []string{fakeOrigin + "/danger"}, ""), pl, nav)
	asked := 0
	cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		asked++
		return session.ApprovalAnswer{Approved: false, Approver: "terminal:alice", Channel: session.ChannelTerminal}, nil
	})
	res, err := run(t, cfg)
	if err != nil {
		t.Fatalf("err %v, want an aborted session without an error", err)
	}
	if got, want := res.Status, contract.SessionAborted; got != want {
		t.Errorf("status %s, want %s", got, want)
	}
	if !strings.HasPrefix(res.Output.Summary, "denied by a person at the terminal: click #pay") {
		t.Errorf("summary %q does not say who refused", res.Output.Summary)
	}
	if got, want := asked, 1; got != want {
		t.Errorf("asked %d times, want %d", got, want)
	}
	// The model is told a person refused, not that the policy did.
	mu.Lock()
	defer mu.Unlock()
	if len(told) == 0 || !strings.Contains(told[0], "denied by a person at the terminal") || !strings.Contains(told[0], "do not propose it again") {
		t.Errorf("the navigator's next request does not tell it a person refused (%d requests)", len(told))
	}
	files := verify(t, res)
	if d := lastDecision(t, files, "p2"); d == nil || d.Allow || !strings.Contains(d.Reasons[0].Message, "not asked again") {
		t.Errorf("p2's decision %+v, want refused without asking", d)
	}
	for _, a := range actions(t, files) {
		if a.Action.Type == contract.ActClick {
			t.Errorf("the click %s ran", a.Action.ID)
		}
	}
}

// TestRefusalEndsOnlyWhatItStopped (issue 17): a navigator that gives up
// right after a person's refusal ends the session aborted by it; one that
// gives up steps later, having gone on, fails as itself.
func TestRefusalEndsOnlyWhatItStopped(t *testing.T) {
	tests := []struct {
		name    string
		replies []llmtest.Reply
		want    contract.SessionStatus
		summary string
	}{
		{"gives up at once", []llmtest.Reply{
			answer("continue", aClick("p1", "#pay")),
			answer("failed", aWait("w1", 1)),
		}, contract.SessionAborted, "denied by a person at the terminal: click #pay"},
		{"gives up later", []llmtest.Reply{
			answer("continue", aClick("p1", "#pay")),
			answer("continue", aClick("h1", "#harmless")),
			answer("continue", aWait("w1", 1)),
			answer("failed", aWait("w2", 1)),
		}, contract.SessionFailed, "the navigator gave up"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			site := newFakeSite()
			srv := fakeModel(t, nil, script(tc.replies...))
			pl, nav := llmAgents(t, srv, nil)
			cfg := fakeCfg(t, site, task("Pay the bill", []string{fakeOrigin + "/danger"}, ""), pl, nav)
			cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
				return session.ApprovalAnswer{Approved: false, Approver: "terminal:alice", Channel: session.ChannelTerminal}, nil
			})
			res, _ := run(t, cfg)
			if got, want := res.Status, tc.want; got != want {
				t.Errorf("status %s, want %s (%s)", got, want, res.Output.Summary)
			}
			if !strings.HasPrefix(res.Output.Summary, tc.summary) {
				t.Errorf("summary %q, want it to start with %q", res.Output.Summary, tc.summary)
			}
		})
	}
}
