package llm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

const testKey = "sk-test-0123456789abcdef"

// newClient returns a client of the fake server whose waits are recorded,
// not slept.
func newClient(t *testing.T, srv *llmtest.Server, mutate ...func(*llm.Config)) (*llm.Client, *[]time.Duration) {
	t.Helper()
	cfg := llm.Config{BaseURL: srv.URL, Model: "test-model", APIKey: testKey, Timeout: 5 * time.Second, MaxRetries: 3}
	for _, f := range mutate {
		f(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, llm.RecordSleeps(c)
}

func planRequest(t *testing.T) llm.Request {
	t.Helper()
	s, err := llm.SchemaFor(schemas.KindPlan)
	if err != nil {
		t.Fatal(err)
	}
	return llm.Request{
		Purpose:  llm.PurposePlan,
		System:   "You plan.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Plan: sign in."}},
		Schema:   s,
	}
}

const validPlan = `{"goal":"sign in","steps":[{"id":"s1","description":"open the login page","successCriteria":"the form shows"}]}`

func TestCompleteValid(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(validPlan))
	c, _ := newClient(t, srv)
	resp, err := c.Complete(context.Background(), planRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if got, want := r.Model, "test-model"; got != want {
		t.Errorf("model = %q, want %q", got, want)
	}
	if got, want := r.Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization = %q, want %q", got, want)
	}
	rf := r.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || !rf.JSONSchema.Strict || rf.JSONSchema.Name != "plan" {
		t.Fatalf("response_format = %+v, want strict json_schema named plan", rf)
	}
	if !json.Valid(rf.JSONSchema.Schema) || !strings.Contains(string(rf.JSONSchema.Schema), `"additionalProperties":false`) {
		t.Errorf("schema sent is not the strict schema: %s", rf.JSONSchema.Schema)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || !strings.HasPrefix(r.Messages[0].Content, "You plan.") || r.Messages[1].Content != "Plan: sign in." {
		t.Errorf("messages = %+v", r.Messages)
	}
	sent := make([]llm.Message, len(r.Messages))
	for i, m := range r.Messages {
		sent[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Content}
	}
	if got, want := resp.PromptHash, llm.PromptHash(sent); got != want {
		t.Errorf("prompt hash = %s, want the hash of the messages sent %s", got, want)
	}
	if resp.Content != validPlan || resp.Model != "fake-model-1" || resp.Attempts != 1 || resp.Mode != llm.StructuredJSONSchema {
		t.Errorf("response = %+v", resp)
	}
	rec := resp.Record(nil)
	want := llm.CallRecord{Purpose: llm.PurposePlan, Model: "fake-model-1", PromptHash: resp.PromptHash, PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150, LatencyMs: rec.LatencyMs, Attempts: 1, Mode: llm.StructuredJSONSchema}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("record = %+v, want %+v", rec, want)
	}
}

