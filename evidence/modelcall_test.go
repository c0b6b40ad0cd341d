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

// TestModelCallsWrittenAndVerified: the fixture's model calls are lines of
// model-calls.jsonl, in canonical form, counted in the sealed manifest and
// by the verifier.
func TestModelCallsWrittenAndVerified(t *testing.T) {
	dir := buildBundle(t, t.TempDir(), fixture{sign: true, steps: 3})
	r, err := Verify(context.Background(), dir, VerifyOptions{PubKey: testPub()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Counts.ModelCalls, 4; got != want { // the plan's and one per step
		t.Errorf("report counts %d model calls, want %d", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileModelCalls))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	wants := []contract.ModelCall{modelCall(0, contract.ModelPurposePlan)}
	for s := range 3 {
		wants = append(wants, modelCall(s, contract.ModelPurposeNavigate))
	}
	if len(lines) != len(wants) {
		t.Fatalf("%d lines, want %d", len(lines), len(wants))
	}
	for i, want := range wants {
		canon, err := canonjson.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(lines[i], canon) {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], canon)
		}
	}
	var m contract.Manifest
	mb, _ := os.ReadFile(filepath.Join(dir, FileManifest))
	if err := jsonUnmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	if m.Counts.ModelCalls != 4 {
		t.Errorf("sealed manifest counts %+v", m.Counts)
	}
	start, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(FileManifestStart)))
	if bytes.Contains(start, []byte("modelCalls")) {
		t.Errorf("the start manifest names modelCalls: %s", start)
	}
}

// TestModelCallRefused: a record of another session, or one that breaks
// the schema, is refused before anything is written; the writer goes on,
// and a bundle without model calls has no model-calls.jsonl and no
// modelCalls count.
func TestModelCallRefused(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	other := modelCall(0, contract.ModelPurposePlan)
	other.SessionID = "cus_other"
	noAttempt := modelCall(0, contract.ModelPurposePlan)
	noAttempt.Attempts = 0
	badHash := modelCall(0, contract.ModelPurposePlan)
	badHash.PromptHash = "sha256:" + badHash.PromptHash
	for name, tc := range map[string]struct {
		rec  contract.ModelCall
		want string
	}{
		"other session": {other, `sessionId "cus_other", want "cus_01HZX4K9"`},
		"zero attempts": {noAttempt, "/attempts"},
		"prefixed hash": {badHash, "/promptHash"},
	} {
		if err := w.ModelCall(tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", name, err, tc.want)
		}
	}
	if err := w.Err(); err != nil {
		t.Fatalf("a refused record stopped the writer: %v", err)
	}
	m, err := w.Seal(context.Background(), contract.SessionFailed, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts.ModelCalls != 0 {
		t.Errorf("counts %+v", m.Counts)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), FileModelCalls)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v, want no file", FileModelCalls, err)
	}
	mb, _ := os.ReadFile(filepath.Join(w.Dir(), FileManifest))
	if bytes.Contains(mb, []byte("modelCalls")) {
		t.Errorf("manifest names modelCalls: %s", mb)
	}
	if _, err := Verify(context.Background(), w.Dir(), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.ModelCall(modelCall(0, contract.ModelPurposePlan)); !errors.Is(err, ErrClosed) {
		t.Errorf("after the seal: %v, want ErrClosed", err)
	}
}

// TestVerifyModelCallSession: a model-call line of another session that is
// correctly chained (as a forger who recomputes the chain would write it)
// fails verification, naming its file, line and entry.
func TestVerifyModelCallSession(t *testing.T) {
	w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ModelCall(modelCall(0, contract.ModelPurposePlan)); err != nil {
		t.Fatal(err)
	}
	forged := modelCall(1, contract.ModelPurposeNavigate)
	forged.SessionID = "cus_other"
	canon, err := canonjson.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	// Past the writer's own check, straight to the file and the ledger.
	w.mu.Lock()
	err = w.appendLine(contract.LedgerModelCall, FileModelCalls, canon)
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	w.counts.ModelCalls++
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(context.Background(), w.Dir(), VerifyOptions{})
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *VerifyError", err)
	}
	if ve.File != FileModelCalls || ve.Line != 2 || ve.Entry != 2 || ve.Check != "model call" {
		t.Errorf("got %+v (%v)", ve, err)
	}
	mustContain(t, err.Error(), "model-calls.jsonl line 2 (ledger entry 2): model call", `"cus_other"`)
}
