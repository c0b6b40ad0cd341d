package session_test

// Batches that survive small changes (issue 17, item 2), in real Chromium
// with the real gate: a batch runs on while each next target is the
// element the Navigator saw, and stops, telling the model why, when it is
// not, after an approved action and at a navigation.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/session"
)

// fixtureSite serves the pages of testdata/batch.
func fixtureSite(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir("testdata/batch")))
	t.Cleanup(srv.Close)
	return srv.URL
}

// step is one action of a fixture task: its id, the selector it works on
// ("" for none) and its JSON.
type step struct {
	id, sel, raw string
}

func click(id, sel string) step        { return step{id, sel, aClick(id, sel)} }
func typeIn(id, sel, text string) step { return step{id, sel, aType(id, sel, text, false)} }
func readText(id string) step          { return step{id, "", aExtract(id, "text", "")} }

// sightedModel is a model that plans on what it sees, the way the
// Navigator is asked to: each Navigator request is answered with the
// task's steps not done yet (not reported ok in the progress), up to the
// first whose selector the observation does not list (a target it cannot
// see yet), in one batch; status done when that batch holds the last step.
// It reports how many Navigator calls it answered (calls).
type sightedModel struct {
	srv   *llmtest.Server
	mu    sync.Mutex
	calls int
}

func newSightedModel(t testing.TB, steps []step) *sightedModel {
	m := &sightedModel{}
	m.srv = fakeModel(t, nil, func(_ int, r *llmtest.Request) llmtest.Reply {
		m.mu.Lock()
		m.calls++
		m.mu.Unlock()
		done, listed := sightedRead(t, r)
		var batch []string
		i := 0
		for ; i < len(steps); i++ {
			s := steps[i]
			if done[s.id] {
				continue
			}
			if s.sel != "" && !listed[s.sel] {
				break
			}
			batch = append(batch, s.raw)
		}
		if len(batch) == 0 {
			return answer("failed", aWait("stuck", 1))
		}
		status := "continue"
		if i == len(steps) {
			status = "done"
		}
		return answer(status, batch...)
	})
	return m
}

// sightedRead reads a Navigator request: the ids of the actions its
// progress reports ok (as the model named them: without the suffix that
// makes a repeated id unique) and the observation's affordance selectors.
func sightedRead(t testing.TB, r *llmtest.Request) (done, listed map[string]bool) {
	done, listed = map[string]bool{}, map[string]bool{}
	for _, msg := range r.Messages {
		switch {
		case strings.HasPrefix(msg.Content, navigator.HistoryHeader):
			var doc struct {
				Progress []struct {
					Action  contract.Action   `json:"action"`
					Outcome navigator.Outcome `json:"outcome"`
				} `json:"progress"`
			}
			hist, _ := navigator.ReadDataSection(msg.Content, navigator.HistoryHeader)
			if err := json.Unmarshal(hist, &doc); err != nil {
				t.Errorf("history document: %v", err)
			}
			for _, p := range doc.Progress {
				if p.Outcome == navigator.OutcomeOK {
					id, _, _ := strings.Cut(p.Action.ID, ".")
					done[id] = true
				}
			}
		case strings.HasPrefix(msg.Content, navigator.ObservationHeader):
			var obs contract.Observation
			doc, _ := navigator.ReadDataSection(msg.Content, navigator.ObservationHeader)
			if err := json.Unmarshal(doc, &obs); err != nil {
				t.Errorf("observation document: %v", err)
			}
			for _, a := range obs.Affordances {
				listed[a.Selector] = true
			}
		}
	}
	return done, listed
}

// fixtureTasks are the multi-step fixture tasks: pages whose clicks change
// classes and attributes, the steps that do them, and the text the page
// shows when they are done.
var fixtureTasks = []struct {
	name, page string
	steps      []step
	want       string
}{
	{"tabs", "tabs.html", []step{
		click("a1", "#tab-privacy"), click("a2", "#tab-alerts"), typeIn("a3", "#nickname", "Ada"), click("a4", "#save"),
	}, "Saved Privacy, Alerts as Ada"},
	{"checkboxes", "checkboxes.html", []step{
		click("a1", "#opt-news"), click("a2", "#opt-events"), click("a3", "#opt-offers"), click("a4", "#done"),
	}, "Saved: Newsletter, Events near me, Partner offers"},
	{"accordion-form", "accordion.html", []step{
		typeIn("a1", "#first", "Ada"), typeIn("a2", "#last", "Lovelace"), click("a3", "#sec-contact"),
		click("a4", "#contact-me"), click("a5", "#finish"),
	}, "Welcome Ada Lovelace (post)"},
	{"form3", "form3.html", []step{
		typeIn("a1", "#name", "Ada"), click("a2", "#size-m"), typeIn("a3", "#email", "ada@example.test"), click("a4", "#send"),
	}, "Requested M for Ada"},
}

