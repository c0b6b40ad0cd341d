package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/session"
)

// The effects of an action (issue 15): what the page does on the network
// while or after an action runs is judged as part of that action, recorded
// under it, and told to the Navigator when it is denied. The fake driver
// reports effects to the session's driver.Effects as a real boundary does,
// from goroutines of its own, during the click, before the next
// observation and while the page closes; the gate is the real one.

var (
	evilNav    = contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Origin: "https://evil.test", Path: "/steal", ResourceType: "document", Refused: "origin https://evil.test is not allowed"}
	evilBeacon = contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://evil.test", Path: "/collect", Fields: []string{"q"}, ResourceType: "ping", Refused: "origin https://evil.test is not allowed"}
	evilPeer   = contract.Effect{Kind: contract.EffectPeer, Refused: "WebRTC is off"}
	evilPixel  = contract.Effect{Kind: contract.EffectRequest, Method: "GET", Origin: "https://evil.test", Path: "/px.gif", ResourceType: "image", Refused: "origin https://evil.test is not allowed"}
	evilTimer  = contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Origin: "https://evil.test", Path: "/timer", ResourceType: "document", Refused: "origin https://evil.test is not allowed"}
	evilBye    = contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://evil.test", Path: "/bye", ResourceType: "ping", Refused: "origin https://evil.test is not allowed"}
	thanksPost = contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: fakeOrigin, Path: "/danger/thanks", Fields: []string{"note"}, ResourceType: "fetch"}
)

// effectDecisions returns the decision records about effects.
func effectDecisions(ds []contract.DecisionRecord) []contract.DecisionRecord {
	var out []contract.DecisionRecord
	for _, d := range ds {
		if d.Effect != nil {
			out = append(out, d)
		}
	}
	return out
}

// ledgerOrder returns, for each decision of an effect, whether the ledger
// holds the action line of its action before it.
func effectsFollowTheirActions(t *testing.T, files map[string][]byte) {
	t.Helper()
	ds := decisions(t, files)
	as := actions(t, files)
	type entry struct {
		Kind string `json:"kind"`
		File string `json:"file"`
		Line int    `json:"line"`
	}
	ran := map[string]bool{}
	for _, e := range lines[entry](t, files, "ledger.jsonl") {
		switch e.File {
		case "actions.jsonl":
			ran[as[e.Line-1].Action.ID] = true
		case "decisions.jsonl":
			if d := ds[e.Line-1]; d.Effect != nil && !ran[d.ActionID] {
				t.Errorf("the decision about %s %s%s precedes the action %s it belongs to", d.Effect.Method, d.Effect.Origin, d.Effect.Path, d.ActionID)
			}
		}
	}
}

