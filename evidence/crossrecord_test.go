package evidence

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// The cross-record vectors (FORMAT.md, section 8, rules 11 to 14): each
// is a real bundle changed by a forger who recomputes every hash, the
// counts, the seal and the signature (forge), so that only the rule about
// what the records say of each other can catch it. Each must fail Verify,
// even with the trusted key, with a *VerifyError that names the place.

// crossVector is one forged change and where Verify must find it.
type crossVector struct {
	name      string
	artifacts bool // built on the fixture whose last observation embeds the artifacts
	change    func(f *forgery)
	// want: the VerifyError's file, line, entry and check; entry -2 when
	// any; and what its message must say.
	file        string
	line, entry int
	check, says string
}

func setTime(f *forgery, file string, line int, t string) { f.entries[f.find(file, line)].time = t }

func setMember(f *forgery, file string, line int, key string, v any) {
	f.edit(f.find(file, line), func(m map[string]any) { m[key] = v })
}

func crossVectors() []crossVector {
	return []crossVector{
		// Times (rule 11).
		{name: "an entry's time before the previous entry's", change: func(f *forgery) {
			setTime(f, FileActions, 1, "2026-01-23T10:15:02Z")
		}, file: FileLedger, line: 9, entry: 8, check: "time", says: "time goes backwards"},
		{name: "an entry's time a nanosecond before the previous entry's", change: func(f *forgery) {
			setTime(f, FileActions, 1, "2026-01-23T10:15:07.999999999Z")
		}, file: FileLedger, line: 9, entry: 8, check: "time", says: "is before the previous entry's time 2026-01-23T10:15:08Z"},
		{name: "an entry's time backwards, in another offset", change: func(f *forgery) {
			setTime(f, FileActions, 1, "2026-01-23T10:15:09+01:00")
		}, file: FileLedger, line: 9, entry: 8, check: "time", says: "time goes backwards"},
		{name: "the last entry's time before the one before it", change: func(f *forgery) {
			setTime(f, FileManifestEnd, 0, "2026-01-23T10:15:00Z")
		}, file: FileLedger, line: 27, entry: 26, check: "time", says: "time goes backwards"},
		{name: "startedAt after the genesis entry's time", change: func(f *forgery) {
			setMember(f, FileManifestStart, 0, "startedAt", "2026-01-23T10:15:30Z")
			setMember(f, FileManifestEnd, 0, "startedAt", "2026-01-23T10:15:30Z")
		}, file: FileManifestStart, entry: 0, check: "time", says: "is before startedAt 2026-01-23T10:15:30Z"},
		{name: "a model call's time after its entry's", change: func(f *forgery) {
			setMember(f, FileModelCalls, 2, "time", "2026-01-23T10:15:30Z")
		}, file: FileModelCalls, line: 2, entry: 6, check: "time", says: "is before the call's time 2026-01-23T10:15:30Z"},
		{name: "endedAt before the records of the session", change: func(f *forgery) {
			setMember(f, FileManifestEnd, 0, "endedAt", "2026-01-23T10:15:20Z")
		}, file: FileManifestEnd, entry: 26, check: "time", says: "endedAt 2026-01-23T10:15:20Z is before the previous entry's time"},
		// Every action line has its action event (rule 12).
		{name: "an action's event deleted", change: func(f *forgery) {
			f.remove(f.find(FileEvents, 2))
		}, file: FileActions, line: 1, entry: 8, check: "action event", says: `action "a1" (navigate) has no "action" event`},
		{name: "the last action's event deleted", change: func(f *forgery) {
			f.remove(f.find(FileEvents, 6))
		}, file: FileActions, line: 3, entry: 17, check: "action event", says: "before the seal"},
		{name: "an action's event moved after the next action line", change: func(f *forgery) {
			i := f.find(FileEvents, 2)
			e := f.entries[i]
			f.remove(i)
			f.insert(f.find(FileActions, 2)+1, e)
		}, file: FileActions, line: 1, entry: 8, check: "action event", says: "before the next action line (actions.jsonl line 2)"},
		{name: "an action's event moved before its action line", change: func(f *forgery) {
			i := f.find(FileEvents, 2)
			e := f.entries[i]
			f.remove(i)
			f.insert(f.find(FileActions, 1), e)
		}, file: FileEvents, line: 2, entry: 8, check: "action event", says: "no action line before it is waiting for its event"},
		{name: "an action's event naming another action", change: func(f *forgery) {
			setMember(f, FileEvents, 2, "actionId", "a2")
		}, file: FileEvents, line: 2, entry: 9, check: "action event", says: `an action event for "a2" (navigate), but the action line before it (actions.jsonl line 1) is "a1" (navigate)`},
		{name: "an action's event of another type", change: func(f *forgery) {
			setMember(f, FileEvents, 2, "actionType", "click")
		}, file: FileEvents, line: 2, entry: 9, check: "action event", says: `is "a1" (navigate)`},
		{name: "an action's event duplicated", change: func(f *forgery) {
			i := f.find(FileEvents, 2)
			f.insert(i+1, f.entries[i])
		}, file: FileEvents, line: 3, entry: 10, check: "action event", says: "no action line before it is waiting"},
		{name: "an action event for the denied action, which never ran", change: func(f *forgery) {
			i := f.find(FileDecisions, 5)
			e := f.entries[f.find(FileEvents, 2)]
			e.time = f.entries[i].time
			f.insert(i+1, e)
			f.edit(i+1, func(m map[string]any) { m["actionId"] = "a4" })
		}, file: FileEvents, line: 7, entry: 20, check: "action event", says: `an action event for "a4"`},
		// Embedded artifacts equal their files (rule 13).
		{name: "an embedded artifact's value changed, its hash recomputed", artifacts: true, change: func(f *forgery) {
			f.edit(f.find("dom/1.json", 0), func(m map[string]any) {
				a := m["extractedArtifacts"].([]any)[0].(map[string]any)
				a["value"], a["hash"] = "Pro $2 / month", sha("Pro $2 / month")
			})
		}, file: "dom/1.json", entry: 25, check: "artifact copy", says: `extractedArtifacts[0] (id "art-1") differs from artifacts/art-1.json`},
		{name: "an embedded screenshot's source changed", artifacts: true, change: func(f *forgery) {
			f.edit(f.find("dom/1.json", 0), func(m map[string]any) {
				m["extractedArtifacts"].([]any)[1].(map[string]any)["sourceUrl"] = "https://example.com/other"
			})
		}, file: "dom/1.json", entry: 25, check: "artifact copy", says: `extractedArtifacts[1] (id "art-2") differs from artifacts/art-2.json`},
		{name: "an artifact file that differs from the copy an observation before it embeds", change: func(f *forgery) {
			f.edit(f.find("dom/0.json", 0), func(m map[string]any) {
				m["extractedArtifacts"] = []any{map[string]any{"id": "art-1", "type": "text", "value": "Pro $2 / month",
					"hash": sha("Pro $2 / month"), "sourceSelector": ".pro", "sourceUrl": "https://example.com/pricing"}}
			})
		}, file: "artifacts/art-1.json", entry: 22, check: "artifact copy", says: "differs from the copy dom/0.json embeds (extractedArtifacts[0])"},
		{name: "an image record that differs from the copy an observation before it embeds", change: func(f *forgery) {
			f.edit(f.find("dom/0.json", 0), func(m map[string]any) {
				m["extractedArtifacts"] = []any{map[string]any{"id": "shot-1", "type": "text", "value": "x",
					"hash": sha("x"), "sourceUrl": "https://example.com/pricing"}}
			})
		}, file: "artifacts/shot-1.json", entry: 21, check: "artifact copy", says: "differs from the copy dom/0.json embeds"},
		// No empty directory (rule 14).
		{name: "an empty directory", change: func(f *forgery) { f.dirs = []string{"notes"} },
			file: "notes", entry: -1, check: "empty directory", says: "every directory holds one"},
		{name: "an empty directory beside the records", change: func(f *forgery) { f.dirs = []string{"artifacts/more"} },
			file: "artifacts/more", entry: -1, check: "empty directory"},
		{name: "a directory holding only an empty directory", change: func(f *forgery) { f.dirs = []string{"notes/more"} },
			file: "notes", entry: -1, check: "empty directory"},
	}
}