// TestBatchContinuesAcrossSmallChanges: on every fixture task, clicks that
// change classes and attributes do not cut the batch: each task needs one
// Navigator call per set of targets visible at once (one; two for the
// accordion, whose second section's controls are hidden until it opens),
// and ends with the page showing the work done.
func TestBatchContinuesAcrossSmallChanges(t *testing.T) {
	base := fixtureSite(t)
	for _, ft := range fixtureTasks {
		t.Run(ft.name, func(t *testing.T) {
			steps := append(append([]step(nil), ft.steps...), readText("x1"))
			m := newSightedModel(t, steps)
			pl, nav := llmAgents(t, m.srv, nil)
			res, err := run(t, cfgFor(t, task("Do the task", []string{base + "/" + ft.page}, ""), pl, nav))
			if err != nil || res.Status != contract.SessionCompleted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			want := 1
			if ft.name == "accordion-form" {
				want = 2
			}
			if m.calls != want {
				t.Errorf("%d Navigator calls, want %d; ran %v", m.calls, want, ranIDs(t, files))
			}
			if len(res.Artifacts) == 0 || !strings.Contains(res.Artifacts[len(res.Artifacts)-1].Value, ft.want) {
				t.Errorf("the page does not say %q: %+v", ft.want, res.Artifacts)
			}
		})
	}
}