// TestEffectsUnderTheAction: a click whose page, at once, navigates to a
// foreign origin, sends a foreign beacon, opens a peer channel and posts
// to its own origin; a timer that fires before the next observation; a
// beacon on pagehide. The refused ones are recorded as denied effects of
// the click (the session's effect_refused), the post is judged by the gate
// as an effect of the click and went through, all after the click's
// record; denied effects are events, progress lines and feedback for the
// Navigator (not the foreign image: noise to the model).
func TestEffectsUnderTheAction(t *testing.T) {
	site := newFakeSite()
	site.effects = map[string][]fakeEffect{
		"click #harmless": {
			{effect: evilNav}, {effect: evilBeacon}, {effect: evilPeer}, {effect: evilPixel},
			{effect: thanksPost, judge: true},
		},
		"after click #harmless": {{effect: evilTimer}},
		"close":                 {{effect: evilBye}},
	}
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#harmless")),
		answer("done", aExtract("x1", "text", "#out")),
	))
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Say thanks", []string{fakeOrigin + "/danger"}, ""), pl, nav)
	var mu sync.Mutex
	var reports []session.StepReport
	cfg.OnStep = func(r session.StepReport) {
		mu.Lock()
		reports = append(reports, r)
		mu.Unlock()
	}
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	effectsFollowTheirActions(t, files)

	got := map[string]string{} // path -> action id, result, rule
	for _, d := range effectDecisions(decisions(t, files)) {
		rule := ""
		if len(d.Reasons) > 0 {
			rule = d.Reasons[0].Rule
		}
		got[d.Effect.Path] = d.ActionID + " " + string(d.Result) + " " + rule
		if d.ActionHash == "" || d.DecisionID == "" || d.PolicyVersion == "" {
			t.Errorf("incomplete effect decision %+v", d)
		}
	}
	refused := "c1 denied " + session.RuleEffectRefused
	want := map[string]string{
		"/steal": refused, "/collect": refused, "": refused, "/px.gif": refused,
		"/timer":         refused,                                  // after the click, before the next observation
		"/bye":           "x1 denied " + session.RuleEffectRefused, // on pagehide, under the last action
		"/danger/thanks": "c1 allowed ",                            // judged by the policy; re-check when its effect rules change
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("effect decisions\n got %v\nwant %v", got, want)
	}
	if p := site.reachedPaths(); fmt.Sprint(p) != "[POST http://shop.test/danger/thanks]" {
		t.Errorf("reached %v", p)
	}
	if res.Denied != 0 {
		t.Errorf("%d actions denied: a denied effect is not a denied action", res.Denied)
	}

	var denied []string
	for _, ev := range events(t, files) {
		if ev.Type == contract.EventError && ev.Code == "effect.denied" {
			denied = append(denied, ev.Message)
		}
	}
	if len(denied) != 6 || !strings.Contains(strings.Join(denied, "\n"), "action c1 (click): GET https://evil.test/steal (navigation): denied: effect_refused: origin https://evil.test is not allowed") {
		t.Errorf("effect.denied events:\n%s", strings.Join(denied, "\n"))
	}

	var effReports []string
	for _, r := range reports {
		if r.Effect != nil {
			effReports = append(effReports, r.Action.ID+" "+r.Effect.Path+" "+string(r.Decision))
		}
	}
	if len(effReports) != 7 {
		t.Errorf("progress reports of effects: %v", effReports)
	}

	// The Navigator is told, in its next request, what the page tried.
	reqs := navRequests(srv)
	if len(reqs) != 2 {
		t.Fatalf("%d navigator requests", len(reqs))
	}
	doc := taskDoc(reqs[1])
	for _, want := range []string{"load GET https://evil.test/steal (navigation), which the policy denied", "send POST https://evil.test/collect (fields: q)", "open a peer-to-peer (WebRTC) connection", "load GET https://evil.test/timer"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the navigator was not told %q: %s", want, doc)
		}
	}
	if strings.Contains(doc, "px.gif") {
		t.Errorf("the navigator was told of a refused image: %s", doc)
	}
}

