package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/schemas"
)

func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunUsage(t *testing.T) {
	t.Setenv(EnvModel, "")
	steps := writeFile(t, "task.json", `{"goal":"read","urls":["https://example.com/"],"hints":{"steps":["extract text"]}}`, 0o644)
	bare := writeFile(t, "bare.json", `{"goal":"read","urls":["https://example.com/"]}`, 0o644)
	invalid := writeFile(t, "bad.json", `{"goal":"","urls":[]}`, 0o644)
	open := writeFile(t, "secrets", "PW=abcdefgh\n", 0o644)
	key := writeFile(t, "key", "sk-test\n", 0o644)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"nothing", []string{"run"}, "needs a TASK.json, or --goal"},
		{"two tasks", []string{"run", steps, bare}, "one TASK.json"},
		{"task and goal", []string{"run", steps, "--goal", "x"}, "not both"},
		{"goal without url", []string{"run", "--goal", "x"}, "needs a TASK.json, or --goal"},
		{"missing file", []string{"run", filepath.Join(t.TempDir(), "none.json")}, "no such file"},
		{"invalid task", []string{"run", invalid}, "not a valid task"},
		{"budget too big", []string{"run", "--max-actions", "500", steps}, "--max-actions 500: want 1 to 200"},
		{"duration too short", []string{"run", "--max-duration", "10ms", steps}, "--max-duration 10ms: want 1s to 30m0s"},
		{"bad url", []string{"run", "--goal", "x", "--url", "not a url"}, "--url not a url: not an absolute URL"},
		{"no agent", []string{"run", bare}, "no agent"},
		{"llm without model", []string{"run", "--agent", "llm", steps}, "needs a model"},
		{"unknown agent", []string{"run", "--agent", "magic", steps}, "unknown --agent"},
		{"steps without steps", []string{"run", "--agent", "steps", bare}, "hints"},
		{"bad driver", []string{"run", "--driver", "extension", steps}, "want sandbox or playwright"},
		{"bad preset", []string{"run", "--preset", "yolo", steps}, "want power, balanced"},
		{"bad approve", []string{"run", "--approve", "always", steps}, "unknown approve mode"},
		{"ask without terminal", []string{"run", "--approve", "ask", steps}, "needs an interactive terminal"},
		{"open secrets file", []string{"run", "--secrets-file", open, steps}, "chmod 600"},
		{"open key file", []string{"run", "--model", "m", "--llm-key-file", key, steps}, "chmod 600"},
		{"policy and opa", []string{"run", "--policy", ".", "--opa-url", "http://127.0.0.1:1", steps}, "exclusive"},
		{"bad policy", []string{"run", "--policy", filepath.Join(t.TempDir(), "nope"), steps}, "policy"},
		{"bad flag", []string{"run", "--bogus"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := Run(context.Background(), tt.args, Stdio{Out: &out, Err: &errb}); got != ExitUsage {
				t.Errorf("exit %d, want %d; stderr %q", got, ExitUsage, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q", out.String())
			}
		})
	}
	var out, errb bytes.Buffer
	if got := Run(context.Background(), []string{"help", "run"}, Stdio{Out: &out, Err: &errb}); got != ExitOK || !strings.Contains(out.String(), "Exit status: 0 completed, 3 aborted") || errb.Len() != 0 {
		t.Errorf("help run: %d, stdout %q, stderr %q", got, out.String(), errb.String())
	}
}

func TestStatusExit(t *testing.T) {
	tests := []struct {
		s    contract.SessionStatus
		want int
	}{
		{contract.SessionCompleted, 0},
		{contract.SessionAborted, 3},
		{contract.SessionDurationExceeded, 4},
		{contract.SessionActionLimitExceeded, 5},
		{contract.SessionFailed, 6},
		{"", 6},
	}
	for _, tt := range tests {
		if got := statusExit(tt.s); got != tt.want {
			t.Errorf("%q: %d, want %d", tt.s, got, tt.want)
		}
	}
}