func TestCrossRecordVectors(t *testing.T) {
	bundles := map[bool]map[string][]byte{}
	for _, arts := range []bool{false, true} {
		dir := buildBundle(t, t.TempDir(), fixture{sign: true, observeArtifacts: arts})
		_, bundles[arts] = bundleFiles(t, dir)
		// The forger itself: a bundle it takes apart and puts together
		// unchanged is the same bundle, byte for byte.
		same := forge(t, bundles[arts]).files()
		for name, b := range bundles[arts] {
			if got := same[name]; got == nil || !bytes.Equal(got.Data, b) {
				t.Fatalf("the forger does not rebuild %s", name)
			}
		}
	}
	for _, v := range append(append(crossVectors(), bindingVectors()...), approvalVectors()...) {
		t.Run(v.name, func(t *testing.T) {
			f := forge(t, bundles[v.artifacts])
			v.change(f)
			for _, opts := range []VerifyOptions{{}, {PubKey: testPub()}} {
				_, err := VerifyFS(context.Background(), f.files(), opts)
				var ve *VerifyError
				if !errors.As(err, &ve) {
					t.Fatalf("got %v, want a *VerifyError", err)
				}
				if ve.File != v.file || ve.Line != v.line || (v.entry != -2 && ve.Entry != v.entry) || ve.Check != v.check {
					t.Errorf("got %s line %d entry %d check %q (%v), want %s line %d entry %d check %q",
						ve.File, ve.Line, ve.Entry, ve.Check, err, v.file, v.line, v.entry, v.check)
				}
				if !strings.Contains(err.Error(), v.says) {
					t.Errorf("%q does not say %q", err, v.says)
				}
			}
		})
	}
}

