package evidence

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/actionhash"
	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// The vectors of rule 15 (FORMAT.md, section 8: decided = executed), run
// by TestCrossRecordVectors with the forger: a change to what ran, to what
// was decided, or to what an approval is bound to, with every hash, the
// seal and the signature recomputed.

// setAction sets member key of the action a record of file holds.
func setAction(f *forgery, file string, line int, key string, v any) {
	f.edit(f.find(file, line), func(m map[string]any) { m["action"].(map[string]any)[key] = v })
}

// deleteAccount is the fixture's click (a3, approved) with its selector
// rewritten, and its plain hash.
func deleteAccount() (contract.Action, string) {
	a := contract.Action{ID: "a3", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{"purchase"}, Selector: "#delete-account"}
	return a, actionhash.Of(testSession, testActiveURL, a, nil, nil)
}

// buyClick is the fixture's click a3 (paused, then approved), and post an
// effect it may cause.
func buyClick() contract.Action {
	return contract.Action{ID: "a3", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{"purchase"}, Selector: "#buy"}
}

var post = contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://example.com", Path: "/pay", Fields: []string{"card"}}

// insertDecision adds a decision record as entry i, at the time of the
// entry before it.
//
// An approval it carries is given the fixture's channel and MAC (rule 16),
// as the session would, so that the vectors test what they forge, not a
// missing MAC.
func insertDecision(f *forgery, i int, d contract.DecisionRecord) {
	f.t.Helper()
	if d.Approval != nil && d.Approval.MAC == "" {
		d = withChannel(f.t, d, contract.ApprovalChannelLive, testApprovalKey())
	}
	b, err := canonjson.Marshal(d)
	if err != nil {
		f.t.Fatal(err)
	}
	f.insert(i, forgedEntry{kind: contract.LedgerDecision, file: FileDecisions, time: f.entries[i-1].time, content: b})
}

// afterBuy is the entry index right after the click a3's action event: the
// place of its effects' decisions.
func afterBuy(f *forgery) int { return f.find(FileActions, 3) + 2 }

// reapproved is the approved decision of a3 again, with its own decision
// id and the approval id given ("" keeps the approval).
func reapproved(id, approval string) contract.DecisionRecord {
	d := decision("click-approved", buyClick(), contract.ResultApproved)
	d.DecisionID = "dec-" + sha(id)[:32]
	if approval != "" {
		d.Approval.ID = approval
	}
	return d
}