// demoSite serves the demo shop for a test.
func demoSite(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	s, err := demosite.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.URL()
}

// runOutput runs aegis and decodes the output JSON of stdout.
func runOutput(t *testing.T, args ...string) (int, contract.Output, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := Run(ctx, args, Stdio{Out: &out, Err: &errb})
	var o contract.Output
	if err := contract.Decode(schemas.KindOutput, out.Bytes(), &o); err != nil {
		t.Fatalf("exit %d; stdout is not an output: %v\nstdout:\n%s\nstderr:\n%s", code, err, out.String(), errb.String())
	}
	return code, o, errb.String()
}

func verifyOutput(t *testing.T, o contract.Output) string {
	t.Helper()
	var ev struct {
		Dir      string `json:"dir"`
		Sealed   bool   `json:"sealed"`
		HeadHash string `json:"headHash"`
	}
	if err := json.Unmarshal(o.Evidence, &ev); err != nil || !ev.Sealed {
		t.Fatalf("evidence %s: %v", o.Evidence, err)
	}
	rep, err := evidence.Verify(context.Background(), ev.Dir, evidence.VerifyOptions{})
	if err != nil || rep.HeadHash != ev.HeadHash {
		t.Fatalf("verify %s: %v", ev.Dir, err)
	}
	return ev.Dir
}