// TestEffectFlood: a click whose page sends 2,000 foreign beacons and 40
// posts at once does not flood the bundle: MaxEffectRecords effects are
// recorded, the rest counted in effect.limit events, and no post beyond
// the bound goes through unrecorded.
func TestEffectFlood(t *testing.T) {
	site := newFakeSite()
	site.effects = map[string][]fakeEffect{
		"click #harmless": {{effect: evilBeacon, n: 2000}, {effect: thanksPost, judge: true, n: 40}},
	}
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#harmless")),
		answer("done", aExtract("x1", "text", "#out")),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, fakeCfg(t, site, task("Say thanks", []string{fakeOrigin + "/danger"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	effs := effectDecisions(decisions(t, files))
	allowed := 0
	for _, d := range effs {
		if d.ActionID != "c1" {
			t.Errorf("effect of %s", d.ActionID)
		}
		if d.Allow {
			allowed++
		}
	}
	if len(effs) != session.MaxEffectRecords {
		t.Errorf("%d effect decisions, want %d", len(effs), session.MaxEffectRecords)
	}
	if n := len(site.reachedPaths()); n != allowed {
		t.Errorf("%d posts went through, %d were recorded allowed", n, allowed)
	}
	counted := 0
	re := regexp.MustCompile(`: (\d+) more were refused`)
	for _, ev := range events(t, files) {
		if ev.Code == "effect.limit" {
			m := re.FindStringSubmatch(ev.Message)
			if m == nil {
				t.Fatalf("effect.limit %q", ev.Message)
			}
			n, _ := strconv.Atoi(m[1])
			counted += n
		}
	}
	if want := 2040 - session.MaxEffectRecords; counted != want {
		t.Errorf("effect.limit counted %d, want %d", counted, want)
	}
	if len(files["decisions.jsonl"]) > 200<<10 {
		t.Errorf("decisions.jsonl is %d bytes", len(files["decisions.jsonl"]))
	}
}

// TestEffectApproval: an effect the gate holds for approval goes to the
// approver with the effect shown, one approval at a time; a yes is
// granted bound to the effect decision's hash and the gate decides again
// (approved: the request goes through), a no is the session's denial (it
// does not). "Pay now" is high risk, and so is its POST /pay, under the
// policy before and after effect rules.
func TestEffectApproval(t *testing.T) {
	pay := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: fakeOrigin, Path: "/pay", Fields: []string{"card", "amount", "card"}, ResourceType: "fetch"}
	for _, approveEffect := range []bool{true, false} {
		t.Run(fmt.Sprint("approve=", approveEffect), func(t *testing.T) {
			site := newFakeSite()
			site.effects = map[string][]fakeEffect{"click #pay": {{effect: pay, judge: true}}}
			srv := fakeModel(t, nil, script(
				answer("continue", aClick("p1", "#pay")),
				answer("done", aExtract("x1", "text", "#out")),
			))
			pl, nav := llmAgents(t, srv, nil)
			cfg := fakeCfg(t, site, task("Pay the bill", []string{fakeOrigin + "/danger"}, ""), pl, nav)
			var mu sync.Mutex
			var asked []session.ApprovalRequest
			inFlight := 0
			cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
				mu.Lock()
				inFlight++
				if inFlight > 1 {
					t.Error("two approvals at once")
				}
				asked = append(asked, req)
				mu.Unlock()
				defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
				return session.ApprovalAnswer{Approved: req.Effect == nil || approveEffect, Approver: "alice"}, nil
			})
			res, err := run(t, cfg)
			if err != nil || res.Status != contract.SessionCompleted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			effectsFollowTheirActions(t, files)
			if len(asked) != 2 || asked[0].Effect != nil || asked[1].Effect == nil {
				t.Fatalf("approval requests %+v", asked)
			}
			req := asked[1]
			if got, want := session.DescribeRequest(req), `click #pay "Pay now" causes POST http://shop.test/pay (fields: amount, card)`; got != want {
				t.Errorf("the approver was shown %q, want %q", got, want)
			}
			if req.Action.ID != "p1" || req.Risk != contract.RiskHigh || len(req.ActionHash) != 64 {
				t.Errorf("request %+v", req)
			}
			effs := effectDecisions(decisions(t, files))
			if len(effs) != 2 || effs[0].Result != contract.ResultPaused || effs[0].ActionHash != req.ActionHash {
				t.Fatalf("effect decisions %+v", effs)
			}
			final := effs[1]
			if approveEffect {
				if final.Result != contract.ResultApproved || final.Approval == nil || final.Approval.ActionHash != req.ActionHash || final.Approval.Approver != "alice" || final.Approval.Channel != contract.ApprovalChannelProgram {
					t.Errorf("final %+v", final)
				}
				if p := site.reachedPaths(); fmt.Sprint(p) != "[POST http://shop.test/pay]" {
					t.Errorf("reached %v", p)
				}
				if res.Approved != 2 {
					t.Errorf("%d approved, want the action and its effect", res.Approved)
				}
			} else {
				if final.Result != contract.ResultDenied || final.Reasons[0].Rule != session.RuleApprovalDenied {
					t.Errorf("final %+v", final)
				}
				if p := site.reachedPaths(); len(p) != 0 {
					t.Errorf("reached %v", p)
				}
			}
			if got := fmt.Sprint(final.Effect.Fields); got != "[amount card]" {
				t.Errorf("fields %s", got)
			}
			var kinds []string
			for _, ev := range events(t, files) {
				if ev.Type == contract.EventApprovalRequired {
					kinds = append(kinds, ev.Summary)
				}
			}
			if len(kinds) != 2 || !strings.Contains(kinds[1], `causes POST http://shop.test/pay`) {
				t.Errorf("approval_required events %q", kinds)
			}
		})
	}
}