// TestCrossRecordForgeriesThatHold: changes the rules allow verify (the
// forger recomputes everything, so they are the rules' own word).
func TestCrossRecordForgeriesThatHold(t *testing.T) {
	_, files := bundleFiles(t, buildBundle(t, t.TempDir(), fixture{sign: true}))
	for _, tt := range []struct {
		name   string
		change func(f *forgery)
	}{
		{"an entry's time equal to the previous entry's", func(f *forgery) { setTime(f, FileActions, 1, "2026-01-23T10:15:08Z") }},
		{"an entry's time in another offset, not before", func(f *forgery) { setTime(f, FileActions, 1, "2026-01-23T11:15:09+01:00") }},
		{"an event between an action line and its event", func(f *forgery) {
			ev, err := canonjson.Marshal(contract.StreamEvent{Type: contract.EventError, Code: "x", Message: "y", Timestamp: "2026-01-23T10:15:00Z"})
			if err != nil {
				t.Fatal(err)
			}
			i := f.find(FileEvents, 2)
			f.insert(i, forgedEntry{kind: contract.LedgerEvent, file: FileEvents, time: f.entries[i].time, content: ev})
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

// TestWriterEmbedsStoredArtifacts: an observation that embeds artifacts
// as the driver reported them (a screenshot under the driver's uri) is
// stored with the copies the artifact files hold, and verifies.
func TestWriterEmbedsStoredArtifacts(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true, observeArtifacts: true})
	if _, err := Verify(context.Background(), dir, VerifyOptions{PubKey: testPub()}); err != nil {
		t.Fatal(err)
	}
	obs, err := os.ReadFile(filepath.Join(dir, "dom", "1.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"art-1", "art-2"} {
		file, err := os.ReadFile(filepath.Join(dir, "artifacts", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(obs, bytes.TrimSuffix(file, []byte("\n"))) {
			t.Errorf("dom/1.json does not embed %s as its file holds it:\n%s", id, obs)
		}
	}
}

// TestWriterCrossRecordRules: the writer applies the rules before it
// writes, so that what it writes verifies.
func TestWriterCrossRecordRules(t *testing.T) {
	nav := contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open", PolicyTags: []string{}, URL: "https://example.com/"}
	click := contract.Action{ID: "a2", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{}, Selector: "#buy"}
	ts := "2026-01-23T10:15:00Z"
	newWriter := func(t *testing.T, clock func() time.Time) *Writer {
		w, err := Create(t.TempDir(), testManifest(), Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	verify := func(t *testing.T, w *Writer) {
		t.Helper()
		if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a clock that goes backwards", func(t *testing.T) {
		at := time.Date(2026, 1, 23, 10, 15, 30, 0, time.UTC)
		w := newWriter(t, func() time.Time { at = at.Add(-time.Second); return at })
		must(t, w.ModelCall(modelCall(0, contract.ModelPurposePlan)))
		// A call that states a time after the clock's.
		mc := modelCall(1, contract.ModelPurposeNavigate)
		mc.Time = "2026-01-23T10:15:40Z"
		must(t, w.ModelCall(mc))
		must(t, w.Event(contract.StreamEvent{Type: contract.EventSessionEnded, Status: contract.SessionCompleted, Summary: "done", Timestamp: ts}))
		// The session says it ended before its records: held at them.
		m, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 0, 0, 0, time.UTC), nil)
		must(t, err)
		if m.EndedAt != "2026-01-23T10:15:40Z" || m.Seal.SealedAt != "2026-01-23T10:15:40Z" {
			t.Errorf("endedAt %s, sealedAt %s, want both 2026-01-23T10:15:40Z", m.EndedAt, m.Seal.SealedAt)
		}
		verify(t, w)
	})

	t.Run("an action without its event", func(t *testing.T) {
		w := newWriter(t, fixedClock())
		must(t, w.Decision(decision("nav", nav, contract.ResultAllowed)))
		must(t, w.Action(nav, result(nav, true)))
		if err := w.Event(actionEvent(click, "clicked", ts)); err == nil || !strings.Contains(err.Error(), `the action line before it (actions.jsonl line 1) is "a1"`) {
			t.Errorf("the event of another action: %v", err)
		}
		must(t, w.Decision(decision("click", click, contract.ResultAllowed)))
		if err := w.Action(click, result(click, true)); !errors.Is(err, ErrNoActionEvent) || errors.Is(err, ErrNotAllowed) {
			t.Errorf("an action after one without its event: %v, want ErrNoActionEvent", err)
		}
		if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil); !errors.Is(err, ErrNoActionEvent) {
			t.Errorf("seal with an action without its event: %v, want ErrNoActionEvent", err)
		}
		_, err := Verify(context.Background(), w.Dir(), VerifyOptions{AllowUnsealed: true})
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.File != FileActions || ve.Line != 1 || ve.Check != "action event" {
			t.Errorf("verify: %v, want actions.jsonl line 1 without its action event", err)
		}
	})

	t.Run("an action event with no action", func(t *testing.T) {
		w := newWriter(t, fixedClock())
		if err := w.Event(actionEvent(nav, "opened", ts)); err == nil || !strings.Contains(err.Error(), "no action line before it is waiting") {
			t.Errorf("an action event before any action: %v", err)
		}
		must(t, w.Decision(decision("nav", nav, contract.ResultAllowed)))
		must(t, w.Action(nav, result(nav, true)))
		must(t, w.Event(actionEvent(nav, "opened", ts)))
		if err := w.Event(actionEvent(nav, "opened", ts)); err == nil {
			t.Error("a second action event for one action line was written")
		}
		_, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil)
		must(t, err)
		verify(t, w)
	})

	t.Run("an artifact that differs from the copy an observation embedded", func(t *testing.T) {
		w := newWriter(t, fixedClock())
		obs := testObservation(0, "<p>Pro</p>")
		obs.ExtractedArtifacts = []contract.Artifact{{ID: "art-1", Type: contract.ArtifactText, Value: "Pro", Hash: sha("Pro"), SourceURL: "https://example.com/"}}
		must(t, w.Observation(0, obs))
		err := w.Artifact(contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "Pro $20", SourceURL: "https://example.com/"})
		if !errors.Is(err, ErrQuarantined) || !strings.Contains(err.Error(), "differs from the copy dom/0.json embeds") {
			t.Errorf("got %v, want it quarantined as differing from its copy", err)
		}
		must(t, w.Artifact(contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "Pro", SourceURL: "https://example.com/"}))
		_, err = w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil)
		must(t, err)
		verify(t, w)
	})

	t.Run("a copy masked since its file was written is left out", func(t *testing.T) {
		w := newWriter(t, fixedClock())
		art := contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "code 7H3X-9QZ2-LL", SourceURL: "https://example.com/"}
		must(t, w.Artifact(art))
		typ := contract.Action{ID: "a1", Type: contract.ActType, Reason: "enter the code", PolicyTags: []string{}, Selector: "#code", Text: "7H3X-9QZ2-LL", Redact: true}
		must(t, w.Decision(decision("typ", typ, contract.ResultAllowed)))
		must(t, w.Action(typ, result(typ, true)))
		must(t, w.Event(actionEvent(typ, "typed", ts)))
		obs := testObservation(0, "<p>done</p>")
		obs.ExtractedArtifacts = []contract.Artifact{art, {ID: "art-2", Type: contract.ArtifactText, Value: "other", Hash: sha("other"), SourceURL: "https://example.com/"}}
		must(t, w.Observation(0, obs))
		_, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil)
		must(t, err)
		verify(t, w)
		b, err := os.ReadFile(filepath.Join(w.Dir(), "dom", "0.json"))
		must(t, err)
		if bytes.Contains(b, []byte(`"art-1"`)) || !bytes.Contains(b, []byte(`"art-2"`)) {
			t.Errorf("want art-1's masked copy left out and art-2 kept:\n%s", b)
		}
	})

	t.Run("a failed record leaves no empty directory", func(t *testing.T) {
		w := newWriter(t, fixedClock())
		w.hook = func(stage string) error {
			if stage == "write artifacts/art-1.json" {
				return errors.New("disk full")
			}
			return nil
		}
		err := w.Artifact(contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "Pro", SourceURL: "https://example.com/"})
		if !errors.Is(err, ErrQuarantined) {
			t.Fatalf("got %v, want quarantined", err)
		}
		w.hook = nil
		if _, err := os.Stat(filepath.Join(w.Dir(), "artifacts")); !os.IsNotExist(err) {
			t.Errorf("artifacts/ is left behind: %v", err)
		}
		_, err = w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil)
		must(t, err)
		verify(t, w)
	})
}

