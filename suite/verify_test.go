package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// The committed example bundle (evidence/testdata/example): sealed and
// signed, it ends completed after 3 actions executed, 1 denied and 1
// approved, as the report counts them.
const (
	exampleBundle = "../evidence/testdata/example/cus_01HZX4K9"
	examplePub    = "../evidence/testdata/example/example.pub"
	exampleHead   = "6f9aa09b46f64257bbd048a956326d740b8d62f53a833c04e677a0bb1cf50d58"
)

// exampleTask is TaskHash of the example bundle's task (its manifest's).
var exampleTask = func() string {
	b, err := os.ReadFile(filepath.Join(exampleBundle, "provenance", "manifest-start.json"))
	if err != nil {
		panic(err)
	}
	var m contract.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	h, err := TaskHash(m.Task)
	if err != nil {
		panic(err)
	}
	return h
}()

// exampleLine is the index line that the example bundle bears out, at
// bundle.
func exampleLine(name, bundle string) TaskResult {
	return TaskResult{Name: name, TaskHash: exampleTask, Status: contract.SessionCompleted, DurationMs: 1200, Actions: 3, Denials: 1, Approvals: 1, Bundle: bundle, HeadHash: exampleHead}
}

// copyBundle copies the example bundle to dir/rel.
func copyBundle(t *testing.T, dir, rel string) {
	t.Helper()
	dst := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(exampleBundle)); err != nil {
		t.Fatal(err)
	}
}

// suiteDir writes a suite directory: a copy of the example bundle per
// task (at each task's bundle), and the index.
func suiteDir(t *testing.T, tasks ...TaskResult) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range tasks {
		for _, b := range bundlesOf(r) {
			copyBundle(t, dir, b)
		}
	}
	idx := testIndex(tasks...)
	if err := WriteIndex(dir, idx); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testIndex is an index of the tasks; a task without a task hash gets the
// example's.
func testIndex(tasks ...TaskResult) Index {
	for i := range tasks {
		if tasks[i].TaskHash == "" {
			tasks[i].TaskHash = exampleTask
		}
	}
	return Index{FormatVersion: FormatVersion, StartedAt: "2026-11-26T21:00:00Z", EndedAt: "2026-11-26T21:00:09.5Z", DurationMs: 9500, Parallel: 2, Tasks: tasks}
}

// TestVerify: a suite whose bundles bear out every line verifies; a
// failed or skipped task verifies as long as its line is consistent; the
// key, when given, is checked on every bundle.
func TestVerify(t *testing.T) {
	tasks := []TaskResult{
		exampleLine("orders.json", "orders/cus_01HZX4K9"),
		exampleLine("again.json", "again/cus_01HZX4K9"),
		{Name: "no-browser.json", Error: "no browser: connection refused"},
		{Name: "later.json", Skipped: true, Error: "suite budget ran out"},
	}
	retried := exampleLine("retried.json", "retried/2")
	retried.Endpoint = "ws://127.0.0.1:3001/"
	retried.Retries = []Retry{{Endpoint: "ws://127.0.0.1:3000/", Error: "browser closed", Bundle: "retried/1"}}
	tasks = append(tasks, retried)
	dir := suiteDir(t, tasks...)
	pub, err := evidence.LoadPublicKey(examplePub)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{PubKey: pub})
	if err != nil {
		t.Fatalf("Verify: %v\n%+v", err, rep)
	}
	if got, want := len(rep.Tasks), len(tasks); got != want {
		t.Fatalf("got %d task checks, want %d", got, want)
	}
	for _, c := range rep.Tasks {
		if !c.Verified || len(c.Problems) > 0 {
			t.Errorf("task %s: %+v", c.Name, c)
		}
	}
	if got, want := rep.Tasks[0].Entries, 27; got != want || !rep.Tasks[0].Sealed {
		t.Errorf("entries: got %d (sealed %v), want %d sealed", got, rep.Tasks[0].Sealed, want)
	}
}