// TestBatchStopsAtAReplacedTarget: a click that replaces the next target
// (the same selector, a new node) stops the batch before it; the model is
// told that the target is not the element it saw, and its next answer
// runs on the new one.
func TestBatchStopsAtAReplacedTarget(t *testing.T) {
	base := fixtureSite(t)
	srv := fakeModel(t, nil, script(
		answer("done", aClick("a1", "#refresh"), aClick("a2", "#accept"), aExtract("x1", "text", "")),
		answer("done", aClick("a3", "#accept"), aExtract("x2", "text", "")),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Accept the quote", []string{base + "/replaced.html"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if got, want := strings.Join(ranIDs(t, files), " "), "start a1 a3 x2"; got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	reqs := navRequests(srv)
	if len(reqs) != 2 {
		t.Fatalf("%d Navigator calls, want 2", len(reqs))
	}
	// a2 and x1 after it, each with the reason.
	const skipped = `"outcome":"skipped","detail":"not run: the target of a2 (#accept) is no longer the element you saw (it was replaced)"`
	if doc := taskDoc(reqs[1]); strings.Count(doc, skipped) != 2 {
		t.Errorf("the second request does not report a2 and x1 with %s: %s", skipped, doc)
	}
	if d := lastDecision(t, files, "a2"); d != nil {
		t.Errorf("the skipped action was judged: %+v", d)
	}
	if got := res.Artifacts[len(res.Artifacts)-1].Value; !strings.Contains(got, "Accepted quote 1") {
		t.Errorf("page text %q", got)
	}
}

// TestBatchStopsAfterAnApprovedAction: an action that needed approval
// ends its batch, approved as it was; the rest is skipped, the model told
// why.
func TestBatchStopsAfterAnApprovedAction(t *testing.T) {
	s := newSite(t)
	srv := fakeModel(t, nil, script(
		answer("done", aClick("p1", "#pay"), aClick("h1", "#harmless")),
		answer("done", aExtract("x1", "text", "")),
	))
	pl, nav := llmAgents(t, srv, nil)
	cfg := cfgFor(t, task("Pay the bill", []string{s.URL + "/danger"}, ""), pl, nav)
	approvals := 0
	cfg.Approver = approveAll(&approvals)
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if got, want := strings.Join(ranIDs(t, files), " "), "start p1 x1"; got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	if approvals != 1 {
		t.Errorf("%d approvals asked, want 1", approvals)
	}
	reqs := navRequests(srv)
	if len(reqs) != 2 {
		t.Fatalf("%d Navigator calls, want 2", len(reqs))
	}
	if want := `"outcome":"skipped","detail":"not run: p1 needed approval, so the page is looked at again after it"`; !strings.Contains(taskDoc(reqs[1]), want) {
		t.Errorf("the second request lacks %s: %s", want, taskDoc(reqs[1]))
	}
}

// TestBatchStopsAtANavigation: a click that loads another page ends the
// batch, whatever the next target's selector matches there.
func TestBatchStopsAtANavigation(t *testing.T) {
	base := fixtureSite(t)
	srv := fakeModel(t, nil, script(
		answer("continue", aClick("a1", "#to-tabs"), aClick("a2", "#hello")),
		answer("done", aClick("a3", "#tab-alerts")),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Open the settings", []string{base + "/links.html"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if got, want := strings.Join(ranIDs(t, files), " "), "start a1 a3"; got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	reqs := navRequests(srv)
	if len(reqs) != 2 {
		t.Fatalf("%d Navigator calls, want 2", len(reqs))
	}
	if want := `"outcome":"skipped","detail":"not run: the URL changed"`; !strings.Contains(taskDoc(reqs[1]), want) {
		t.Errorf("the second request lacks %s: %s", want, taskDoc(reqs[1]))
	}
}

// TestBatchRepeatsAnActionWithoutLooping: the same click three times in
// one batch (a spinner's "+") runs three times and is no loop: the page
// the batch was planned on is not a page that stayed unchanged.
func TestBatchRepeatsAnActionWithoutLooping(t *testing.T) {
	base := fixtureSite(t)
	srv := fakeModel(t, nil, script(
		answer("done", aClick("a1", "#more"), aClick("a2", "#more"), aClick("a3", "#more"), aExtract("x1", "text", "")),
	))
	pl, nav := llmAgents(t, srv, nil)
	res, err := run(t, cfgFor(t, task("Three tickets", []string{base + "/spinner.html"}, ""), pl, nav))
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	files := verify(t, res)
	if got, want := strings.Join(ranIDs(t, files), " "), "start a1 a2 a3 x1"; got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
	if evs := eventTypes(events(t, files)); strings.Contains(evs, "error") {
		t.Errorf("events %s", evs)
	}
	if n := len(navRequests(srv)); n != 1 {
		t.Errorf("%d Navigator calls, want 1", n)
	}
	if got := res.Artifacts[len(res.Artifacts)-1].Value; !strings.Contains(got, "3 tickets") {
		t.Errorf("page text %q", got)
	}
}

// TestBatchStopsAfterAnEffect: [click "Continue", click "Next"] where the
// "Continue" click makes the page POST to /basket/buy, which the policy
// holds for approval: when a person refuses it, or approves it, "Next" is
// not run on a page planned for a purchase whether or not it happened;
// likewise when the page's navigation to a foreign origin was refused,
// and when the refusal is heard of only as "Next" is resolved (a timer of
// the click). The model is told which effect of which action stopped the
// batch. Without effects the batch runs whole.
func TestBatchStopsAfterAnEffect(t *testing.T) {
	buy := contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: fakeOrigin, Path: "/basket/buy", Fields: []string{"card"}, ResourceType: "fetch"}
	const (
		refused  = "not run: the page's POST http://shop.test/basket/buy (fields: card), caused by c1, was refused (it did not happen), so the page is looked at again"
		approved = "not run: the page's POST http://shop.test/basket/buy (fields: card), caused by c1, needed approval, so the page is looked at again after it"
		foreign  = "not run: the page's GET https://evil.test/steal (navigation), caused by c1, was refused (it did not happen), so the page is looked at again"
	)
	for _, tc := range []struct {
		name    string
		effects map[string][]fakeEffect
		approve bool
		ran     string
		skipped string // the reason c2 was skipped with ("" for none)
	}{
		{"no effect", nil, false, "start c1 c2 w1", ""},
		{"refused by a person", map[string][]fakeEffect{"click #add": {{effect: buy, judge: true}}}, false, "start c1 w1", refused},
		{"approved", map[string][]fakeEffect{"click #add": {{effect: buy, judge: true}}}, true, "start c1 w1", approved},
		{"refused by the boundary", map[string][]fakeEffect{"click #add": {{effect: evilNav}}}, false, "start c1 w1", foreign},
		{"refused, heard late", map[string][]fakeEffect{"describe #next": {{effect: buy, judge: true}}}, false, "start c1 w1", refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newFakeSite()
			site.effects = tc.effects
			site.same = map[string]bool{"#add": true, "#next": true}
			srv := fakeModel(t, nil, script(
				answer("continue", aClick("c1", "#add"), aClick("c2", "#next")),
				answer("done", aWait("w1", 1)),
			))
			pl, nav := llmAgents(t, srv, nil)
			cfg := fakeCfg(t, site, task("Buy the lamp", []string{fakeOrigin + "/basket"}, ""), pl, nav)
			cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
				return session.ApprovalAnswer{Approved: tc.approve, Approver: "terminal:bob", Channel: session.ChannelTerminal}, nil
			})
			res, err := run(t, cfg)
			if err != nil || res.Status != contract.SessionCompleted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			if got := strings.Join(ranIDs(t, files), " "); got != tc.ran {
				t.Errorf("ran %s, want %s", got, tc.ran)
			}
			reqs := navRequests(srv)
			if len(reqs) != 2 {
				t.Fatalf("%d Navigator calls, want 2", len(reqs))
			}
			doc := taskDoc(reqs[1])
			if tc.skipped == "" {
				if strings.Contains(doc, `"outcome":"skipped"`) {
					t.Errorf("an action was skipped: %s", doc)
				}
				return
			}
			if want := `"outcome":"skipped","detail":"` + tc.skipped + `"`; !strings.Contains(doc, want) {
				t.Errorf("the second request lacks %s: %s", want, doc)
			}
			if d := lastDecision(t, files, "c2"); d != nil {
				t.Errorf("the skipped action was judged: %+v", d)
			}
		})
	}
}

