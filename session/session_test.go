package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

const password = "Zq9-s3cr3t-PA55-w0rd"

func passwordSet(t testing.TB) *secrets.Set {
	set, err := secrets.NewSet(map[string]string{"PASSWORD": password})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// approveAll approves every request as "tester" and counts them.
func approveAll(n *int) session.Approver {
	return session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		*n++
		return session.ApprovalAnswer{Approved: true, Approver: "tester"}, nil
	})
}

// TestStepsAgentCompletes runs the realistic demo task with the steps
// agent: sign in with a secret (no approval: the secret is typed into the
// password field of the origin it is bound to, secret_typed, medium),
// fill and submit the order form (approved: "Place order"), extract the
// orders table.
func TestStepsAgentCompletes(t *testing.T) {
	s := newSite(t)
	set := passwordSet(t)
	in := task("Sign in, place an order, list the orders", []string{s.URL + "/login"}, `{"steps": [
		"type \"alice\" into \"Username\"",
		"type \"{{secret:PASSWORD}}\" into \"Password\"",
		"click \"Sign in\"",
		"expect \"Signed in as alice\"",
		"navigate /form",
		"type \"Ada Lovelace\" into \"Full name\"",
		"select \"Express\" in \"Shipping\"",
		"click \"Gift wrap\"",
		"click \"Place order\"",
		"expect \"Thank you, Ada Lovelace!\"",
		"navigate /orders",
		"extract table \"Orders\""
	]}`)
	pl, nav := stepsAgents(t, in, set)
	cfg := cfgFor(t, in, pl, nav)
	cfg.Secrets = set
	var approvals int
	cfg.Approver = approveAll(&approvals)
	var steps []session.StepReport
	cfg.OnStep = func(r session.StepReport) { steps = append(steps, r) }
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s, err %v; summary %q", res.Status, err, res.Output.Summary)
	}
	files := verify(t, res)
	noSecret(t, password, files, nil)
	if approvals != 1 || res.Approved != 1 {
		t.Errorf("approvals asked %d, granted %d; want 1 (Place order)", approvals, res.Approved)
	}
	if got := len(s.requests("POST /login")); got != 1 {
		t.Errorf("POST /login %d times, want 1", got)
	}
	if posts := s.requests("POST /login"); len(posts) == 1 && !strings.Contains(posts[0], "password="+password) {
		t.Errorf("the site did not receive the password: %q", posts[0])
	}
	if got := len(s.requests("POST /form")); got != 1 {
		t.Errorf("POST /form %d times, want 1", got)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Type != contract.ArtifactTable || !strings.Contains(res.Artifacts[0].Value, "A-1003") {
		t.Errorf("artifacts = %+v", res.Artifacts)
	}
	acts := actions(t, files)
	var actionSteps int
	var posted []string
	for _, r := range steps {
		if r.Effect == nil {
			actionSteps++
		} else if r.Effect.Method == "POST" && r.Decision == contract.ResultAllowed {
			posted = append(posted, r.Effect.Path)
		}
	}
	if len(acts) != res.Output.ActionsExecuted || actionSteps != len(acts) {
		t.Errorf("%d action lines, %d action step reports, output says %d", len(acts), actionSteps, res.Output.ActionsExecuted)
	}
	// The two form posts were held and judged as effects of their clicks.
	if got, want := strings.Join(posted, " "), "/login /form"; got != want {
		t.Errorf("allowed POST effects %q, want %q", got, want)
	}
	for _, a := range acts {
		if a.Action.Type == contract.ActType && a.Action.Selector == "#password" && a.Action.Text != "{{redacted}}" {
			t.Errorf("password action recorded as %q", a.Action.Text)
		}
	}
	evs := events(t, files)
	if evs[0].Type != contract.EventSessionStarted || evs[len(evs)-1].Type != contract.EventSessionEnded || evs[len(evs)-1].Status != contract.SessionCompleted {
		t.Errorf("events: %s", eventTypes(evs))
	}
	if n := strings.Count(eventTypes(evs), "approval_required"); n != 1 {
		t.Errorf("%d approval_required events, want 1", n)
	}
	// Every approved decision names the approver and is bound to its action.
	var approved int
	for _, d := range decisions(t, files) {
		if d.Result == contract.ResultApproved {
			approved++
			if d.Approval == nil || d.Approval.Approver != "tester" || d.Approval.ActionHash != d.ActionHash {
				t.Errorf("approved decision without its approval: %+v", d)
			} else if d.Approval.Channel != contract.ApprovalChannelProgram || len(d.Approval.MAC) != 64 {
				// The approver is the test's own (an ApproverFunc that
				// names no channel): the program's.
				t.Errorf("approval channel %q, MAC %q; want program and a MAC", d.Approval.Channel, d.Approval.MAC)
			}
		}
	}
	if approved != 1 {
		t.Errorf("%d approved decisions, want 1 (Place order)", approved)
	}
}