// TestVerifyMismatch: each way the evidence can disagree with the index
// fails the suite, naming the task and what differs; the other tasks
// still verify.
func TestVerifyMismatch(t *testing.T) {
	good := exampleLine("good.json", "good/b")
	tests := []struct {
		name string
		line TaskResult
		// prepare changes the suite directory after it is written.
		prepare func(t *testing.T, dir string)
		want    string
	}{
		{"status", with(func(r *TaskResult) { r.Status, r.Error = contract.SessionFailed, "failed" }), nil,
			`status: the index says "failed", the bundle "completed"`},
		{"head hash", with(func(r *TaskResult) { r.HeadHash = strings.Repeat("0", 64) }), nil,
			`headHash: the index says "` + strings.Repeat("0", 64) + `", the bundle "` + exampleHead + `"`},
		{"actions", with(func(r *TaskResult) { r.Actions = 4 }), nil, `actions: the index says "4", the bundle "3"`},
		{"denials", with(func(r *TaskResult) { r.Denials = 0 }), nil, `denials: the index says "0", the bundle "1"`},
		{"approvals", with(func(r *TaskResult) { r.Approvals = 2 }), nil, `approvals: the index says "2", the bundle "1"`},
		{"missing bundle", with(nil), func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, "t", "b")) },
			"bundle t/b: lstat"},
		{"tampered bundle", with(nil), func(t *testing.T, dir string) {
			p := filepath.Join(dir, "t", "b", "actions.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "pricing", "Pricing", 1)), 0o644)
		}, "bundle t/b does not verify: actions.jsonl line"},
		{"bundle is a symbolic link out", with(nil), func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "t", "b"))
			abs, _ := filepath.Abs(exampleBundle)
			if err := os.Symlink(abs, filepath.Join(dir, "t", "b")); err != nil {
				t.Skip(err)
			}
		}, "is a symbolic link: refused"},
		{"a directory on the way is a symbolic link", with(nil), func(t *testing.T, dir string) {
			out := t.TempDir()
			copyBundle(t, out, "b")
			os.RemoveAll(filepath.Join(dir, "t"))
			if err := os.Symlink(out, filepath.Join(dir, "t")); err != nil {
				t.Skip(err)
			}
		}, "t is a symbolic link: refused"},
		{"a file in the bundle is a symbolic link", with(nil), func(t *testing.T, dir string) {
			p := filepath.Join(dir, "t", "b", "plan.json")
			abs, _ := filepath.Abs(filepath.Join(exampleBundle, "plan.json"))
			os.Remove(p)
			if err := os.Symlink(abs, p); err != nil {
				t.Skip(err)
			}
		}, "only regular files belong in a bundle"},
		{"bundle is a file", with(nil), func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "t", "b"))
			os.WriteFile(filepath.Join(dir, "t", "b"), []byte("x"), 0o644)
		}, "is not a directory"},
		{"status without a bundle", with(func(r *TaskResult) { r.Bundle, r.HeadHash = "", "" }), nil,
			`the index gives status "completed" but no bundle bears it out`},
		{"status without a head hash", with(func(r *TaskResult) { r.HeadHash = "" }), nil,
			`headHash: the index says "", the bundle "` + exampleHead + `"`},
		{"unsealed bundle with a status", with(nil), func(t *testing.T, dir string) { unseal(t, filepath.Join(dir, "t", "b")) },
			`bundle t/b is unsealed (26 intact entries): nothing bears out the index's status "completed"`},
		{"manifest removed", with(nil), func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "t", "b", evidence.FileManifest))
		}, "does not verify"},
		{"another task's hash", with(func(r *TaskResult) { r.TaskHash = strings.Repeat("c", 64) }), nil,
			`taskHash: the index says "` + strings.Repeat("c", 64) + `", the task in bundle t/b hashes to "` + exampleTask + `"`},
		{"attempt's bundle tampered", with(func(r *TaskResult) {
			r.Retries = []Retry{{Endpoint: "ws://127.0.0.1:3000/", Error: "closed", Bundle: "t/a"}}
		}), func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "t", "a", "plan.json"), []byte(`{}`), 0o644)
		}, "attempt 1's bundle t/a:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := suiteDir(t, good, tt.line)
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			rep, err := Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{})
			var me *MismatchError
			if !errors.As(err, &me) {
				t.Fatalf("got %v, want a *MismatchError", err)
			}
			if got, want := me.Failed, 1; got != want {
				t.Errorf("failed: got %d, want %d", got, want)
			}
			if got := err.Error(); !strings.Contains(got, `task "t.json": `) || !strings.Contains(got, tt.want) {
				t.Errorf("error: got %q, want the task named and %q", got, tt.want)
			}
			if !rep.Tasks[0].Verified {
				t.Errorf("the good task failed too: %+v", rep.Tasks[0])
			}
		})
	}
}