func TestPromptHash(t *testing.T) {
	// sha256 of [{"content":"hi","role":"user"}], the RFC 8785 form.
	got := llm.PromptHash([]llm.Message{{Role: llm.RoleUser, Content: "hi"}})
	if got != sha256hex(`[{"content":"hi","role":"user"}]`) {
		t.Errorf("PromptHash = %s, want sha256 of the canonical JSON", got)
	}
	if llm.PromptHash(nil) != sha256hex(`[]`) {
		t.Error("PromptHash(nil) is not the hash of []")
	}
	a := llm.PromptHash([]llm.Message{{Role: llm.RoleUser, Content: "a"}, {Role: llm.RoleUser, Content: "b"}})
	b := llm.PromptHash([]llm.Message{{Role: llm.RoleUser, Content: "b"}, {Role: llm.RoleUser, Content: "a"}})
	if a == b {
		t.Error("message order does not change the hash")
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		replies   []llmtest.Reply
		wantErr   error // nil: success
		wantCalls int
		wantWaits []time.Duration
	}{
		{"503 then ok", []llmtest.Reply{llmtest.Status(503, "overloaded"), llmtest.Answer(validPlan)}, nil, 2,
			[]time.Duration{375 * time.Millisecond}},
		{"500 502 503 504 exhausted", []llmtest.Reply{llmtest.Status(500, "a"), llmtest.Status(502, "b"), llmtest.Status(503, "c"), llmtest.Status(504, "d")}, llm.ErrServer, 4,
			[]time.Duration{375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond}},
		{"429 Retry-After seconds", []llmtest.Reply{llmtest.Status(429, "slow down", "Retry-After: 7"), llmtest.Answer(validPlan)}, nil, 2,
			[]time.Duration{7 * time.Second}},
		{"429 Retry-After-Ms", []llmtest.Reply{llmtest.Status(429, "slow down", "Retry-After-Ms: 1200"), llmtest.Answer(validPlan)}, nil, 2,
			[]time.Duration{1200 * time.Millisecond}},
		{"429 Retry-After capped", []llmtest.Reply{llmtest.Status(429, "slow down", "Retry-After: 3600"), llmtest.Answer(validPlan)}, nil, 2,
			[]time.Duration{llm.DefaultMaxBackoff}},
		{"429 exhausted", []llmtest.Reply{llmtest.Status(429, "x"), llmtest.Status(429, "x"), llmtest.Status(429, "x"), llmtest.Status(429, "x")}, llm.ErrRateLimited, 4,
			[]time.Duration{375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond}},
		{"408 retried", []llmtest.Reply{llmtest.Status(408, "timeout"), llmtest.Answer(validPlan)}, nil, 2, []time.Duration{375 * time.Millisecond}},
		{"400 not retried", []llmtest.Reply{llmtest.Status(400, "bad request")}, &llm.APIError{}, 1, nil},
		{"401 not retried", []llmtest.Reply{llmtest.Status(401, "bad key")}, &llm.APIError{}, 1, nil},
		{"403 not retried", []llmtest.Reply{llmtest.Status(403, "forbidden")}, &llm.APIError{}, 1, nil},
		{"404 not retried", []llmtest.Reply{llmtest.Status(404, "no such model")}, &llm.APIError{}, 1, nil},
		{"422 not retried", []llmtest.Reply{llmtest.Status(422, "unprocessable")}, &llm.APIError{}, 1, nil},
		{"HTML 502 from a proxy", []llmtest.Reply{llmtest.Raw(502, "<html>Bad Gateway</html>"), llmtest.Answer(validPlan)}, nil, 2, []time.Duration{375 * time.Millisecond}},
		{"200 that is not a completion", []llmtest.Reply{llmtest.Raw(200, "<html>hi</html>")}, &llm.APIError{}, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, tc.replies...)
			c, waits := newClient(t, srv)
			resp, err := c.Complete(context.Background(), planRequest(t))
			if got := len(srv.Requests()); got != tc.wantCalls {
				t.Errorf("requests = %d, want %d", got, tc.wantCalls)
			}
			if resp.Attempts != tc.wantCalls {
				t.Errorf("attempts = %d, want %d", resp.Attempts, tc.wantCalls)
			}
			if fmt.Sprint(*waits) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits = %v, want %v", *waits, tc.wantWaits)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %T %v, want *llm.APIError", err, err)
			}
			if ae.Attempts != tc.wantCalls {
				t.Errorf("APIError.Attempts = %d, want %d", ae.Attempts, tc.wantCalls)
			}
			if _, isAPI := tc.wantErr.(*llm.APIError); !isAPI && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("[%d attempt", tc.wantCalls)) {
				t.Errorf("error %q does not say the attempts", err)
			}
		})
	}
}

func TestAPIErrorFields(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Status(503, "engine overloaded"), llmtest.Status(503, "engine overloaded"))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.MaxRetries = -1 })
	_, err := c.Complete(context.Background(), planRequest(t))
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	if ae.Status != 503 || ae.Code != "http_503" || ae.Message != "engine overloaded" || ae.Attempts != 1 {
		t.Errorf("APIError = %+v", ae)
	}
	if want := "llm: chat completion failed: HTTP 503 (http_503): engine overloaded [1 attempt]"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if ae.Unwrap() == nil {
		t.Error("APIError does not wrap go-openai's error")
	}
}

