package evidence

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aegis-run/aegis/actionhash"
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

func bindingVectors() []crossVector {
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
		}, file: FileDecisions, line: 4, entry: 16, check: "decision", says: "hash to " + func() string { _, h := deleteAccount(); return h }()},
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
	}
}

// TestBindingForgeriesThatHold: what rule 15 does not catch, on purpose.
// The hash of a redacted type action is keyed (FORMAT.md, rule 15): it is
// not recomputed, so only the equality of the decided and executed
// actions binds it.
func TestBindingForgeriesThatHold(t *testing.T) {
	_, files := bundleFiles(t, buildBundle(t, t.TempDir(), fixture{sign: true}))
	for _, tt := range []struct {
		name   string
		change func(f *forgery)
	}{
		{"a redacted type action's actionHash changed", func(f *forgery) { setMember(f, FileDecisions, 2, "actionHash", sha("keyed")) }},
		{"a decision without action and activeUrl (an older bundle)", func(f *forgery) {
			f.edit(f.find(FileDecisions, 1), func(m map[string]any) { delete(m, "action"); delete(m, "activeUrl") })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := forge(t, files)
			tt.change(f)
			if _, err := VerifyFS(context.Background(), f.files(), VerifyOptions{PubKey: testPub()}); err != nil {
				t.Fatal(err)
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
