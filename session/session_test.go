package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
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
// agent: sign in with a secret (approved: typing into a password field is
// high risk), fill and submit the order form (approved: "Place order"),
// extract the orders table.
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
	if approvals != 2 || res.Approved != 2 {
		t.Errorf("approvals asked %d, granted %d; want 2 (password, Place order)", approvals, res.Approved)
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
	if len(acts) != res.Output.ActionsExecuted || len(steps) != len(acts) {
		t.Errorf("%d action lines, %d step reports, output says %d", len(acts), len(steps), res.Output.ActionsExecuted)
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
	if n := strings.Count(eventTypes(evs), "approval_required"); n != 2 {
		t.Errorf("%d approval_required events, want 2", n)
	}
	// Every approved decision names the approver and is bound to its action.
	var approved int
	for _, d := range decisions(t, files) {
		if d.Result == contract.ResultApproved {
			approved++
			if d.Approval == nil || d.Approval.Approver != "tester" || d.Approval.ActionHash != d.ActionHash {
				t.Errorf("approved decision without its approval: %+v", d)
			}
		}
	}
	if approved != 2 {
		t.Errorf("%d approved decisions, want 2", approved)
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

// TestBatchStopsWhenThePageChanges: a click in the middle of a batch that
// changes the page (or a navigation) ends the batch; the rest is reported
// skipped and the Navigator asked again on the new page.
func TestBatchStopsWhenThePageChanges(t *testing.T) {
	s := newSite(t)
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#gift"), aType("t1", "#name", "Ada", false)),
		answer("continue", aNavigate("n1", s.URL+"/orders"), aExtract("x1", "text", "")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Order", []string{s.URL + "/form"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	var ran []string
	for _, a := range actions(t, files) {
		ran = append(ran, a.Action.ID)
	}
	if got := strings.Join(ran, " "); got != "start c1 n1 w1" {
		t.Errorf("ran %s, want start c1 n1 w1", got)
	}
	reqs := navRequests(srv)
	for i, want := range []string{"the page changed", "a navigation loaded a new page"} {
		if doc := taskDoc(reqs[i+1]); !strings.Contains(doc, `"outcome":"skipped","detail":"not run: `+want) {
			t.Errorf("request %d lacks the skip (%s): %s", i+1, want, doc)
		}
	}
}

// TestStepsDeniedFails: an offline agent cannot work around a denial; the
// session fails, the denial recorded.
func TestStepsDeniedFails(t *testing.T) {
	s := newSite(t)
	in := task("Visit the partner", []string{s.URL + "/"}, `{"steps": ["navigate http://evil.example/"]}`)
	pl, nav := stepsAgents(t, in, nil)
	res, err := run(t, cfgFor(t, in, pl, nav))
	var se *session.Error
	if !errors.As(err, &se) || se.Code != "navigator" || res.Status != contract.SessionFailed {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	if res.Output.Status != contract.SessionAborted || !strings.Contains(string(res.Output.Extra["endStatus"]), "failed") {
		t.Errorf("output status %s extra %s", res.Output.Status, res.Output.Extra["endStatus"])
	}
	files := verify(t, res)
	ds := decisions(t, files)
	last := ds[len(ds)-1]
	if last.Allow || last.Reasons[0].Rule != "origin_not_allowed" {
		t.Errorf("last decision = %+v", last)
	}
	if res.Output.ActionsExecuted != 1 {
		t.Errorf("%d actions executed, want 1 (the first URL)", res.Output.ActionsExecuted)
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
	if approvals != 1 || res.Output.ActionsExecuted != 6 {
		t.Errorf("%d approvals, %d actions; want 1 and 6", approvals, res.Output.ActionsExecuted)
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

// TestModelFailures: a model that answers garbage, schema-invalid JSON,
// too late, 429 or 500 makes a bounded number of requests and fails the
// session with a clear error; the bundle is sealed all the same.
func TestModelFailures(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name     string
		reply    llmtest.Reply
		timeout  time.Duration
		wantErr  error
		wantText string
		wantReqs int // navigator requests
	}{
		{"malformed JSON", llmtest.Answer("Sure! Here you go: {not json"), 0, nil, "no valid navigator-response in 3 answers", 3},
		{"schema-invalid", llmtest.Answer(`{"actions":[{"id":"a1","type":"teleport","reason":"x","policyTags":[]}],"status":"continue","summary":"x"}`), 0, nil, "no valid navigator-response in 3 answers", 3},
		{"empty batch", llmtest.Answer(`{"actions":[],"status":"continue","summary":"x"}`), 0, nil, "no valid navigator-response", 3},
		{"timeout", llmtest.Delay(3*time.Second, answer("done", aWait("w", 1))), 150 * time.Millisecond, llm.ErrTimeout, "timed out", 3},
		{"429", llmtest.Status(429, "slow down", "Retry-After: 0"), 0, llm.ErrRateLimited, "HTTP 429", 3},
		{"500", llmtest.Status(500, "boom"), 0, llm.ErrServer, "HTTP 500", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeModel(t, nil, func(int, *llmtest.Request) llmtest.Reply { return tc.reply })
			pl, nav := llmAgents(t, srv, nil, func(c *llm.Config) {
				if tc.timeout > 0 {
					c.Timeout = tc.timeout
				}
			})
			res, err := run(t, cfgFor(t, task("Read the orders", []string{s.URL + "/orders"}, ""), pl, nav))
			var se *session.Error
			if !errors.As(err, &se) || se.Code != "navigator" || res.Status != contract.SessionFailed {
				t.Fatalf("status %s, err %v", res.Status, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v does not match %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantText) || !strings.Contains(string(res.Output.Extra["error"]), tc.wantText) {
				t.Errorf("err %q / output error %s lacks %q", err, res.Output.Extra["error"], tc.wantText)
			}
			if got := len(navRequests(srv)); got != tc.wantReqs {
				t.Errorf("%d navigator requests, want %d", got, tc.wantReqs)
			}
			files := verify(t, res)
			evs := events(t, files)
			if last := evs[len(evs)-1]; last.Type != contract.EventSessionEnded || last.Status != contract.SessionFailed {
				t.Errorf("last event %+v", last)
			}
			if !strings.Contains(eventTypes(evs), "error session.ended") {
				t.Errorf("no error event before the end: %s", eventTypes(evs))
			}
			var failedCalls int
			for _, c := range lines[contract.ModelCall](t, files, "model-calls.jsonl") {
				if c.Purpose == contract.ModelPurpose(llm.PurposeNavigate) && c.Error != "" {
					failedCalls++
				}
			}
			want := 1 // the one call, with its retries, that failed
			if tc.wantErr == nil {
				want = 0 // invalid answers come from calls that succeeded
			}
			if failedCalls != want {
				t.Errorf("%d failed navigator calls recorded, want %d", failedCalls, want)
			}
		})
	}
}

// TestPlannerFailure: a planner that cannot plan fails the session.
func TestPlannerFailure(t *testing.T) {
	s := newSite(t)
	srv := fakeModel(t, llmtest.Status(500, "planner down"), script(answer("done", aWait("w", 1))))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Read", []string{s.URL + "/orders"}, ""), pl, nav))
	var se *session.Error
	if !errors.As(err, &se) || se.Code != "planner" || !errors.Is(err, llm.ErrServer) {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	verify(t, res)
}

// TestDeniedActionWorkaround: the model proposes leaving the allowlist;
// the gate denies it; the next request tells the model why; it takes
// another way and the session completes.
func TestDeniedActionWorkaround(t *testing.T) {
	s := newSite(t)
	srv := fakeModel(t, nil, func(n int, r *llmtest.Request) llmtest.Reply {
		if n == 0 {
			return answer("continue", aNavigate("n1", "http://evil.example/prices"), aExtract("n2", "text", ""))
		}
		if strings.Contains(taskDoc(*r), "origin_not_allowed") {
			return answer("done", aExtract("t1", "table", "#orders"))
		}
		return answer("continue", aNavigate("n1", "http://evil.example/prices"))
	})
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Find the prices", []string{s.URL + "/orders"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	reqs := navRequests(srv)
	if len(reqs) != 2 {
		t.Fatalf("%d navigator requests", len(reqs))
	}
	doc := taskDoc(reqs[1])
	for _, want := range []string{`"kind":"denied"`, `origin_not_allowed`, `"actionId":"n1"`, `"outcome":"skipped"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the second request lacks %s: %s", want, doc)
		}
	}
	if res.Denied != 1 || res.Output.ActionsExecuted != 2 {
		t.Errorf("denied %d, executed %d", res.Denied, res.Output.ActionsExecuted)
	}
	var denied int
	for _, d := range decisions(t, files) {
		if !d.Allow {
			denied++
		}
	}
	if denied != 1 {
		t.Errorf("%d denied decisions, want 1", denied)
	}
	if got := s.requests("GET /prices"); len(got) != 0 {
		t.Errorf("site saw %q", got)
	}
}

// TestBudgets: actions past maxActions are denied and end the session with
// action_limit_exceeded; maxDurationMs ends it with duration_exceeded.
func TestBudgets(t *testing.T) {
	s := newSite(t)
	t.Run("actions", func(t *testing.T) {
		srv := fakeModel(t, nil, script(answer("continue", aWait("w1", 1), aWait("w2", 1))))
		pl, nav := llmAgents(t, srv, nil)
		in := task("Wait", []string{s.URL + "/orders"}, "")
		in.MaxActions = intp(3)
		var reports []session.StepReport
		cfg := cfgFor(t, in, pl, nav)
		cfg.OnStep = func(r session.StepReport) { reports = append(reports, r) }
		res, err := run(t, cfg)
		if err != nil || res.Status != contract.SessionActionLimitExceeded {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		files := verify(t, res)
		if n := len(actions(t, files)); n != 3 || res.Output.ActionsExecuted != 3 {
			t.Errorf("%d actions recorded, %d executed; want 3", n, res.Output.ActionsExecuted)
		}
		ds := decisions(t, files)
		last := ds[len(ds)-1]
		if last.Allow || last.StepIndex != 4 || last.Reasons[0].Rule != "step_budget_exceeded" {
			t.Errorf("last decision %+v", last)
		}
		if lr := reports[len(reports)-1]; lr.Executed || lr.Decision != contract.ResultDenied || lr.Index != 4 || lr.Budget != 3 {
			t.Errorf("last report %+v", lr)
		}
	})
	t.Run("duration", func(t *testing.T) {
		srv := fakeModel(t, nil, script(answer("continue", aWait("w1", 400))))
		pl, nav := llmAgents(t, srv, nil)
		in := task("Wait", []string{s.URL + "/orders"}, "")
		in.MaxDurationMs = intp(1500)
		start := time.Now()
		res, err := run(t, cfgFor(t, in, pl, nav))
		if err != nil || res.Status != contract.SessionDurationExceeded {
			t.Fatalf("status %s err %v", res.Status, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
		verify(t, res)
	})
}

// TestAbort: Abort (the operator) and the caller's context both end the
// session aborted, with the bundle sealed.
func TestAbort(t *testing.T) {
	s := newSite(t)
	for _, how := range []string{"Abort", "context"} {
		t.Run(how, func(t *testing.T) {
			srv := fakeModel(t, nil, script(answer("continue", aWait("w1", 200))))
			pl, nav := llmAgents(t, srv, nil)
			sess, err := session.New(cfgFor(t, task("Wait forever", []string{s.URL + "/orders"}, ""), pl, nav))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sub := sess.Bus().Subscribe(ctx, session.SubscribeOptions{FromStart: true})
			go func() {
				n := 0
				for ev := range sub.Events() {
					if ev.Type == contract.EventAction {
						if n++; n == 3 {
							if how == "Abort" {
								sess.Abort("operator pressed stop")
							} else {
								cancel()
							}
						}
					}
				}
			}()
			res, err := sess.Run(ctx)
			if err != nil || res.Status != contract.SessionAborted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			if how == "Abort" && !strings.Contains(res.Output.Summary, "operator pressed stop") {
				t.Errorf("summary %q", res.Output.Summary)
			}
			files := verify(t, res)
			evs := events(t, files)
			if last := evs[len(evs)-1]; last.Status != contract.SessionAborted {
				t.Errorf("last event %+v", last)
			}
		})
	}
}

// TestLoopDetection: the same failing action forces a revised plan, then
// fails the session; so does the same action repeated on an unchanged page.
func TestLoopDetection(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"failing", answer("continue", aClick("c1", "#no-such-button"))},
		{"repeating", answer("continue", aExtract("e1", "text", ""))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeModel(t, nil, script(tc.reply))
			pl, nav := llmAgents(t, srv, nil)
			res, err := run(t, cfgFor(t, task("Loop", []string{s.URL + "/orders"}, ""), pl, nav))
			var se *session.Error
			if !errors.As(err, &se) || se.Code != "loop" {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			if _, ok := files["plans/2.json"]; !ok {
				t.Errorf("no revised plan in the bundle")
			}
			var plans, navs int
			for _, r := range srv.Requests() {
				if isPlanner(&r) {
					plans++
					if plans == 2 && !strings.Contains(r.Messages[1].Content, "Loop detected") {
						t.Errorf("the revision request does not say why: %s", r.Messages[1].Content)
					}
				} else {
					navs++
				}
			}
			if plans != 2 || navs != 6 {
				t.Errorf("%d planner and %d navigator requests, want 2 and 6", plans, navs)
			}
			if doc := taskDoc(navRequests(srv)[3]); !strings.Contains(doc, "loop_detected") {
				t.Errorf("the navigator was not told about the loop: %s", doc)
			}
		})
	}
}

// TestApprovals: a high-risk click is approved (it runs), denied or timed
// out (it does not, and the decision says why); low-and-medium-only
// confirms medium-risk actions under the balanced preset and refuses
// high-risk ones.
func TestApprovals(t *testing.T) {
	tests := []struct {
		name      string
		preset    string
		actions   []string
		approver  func(*session.ChannelApprover) session.Approver
		answer    func(p *session.PendingApproval)
		wantPaid  int
		wantRules []string // rules of the final denials, in order
		wantThank bool
	}{
		{"approved", "", []string{aClick("p1", "#pay")}, nil, func(p *session.PendingApproval) {
			p.Answer(session.ApprovalAnswer{Approved: true, Approver: "alice"})
		}, 1, nil, false},
		{"denied", "", []string{aClick("p1", "#pay")}, nil, func(p *session.PendingApproval) {
			p.Answer(session.ApprovalAnswer{Approved: false, Approver: "alice"})
		}, 0, []string{session.RuleApprovalDenied}, false},
		{"timed out", "", []string{aClick("p1", "#pay")}, nil, func(p *session.PendingApproval) {}, 0, []string{session.RuleApprovalTimeout}, false},
		{"low-and-medium-only", "balanced", []string{aClick("h1", "#harmless"), aClick("p1", "#pay")}, // one batch each
			func(*session.ChannelApprover) session.Approver {
				return session.PolicyApprover{Mode: session.ApproveLowAndMedium}
			},
			nil, 0, []string{session.RuleApprovalDenied}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t)
			srv := fakeModel(t, nil, func(n int, r *llmtest.Request) llmtest.Reply {
				if n < len(tc.actions) {
					return answer("continue", tc.actions[n])
				}
				return answer("done", aExtract("x", "text", "#out"))
			})
			pl, nav := llmAgents(t, srv, nil)
			cfg := cfgFor(t, task("Pay the bill", []string{s.URL + "/danger"}, ""), pl, nav)
			cfg.Preset = tc.preset
			cfg.ApprovalTimeout = 300 * time.Millisecond
			ca := session.NewChannelApprover()
			cfg.Approver = ca
			if tc.approver != nil {
				cfg.Approver = tc.approver(ca)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.answer != nil {
				go func() {
					for {
						select {
						case p := <-ca.Requests():
							if p.Request.Action.ID != "p1" || p.Request.Risk != contract.RiskHigh || len(p.Request.ActionHash) != 64 {
								t.Errorf("request %+v", p.Request)
							}
							tc.answer(p)
						case <-ctx.Done():
							return
						}
					}
				}()
			}
			res, err := run(t, cfg)
			if err != nil || res.Status != contract.SessionCompleted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			time.Sleep(100 * time.Millisecond) // let the page's fetch land
			if got := len(s.requests("POST /danger/paid")); got != tc.wantPaid {
				t.Errorf("paid %d times, want %d", got, tc.wantPaid)
			}
			var rules []string
			for _, d := range decisions(t, files) {
				if d.Result == contract.ResultDenied {
					rules = append(rules, d.Reasons[0].Rule)
				}
			}
			if fmt.Sprint(rules) != fmt.Sprint(tc.wantRules) {
				t.Errorf("denials %v, want %v", rules, tc.wantRules)
			}
			evs := eventTypes(events(t, files))
			if !strings.Contains(evs, "approval_required approval_resolved") {
				t.Errorf("events %s", evs)
			}
			if tc.wantThank && (len(res.Artifacts) == 0 || res.Artifacts[0].Value != "Thanks") {
				t.Errorf("the harmless click did not run: %+v", res.Artifacts)
			}
		})
	}
}

// TestRepeatedActionIDsAreMadeUnique: a model that numbers every batch
// from a1 again still gets one id per action in the session (the first
// navigate's "start" included), in the evidence and in what it is told.
func TestRepeatedActionIDsAreMadeUnique(t *testing.T) {
	s := newSite(t)
	srv := fakeModel(t, nil, script(
		answer("continue", aWait("a1", 1), aWait("a2", 2)),
		answer("continue", aWait("a1", 3), aWait("start", 4)),
		answer("done", aWait("a1", 5)),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Order", []string{s.URL + "/form"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	var ran []string
	for _, a := range actions(t, files) {
		ran = append(ran, a.Action.ID)
	}
	if got, want := strings.Join(ran, " "), "start a1 a2 a1.2 start.2 a1.3"; got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	var decided []string
	for _, d := range decisions(t, files) {
		decided = append(decided, d.ActionID)
	}
	if got, want := strings.Join(decided, " "), "start a1 a2 a1.2 start.2 a1.3"; got != want {
		t.Errorf("decided %s, want %s", got, want)
	}
	if doc := taskDoc(navRequests(srv)[2]); !strings.Contains(doc, `"a1.2"`) {
		t.Errorf("the navigator is not told the ids the actions ran under: %s", doc)
	}
}