// TestTimeoutRetriedThenError: every attempt times out, on the test's
// clock, once the server has its request.
func TestTimeoutRetriedThenError(t *testing.T) {
	clock := llmtest.NewClock(time.Minute)
	srv := llmtest.NewServer(t)
	srv.Always(llmtest.TimeOut(clock))
	c, waits := newClient(t, srv, func(c *llm.Config) { c.Timeout = time.Minute; c.Clock = clock; c.MaxRetries = 2 })
	resp, err := c.Complete(context.Background(), planRequest(t))
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Attempts != 3 || ae.Code != llm.CodeTimeout {
		t.Errorf("APIError = %+v, want 3 attempts, code timeout", ae)
	}
	if got := len(srv.Requests()); got != 3 || resp.Attempts != 3 || len(*waits) != 2 {
		t.Errorf("requests = %d, attempts = %d, waits = %v; want 3, 3, 2 waits", got, resp.Attempts, *waits)
	}
	if want := "no answer within 1m0s"; ae == nil || ae.Message != want {
		t.Errorf("message = %q, want %q", ae.Message, want)
	}
}

// TestTimeoutWallClock: the default clock is the system's; an attempt is
// cut at Config.Timeout (the one test of the real timer: it checks only
// that the attempt ends, not how many requests raced in).
func TestTimeoutWallClock(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Always(llmtest.Delay(time.Minute, llmtest.Answer(validPlan)))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.Timeout = 50 * time.Millisecond; c.MaxRetries = -1 })
	start := time.Now()
	_, err := c.Complete(context.Background(), planRequest(t))
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v: the attempt was not cut at the timeout", d)
	}
}

func TestTimeoutThenSuccess(t *testing.T) {
	clock := llmtest.NewClock(time.Minute)
	srv := llmtest.NewServer(t, llmtest.TimeOut(clock), llmtest.Answer(validPlan))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.Timeout = time.Minute; c.Clock = clock })
	resp, err := c.Complete(context.Background(), planRequest(t))
	if err != nil || resp.Attempts != 2 || resp.Content != validPlan {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
}

// TestContextCanceledStopsRetries: a cancel during the backoff wait ends
// the call at once; the error says the last failure. The wait is held on
// the test's clock, so only the cancel can end it.
func TestContextCanceledStopsRetries(t *testing.T) {
	clock := llmtest.NewClock(time.Second)
	srv := llmtest.NewServer(t)
	srv.Always(llmtest.Status(503, "down"))
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "m", MaxRetries: 10, Backoff: 10 * time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	req := planRequest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, req)
		done <- err
	}()
	clock.Await(t, 2) // the first attempt's timeout, then the backoff wait
	cancel()
	err = <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("err %q does not say the last failure", err)
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

func TestDeadlineShorterThanBackoffFailsAtOnce(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Status(429, "later", "Retry-After: 30"))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.MaxBackoff = time.Minute })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // shorter than the 30 s asked for
	defer cancel()
	_, err := c.Complete(ctx, planRequest(t))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 429 || ae.RetryAfter != 30*time.Second {
		t.Fatalf("err = %v, want the 429 at once", err)
	}
}

func TestFallbackToJSONObject(t *testing.T) {
	srv := llmtest.NewServer(t,
		llmtest.Status(400, "response_format json_schema is not supported by this model"),
		llmtest.Answer(validPlan),
		llmtest.Answer(validPlan),
	)
	c, waits := newClient(t, srv)
	req := planRequest(t)
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Mode != llm.StructuredJSONObject || resp.Attempts != 2 || len(*waits) != 0 {
		t.Errorf("resp = %+v, waits %v; want json_object after 2 attempts, no wait", resp, *waits)
	}
	if c.Mode() != llm.StructuredJSONObject {
		t.Errorf("Mode() = %s, want the fallback remembered", c.Mode())
	}
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d, want 3", len(reqs))
	}
	if reqs[0].ResponseFormat.Type != "json_schema" {
		t.Errorf("first request format = %s", reqs[0].ResponseFormat.Type)
	}
	for _, r := range reqs[1:] {
		if r.ResponseFormat == nil || r.ResponseFormat.Type != "json_object" || r.ResponseFormat.JSONSchema != nil {
			t.Errorf("fallback request format = %+v, want json_object", r.ResponseFormat)
		}
		sys := r.Messages[0].Content
		if !strings.Contains(sys, "JSON Schema") || !strings.Contains(sys, string(req.Schema.Doc)) {
			t.Errorf("the json_object system prompt does not carry the schema")
		}
	}
}