// unseal turns a copy of the example into the bundle a writer killed just
// before its seal leaves: the manifest as it started, the ledger without
// its manifest-end entry.
func unseal(t *testing.T, dir string) {
	t.Helper()
	start, err := os.ReadFile(filepath.Join(dir, "provenance", "manifest-start.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, evidence.FileManifest), start, 0o644)
	os.Remove(filepath.Join(dir, "provenance", "manifest-end.json"))
	os.Remove(filepath.Join(dir, "provenance", "seal.dsse.json"))
	ledger, _ := os.ReadFile(filepath.Join(dir, "provenance", "ledger.json"))
	lines := bytes.SplitAfter(ledger, []byte("\n"))
	os.WriteFile(filepath.Join(dir, "provenance", "ledger.json"), bytes.Join(lines[:len(lines)-2], nil), 0o644)
}

// TestVerifyUnsealed: a task whose session was cut short (no status, an
// error) verifies when its unsealed bundle's entries do.
func TestVerifyUnsealed(t *testing.T) {
	line := TaskResult{Name: "cut.json", DurationMs: 10, Bundle: "cut/b", Error: "the server failed"}
	dir := suiteDir(t, line)
	unseal(t, filepath.Join(dir, "cut", "b"))
	rep, err := Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Tasks[0], (TaskCheck{Name: "cut.json", Bundle: "cut/b", Verified: true, Entries: 26}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// with returns the example's line for task t.json at bundle t/b, changed
// by change.
func with(change func(*TaskResult)) TaskResult {
	r := exampleLine("t.json", "t/b")
	if change != nil {
		change(&r)
	}
	return r
}

// TestVerifyUnlisted: a bundle in the suite's directory that the index
// does not list (its line removed) fails the suite.
func TestVerifyUnlisted(t *testing.T) {
	dir := suiteDir(t, exampleLine("a.json", "a/b"))
	copyBundle(t, dir, "removed/b")
	rep, err := Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{})
	var me *MismatchError
	if !errors.As(err, &me) || me.Failed != 0 {
		t.Fatalf("got %v, want a *MismatchError without failed tasks", err)
	}
	if got, want := strings.Join(rep.Problems, "\n"), "bundle removed/b is in the suite's directory but the index does not list it"; got != want {
		t.Errorf("problems: got %q, want %q", got, want)
	}
}

// TestVerifyWrongKey: with a key, a bundle signed by another fails.
func TestVerifyWrongKey(t *testing.T) {
	dir := suiteDir(t, exampleLine("a.json", "a/b"))
	pub, _, err := evidence.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{PubKey: pub})
	var me *MismatchError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("got %v, want the bundle refused", err)
	}
}

// TestVerifyBadIndex: an index that cannot be read or is invalid is an
// error before any bundle is looked at.
func TestVerifyBadIndex(t *testing.T) {
	dir := t.TempDir()
	if _, err := Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: got %v, want os.ErrNotExist", err)
	}
	os.WriteFile(filepath.Join(dir, IndexFile), []byte(`{"formatVersion":"aegis-suite/1"}`), 0o644)
	if _, err := Verify(context.Background(), filepath.Join(dir, IndexFile), VerifyOptions{}); !errors.Is(err, ErrInvalidIndex) {
		t.Errorf("invalid: got %v, want ErrInvalidIndex", err)
	}
}

// TestVerifyCanceled: a canceled verification gives the context's error,
// never a verdict.
func TestVerifyCanceled(t *testing.T) {
	dir := suiteDir(t, exampleLine("a.json", "a/b"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, filepath.Join(dir, IndexFile), VerifyOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