func bindingVectors() []crossVector {
	_, deleteHash := deleteAccount()
	return []crossVector{
		{name: "an executed click's selector rewritten to #delete-account", change: func(f *forgery) {
			setAction(f, FileActions, 3, "selector", "#delete-account")
		}, file: FileActions, line: 3, entry: 17, check: "decided action", says: `differs from the decided one: the action line holds {"id":"a3","policyTags":["purchase"],"reason":"buy","selector":"#delete-account","type":"click"}`},
		{name: "an executed redacted type action's selector rewritten", change: func(f *forgery) {
			setAction(f, FileActions, 2, "selector", "#password")
		}, file: FileActions, line: 2, entry: 11, check: "decided action", says: "differs from the decided one"},
		{name: "the executed click and the action its approved decision records rewritten alike", change: func(f *forgery) {
			setAction(f, FileDecisions, 4, "selector", "#delete-account")
			setAction(f, FileActions, 3, "selector", "#delete-account")
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "but the action, activeUrl, sessionId and target it records hash to"},
		{name: "a decision's actionHash changed", change: func(f *forgery) {
			setMember(f, FileDecisions, 1, "actionHash", sha("another action"))
		}, file: FileDecisions, line: 1, entry: 7, check: "decision", says: "actionHash " + sha("another action") + ", but"},
		{name: "a decision's activeUrl changed", change: func(f *forgery) {
			setMember(f, FileDecisions, 1, "activeUrl", "https://example.com/other")
		}, file: FileDecisions, line: 1, entry: 7, check: "decision", says: "hash to"},
		{name: "an approval copied onto another action", change: func(f *forgery) {
			a, h := deleteAccount()
			setAction(f, FileDecisions, 4, "selector", a.Selector)
			setMember(f, FileDecisions, 4, "actionHash", h)
			setAction(f, FileActions, 3, "selector", a.Selector)
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "is bound to action hash"},
		{name: "an approval copied onto another action, the decision's actionHash set to the approval's", change: func(f *forgery) {
			a, _ := deleteAccount()
			setAction(f, FileDecisions, 4, "selector", a.Selector)
			setAction(f, FileActions, 3, "selector", a.Selector)
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "hash to " + deleteHash},
		{name: "an approval copied onto another action's line", change: func(f *forgery) {
			// The approved decision for a3, approval included, replaces the
			// allow decision of a1 (another action id, same action).
			setMember(f, FileDecisions, 1, "result", "approved")
			f.edit(f.find(FileDecisions, 1), func(m map[string]any) {
				src := f.entries[f.find(FileDecisions, 4)].content
				r, err := parseRec(src)
				if err != nil {
					f.t.Fatal(err)
				}
				m["approval"] = r.at("approval").value()
				m["requiresApproval"] = true
			})
		}, file: FileDecisions, line: 1, entry: 7, check: "decision", says: "is bound to action hash"},

		// Fail closed (format aegis-evidence/2): a decision that allows
		// records its action; stripping it does not switch the check off.
		{name: "the approved decision stripped of its action, the executed click rewritten", change: func(f *forgery) {
			f.edit(f.find(FileDecisions, 4), func(m map[string]any) { delete(m, "action"); delete(m, "activeUrl") })
			setAction(f, FileActions, 3, "selector", "#delete-account")
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "a decision that allows an action must record the action and activeUrl (format aegis-evidence/2)"},
		{name: "an allow decision stripped of its activeUrl", change: func(f *forgery) {
			f.edit(f.find(FileDecisions, 1), func(m map[string]any) { delete(m, "activeUrl") })
		}, file: FileDecisions, line: 1, entry: 7, check: "decision", says: "must record the action and activeUrl"},
		{name: "a decision's action of another id than its actionId", change: func(f *forgery) {
			setAction(f, FileDecisions, 1, "id", "a9")
		}, file: FileDecisions, line: 1, entry: 7, check: "decision", says: `actionId "a1", but the action it records has id "a9"`},

		// Effects: a gate-judged effect decision's hash covers the effect.
		{name: "an effect decision's effect rewritten", change: func(f *forgery) {
			insertDecision(f, afterBuy(f), effectDecision("effect", buyClick(), contract.ResultDenied, post))
			f.edit(f.find(FileDecisions, 5), func(m map[string]any) { m["effect"].(map[string]any)["path"] = "/account/delete" })
		}, file: FileDecisions, line: 5, entry: 19, check: "decision", says: "sessionId, target and effect it records hash to"},
		{name: "an approved effect decision bound by the action's hash, not the effect's", change: func(f *forgery) {
			d := effectDecision("effect", buyClick(), contract.ResultApproved, post)
			d.ActionHash = actionhash.Of(testSession, testActiveURL, buyClick(), nil, nil)
			d.Approval.ActionHash = d.ActionHash
			insertDecision(f, afterBuy(f), d)
		}, file: FileDecisions, line: 5, entry: 19, check: "decision", says: "and effect it records hash to"},
		{name: "a denied effect decision with the action's hash that is not the session's copy of a refused effect", change: func(f *forgery) {
			d := effectDecision("effect", buyClick(), contract.ResultDenied, post) // reason origin_not_allowed
			d.ActionHash = actionhash.Of(testSession, testActiveURL, buyClick(), nil, nil)
			insertDecision(f, afterBuy(f), d)
		}, file: FileDecisions, line: 5, entry: 19, check: "decision", says: "and effect it records hash to"},

		// Masking: only what the writer says it masked is not recomputed.
		{name: "a page label holding {{redacted}}, the decided and executed click rewritten alike", change: func(f *forgery) {
			// The page named its button "Buy {{redacted}}": the gate hashed
			// that label, and the writer masked nothing.
			target := &contract.Element{Tag: "button", Label: "Buy " + RedactedText, Text: "Buy"}
			d := decision("click-approved", buyClick(), contract.ResultApproved)
			d.Target = target
			d.ActionHash = actionhash.Of(testSession, testActiveURL, buyClick(), target, nil)
			d.Approval.ActionHash = d.ActionHash
			b, err := canonjson.Marshal(d)
			if err != nil {
				f.t.Fatal(err)
			}
			f.entries[f.find(FileDecisions, 4)].content = b
			setAction(f, FileDecisions, 4, "selector", "#delete-account")
			setAction(f, FileActions, 3, "selector", "#delete-account")
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "hash to"},
		{name: "masked names a hashed string that holds no placeholder, the click rewritten", change: func(f *forgery) {
			setMember(f, FileDecisions, 4, "masked", []any{"/action/selector"})
			setAction(f, FileDecisions, 4, "selector", "#delete-account")
			setAction(f, FileActions, 3, "selector", "#delete-account")
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: `masked lists "/action/selector", which is not a string of the record holding {{redacted}}`},
		{name: "masked names a member the decision does not have", change: func(f *forgery) {
			setMember(f, FileDecisions, 1, "masked", []any{"/target/label"})
		}, file: FileDecisions, line: 1, entry: 7, check: "decision", says: `masked lists "/target/label"`},

		// Approvals bind exactly: an action that needs one runs on exactly
		// one, bound to its hash, used once.
		{name: "an approved decision turned allowed, its approval removed", change: func(f *forgery) {
			setMember(f, FileDecisions, 4, "result", "allowed")
			f.edit(f.find(FileDecisions, 4), func(m map[string]any) { delete(m, "approval") })
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "result allowed for an action that requires an approval"},
		{name: "an approved decision without its approval", change: func(f *forgery) {
			f.edit(f.find(FileDecisions, 4), func(m map[string]any) { delete(m, "approval") })
		}, file: FileDecisions, line: 4, entry: 16, check: "schema", says: "approval"},
		{name: "two approvals for one run of an action", change: func(f *forgery) {
			insertDecision(f, f.find(FileActions, 3), reapproved("second", "apr-"+sha("second")[:32]))
		}, file: FileActions, line: 3, entry: 18, check: "decided action", says: "action approved by 2 decisions since its last run or refusal, want exactly one"},
		{name: "an approval reused on a second action, bound to its hash", change: func(f *forgery) {
			other := contract.Action{ID: "a5", Type: contract.ActClick, Reason: "confirm", PolicyTags: []string{}, Selector: "#confirm"}
			d := decision("other", other, contract.ResultApproved)
			d.Approval.ID = decision("click-approved", buyClick(), contract.ResultApproved).Approval.ID
			insertDecision(f, afterBuy(f), d)
		}, file: FileDecisions, line: 5, entry: 19, check: "decision", says: "used a second time"},
		{name: "an approval reused for a second run of its action", change: func(f *forgery) {
			insertDecision(f, afterBuy(f), reapproved("again", ""))
		}, file: FileDecisions, line: 5, entry: 19, check: "decision", says: "used a second time"},
	}
}

// TestBindingForgeriesThatHold: what rule 15 does not catch, on purpose.
// The hash of a redacted type action is keyed (FORMAT.md, rule 15): it is
// not recomputed, so only the equality of the decided and executed
// actions binds it. A forger who holds the key (or a bundle that is not
// signed) may call the bundle aegis-evidence/1, whose decisions need not
// record their action: it verifies, and the report says that decided =
// executed was not checked. The session's own denial of a refused effect
// keeps its action's hash; a gate-judged one hashes its effect.
func TestBindingForgeriesThatHold(t *testing.T) {
	_, files := bundleFiles(t, buildBundle(t, t.TempDir(), fixture{sign: true}))
	for _, tt := range []struct {
		name      string
		change    func(f *forgery)
		unchecked string // what the report must say was not checked
	}{
		{"a redacted type action's actionHash changed", func(f *forgery) { setMember(f, FileDecisions, 2, "actionHash", sha("keyed")) }, ""},
		{"downgraded to aegis-evidence/1, a decision stripped of its action and the executed click rewritten", func(f *forgery) {
			for _, file := range []string{FileManifestStart, FileManifestEnd} {
				setMember(f, file, 0, "formatVersion", contract.ManifestFormatVersion1)
			}
			f.edit(f.find(FileDecisions, 4), func(m map[string]any) { delete(m, "action"); delete(m, "activeUrl") })
			setAction(f, FileActions, 3, "selector", "#delete-account")
		}, "decided = executed not checked: format aegis-evidence/1 does not require a decision to record the action it judged (aegis-evidence/2 does), so an executed action rewritten with its decision's action removed would verify; 1 of 3 executed actions had no decided action to compare with"},
		{"the session's denial of a refused effect, with its action's hash", func(f *forgery) {
			d := effectDecision("refused", buyClick(), contract.ResultDenied, contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "https://evil.example", Path: "/beacon", Refused: "origin not allowed"})
			d.Reasons = []contract.Reason{{Rule: "effect_refused", Message: "origin not allowed"}}
			d.ActionHash = actionhash.Of(testSession, testActiveURL, buyClick(), nil, nil)
			insertDecision(f, afterBuy(f), d)
		}, ""},
		{"a gate-judged effect decision, its hash covering the effect", func(f *forgery) {
			insertDecision(f, afterBuy(f), effectDecision("effect", buyClick(), contract.ResultApproved, post))
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := forge(t, files)
			tt.change(f)
			rep, err := VerifyFS(context.Background(), f.files(), VerifyOptions{PubKey: testPub()})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rep.Unchecked, "\n"); got != tt.unchecked {
				t.Errorf("unchecked %q, want %q", got, tt.unchecked)
			}
		})
	}
}

// TestWriterActionNotDecided: the writer records an action that differs
// from the decided one (the bundle must say what ran) and says so; the
// bundle does not verify.
func TestWriterActionNotDecided(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	click := contract.Action{ID: "a3", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{"purchase"}, Selector: "#buy"}
	if err := w.Decision(decision("click", click, contract.ResultAllowed)); err != nil {
		t.Fatal(err)
	}
	ran, _ := deleteAccount()
	if err := w.Action(ran, result(ran, true)); !errors.Is(err, ErrNotDecided) {
		t.Fatalf("got %v, want ErrNotDecided", err)
	}
	if err := w.Event(actionEvent(ran, "clicked", "2026-01-23T10:15:00Z")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(context.Background(), w.Dir(), VerifyOptions{})
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.File != FileActions || ve.Line != 1 || ve.Check != "decided action" || !errors.Is(err, ErrNotDecided) {
		t.Fatalf("got %v, want a *VerifyError at %s line 1, check \"decided action\", wrapping ErrNotDecided", err, FileActions)
	}
}

// TestWriterDecisionRedacts: the writer never stores the text of a
// redacted type action in a decision, even one given to it unmasked.
func TestWriterDecisionRedacts(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	typ := contract.Action{ID: "a2", Type: contract.ActType, Reason: "fill", PolicyTags: []string{}, Selector: "#q", Text: "hunter2-password", Redact: true}
	if err := w.Decision(decision("typ", typ, contract.ResultAllowed)); err != nil {
		t.Fatal(err)
	}
	if err := w.Action(typ, result(typ, true)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, files := bundleFiles(t, w.Dir())
	for name, b := range files {
		if bytes.Contains(b, []byte("hunter2-password")) {
			t.Errorf("%s holds the redacted text", name)
		}
	}
}

// TestWriterRecordsMasked: the writer lists in masked exactly the strings
// of a decision it masked, replacing what the caller gave; a page's
// literal placeholder text is not listed, so its decision's hash is
// recomputed; and the bundle verifies.
func TestWriterRecordsMasked(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Secrets: map[string]string{"TOKEN": "tok-51e7"}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The model wrote the secret into a selector: masked in the decision
	// and in the action line alike.
	leaky := contract.Action{ID: "a1", Type: contract.ActClick, Reason: "open", PolicyTags: []string{}, Selector: "#tok-51e7"}
	d := decision("leaky", leaky, contract.ResultAllowed)
	d.Masked = []string{"/reason"} // the caller's word does not count
	must(w.Decision(d))
	must(w.Action(leaky, result(leaky, true)))
	must(w.Event(actionEvent(leaky, "clicked", "2026-01-23T10:15:00Z")))
	// A hostile page labelled its button with the placeholder's text.
	label := contract.Action{ID: "a2", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{}, Selector: "#buy"}
	target := &contract.Element{Tag: "button", Label: RedactedText + " {{secret:TOKEN}}", Text: "Buy"}
	d = decision("label", label, contract.ResultAllowed)
	d.Target, d.ActionHash = target, actionhash.Of(testSession, testActiveURL, label, target, nil)
	must(w.Decision(d))
	must(w.Action(label, result(label, true)))
	must(w.Event(actionEvent(label, "clicked", "2026-01-23T10:15:00Z")))
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, files := bundleFiles(t, w.Dir())
	var got [][]string
	for _, l := range lines(files[FileDecisions]) {
		var rec contract.DecisionRecord
		if err := jsonUnmarshal(l, &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.Masked)
	}
	want := [][]string{{"/action/selector"}, nil}
	if len(got) != len(want) || strings.Join(got[0], ",") != strings.Join(want[0], ",") || got[1] != nil {
		t.Errorf("masked = %q, want %q", got, want)
	}
}

// TestWriterRequiresDecidedAction: a writer of the current format refuses
// a decision that allows an action without recording it (and writes
// nothing); one that writes an aegis-evidence/1 bundle takes it, and
// verify says what it could not check.
func TestWriterRequiresDecidedAction(t *testing.T) {
	nav := contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open", PolicyTags: []string{}, URL: "https://example.com/"}
	bare := decision("bare", nav, contract.ResultAllowed)
	bare.Action, bare.ActiveURL = nil, nil
	for _, tt := range []struct {
		format    string
		wantErr   string
		unchecked string
	}{
		{"", "a decision that allows an action must record the action and activeUrl", ""},
		{contract.ManifestFormatVersion1, "", "1 of 1 executed actions had no decided action to compare with"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			m := testManifest()
			m.FormatVersion = tt.format
			w, err := Create(t.TempDir(), m, Options{Clock: fixedClock()})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Decision(bare)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
				if w.counts.Decisions != 0 {
					t.Errorf("decisions %d, want none written", w.counts.Decisions)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Action(nav, result(nav, true)); err != nil {
				t.Fatal(err)
			}
			if err := w.Event(actionEvent(nav, "opened", "2026-01-23T10:15:00Z")); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(context.Background(), w.Dir(), VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.FormatVersion != tt.format || len(rep.Unchecked) != 1 || !strings.Contains(rep.Unchecked[0], tt.unchecked) {
				t.Errorf("format %q unchecked %q, want %q and %q", rep.FormatVersion, rep.Unchecked, tt.format, tt.unchecked)
			}
		})
	}
}

// TestApprovedAgainAfterRefusal: ids repeat, and an approved action may
// not run; when the same id is proposed again, a decision that allows
// nothing starts the count of its approvals again (FORMAT.md, section 8,
// rule 2). The writer records the run without an error and the bundle
// verifies; two approvals with nothing refused between them still do not.
func TestApprovedAgainAfterRefusal(t *testing.T) {
	click := buyClick()
	denied := func(id string) contract.DecisionRecord {
		// The session's own denial of an approved action (a secret it
		// could not judge): a copy of the approved decision, denied.
		d := decision(id, click, contract.ResultDenied)
		d.RequiresApproval = true
		d.Reasons = []contract.Reason{{Rule: "secret_unjudged", Message: "the text holds a secret the policy did not judge"}}
		return d
	}
	for _, tt := range []struct {
		name      string
		decisions func(key []byte) []contract.DecisionRecord
		says      string // "" when the run verifies
	}{
		{"approved, the session's denial, proposed again, paused, approved", func(key []byte) []contract.DecisionRecord {
			return []contract.DecisionRecord{
				decision("p1", click, contract.ResultPaused),
				withChannel(t, decision("ap1", click, contract.ResultApproved), contract.ApprovalChannelLive, key),
				denied("den1"),
				decision("p2", click, contract.ResultPaused),
				withChannel(t, decision("ap2", click, contract.ResultApproved), contract.ApprovalChannelLive, key),
			}
		}, ""},
		{"approved, refused at run time (nothing recorded), proposed again, paused, approved", func(key []byte) []contract.DecisionRecord {
			return []contract.DecisionRecord{
				decision("p1", click, contract.ResultPaused),
				withChannel(t, decision("ap1", click, contract.ResultApproved), contract.ApprovalChannelLive, key),
				decision("p2", click, contract.ResultPaused),
				withChannel(t, decision("ap2", click, contract.ResultApproved), contract.ApprovalChannelLive, key),
			}
		}, ""},
		{"approved twice with nothing refused between", func(key []byte) []contract.DecisionRecord {
			return []contract.DecisionRecord{
				decision("p1", click, contract.ResultPaused),
				withChannel(t, decision("ap1", click, contract.ResultApproved), contract.ApprovalChannelLive, key),
				withChannel(t, decision("ap2", click, contract.ResultApproved), contract.ApprovalChannelLive, key),
			}
		}, "action approved by 2 decisions since its last run or refusal, want exactly one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := testApprovalKey()
			w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), ApprovalKey: key})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range tt.decisions(key) {
				if err := w.Decision(d); err != nil {
					t.Fatal(err)
				}
			}
			err = w.Action(click, result(click, true))
			if got := errString(err); !strings.Contains(got, tt.says) || (tt.says == "") != (err == nil) {
				t.Errorf("writer: got %v, want %q", err, tt.says)
			}
			if err := w.Event(actionEvent(click, "bought", "2026-01-23T10:15:05Z")); err != nil {
				t.Fatal(err)
			}
			sealTest(t, w)
			_, err = Verify(context.Background(), w.Dir(), VerifyOptions{PubKey: testPub()})
			var ve *VerifyError
			switch {
			case tt.says == "" && err != nil:
				t.Errorf("verify: %v, want the bundle to verify", err)
			case tt.says != "" && (!errors.As(err, &ve) || ve.Check != "decided action" || !strings.Contains(err.Error(), tt.says)):
				t.Errorf("verify: %v, want check %q saying %q", err, "decided action", tt.says)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
