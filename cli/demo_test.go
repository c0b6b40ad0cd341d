package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/llm/llmtest"
)

func TestDemoServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"demo", "--serve", "127.0.0.1:0"}, Stdio{Out: pw, Err: &errb})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read URL: %v", err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "aegis demo site: "))
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the site's URL", line)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	resp, err := http.Get(url + "login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `type="password"`) {
		t.Errorf("GET /login does not serve the sign-in form")
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit code %d after interrupt, want 0 (stderr %q)", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demo did not stop when interrupted")
	}
}

func TestDemoUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"demo", "extra"}, ExitUsage},
		{[]string{"demo", "--agent", "script"}, ExitUsage},
		{[]string{"demo", "--approve", "maybe"}, ExitUsage},
		{[]string{"demo", "--approve", "ask"}, ExitUsage}, // stdin is no terminal
		{[]string{"demo", "--preset", "reckless"}, ExitUsage},
		{[]string{"demo", "--bogus"}, ExitUsage},
		{[]string{"demo", "-h"}, ExitOK},
		{[]string{"demo", "--serve", "256.0.0.1:bad"}, ExitFailure},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if got := Run(context.Background(), tt.args, Stdio{Out: &out, Err: &errb}); got != tt.want {
			t.Errorf("aegis %v = %d, want %d (stderr %q)", tt.args, got, tt.want, errb.String())
		}
	}
}

// TestDemoRun is "make demo" in-process: the full demo completes, prints
// its summary, and leaves one bundle that verifies and holds the password
// nowhere.
func TestDemoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := Run(ctx, []string{"demo", "--evidence", dir}, Stdio{Out: &out, Err: &errb})
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"aegis demo: completed", "1 approved", "A-1003 | 2026-01-19 | Shipped", "verify:    valid: sealed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), "step 3/40  type #password") {
		t.Errorf("no progress lines:\n%s", errb.String())
	}
	bundles, _ := os.ReadDir(dir)
	if len(bundles) != 1 {
		t.Fatalf("%d bundles", len(bundles))
	}
	bundle := filepath.Join(dir, bundles[0].Name())
	rep, err := evidence.Verify(context.Background(), bundle, evidence.VerifyOptions{})
	if err != nil || rep.Status != "completed" {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	if strings.Contains(out.String()+errb.String(), demoPassword) {
		t.Errorf("the password was printed")
	}
	_ = filepath.WalkDir(bundle, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(demoPassword)) {
				t.Errorf("the password is in %s", p)
			}
		}
		return nil
	})
}

// TestDemoDenied: without approvals the demo signs in (its secret is typed
// where it is bound, without approval) but cannot place the order: the
// --approve=deny rule refused it, so it fails (exit 6; a person's refusal
// would abort it), saying that rule refused what, and its bundle still
// verifies.
func TestDemoDenied(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"demo", "--evidence", dir, "--approve", "deny"}, Stdio{Out: &out, Err: &errb})
	if code != ExitSessionFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitSessionFailed, out.String(), errb.String())
	}
	for _, want := range []string{"aegis demo: failed", `denied by the --approve=deny rule (no person was asked): click #submit "Place order"`, "1 denied", "verify:    valid"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{`type #password "Password" (redacted text)  allowed (medium)`, `click #submit "Place order"  DENIED (high): approval_denied`} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

// TestDemoLLM: with a model configured, the demo runs the LLM agents (a
// fake Ollama here, checked against a model registry, as README's "Local
// models" runs it) and completes; the password never reaches the model.
func TestDemoLLM(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	site := regexp.MustCompile(`"activeUrl":"(http://127\.0\.0\.1:\d+)`)
	act := func(id, typ, rest string) string {
		return `{"id":"` + id + `","type":"` + typ + `","reason":"demo","policyTags":[]` + rest + `}`
	}
	const model = "llama3.1:8b"
	srv := llmtest.NewDialect(t, llmtest.Ollama, llmtest.Served{ID: model, Digest: ollamaDigest})
	var mu sync.Mutex
	n := 0
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Ollama.Answer(`{"goal":"x","steps":[{"id":"s1","description":"sign in, order, list","successCriteria":"orders extracted"}]}`, 900, 40)(w, r)
			return
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		base := ""
		if m := site.FindStringSubmatch(r.Last()); m != nil {
			base = m[1]
		}
		batches := []struct{ status, actions string }{
			{"continue", act("a1", "type", `,"selector":"#username","text":"demo","redact":false`) + "," + act("a2", "type", `,"selector":"#password","text":"{{secret:DEMO_PASSWORD}}","redact":true`) + "," + act("a3", "click", `,"selector":"#sign-in"`)},
			{"continue", act("b1", "navigate", `,"url":"`+base+`/form"`)},
			{"continue", act("c1", "type", `,"selector":"#name","text":"Ada Lovelace","redact":false`) + "," + act("c2", "select", `,"selector":"#shipping","value":"express"`) + "," + act("c3", "click", `,"selector":"#gift"`)},
			{"continue", act("d1", "click", `,"selector":"#submit"`)},
			{"continue", act("e1", "navigate", `,"url":"`+base+`/orders"`)},
			{"done", act("f1", "extract", `,"extract":"table","selector":"#orders"`)},
		}
		b := batches[min(i, len(batches)-1)]
		llmtest.Ollama.Answer(`{"actions":[`+b.actions+`],"status":"`+b.status+`","summary":"demo step"}`, 1500, 120)(w, r)
	})
	var out, errb bytes.Buffer
	reg := writeRegistry(t, srv.URL, model, ollamaDigest)
	code := Run(context.Background(), []string{"demo", "--evidence", t.TempDir(), "--llm-base-url", srv.URL, "--model", model, "--model-registry", reg}, Stdio{Out: &out, Err: &errb})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "agent:     llm") || !strings.Contains(out.String(), "A-1002") || !strings.Contains(out.String(), "verify:    valid") {
		t.Errorf("summary:\n%s", out.String())
	}
	for i, r := range srv.Requests() {
		if bytes.Contains(r.Raw, []byte(demoPassword)) {
			t.Errorf("request %d holds the password", i)
		}
	}
}