// TestDisguisedPaymentEffect: a "Continue" button whose click posts to a
// payment endpoint. The effect is judged as the POST it is: the record and
// what Judge answers follow the gate's decision about the effect, asked
// here directly. With the policy's effect rules (issue 15) that decision
// is high risk and held for approval, whatever the button says; a policy
// without them judges the click's words again.
func TestDisguisedPaymentEffect(t *testing.T) {
	pay := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: fakeOrigin, Path: "/checkout/pay", Fields: []string{"card"}, ResourceType: "fetch"}
	site := newFakeSite()
	site.effects = map[string][]fakeEffect{"click #continue": {{effect: pay, judge: true}}}
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#continue")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Check out", []string{fakeOrigin + "/checkout"}, ""), pl, nav)
	var asked []session.ApprovalRequest
	cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		asked = append(asked, req)
		return session.ApprovalAnswer{Approved: false, Approver: "bob"}, nil
	})
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	effs := effectDecisions(decisions(t, files))
	if len(effs) == 0 || effs[0].ActionID != "c1" {
		t.Fatalf("effect decisions %+v", effs)
	}

	// What the gate says about the effect by itself.
	g, _ := realGate(t)
	el := contract.Element{Tag: "button", Type: "button", ID: "continue", Role: "button", Label: "Continue", Text: "Continue"}
	var click contract.Action
	if err := json.Unmarshal([]byte(aClick("c1", "#continue")), &click); err != nil {
		t.Fatal(err)
	}
	probe := g.Decide(context.Background(), gate.Request{
		SessionID: "probe", StepIndex: 2, Action: click, Target: &el, ActiveURL: fakeOrigin + "/checkout", Effect: &pay,
		Session: gate.Session{AllowedOrigins: []string{fakeOrigin + "/checkout"}, MaxStepBudget: 50, DecisionLogID: "dec-probe"}, Now: time.Now(),
	})
	switch probe.Result {
	case contract.ResultPaused:
		if len(asked) != 1 || asked[0].Effect == nil || effs[0].Result != contract.ResultPaused || effs[len(effs)-1].Reasons[0].Rule != session.RuleApprovalDenied {
			t.Errorf("a held effect: asked %+v, decisions %+v", asked, effs)
		}
		if len(site.reachedPaths()) != 0 {
			t.Errorf("the refused payment went through: %v", site.reachedPaths())
		}
	case contract.ResultAllowed:
		t.Logf("the policy has no effect rules yet: the disguised payment is judged by the click's words (allowed)")
		if len(asked) != 0 || len(effs) != 1 || !effs[0].Allow || len(site.reachedPaths()) != 1 {
			t.Errorf("an allowed effect: asked %+v, decisions %+v", asked, effs)
		}
	default:
		if len(effs) != 1 || effs[0].Allow || len(site.reachedPaths()) != 0 {
			t.Errorf("a denied effect (%+v): decisions %+v", probe.Reasons, effs)
		}
	}
}

// TestTargetChanged: the driver finds another page or element at the
// moment of acting than the gate judged: the action is not run, which the
// progress and the Navigator's feedback say, and it is no denial.
func TestTargetChanged(t *testing.T) {
	site := newFakeSite()
	site.changed = map[string]bool{"#harmless": true}
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#harmless")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Say thanks", []string{fakeOrigin + "/danger"}, ""), pl, nav)
	var errs []string
	cfg.OnStep = func(r session.StepReport) {
		if r.Error != "" {
			errs = append(errs, r.Error)
		}
	}
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	verify(t, res)
	if res.Denied != 0 || len(site.actions(contract.ActClick, "#harmless")) != 0 {
		t.Errorf("denied %d, clicks %v", res.Denied, site.actions(contract.ActClick, "#harmless"))
	}
	const said = "the page changed between the decision and the action"
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "target_changed: "+said) {
		t.Errorf("progress errors %q", errs)
	}
	doc := taskDoc(navRequests(srv)[1])
	if !strings.Contains(doc, `"code":"target_changed","message":"`+said) || !strings.Contains(doc, "so the action was not run") {
		t.Errorf("feedback: %s", doc)
	}
}

