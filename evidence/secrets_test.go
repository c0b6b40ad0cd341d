package evidence

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
	"github.com/klauspost/compress/zstd"
)

// The secrets test: a session whose records carry known secret values in
// every place a string can go; then every byte of every file of the bundle,
// of the DSSE payload decoded, and of the packed archive decompressed, is
// scanned for every secret in every spelling a file could hold.

var testSecrets = map[string]string{
	"PASSWORD": "hunter2-Pa55word!",
	"TOKEN":    "tok_9f8e7d6c5b4a3210",
	"QUOTED":   `a"b\c<d>`,
	"UNICODE":  "pässwörd-日本",
}

// typedText is the text of a redacted type action: masked in its action,
// and wherever it appears after.
const typedText = "my-typed-credit-card-4111"

// spellings returns the ways a value could appear in a file: as is,
// escaped as canonical JSON writes it, escaped as encoding/json writes it,
// and in base64.
func spellings(v string) []string {
	canon := string(canonjson.AppendString(nil, v))
	canon = canon[1 : len(canon)-1]
	var goJSON strings.Builder
	json := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, `"`, `\"`, `\`, `\\`)
	goJSON.WriteString(json.Replace(v))
	return []string{v, canon, goJSON.String(), base64.StdEncoding.EncodeToString([]byte(v))}
}

func scanForSecrets(t *testing.T, where string, b []byte) {
	t.Helper()
	values := []string{typedText}
	for _, v := range testSecrets {
		values = append(values, v)
	}
	for _, v := range values {
		for _, s := range spellings(v) {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q (as %q)", where, v, s)
			}
		}
	}
}

func TestSecretsNeverWritten(t *testing.T) {
	root := t.TempDir()
	m := testManifest()
	pw, tok := testSecrets["PASSWORD"], testSecrets["TOKEN"]
	m.Task.Hints = []byte(`{"login":"` + tok + `"}`)
	w, err := Create(root, m, Options{Clock: fixedClock(), Secrets: testSecrets})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	all := pw + " " + tok + " " + testSecrets["QUOTED"] + " " + testSecrets["UNICODE"]
	must(w.Plan(contract.Plan{Goal: "log in", Steps: []contract.PlanStep{{ID: "s1", Description: "type " + all, SuccessCriteria: "logged in"}}}))
	obs := testObservation(0, `<input name="pw" value="`+pw+`"><p>`+all+`</p>`)
	obs.DOMText = "welcome " + all
	obs.State.Title = "token " + tok
	must(w.Observation(0, obs))
	// A type action that is not redacted but carries a secret.
	leak := contract.Action{ID: "a1", Type: contract.ActType, Reason: "type the " + all, PolicyTags: []string{}, Selector: "#pw", Text: pw}
	d := decision("leak", leak, contract.ResultAllowed)
	d.Waived = []contract.Reason{{Rule: "secret_in_text", Message: "text holds " + tok, ExceptionID: "ge-1"}}
	d.Target = &contract.Element{Tag: "input", Name: "pw-" + tok, ID: pw, Label: "password " + all, Text: all}
	must(w.Decision(d))
	r := result(leak, false)
	r.Error = &contract.ToolError{Code: contract.CodeInternal, Message: "failed to type " + all}
	must(w.Action(leak, r))
	must(w.Event(actionEvent(leak, "failed to type "+all, "2026-01-23T10:15:00Z")))
	// A redacted type action: its text is masked, then masked everywhere.
	typ := contract.Action{ID: "a2", Type: contract.ActType, Reason: "card", PolicyTags: []string{}, Selector: "#cc", Text: typedText, Redact: true}
	must(w.Decision(decision("typ", typ, contract.ResultAllowed)))
	must(w.Action(typ, result(typ, true)))
	must(w.Event(actionEvent(typ, "typed "+typedText, "2026-01-23T10:15:00Z")))
	must(w.Event(contract.StreamEvent{Type: contract.EventError, Code: "x", Message: "echo " + typedText + " " + all, Timestamp: "2026-01-23T10:15:00Z"}))
	// A model call whose error quotes the typed text and the secrets.
	mc := modelCall(1, contract.ModelPurposeNavigate)
	mc.Error = "llm: 400 the request echoed " + typedText + " " + all
	must(w.ModelCall(mc))
	must(w.Artifact(contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "extracted " + all, SourceURL: "https://example.com/?t=" + tok}))
	// An image that holds a secret is refused, never written.
	img := append(testPNG(2, 2), []byte(pw)...)
	if _, err := w.Image("shot-1", img, ImageMeta{}); !errors.Is(err, ErrQuarantined) {
		t.Fatalf("an image holding a secret: %v, want quarantined", err)
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), NewEd25519Signer(testKey())); err != nil {
		t.Fatal(err)
	}
	dir := w.Dir()
	if _, err := Verify(context.Background(), dir, VerifyOptions{PubKey: testPub()}); err != nil {
		t.Fatalf("the masked bundle does not verify: %v", err)
	}
	names, files := bundleFiles(t, dir)
	for _, name := range names {
		scanForSecrets(t, name, files[name])
	}
	// The DSSE payload, decoded.
	var env Envelope
	if err := jsonUnmarshal(files[FileSeal], &env); err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	scanForSecrets(t, "the DSSE payload", payload)
	// The packed archive, decompressed.
	var packed bytes.Buffer
	if err := Pack(context.Background(), dir, &packed); err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(&packed)
	if err != nil {
		t.Fatal(err)
	}
	tarBytes, err := io.ReadAll(zr)
	zr.Close()
	if err != nil {
		t.Fatal(err)
	}
	scanForSecrets(t, "the packed archive", tarBytes)
	// And the masking is visible: placeholders and the notice events.
	mustContain(t, string(files[FileActions]), "{{secret:PASSWORD}}", RedactedText)
	mustContain(t, string(files[FileEvents]), CodeSecretMasked, CodeArtifactQuarantined, "masked in "+FileModelCalls)
	mustContain(t, string(files[FileModelCalls]), "{{secret:TOKEN}}", RedactedText)
	if t.Failed() {
		return
	}
	t.Logf("%d files, %d bytes of archive: no secret in any spelling", len(names), len(tarBytes))
}

func TestSecretOptions(t *testing.T) {
	for _, tt := range []struct {
		name    string
		secrets map[string]string
		wantErr string
	}{
		{"short", map[string]string{"PIN": "123"}, "shorter than"},
		{"bad name", map[string]string{"a b": "long-enough"}, "secret name"},
		{"in a placeholder", map[string]string{"LONGNAME": "secret:LONG"}, "placeholder"},
		{"fine", map[string]string{"PIN": "1234"}, ""},
		// A value that occurs in the manifest's times or a ledger entry's
		// hashes by coincidence is not a leak (TestChanceOccurrences); one
		// in the manifest's structure otherwise is refused there.
		{"in a time", map[string]string{"DAY": "2026-01-23"}, ""},
		{"in the genesis entry", map[string]string{"ZEROS": "00000000"}, ""},
		{"in the session id", map[string]string{"SID": testManifest().SessionID}, "is not free text"},
	} {
		_, err := Create(t.TempDir(), testManifest(), Options{Secrets: tt.secrets})
		if got := err != nil && strings.Contains(err.Error(), tt.wantErr); tt.wantErr != "" && !got || tt.wantErr == "" && err != nil {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestArtifactFailuresQuarantined: an image too large, of the wrong type
// (named .png), an artifact with a bad hash or naming no image, and disk
// errors are each refused, recorded as an error event, and the session goes
// on to a bundle that verifies.
func TestArtifactFailuresQuarantined(t *testing.T) {
	root := t.TempDir()
	w, err := Create(root, testManifest(), Options{Clock: fixedClock(), MaxImageBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	dir := w.Dir()
	// A directory where the image file would go: a real write error.
	if err := os.MkdirAll(filepath.Join(dir, "artifacts", "blocked.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := append(testPNG(2, 2), make([]byte, 5000)...)
	gif := []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x00\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"too large", func() error { _, err := w.Image("big", big, ImageMeta{}); return err }, "exceeds the limit"},
		{"GIF named .png", func() error { _, err := w.Image("fake.png", gif, ImageMeta{}); return err }, "not a PNG, JPEG or WebP"},
		{"empty", func() error { _, err := w.Image("empty", nil, ImageMeta{}); return err }, "empty image"},
		{"PNG signature only", func() error { _, err := w.Image("sig", []byte("\x89PNG\r\n\x1a\n"), ImageMeta{}); return err }, "not a PNG"},
		{"disk error", func() error { _, err := w.Image("blocked", testPNG(2, 2), ImageMeta{}); return err }, "blocked.png"},
		{"bad artifact hash", func() error {
			return w.Artifact(contract.Artifact{ID: "a", Type: contract.ArtifactText, Value: "v", SourceURL: "https://example.com/", Hash: sha("other")})
		}, "want the SHA-256"},
		{"screenshot of no image", func() error {
			return w.Artifact(contract.Artifact{ID: "b", Type: contract.ArtifactScreenshot, Value: "artifacts/none.png", SourceURL: "https://example.com/"})
		}, "not the uri of an image"},
		{"artifact id that is not an id", func() error {
			return w.Artifact(contract.Artifact{ID: "../x", Type: contract.ArtifactText, Value: "v", SourceURL: "https://example.com/"})
		}, "/id"},
	}
	if os.Geteuid() != 0 {
		tests = append(tests, struct {
			name string
			do   func() error
			want string
		}{"read-only directory", func() error {
			ro := filepath.Join(dir, "artifacts")
			os.Chmod(ro, 0o555)
			defer os.Chmod(ro, 0o755)
			_, err := w.Image("ro", testPNG(2, 2), ImageMeta{})
			return err
		}, "permission denied"})
	}
	for _, tt := range tests {
		err := tt.do()
		var qe *QuarantineError
		if !errors.Is(err, ErrQuarantined) || !errors.As(err, &qe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a quarantine error containing %q", tt.name, err, tt.want)
		}
		if w.Err() != nil {
			t.Fatalf("%s: the writer stopped: %v", tt.name, w.Err())
		}
	}
	// A failure after the image file was partly written: the file goes,
	// the writer goes on.
	w.hook = func(stage string) error {
		if stage == "write artifacts/late.png" {
			return errors.New("injected: disk full")
		}
		return nil
	}
	if _, err := w.Image("late", testPNG(3, 3), ImageMeta{}); !errors.Is(err, ErrQuarantined) {
		t.Errorf("write failure: %v, want quarantined", err)
	}
	w.hook = nil
	if _, err := os.Stat(filepath.Join(dir, "artifacts", "late.png")); !os.IsNotExist(err) {
		t.Errorf("the partly written image is still there: %v", err)
	}
	// The session goes on.
	if _, err := w.Image("ok", testPNG(2, 2), ImageMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "artifacts", "blocked.png")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Seal(context.Background(), contract.SessionFailed, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events, _ := os.ReadFile(filepath.Join(dir, FileEvents))
	if got, want := strings.Count(string(events), CodeArtifactQuarantined), len(tests)+1; got != want || r.Counts.Events != want {
		t.Errorf("%d quarantine events (counts.events %d), want %d", got, r.Counts.Events, want)
	}
}

// TestWriterStopsOnLedgerFailure: a failure that leaves a file in doubt
// stops the writer; the bundle verifies as unsealed with every complete
// entry intact.
func TestWriterStopsOnLedgerFailure(t *testing.T) {
	for _, stage := range []string{"ledger events.jsonl", "write events.jsonl", "ledger dom/0.json", "ledger artifacts/shot-1.png", "seal manifest"} {
		t.Run(stage, func(t *testing.T) {
			root := t.TempDir()
			w, err := Create(root, testManifest(), Options{Clock: fixedClock()})
			if err != nil {
				t.Fatal(err)
			}
			failed := false
			w.hook = func(s string) error {
				if s == stage && !failed {
					failed = true
					return errors.New("injected failure")
				}
				return nil
			}
			must := func(err error) {
				if err != nil && w.Err() == nil {
					t.Fatalf("a non-sticky error: %v", err)
				}
			}
			must(w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: testSession, Timestamp: "2026-01-23T10:15:00Z"}))
			must(w.Observation(0, testObservation(0, "<p>x</p>")))
			_, err = w.Image("shot-1", testPNG(2, 2), ImageMeta{})
			must(err)
			_, err = w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil)
			must(err)
			if w.Err() == nil {
				t.Fatal("the writer did not stop")
			}
			if err := w.Event(contract.StreamEvent{Type: contract.EventError, Code: "x", Message: "y", Timestamp: "2026-01-23T10:15:00Z"}); err == nil {
				t.Error("a stopped writer took a record")
			}
			r, err := Verify(context.Background(), w.Dir(), VerifyOptions{AllowUnsealed: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.Sealed {
				t.Error("sealed after a failure")
			}
		})
	}
}

// TestMaskRecord: the writer masks known values in free text only; a
// value in any other string or in a member name is refused, naming the
// place and never the value.
func TestMaskRecord(t *testing.T) {
	secrets := map[string]string{"PW": "hunter2-pw", "ID": "act-77"}
	tests := []struct {
		name    string
		shape   string
		doc     string
		want    string // the masked record, canonical; "" when refused
		wantErr string // the place named when refused
	}{
		{"free text masked", shapeActionLine,
			`{"action":{"id":"a1","reason":"type hunter2-pw now","text":"hunter2-pw"},"result":{"actionId":"a1"}}`,
			`{"action":{"id":"a1","reason":"type {{secret:PW}} now","text":"{{secret:PW}}"},"result":{"actionId":"a1"}}`, ""},
		{"a URL is free text", shapeActionLine,
			`{"action":{"url":"https://example.com/?t=hunter2-pw"},"result":{"url":"https://example.com/hunter2-pw"}}`,
			`{"action":{"url":"https://example.com/?t={{secret:PW}}"},"result":{"url":"https://example.com/{{secret:PW}}"}}`, ""},
		{"nothing to mask", string(schemas.KindEvent), `{"message":"clicked","type":"action"}`, `{"message":"clicked","type":"action"}`, ""},
		{"an action id", shapeActionLine, `{"action":{"id":"act-77","reason":"r"},"result":{"actionId":"a1"}}`, "", "/action/id"},
		{"an id in a result", shapeActionLine, `{"action":{"id":"a1"},"result":{"actionId":"act-77"}}`, "", "/result/actionId"},
		{"an event's action id", string(schemas.KindEvent), `{"actionId":"act-77","summary":"clicked act-77"}`, "", "/actionId"},
		{"part of a hash", string(schemas.KindDecision), `{"actionHash":"00hunter2-pw00","reasons":[{"message":"ok"}]}`, "", "/actionHash"},
		{"a policy tag", shapeActionLine, `{"action":{"policyTags":["nav","act-77"]},"result":{}}`, "", "/action/policyTags/*"},
		{"a member name", string(schemas.KindManifest), `{"task":{"hints":{"act-77":1}}}`, "", "a member name of /task/hints"},
		{"hints values are free text", string(schemas.KindManifest), `{"task":{"hints":{"login":["hunter2-pw"]}}}`,
			`{"task":{"hints":{"login":["{{secret:PW}}"]}}}`, ""},
		{"a decision's target is page text", string(schemas.KindDecision), `{"actionHash":"00","target":{"id":"act-77","label":"type hunter2-pw","tag":"input"}}`,
			`{"actionHash":"00","target":{"id":"{{secret:ID}}","label":"type {{secret:PW}}","tag":"input"}}`, ""},
		{"a screenshot's value is its image", shapeArtifact, `{"type":"screenshot","value":"artifacts/act-77.png"}`, "", "/value"},
		{"a text artifact's value is free", shapeArtifact, `{"type":"text","value":"act-77"}`, `{"type":"text","value":"{{secret:ID}}"}`, ""},
		{"a value across two strings", string(schemas.KindEvent), `{"message":"act-","summary":"77"}`, `{"message":"act-","summary":"77"}`, ""},
		{"a value spanning the record's bytes", string(schemas.KindModelCall), `{"error":"x\",\"model\":\"y","model":"act-7"}`,
			`{"error":"x\",\"model\":\"y","model":"act-7"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := newMasker(secrets)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := schemas.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := m.maskRecord(tt.shape, tree)
			if tt.want == "" {
				if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error wrapping ErrSecret naming %s", err, tt.wantErr)
				}
				for _, v := range secrets {
					if strings.Contains(err.Error(), v) {
						t.Errorf("the error %q names the value", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			b, _ := canonjson.EncodeValue(got)
			if string(b) != tt.want {
				t.Errorf("got %s, want %s", b, tt.want)
			}
		})
	}
}

// TestCanonicalizeRefusesLeftovers: what masking cannot reach, the check
// of the encoded bytes refuses: a value that the encoding spells across
// two strings (it holds a quote), and a member name.
func TestCanonicalizeRefusesLeftovers(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		shape   string
		v       any
		refused bool
	}{
		{"across two strings", `y","selector":"#`, shapeActionLine,
			actionLine{Action: contract.Action{ID: "a1", Type: contract.ActClick, Reason: "x y", Selector: "#z"}}, true},
		{"a quote in free text", `say "hi"`, shapeActionLine,
			actionLine{Action: contract.Action{ID: "a1", Type: contract.ActClick, Reason: `they say "hi"`, Selector: "#z"}}, false},
		{"a member name", `"reason"`, shapeActionLine,
			actionLine{Action: contract.Action{ID: "a1", Type: contract.ActClick, Reason: "r"}}, true},
		{"in free text only", "pa55-word", shapeActionLine,
			actionLine{Action: contract.Action{ID: "a1", Type: contract.ActClick, Reason: "pa55-word"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := newMasker(map[string]string{"S": tt.secret})
			if err != nil {
				t.Fatal(err)
			}
			canon, _, err := canonicalize(tt.shape, tt.v, m)
			if got := errors.Is(err, ErrSecret); got != tt.refused {
				t.Fatalf("refused %v (%v), want %v", got, err, tt.refused)
			}
			if err == nil && (bytes.Contains(canon, []byte(tt.secret)) || bytes.Contains(canon, []byte(spellings(tt.secret)[1]))) {
				t.Errorf("%s holds the secret", canon)
			}
		})
	}
}

// TestWriterRefusesSecretsInStructure: a secret value that happens to be
// an id, a tag, a kind or a name is refused where the writer would
// otherwise have stored it, the writer goes on, and the bundle it seals
// verifies and holds the value nowhere, while the same value in free text
// is masked.
func TestWriterRefusesSecretsInStructure(t *testing.T) {
	secret := "act-77"
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Secrets: map[string]string{"ID": secret}})
	if err != nil {
		t.Fatal(err)
	}
	clash := contract.Action{ID: secret, Type: contract.ActClick, Reason: "click", PolicyTags: []string{}, Selector: "#buy"}
	tagged := contract.Action{ID: "a2", Type: contract.ActClick, Reason: "click", PolicyTags: []string{secret}, Selector: "#buy"}
	free := contract.Action{ID: "a3", Type: contract.ActClick, Reason: "the button " + secret, PolicyTags: []string{}, Selector: "#" + secret}
	tests := []struct {
		name    string
		do      func() error
		refused bool
		quarant bool // refused as a quarantined artifact
	}{
		{"decision for an action whose id is the value", func() error { return w.Decision(decision("d1", clash, contract.ResultAllowed)) }, true, false},
		{"the action itself", func() error { return w.Action(clash, result(clash, true)) }, true, false},
		{"an event naming the action", func() error {
			return w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: secret, ActionType: contract.ActClick, RiskLevel: contract.RiskLow, Summary: "clicked", Timestamp: "2026-01-23T10:15:00Z"})
		}, true, false},
		{"a policy tag", func() error { return w.Action(tagged, result(tagged, true)) }, true, false},
		{"an artifact id", func() error {
			return w.Artifact(contract.Artifact{ID: secret, Type: contract.ArtifactText, Value: "v", SourceURL: "https://example.com/"})
		}, true, true},
		{"an image id", func() error { _, err := w.Image(secret, testPNG(2, 2), ImageMeta{}); return err }, true, true},
		{"free text: a decision", func() error { return w.Decision(decision("d3", free, contract.ResultAllowed)) }, false, false},
		{"free text: the action", func() error { return w.Action(free, result(free, true)) }, false, false},
		{"free text: the action's event", func() error { return w.Event(actionEvent(free, "clicked "+secret, "2026-01-23T10:15:00Z")) }, false, false},
		{"free text: an artifact's value", func() error {
			return w.Artifact(contract.Artifact{ID: "art-1", Type: contract.ArtifactText, Value: "value " + secret, SourceURL: "https://example.com/?q=" + secret})
		}, false, false},
	}
	for _, tt := range tests {
		err := tt.do()
		switch {
		case tt.refused && !errors.Is(err, ErrSecret):
			t.Errorf("%s: %v, want an error wrapping ErrSecret", tt.name, err)
		case tt.refused && tt.quarant != errors.Is(err, ErrQuarantined):
			t.Errorf("%s: %v, quarantined %v, want %v", tt.name, err, errors.Is(err, ErrQuarantined), tt.quarant)
		case !tt.refused && err != nil:
			t.Errorf("%s: %v, want it stored with the value masked", tt.name, err)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("%s: the error %q names the value", tt.name, err)
		}
		if w.Err() != nil {
			t.Fatalf("%s: the writer stopped: %v", tt.name, w.Err())
		}
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), w.Dir(), VerifyOptions{})
	if err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	if r.Counts.Decisions != 1 || r.Counts.Actions != 1 || r.Counts.Artifacts != 1 {
		t.Errorf("counts %+v, want the free-text decision, action and artifact only", r.Counts)
	}
	names, files := bundleFiles(t, w.Dir())
	for _, n := range names {
		for _, s := range spellings(secret) {
			if bytes.Contains(files[n], []byte(s)) {
				t.Errorf("%s holds the secret (as %q)", n, s)
			}
		}
	}
	mustContain(t, string(files[FileActions]), "the button {{secret:ID}}", "#{{secret:ID}}")
}

