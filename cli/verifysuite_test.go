package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/suite"
)

// exampleHead is the head hash of the example bundle's seal.
const exampleHead = "6f9aa09b46f64257bbd048a956326d740b8d62f53a833c04e677a0bb1cf50d58"

// writeVerifiedSuite writes a suite directory of two tasks on copies of the
// example bundle (completed: 3 actions, 1 denial, 1 approval) and a task
// that could not start, with its index.
func writeVerifiedSuite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// The example bundle's task, as its manifest records it.
	var m contract.Manifest
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(exampleBundle, "provenance", "manifest-start.json"))), &m); err != nil {
		t.Fatal(err)
	}
	taskHash, err := suite.TaskHash(m.Task)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []suite.TaskResult
	for _, name := range []string{"orders", "account\x1b[2J"} {
		rel := strings.ReplaceAll(name, "\x1b[2J", "") + "/cus_01HZX4K9"
		if err := os.CopyFS(filepath.Join(dir, filepath.FromSlash(rel)), os.DirFS(exampleBundle)); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, suite.TaskResult{Name: name + ".json", TaskHash: taskHash, Status: contract.SessionCompleted, DurationMs: 900,
			Actions: 3, Denials: 1, Approvals: 1, Bundle: rel, HeadHash: exampleHead})
	}
	tasks = append(tasks, suite.TaskResult{Name: "offline.json", TaskHash: taskHash, Error: "no browser: ws://127.0.0.1:1/: connection refused"})
	idx := suite.Index{FormatVersion: suite.FormatVersion, StartedAt: "2026-11-26T21:00:00Z", EndedAt: "2026-11-26T21:00:02Z", DurationMs: 2000, Parallel: 2, Tasks: tasks}
	if err := suite.WriteIndex(dir, idx); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVerifySuiteCommand: aegis verify takes a suite's index or its
// directory, prints a line per task, and exits 1 on any task that does
// not verify, naming it and what differs.
func TestVerifySuiteCommand(t *testing.T) {
	dir := writeVerifiedSuite(t)
	index := filepath.Join(dir, suite.IndexFile)
	for _, arg := range []string{dir, index} {
		code, out, errOut := run(t, "", "verify", "--pubkey", examplePub, arg)
		if code != ExitOK {
			t.Fatalf("verify %s: exit %d\n%s%s", arg, code, out, errOut)
		}
		want := []string{
			"ok    orders.json: completed; actions 3, denials 1, approvals 1; bundle orders/cus_01HZX4K9 sealed, 27 entries, verified",
			"ok    account?[2J.json: completed; actions 3, denials 1, approvals 1; bundle account/cus_01HZX4K9 sealed, 27 entries, verified",
			"ok    offline.json: no session: no browser: ws://127.0.0.1:1/: connection refused",
			index + ": valid: 3 tasks (2 completed, 1 not completed, 0 skipped), every bundle verified and as the index says",
		}
		if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("verify %s: got\n%s\nwant\n%s", arg, out, strings.Join(want, "\n"))
		}
	}

	// The index says more actions than the bundle holds.
	b, _ := os.ReadFile(index)
	os.WriteFile(index, []byte(strings.Replace(string(b), `"actions":3`, `"actions":4`, 1)), 0o644)
	code, out, errOut := run(t, "", "verify", dir)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFailure, out, errOut)
	}
	if want := `FAIL  orders.json: actions: the index says "4", the bundle "3"`; !strings.Contains(errOut, want) {
		t.Errorf("stderr:\n%s\nwant %q", errOut, want)
	}
	if !strings.Contains(out, "ok    account?[2J.json") || strings.Contains(out+errOut, "\x1b") {
		t.Errorf("the other task's line, without escape sequences:\n%s", out)
	}
	if want := "INVALID: suite does not verify: 1 of 3 tasks"; !strings.Contains(errOut, want) {
		t.Errorf("stderr:\n%s\nwant %q", errOut, want)
	}

	// --json: the verdict and each task's check.
	code, out, _ = run(t, "", "verify", "--json", index)
	var res suiteResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != ExitFailure {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if res.Valid || len(res.Tasks) != 3 || res.Tasks[0].Verified || !res.Tasks[1].Verified {
		t.Errorf("--json: got %+v", res)
	}
}

// TestVerifySuiteErrors: an invalid index is invalid (exit 1, every
// problem named); a missing one, or bundle-only flags on a suite, are
// usage errors (exit 2).
func TestVerifySuiteErrors(t *testing.T) {
	dir := writeVerifiedSuite(t)
	index := filepath.Join(dir, suite.IndexFile)
	tests := []struct {
		name string
		doc  string // the index's new content; "" leaves it
		args []string
		code int
		want string
	}{
		{"invalid index", `{"formatVersion":"aegis-suite/1","tasks":[]}`, []string{index}, ExitFailure, "INVALID: suite: " + index + ": invalid suite index: invalid suite-index:"},
		{"bundle outside", strings.Replace(readFile(t, index), `"orders/cus_01HZX4K9"`, `"../cus_01HZX4K9"`, 1), []string{index}, ExitFailure, "/tasks/0/bundle"},
		{"another name", "", []string{"--witness", "file:/x", dir}, ExitUsage, "not a suite"},
		{"proof", "", []string{"--proof", "p.json", index}, ExitUsage, "not a suite"},
	}
	orig := readFile(t, index)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.doc
			if doc == "" {
				doc = orig
			}
			os.WriteFile(index, []byte(doc), 0o644)
			code, out, errOut := run(t, "", append([]string{"verify"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d; stderr %q, want %q\n%s", code, tt.code, errOut, tt.want, out)
			}
		})
	}
	// An index under another name is recognized by its format version.
	other := filepath.Join(dir, "nightly.json")
	os.WriteFile(other, []byte(orig), 0o644)
	if code, out, errOut := run(t, "", "verify", other); code != ExitOK {
		t.Errorf("nightly.json: exit %d\n%s%s", code, out, errOut)
	}
	// A directory without suite.json is still "not an evidence bundle".
	if code, _, errOut := run(t, "", "verify", t.TempDir()); code != ExitUsage || !strings.Contains(errOut, "not an evidence bundle") {
		t.Errorf("empty directory: exit %d, %s", code, errOut)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPrintable: what a suite's verification quotes from the index
// cannot move the terminal (escapes) or reverse a line (bidi overrides).
func TestPrintable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"orders.json", "orders.json"},
		{"a\x1b[2Jb", "a?[2Jb"},
		{"evil\u202ejson.exe", "evil?json.exe"},
		{"x\u2066y\u2069", "x?y?"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
	}
	for _, tt := range tests {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