// TestActiveURLFromDescribe: when the browser reports at Describe that
// the target is in a document of another origin than the last observation
// showed (the page moved, a foreign frame), the gate judges that origin as
// the active page: an action there is denied, not run.
func TestActiveURLFromDescribe(t *testing.T) {
	for _, tc := range []struct {
		origin  string
		allowed bool
	}{
		{"", true},
		{fakeOrigin, true},
		{"https://evil.test", false},
		{"null", false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			site := newFakeSite()
			site.origins = map[string]string{"#harmless": tc.origin}
			srv := fakeModel(t, nil, script(
				answer("continue", aClick("c1", "#harmless")),
				answer("done", aWait("w1", 1)),
			))
			pl, nav := llmAgents(t, srv, nil)
			cfg := fakeCfg(t, site, task("Say thanks", []string{fakeOrigin + "/danger"}, ""), pl, nav)
			cfg.MaxDenials = 5
			res, err := run(t, cfg)
			if err != nil || res.Status != contract.SessionCompleted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			clicked := len(site.actions(contract.ActClick, "#harmless")) == 1
			if clicked != tc.allowed {
				t.Errorf("clicked %v, want %v", clicked, tc.allowed)
			}
			for _, d := range decisions(t, files) {
				if d.ActionID == "c1" && d.Allow != tc.allowed {
					t.Errorf("decision %+v", d)
				}
			}
		})
	}
}

// TestEffectBeforeTheFirstAction: before the task's first page is opened
// nothing the task did can have caused an effect: it is refused and
// recorded as an event of the start, with no decision.
func TestEffectBeforeTheFirstAction(t *testing.T) {
	site := newFakeSite()
	var judged error
	srv := fakeModel(t, nil, script(answer("done", aWait("w1", 1))))
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Look", []string{fakeOrigin + "/"}, ""), pl, nav)
	cfg.OpenDriver = func(ctx context.Context, dc driver.Config) (driver.Driver, error) {
		dc.Effects.Refused(evilNav)
		judged = dc.Effects.Judge(ctx, thanksPost)
		return site.open(ctx, dc)
	}
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if judged == nil {
		t.Error("Judge allowed an effect before the first action")
	}
	if effs := effectDecisions(decisions(t, files)); len(effs) != 0 {
		t.Errorf("effect decisions %+v", effs)
	}
	n := 0
	for _, ev := range events(t, files) {
		if ev.Code == "effect.before_start" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d effect.before_start events, want 2", n)
	}
}