// TestAddRedacted: the text of a redacted type action is masked from then
// on, unless a placeholder holds it (the caller's text already redacted):
// masking it would refuse every later record that holds a placeholder.
func TestAddRedacted(t *testing.T) {
	tests := []struct {
		text  string
		added bool
	}{
		{"my-card-4111", true},
		{RedactedText, false},
		{"redacted", false},
		{"{{secret:PW}}", false},
		{"secret:PW", false},
		{"abc", false},        // shorter than MinSecretLen
		{"hunter2-pw", false}, // a secret already
	}
	for _, tt := range tests {
		m, err := newMasker(map[string]string{"PW": "hunter2-pw"})
		if err != nil {
			t.Fatal(err)
		}
		m.addRedacted(tt.text)
		added := false
		for _, p := range m.pairs {
			added = added || p.value == tt.text && p.placeholder == RedactedText
		}
		if added != tt.added {
			t.Errorf("addRedacted(%q): added %v, want %v", tt.text, added, tt.added)
		}
		if err := m.check("a record", []byte(`{"text":"{{redacted}}","x":"{{secret:PW}}"}`)); err != nil {
			t.Errorf("addRedacted(%q): the placeholders are refused: %v", tt.text, err)
		}
	}
}

// TestChanceOccurrences: a secret found inside a generated value (a time,
// a hash, a number) got there by coincidence and is not a leak; anywhere
// else it is.
func TestChanceOccurrences(t *testing.T) {
	digest := "0123456789abcdef2026beef89abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name, in, value string
		want            bool
	}{
		{"a time", `{"timestamp":"2026-01-23T10:15:00Z"}`, "2026", false},
		{"a time with nanoseconds", `{"t":"2025-12-31T23:59:59.202612345Z"}`, "2026", false},
		{"a hash", `{"domHash":"sha256:` + digest + `"}`, "beef", false},
		{"a bare hash", digest, "2026", false},
		{"a number", `{"latencyMs":120261,"n":3}`, "2026", false},
		{"a number at the end of an array", `[1,20261]`, "2026", false},
		{"an id", `{"id":"2026"}`, "2026", true},
		{"a bare id", "2026", "2026", true},
		{"free text", `{"message":"the pin is 2026"}`, "2026", true},
		{"digits in a string", `{"n":"120261"}`, "2026", true},
		{"a time-like id", `{"id":"a-2026-01-23T10:15:00Z"}`, "2026", true},
		{"a short hex run", `{"id":"beef2026"}`, "beef", true},
		{"once by chance, once not", `{"t":"2026-01-23T10:15:00Z","m":"2026"}`, "2026", true},
		{"a letter secret in a hash", `{"h":"` + digest + `"}`, "word", false},
	}
	for _, tt := range tests {
		if got := occurs([]byte(tt.in), tt.value); got != tt.want {
			t.Errorf("%s: occurs(%s, %q) = %v, want %v", tt.name, tt.in, tt.value, got, tt.want)
		}
	}
}

// TestSecretInTimesAndHashes: a short secret that occurs by chance in
// the bundle's times and hashes (a PIN equal to the year) does not stop a
// session's records, and is still masked in free text.
func TestSecretInTimesAndHashes(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), Secrets: map[string]string{"PIN": "2026"}})
	if err != nil {
		t.Fatal(err)
	}
	a := contract.Action{ID: "a1", Type: contract.ActClick, Reason: "pin 2026", PolicyTags: []string{}, Selector: "#go"}
	steps := []func() error{
		func() error { return w.Decision(decision("d1", a, contract.ResultAllowed)) },
		func() error { return w.Action(a, result(a, true)) },
		func() error {
			return w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: contract.ActClick, RiskLevel: contract.RiskLow, Summary: "clicked", Timestamp: "2026-01-23T10:15:00Z"})
		},
	}
	for i, do := range steps {
		if err := do(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{}); err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	names, files := bundleFiles(t, w.Dir())
	for _, n := range names {
		if occurs(files[n], "2026") {
			t.Errorf("%s holds the secret other than in a time, hash or number", n)
		}
	}
}