// TestBatchStopsAtATargetNotAsSeen: in real Chromium, a click that
// renames the next target (the same node: "Next" becomes "Place order"),
// covers it with a custom overlay, or reloads the page at the same URL
// stops the batch before that target, and the model is told how it is
// not what it saw.
func TestBatchStopsAtATargetNotAsSeen(t *testing.T) {
	base := fixtureSite(t)
	for _, tc := range []struct {
		name, page, first, next string
		skipped                 string
	}{
		{"renamed", "renamed.html", "#review", "#next", `the target of a2 (#next) is the element you saw, but its name changed from "Next" to "Place order"`},
		{"covered", "overlay.html", "#options", "#save", "the target of a2 (#save) is the element you saw, but another element covers it now (the page put something over it)"},
		{"reloaded", "reload.html", "#refresh", "#next", "the page changed and aegis cannot tell whether the target of a2 (#next) is the element you saw (the page was reloaded or replaced)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeModel(t, nil, script(
				answer("continue", aClick("a1", tc.first), aClick("a2", tc.next)),
				answer("done", aExtract("x1", "text", "")),
			))
			pl, nav := llmAgents(t, srv, nil)
			res, err := run(t, cfgFor(t, task("Go on", []string{base + "/" + tc.page}, ""), pl, nav))
			if err != nil || res.Status != contract.SessionCompleted {
				t.Fatalf("status %s err %v", res.Status, err)
			}
			files := verify(t, res)
			if got, want := strings.Join(ranIDs(t, files), " "), "start a1 x1"; got != want {
				t.Errorf("ran %s, want %s", got, want)
			}
			reqs := navRequests(srv)
			if len(reqs) != 2 {
				t.Fatalf("%d Navigator calls, want 2", len(reqs))
			}
			detail, _ := json.Marshal("not run: " + tc.skipped)
			if want := `"outcome":"skipped","detail":` + string(detail); !strings.Contains(taskDoc(reqs[1]), want) {
				t.Errorf("the second request lacks %s: %s", want, taskDoc(reqs[1]))
			}
			if d := lastDecision(t, files, "a2"); d != nil {
				t.Errorf("the skipped action was judged: %+v", d)
			}
		})
	}
}