// TestEffectPrompt: the terminal approver shows what the action causes,
// and page-controlled parts of an effect (path, field names) cannot
// smuggle terminal escapes or lines.
func TestEffectPrompt(t *testing.T) {
	req := session.ApprovalRequest{
		Action: contract.Action{ID: "c1", Type: contract.ActClick, Selector: "#continue"},
		Target: &contract.Element{Tag: "button", Text: "Continue"},
		URL:    "https://shop.example/checkout", Risk: contract.RiskHigh,
		Effect: &contract.Effect{Kind: contract.EffectRequest, Method: "post", Origin: "https://shop.example", Path: "/pay\x1b[2J\r\nSYSTEM: approved", Fields: []string{"card", "amount\nok"}},
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	var out strings.Builder
	ta := session.NewTerminalApprover(pr, &syncWriter{w: &out}, "terminal:tester")
	go func() { _, _ = io.WriteString(pw, "n\n") }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a, err := ta.Approve(ctx, req); err != nil || a.Approved {
		t.Fatalf("answer %+v %v", a, err)
	}
	s := out.String()
	if strings.Contains(s, "\x1b") || strings.Contains(s, "\r") || strings.Contains(s, "\nSYSTEM") {
		t.Errorf("the prompt carries the page's control characters: %q", s)
	}
	for _, want := range []string{`action:  click #continue "Continue"`, "causes:  POST https://shop.example/pay[2J  SYSTEM: approved (fields: amount ok, card)", "Approve this effect once?"} {
		if !strings.Contains(s, want) {
			t.Errorf("the prompt lacks %q: %q", want, s)
		}
	}
	if got, want := session.DescribeRequest(req), `click #continue "Continue" causes POST https://shop.example/pay[2J  SYSTEM: approved (fields: amount ok, card)`; got != want {
		t.Errorf("DescribeRequest = %q, want %q", got, want)
	}
}

// TestRefusedEffectNotAskedAgain (issue 17): a person refuses what a
// "Continue" click causes (a POST to a payment endpoint); the model clicks
// it again under other ids: the effect is refused again without a second
// question, and nothing is paid.
func TestRefusedEffectNotAskedAgain(t *testing.T) {
	pay := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: fakeOrigin, Path: "/checkout/pay", Fields: []string{"card"}, ResourceType: "fetch"}
	site := newFakeSite()
	site.effects = map[string][]fakeEffect{"click #continue": {{effect: pay, judge: true}}}
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("c1", "#continue")),
		answer("continue", aClick("c2", "#continue")),
		answer("done", aWait("w1", 1)),
	))
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Check out", []string{fakeOrigin + "/checkout"}, ""), pl, nav)
	var mu sync.Mutex
	var asked []session.ApprovalRequest
	cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return session.ApprovalAnswer{Approved: false, Approver: "terminal:bob", Channel: session.ChannelTerminal}, nil
	})
	res, err := run(t, cfg)
	if err != nil {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	effs := effectDecisions(decisions(t, files))
	var again int
	for _, d := range effs {
		if d.ActionID == "c2" && !d.Allow && len(d.Reasons) > 0 && strings.Contains(d.Reasons[0].Message, "denied by a person at the terminal earlier in this session") {
			again++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 {
		t.Fatal("the policy did not hold the payment for approval")
	}
	if got, want := len(asked), 1; got != want {
		t.Errorf("asked %d times, want %d", got, want)
	}
	if again != 1 {
		t.Errorf("c2's effect was not refused without asking: %+v", effs)
	}
	if p := site.reachedPaths(); len(p) != 0 {
		t.Errorf("the refused payment went through: %v", p)
	}
}

// TestDoneWithARefusedEffect: a Navigator that says "done" with a click
// whose payment a person refused has not done it: the session asks it
// again rather than ending completed on a payment that did not happen.
func TestDoneWithARefusedEffect(t *testing.T) {
	pay := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: fakeOrigin, Path: "/checkout/pay", Fields: []string{"card"}, ResourceType: "fetch"}
	site := newFakeSite()
	site.effects = map[string][]fakeEffect{"click #continue": {{effect: pay, judge: true}}}
	var mu sync.Mutex
	calls := 0
	replies := script(
		answer("done", aClick("c1", "#continue")),
		answer("done", aWait("w1", 1)),
	)
	srv := fakeModel(t, nil, func(n int, r *llmtest.Request) llmtest.Reply {
		mu.Lock()
		calls++
		mu.Unlock()
		return replies(n, r)
	})
	pl, nav := llmAgents(t, srv, nil)
	cfg := fakeCfg(t, site, task("Check out", []string{fakeOrigin + "/checkout"}, ""), pl, nav)
	cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		return session.ApprovalAnswer{Approved: false, Approver: "terminal:bob", Channel: session.ChannelTerminal}, nil
	})
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := calls, 2; got != want {
		t.Errorf("the Navigator was asked %d times, want %d: a done batch whose payment was refused completed the session", got, want)
	}
	if p := site.reachedPaths(); len(p) != 0 {
		t.Errorf("the refused payment went through: %v", p)
	}
}