// TestEmptyDirectories: a sealed bundle with an empty directory fails, an
// unsealed one reports it as what a crash left (at most one such thing),
// and pack refuses it, so that a directory and its archive verify alike.
func TestEmptyDirectories(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true})
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(context.Background(), dir, VerifyOptions{})
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.File != "notes" || ve.Check != "empty directory" {
		t.Errorf("verify: %v, want notes: empty directory", err)
	}
	if err := Pack(context.Background(), dir, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "notes: an empty directory") {
		t.Errorf("pack: %v, want it refused", err)
	}

	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Plan(contract.Plan{Goal: "g", Steps: []contract.PlanStep{{ID: "s1", Description: "d", SuccessCriteria: "c"}}}); err != nil {
		t.Fatal(err)
	}
	// A crash between making a record's directory and its file.
	if err := os.Mkdir(filepath.Join(w.Dir(), "dom"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), w.Dir(), VerifyOptions{AllowUnsealed: true})
	if err != nil || r.Incomplete != "dom/" {
		t.Errorf("unsealed with an empty directory: %v, incomplete %q, want dom/", err, r.Incomplete)
	}
	// Beside an uncommitted file, it is one thing too many.
	if err := os.MkdirAll(filepath.Join(w.Dir(), "artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir(), "artifacts", "art-1.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{AllowUnsealed: true}); !errors.As(err, &ve) || ve.Check != "extra" {
		t.Errorf("an empty directory beside an uncommitted record: %v, want extra", err)
	}
	w.Close()
}

func TestParseTime(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // the instant in UTC; "" when refused
	}{
		{"2026-01-23T10:15:00Z", "2026-01-23T10:15:00Z"},
		{"2026-01-23t10:15:00z", "2026-01-23T10:15:00Z"},
		{"2026-01-23T11:15:00.5+01:00", "2026-01-23T10:15:00.5Z"},
		{"2026-01-23T23:59:60Z", ""},
		{"2026-01-23", ""},
	} {
		got, err := parseTime(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%s: got %v, want it refused", tt.in, got)
		case tt.want != "" && (err != nil || got.UTC().Format(time.RFC3339Nano) != tt.want):
			t.Errorf("%s: got %v, %v, want %s", tt.in, got, err, tt.want)
		}
	}
}