// TestScriptAgent replays raw actions.
func TestScriptAgent(t *testing.T) {
	s := newSite(t)
	in := task("Read the orders", []string{s.URL + "/orders"}, `{"script": [
		{"id":"x1","type":"extract","reason":"read the table","policyTags":[],"extract":"table","selector":"#orders"},
		{"id":"x2","type":"scroll","reason":"look further","policyTags":[],"direction":"down","amountPx":200},
		{"id":"x3","type":"extract","reason":"keep a picture","policyTags":[],"extract":"screenshot"}
	]}`)
	nav, err := navigator.NewScriptFromHints(in.Hints, navigator.ScriptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := stepsAgents(t, task(in.Goal, in.URLs, `{"steps":["extract table"]}`), nil)
	res, err := run(t, cfgFor(t, in, pl, nav))
	if err != nil || res.Status != contract.SessionCompleted || res.Output.ActionsExecuted != 4 {
		t.Fatalf("status %s, %d actions, err %v", res.Status, res.Output.ActionsExecuted, err)
	}
	files := verify(t, res)
	// The screenshot is stored beside its artifact, announced by an event.
	if len(res.Artifacts) != 2 || res.Artifacts[1].Type != contract.ArtifactScreenshot {
		t.Fatalf("artifacts %+v", res.Artifacts)
	}
	shot := res.Artifacts[1]
	if _, ok := files[shot.Value]; !ok || !strings.HasSuffix(shot.Value, ".png") {
		t.Errorf("screenshot %q not in the bundle", shot.Value)
	}
	var shots []contract.StreamEvent
	for _, e := range events(t, files) {
		if e.Type == contract.EventScreenshot {
			shots = append(shots, e)
		}
	}
	if len(shots) != 1 || *shots[0].URL != shot.Value || shots[0].Width == nil || *shots[0].Width != 1280 {
		t.Errorf("screenshot events %+v", shots)
	}
	// The final observation points at the stored image.
	if !strings.Contains(string(files["dom/1.json"]), shot.Value) {
		t.Errorf("the final observation does not name %s", shot.Value)
	}
}

// TestLLMRunCompletes: a full run with the LLM agents against a fake
// OpenAI-compatible endpoint: sign in with a secret (approved), go to the
// orders, extract the table.
func TestLLMRunCompletes(t *testing.T) {
	s := newSite(t)
	set := passwordSet(t)
	srv := fakeModel(t, nil, script(
		answer("continue", aType("a1", "#username", "alice", false), aType("a2", "#password", "{{secret:PASSWORD}}", false), aClick("a3", "#sign-in")),
		answer("continue", aNavigate("b1", s.URL+"/orders")),
		answer("done", aExtract("c1", "table", "#orders")),
	))
	pl, nav := llmAgents(t, srv, set)
	in := task("Sign in as alice and list the orders", []string{s.URL + "/login"}, "")
	cfg := cfgFor(t, in, pl, nav)
	cfg.Secrets = set
	cfg.Model = "test-model"
	var approvals int
	cfg.Approver = approveAll(&approvals)
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s, err %v", res.Status, err)
	}
	files := verify(t, res)
	noSecret(t, password, files, srv)
	if posts := s.requests("POST /login"); len(posts) != 1 || !strings.Contains(posts[0], "password="+password) {
		t.Errorf("POST /login = %q", posts)
		for _, a := range actions(t, files) {
			t.Logf("action %s %s ok=%v err=%+v url=%s", a.Action.ID, a.Action.Type, a.Result.OK, a.Result.Error, a.Result.URL)
		}
		t.Logf("site log:\n%s", s.all())
	}
	reqs := navRequests(srv)
	if len(reqs) != 3 {
		t.Fatalf("%d navigator requests, want 3", len(reqs))
	}
	// The model saw the page it acted on, with the placeholder names only.
	if doc := taskDoc(reqs[1]); !strings.Contains(doc, `"secrets":["PASSWORD"]`) || !strings.Contains(doc, `"outcome":"ok"`) {
		t.Errorf("second task document: %s", doc)
	}
	if !strings.Contains(reqs[1].Last(), "Signed in as alice") {
		t.Errorf("the second observation is not the account page")
	}
	if approvals != 0 || res.Output.ActionsExecuted != 6 {
		t.Errorf("%d approvals, %d actions; want 0 (the secret is typed where it is bound) and 6", approvals, res.Output.ActionsExecuted)
	}
	if len(res.Artifacts) != 1 || !strings.Contains(res.Artifacts[0].Value, "A-1005") {
		t.Errorf("artifacts %+v", res.Artifacts)
	}
	// Every model call is in the bundle: its step, purpose and prompt hash.
	var calls []string
	for _, c := range lines[contract.ModelCall](t, files, "model-calls.jsonl") {
		calls = append(calls, fmt.Sprintf("%d:%s", c.Step, c.Purpose))
		if len(c.PromptHash) != 64 || c.Model != "fake-model-1" || c.TotalTokens != 150 {
			t.Errorf("model call %+v", c)
		}
	}
	if got := strings.Join(calls, " "); got != "0:plan 1:navigate 2:navigate 3:navigate" {
		t.Errorf("model calls %s", got)
	}
	if res.Output.Summary != "done after 1 actions" || res.Output.LastURL == nil || *res.Output.LastURL != s.URL+"/orders" {
		t.Errorf("output %+v", res.Output)
	}
}