func TestNoFallbackWhenJSONSchemaForced(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Status(400, "Unknown parameter: response_format.json_schema"))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.StructuredOutput = llm.StructuredJSONSchema })
	_, err := c.Complete(context.Background(), planRequest(t))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want the 400 at once", err, len(srv.Requests()))
	}
}

func TestJSONObjectMode(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(validPlan))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.StructuredOutput = llm.StructuredJSONObject })
	if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
		t.Fatal(err)
	}
	if rf := srv.Requests()[0].ResponseFormat; rf == nil || rf.Type != "json_object" {
		t.Errorf("response_format = %+v", rf)
	}
}

func TestGuardRefusesBeforeSending(t *testing.T) {
	set, err := secrets.NewSet(map[string]string{"PASSWORD": `hunter2"<&>`})
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, llmtest.Answer(validPlan))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.Guard = set.Guard() })
	req := planRequest(t)
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: `the page says: hunter2"<&>`})
	resp, err := c.Complete(context.Background(), req)
	var ge *llm.GuardError
	if !errors.As(err, &ge) || !errors.Is(err, secrets.ErrLeak) {
		t.Fatalf("err = %v, want a *GuardError wrapping a leak", err)
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "PASSWORD") {
		t.Errorf("error %q must name the secret, not show it", err)
	}
	if n := len(srv.Requests()); n != 0 || resp.Attempts != 1 {
		t.Errorf("the server got %d requests; want none", n)
	}
	// A clean request passes the same guard.
	if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
		t.Fatalf("clean request: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
	for _, r := range srv.Requests() {
		if err := set.Guard()(r.Raw); err != nil {
			t.Errorf("a body that reached the server holds a secret: %v", err)
		}
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
	}{
		{"JSON error echoing the key", llmtest.Status(401, "Incorrect API key provided: "+testKey)},
		{"plain body echoing the key", llmtest.Raw(403, "forbidden for key "+testKey)},
		{"500 echoing the key", llmtest.Status(500, "oops "+testKey)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Always(tc.reply)
			c, _ := newClient(t, srv)
			resp, err := c.Complete(context.Background(), planRequest(t))
			if err == nil {
				t.Fatal("no error")
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), testKey) {
					t.Errorf("error %T holds the key: %q", e, e.Error())
				}
			}
			if s := fmt.Sprintf("%v %+v %#v", err, err, resp.Record(err)); strings.Contains(s, testKey) {
				t.Errorf("formatted error holds the key: %s", s)
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("error %q does not show the redaction", err)
			}
		})
	}
}

func TestConfigNeverPrintsKey(t *testing.T) {
	cfg := llm.Config{Model: "m", APIKey: testKey}
	for _, s := range []string{
		fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s|%q|%x|%d", cfg.APIKey, cfg.APIKey, cfg.APIKey, cfg.APIKey),
	} {
		if strings.Contains(s, testKey) || strings.Contains(s, "30313233") {
			t.Errorf("formatted config holds the key: %s", s)
		}
	}
	b, _ := json.Marshal(cfg)
	if strings.Contains(string(b), testKey) {
		t.Errorf("JSON config holds the key: %s", b)
	}
}

func TestLoadAPIKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		file    string
		env     string
		want    llm.Key
		wantErr string
	}{
		{"env", "", " sk-env \n", "sk-env", ""},
		{"no key at all", "", "", "", ""},
		{"file 0600", write("ok", "sk-file\n", 0o600), "sk-env", "sk-file", ""},
		{"file 0400", write("ro", "sk-ro", 0o400), "", "sk-ro", ""},
		{"file 0644", write("world", "sk-world", 0o644), "", "", "accessible by group or others (mode 0644)"},
		{"file 0640", write("group", "sk-group", 0o640), "", "", "accessible by group or others"},
		{"file 0602", write("otherw", "sk-w", 0o602), "", "", "accessible by group or others"},
		{"empty file", write("empty", " \n", 0o600), "", "", "is empty"},
		{"two lines", write("two", "a\nb\n", 0o600), "", "", "more than one line"},
		{"missing file", filepath.Join(dir, "nope"), "", "", "no such file"},
		{"directory", dir, "", "", "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(llm.EnvAPIKey, tc.env)
			got, err := llm.LoadAPIKey(tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "sk-") {
					t.Errorf("error %q holds the key", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("LoadAPIKey = %q, %v; want %q", string(got), err, string(tc.want))
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	srv := llmtest.NewServer(t)
	c, _ := newClient(t, srv, func(c *llm.Config) { c.Backoff = 100 * time.Millisecond; c.MaxBackoff = time.Second })
	tests := []struct {
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 75 * time.Millisecond},
		{2, 0, 150 * time.Millisecond},
		{3, 0, 300 * time.Millisecond},
		{4, 0, 600 * time.Millisecond},
		{5, 0, 750 * time.Millisecond}, // capped at 1s, then jittered
		{50, 0, 750 * time.Millisecond},
		{1, 300 * time.Millisecond, 300 * time.Millisecond},
		{1, time.Hour, time.Second},
	}
	for _, tc := range tests {
		if got := c.Backoff(tc.n, tc.retryAfter); got != tc.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tc.n, tc.retryAfter, got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header []string
		want   time.Duration
	}{
		{nil, 0},
		{[]string{"Retry-After", "3"}, 3 * time.Second},
		{[]string{"Retry-After", "0.5"}, 500 * time.Millisecond},
		{[]string{"Retry-After", "-1"}, 0},
		{[]string{"Retry-After", "soon"}, 0},
		{[]string{"Retry-After", now.Add(10 * time.Second).Format(http.TimeFormat)}, 10 * time.Second},
		{[]string{"Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{[]string{"Retry-After-Ms", "250", "Retry-After", "9"}, 250 * time.Millisecond},
	}
	for _, tc := range tests {
		h := http.Header{}
		for i := 0; i+1 < len(tc.header); i += 2 {
			h.Set(tc.header[i], tc.header[i+1])
		}
		if got := llm.ParseRetryAfter(h, now); got != tc.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestResponseTooLarge(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(strings.Repeat("x", 4096)))
	c, _ := newClient(t, srv, func(c *llm.Config) { c.MaxResponseBytes = 1024 })
	_, err := c.Complete(context.Background(), planRequest(t))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Code != "response_too_large" || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v, want response_too_large, not retried", err)
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	srv := llmtest.NewServer(t)
	url := srv.URL
	c, err := llm.New(llm.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	waits := llm.RecordSleeps(c)
	_, err = c.Complete(context.Background(), planRequest(t))
	if !errors.Is(err, llm.ErrNetwork) || len(*waits) != 2 {
		t.Fatalf("err = %v after waits %v, want ErrNetwork after 2 retries (server %s unused)", err, *waits, url)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []llm.Config{
		{},
		{Model: "m", BaseURL: "ftp://x"},
		{Model: "m", StructuredOutput: "yaml"},
		{Model: "m", APIKey: "a\nb"},
	} {
		if _, err := llm.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestAzure(t *testing.T) {
	var gotPath, gotVersion, gotKey, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotVersion = r.URL.Path, r.URL.Query().Get("api-version")
		gotKey, gotAuth = r.Header.Get("api-key"), r.Header.Get("Authorization")
		llmtest.Answer(validPlan)(w, &llmtest.Request{})
	}))
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "gpt-4o.prod", APIKey: testKey, Azure: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), planRequest(t)); err != nil {
		t.Fatal(err)
	}
	if gotPath != "/openai/deployments/gpt-4o.prod/chat/completions" || gotVersion != llm.DefaultAzureAPIVersion || gotKey != testKey || gotAuth != "" {
		t.Errorf("Azure request: path %q, api-version %q, api-key set %v, Authorization %q", gotPath, gotVersion, gotKey == testKey, gotAuth)
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestRefusedBeforeSendingNotRetried(t *testing.T) {
	srv := llmtest.NewServer(t)
	// go-openai refuses max_tokens-style parameters for reasoning models
	// before sending anything.
	temp := float32(0.2)
	c, waits := newClient(t, srv, func(c *llm.Config) { c.Model = "o1-mini"; c.Temperature = &temp })
	_, err := c.Complete(context.Background(), planRequest(t))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Code != "invalid_request" || len(*waits) != 0 || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, waits %v, requests %d; want invalid_request at once", err, *waits, len(srv.Requests()))
	}
}
