package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// egressSecret has what every escaping changes: a quote, a backslash, a
// space, an ampersand, a plus.
const egressSecret = `Cl1-s3cret "q\z" &+ 42x`

// hostilePages echo what is typed into the password field: as it is and
// spaced out, and, after a GET sign-in form put it in the URL, from the
// query into the welcome page.
var hostilePages = map[string]string{
	"/login": `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head><body>
<form action="welcome" method="get"><label for="password">Password</label>
<input type="password" id="password" name="pw" autocomplete="current-password"
 oninput="document.getElementById('m').textContent='You typed: '+this.value;document.getElementById('s').textContent=[...this.value].join(' ')">
<button id="go">Sign in</button></form><p id="m"></p><p id="s"></p></body></html>`,
	"/welcome": `<!doctype html><html><head><meta charset="utf-8"><title>Welcome</title></head><body>
<p id="m"></p><script>document.getElementById('m').textContent='Welcome, your password is '+new URLSearchParams(location.search).get('pw')</script></body></html>`,
}

// TestRunEgress: "aegis run" against a page that echoes the secret typed
// into it (as it is, spaced out, in the URL of a GET sign-in form, in
// the text the model then extracts) prints it in no form on stdout or
// stderr; the output's lastUrl holds the placeholder, and the extract is
// refused.
func TestRunEgress(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := hostilePages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	defer site.Close()
	steps := []string{
		`{"id":"t1","type":"type","reason":"sign in","policyTags":[],"selector":"#password","text":"{{secret:PW}}","redact":true}`,
		`{"id":"c1","type":"click","reason":"sign in","policyTags":[],"selector":"#go"}`,
		`{"id":"x1","type":"extract","reason":"read the welcome","policyTags":[],"selector":"#m","extract":"text"}`,
	}
	model := llmtest.NewServer(t)
	var mu sync.Mutex
	n := 0
	model.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.Answer(`{"goal":"sign in","steps":[{"id":"s1","description":"sign in","successCriteria":"welcome shown"}]}`)(w, r)
			return
		}
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i < len(steps) {
			llmtest.Answer(`{"actions":[`+steps[i]+`],"status":"continue","summary":"working"}`)(w, r)
			return
		}
		llmtest.Answer(`{"actions":[{"id":"w1","type":"wait","reason":"done","policyTags":[],"durationMs":1}],"status":"done","summary":"signed in"}`)(w, r)
	})

	o := runOptions{driver: string(contract.ModePlaywright), preset: DefaultPreset, evidence: t.TempDir(), baseURL: model.URL, model: "fake",
		json: false, approvalWait: session.DefaultApprovalTimeout}
	max := 10
	in := contract.Input{Goal: "Sign in", URLs: []string{site.URL + "/login"}, MaxActions: &max}
	approveAll := session.ApproverFunc(func(context.Context, session.ApprovalRequest) (session.ApprovalAnswer, error) {
		return session.ApprovalAnswer{Approved: true, Approver: "test"}, nil
	})
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := runSession(ctx, &o, in, approveAll, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, &sessionHooks{secrets: map[string]string{"PW": egressSecret}})
	code := finish(Stdio{Out: &out, Err: &errb}, err)
	stdout, stderr := out.String(), errb.String()
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	for name, s := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if why := holdsSecret(s, egressSecret); why != "" {
			t.Errorf("%s holds the secret (%s)", name, why)
		}
	}
	var res struct {
		LastURL string `json:"lastUrl"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not the output: %v", err)
	}
	if last := res.LastURL; !strings.Contains(last, "/welcome?pw="+secrets.Placeholder("PW")) {
		t.Errorf("lastUrl %q, want the placeholder in its query", last)
	}
	if !strings.Contains(stderr, "extract text #m") || !strings.Contains(stderr, "holds the value of secret PW") {
		t.Errorf("stderr does not say the extract was refused")
	}
	if n < len(steps) {
		t.Errorf("the model was asked %d times, want at least %d", n, len(steps))
	}
}

// holdsSecret says how s holds value: in one of its encodings, or spelled
// out by its letters and digits once JSON escapes are undone; "" when it
// does not.
func holdsSecret(s, value string) string {
	for _, f := range secrets.Forms(value) {
		if strings.Contains(s, f) {
			return fmt.Sprintf("encoded form %d", len(f))
		}
	}
	n := secrets.Normalize(value)
	unescaped := strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">", `\"`, `"`, `\\`, `\`).Replace(s)
	for _, x := range []string{s, unescaped} {
		if strings.Contains(secrets.Normalize(x), n) {
			return "spelled out"
		}
	}
	return ""
}

// TestFilterStdio: what a session prints, an error included, passes the
// egress filter; an error keeps its exit code.
func TestFilterStdio(t *testing.T) {
	set, err := secrets.NewSet(map[string]string{"PW": egressSecret})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	stdio, flush := filterStdio(Stdio{Out: &out, Err: &errb}, set)
	fmt.Fprintf(stdio.Out, "value %s\n", egressSecret)
	fmt.Fprintf(stdio.Err, "spaced %s", strings.Join(strings.Split(egressSecret, ""), " "))
	flush()
	e := redactError(set, exitCode(ExitSessionFailed, fmt.Errorf("driver: typed %q", egressSecret)))
	code := finish(Stdio{Out: &out, Err: &errb}, e)
	if code != ExitSessionFailed {
		t.Errorf("exit %d, want %d", code, ExitSessionFailed)
	}
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
		if why := holdsSecret(s, egressSecret); why != "" {
			t.Errorf("%s %q holds the secret (%s)", name, s, why)
		}
		if !strings.Contains(s, secrets.Placeholder("PW")) {
			t.Errorf("%s %q lacks the placeholder", name, s)
		}
	}
}
