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
	must(w.Decision(d))
	r := result(leak, false)
	r.Error = &contract.ToolError{Code: contract.CodeInternal, Message: "failed to type " + all}
	must(w.Action(leak, r))
	// A redacted type action: its text is masked, then masked everywhere.
	typ := contract.Action{ID: "a2", Type: contract.ActType, Reason: "card", PolicyTags: []string{}, Selector: "#cc", Text: typedText, Redact: true}
	must(w.Decision(decision("typ", typ, contract.ResultAllowed)))
	must(w.Action(typ, result(typ, true)))
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