// TestRunSteps: a steps task from TASK.json with a secret from a secrets
// file completes (exit 0, the output on stdout, progress on stderr); the
// secret mixed with other text is denied (exit 6); the same with a budget
// too small ends with exit 5; a denied step with 6.
func TestRunSteps(t *testing.T) {
	site := demoSite(t)
	secretsFile := writeFile(t, "secrets", "# the shop\nSHOP_PASSWORD=run-test-Pa55-9d1e\n", 0o600)
	taskFile := writeFile(t, "task.json", `{"goal":"Sign in","urls":["`+site+`/login"],"hints":{"steps":[
		"type \"bob\" into \"Username\"",
		"type \"{{secret:SHOP_PASSWORD}}\" into \"Password\"",
		"click \"Sign in\"",
		"expect \"Signed in as bob\""]}}`, 0o644)
	ev := t.TempDir()
	code, o, stderr := runOutput(t, "run", "--evidence", ev, "--secrets-file", secretsFile, "--approve", "low-and-medium-only", "--preset", "developer", taskFile)
	// developer = power: the secret, declared without origins, is bound to
	// the task's first origin, and typing it into the password field there
	// is medium risk (secret_typed): low-and-medium-only lets it through.
	if code != ExitOK || o.Status != contract.SessionCompleted {
		t.Fatalf("exit %d, output %+v\n%s", code, o, stderr)
	}
	if !strings.Contains(stderr, "step 3/50  type #password \"Password\" (redacted text)  allowed (medium)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	verifyOutput(t, o)
	// The secret with text of the agent's own appended is not what the
	// secret was declared for: denied (secret_misdirected).
	invented := writeFile(t, "invented.json", `{"goal":"Sign in","urls":["`+site+`/login"],"hints":{"steps":[
		"type \"bob\" into \"Username\"",
		"type \"{{secret:SHOP_PASSWORD}}x\" into \"Password\""]}}`, 0o644)
	code, o, stderr = runOutput(t, "run", "--evidence", ev, "--secrets-file", secretsFile, "--approve", "low-and-medium-only", "--preset", "developer", invented)
	if code != ExitSessionFailed || string(o.Extra["endStatus"]) != `"failed"` || o.Status != contract.SessionAborted {
		t.Fatalf("exit %d, output %+v\n%s", code, o, stderr)
	}
	if !strings.Contains(stderr, "step 3/50  type #password \"Password\" (redacted text)  DENIED (high): secret_misdirected") {
		t.Errorf("stderr:\n%s", stderr)
	}
	verifyOutput(t, o)

	t.Setenv("AEGIS_SECRET_SHOP_PASSWORD", "from-the-env-Pa55")
	code, o, stderr = runOutput(t, "run", "--evidence", ev, "--secrets-file", secretsFile, "--preset", "balanced", "--approve", "deny", taskFile)
	if code != ExitSessionFailed || !strings.Contains(stderr, "step 1/50  navigate "+site+"/login  DENIED (medium): approval_denied") {
		t.Errorf("balanced preset without approvals: exit %d\n%s", code, stderr)
	}

	code, o, stderr = runOutput(t, "run", "--evidence", ev, "--max-actions", "2", "--json", taskFile)
	if code != ExitActionLimitExceeded || o.Status != contract.SessionActionLimitExceeded || o.ActionsExecuted != 2 {
		t.Errorf("budget: exit %d, output %+v\n%s", code, o, stderr)
	}
	dir := verifyOutput(t, o)
	if !strings.HasPrefix(dir, ev) {
		t.Errorf("bundle %s outside --evidence %s", dir, ev)
	}
}

// TestRunLLM: --goal and --url with a model configured by flags: the LLM
// agents complete the task against a fake endpoint; --json prints one
// line.
func TestRunLLM(t *testing.T) {
	site := demoSite(t)
	srv := llmtest.NewServer(t)
	var mu sync.Mutex
	n := 0
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"x","steps":[{"id":"s1","description":"read the orders","successCriteria":"table extracted"}]}`)(w, r)
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		llmtest.Answer(`{"actions":[{"id":"e1","type":"extract","reason":"read","policyTags":[],"extract":"table","selector":"#orders"}],"status":"done","summary":"read the orders table"}`)(w, r)
	})
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"run", "--evidence", t.TempDir(), "--json", "--llm-base-url", srv.URL, "--model", "fake", "--goal", "List my orders", "--url", site + "/orders"}, Stdio{Out: &out, Err: &errb})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("--json output is not one line: %q", out.String())
	}
	var o contract.Output
	if err := contract.Decode(schemas.KindOutput, out.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	if o.Summary != "read the orders table" || o.ActionsExecuted != 2 || !strings.Contains(string(o.Extra["artifacts"]), "A-1004") {
		t.Errorf("output %s", out.String())
	}
	verifyOutput(t, o)
	if n != 1 {
		t.Errorf("%d navigator requests", n)
	}
}

// TestRunLLMTokenBudget: --max-tokens bounds the model calls of a run: the
// progress lines show the tokens used of the budget, and the call that
// passes it ends the run aborted (exit 3), the budget named, the budget
// recorded in the task's hints.
func TestRunLLMTokenBudget(t *testing.T) {
	site := demoSite(t)
	srv := llmtest.NewServer(t)
	usage := map[string]int{"prompt_tokens": 1, "completion_tokens": 899, "total_tokens": 900}
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.WriteCompletion(w, "fake", `{"goal":"x","steps":[{"id":"s1","description":"wait","successCriteria":"waited"}]}`, usage)
			return
		}
		llmtest.WriteCompletion(w, "fake", `{"actions":[{"id":"w1","type":"wait","reason":"wait","policyTags":[],"durationMs":1}],"status":"continue","summary":"waiting"}`, usage)
	})
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"run", "--evidence", t.TempDir(), "--json", "--max-tokens", "3000", "--llm-base-url", srv.URL, "--model", "fake", "--goal", "Wait", "--url", site + "/orders"}, Stdio{Out: &out, Err: &errb})
	if code != ExitAborted {
		t.Fatalf("exit %d, want %d\n%s", code, ExitAborted, errb.String())
	}
	for _, want := range []string{"tokens 1,800/3,000\n", "tokens 2,700/3,000\n", "tokens 3,600/3,000; evidence", "why: aborted after 3 actions: the token budget (maxTokens 3,000) was passed: 3,600 tokens used"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	var o contract.Output
	if err := contract.Decode(schemas.KindOutput, out.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	if o.Status != contract.SessionAborted || len(srv.Requests()) != 4 {
		t.Errorf("status %s after %d model requests, want aborted after 4", o.Status, len(srv.Requests()))
	}
	verifyOutput(t, o)
}
