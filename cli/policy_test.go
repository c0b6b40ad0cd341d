package cli

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/policy"
	"github.com/aegis-run/aegis/schemas"
)

const seedInput = "../gate/testdata/seed-001-input.json"

// decodeRecord parses stdout as a schema-valid decision record.
func decodeRecord(t *testing.T, out string) contract.DecisionRecord {
	t.Helper()
	var r contract.DecisionRecord
	if err := contract.Decode(schemas.KindDecision, []byte(out), &r); err != nil {
		t.Fatalf("stdout is not a decision record: %v\n%s", err, out)
	}
	return r
}

func TestPolicyEvalSeedAllows(t *testing.T) {
	code, out, errOut := run(t, "", "policy", "eval", seedInput)
	if code != ExitOK {
		t.Fatalf("exit %d, want 0; stderr %s\n%s", code, errOut, out)
	}
	r := decodeRecord(t, out)
	if !r.Allow || r.Result != contract.ResultAllowed || r.ActionName != "browser.click" || r.DecisionLogID != "dec-2026-01-23-001" {
		t.Errorf("record %+v", r)
	}
	if !strings.Contains(out, "\n  \"decisionId\"") {
		t.Errorf("output is not indented JSON:\n%s", out)
	}
}

func TestPolicyEvalOutcomes(t *testing.T) {
	seed, err := os.ReadFile(seedInput)
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(seed), `"selector": "#submit"`, `"selector": "#submit", "id": "a1"`, 1)
	evil = strings.Replace(evil, `"step_index": 3`, `"step_index": 3, "session": {"allowed_origins": ["https://shop.example"]}`, 1)
	for _, tc := range []struct {
		name       string
		stdin      string
		args       []string
		wantCode   int
		wantResult contract.DecisionResult
		wantRule   string
	}{
		{"stdin", string(seed), []string{"-"}, ExitOK, contract.ResultAllowed, ""},
		{"preset safe denies", "", []string{"--preset", "safe", seedInput}, ExitFailure, contract.ResultDenied, "permission_denied"},
		{"preset balanced pauses", "", []string{"--preset", "balanced", seedInput}, ExitFailure, contract.ResultPaused, ""},
		{"preset power allows", "", []string{"--preset", "power", seedInput}, ExitOK, contract.ResultAllowed, ""},
		{"origin outside the session's allowlist", evil, []string{"-"}, ExitFailure, contract.ResultDenied, "origin_not_allowed"},
		{"missing policy fails closed", "", []string{"--policy", "/nonexistent/policy", seedInput}, ExitFailure, contract.ResultDenied, "fail_closed"},
		{"unreachable OPA fails closed", "", []string{"--opa-url", "http://127.0.0.1:1", seedInput}, ExitFailure, contract.ResultDenied, "fail_closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.stdin, append([]string{"policy", "eval"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.wantCode, errOut)
			}
			r := decodeRecord(t, out)
			if r.Result != tc.wantResult {
				t.Errorf("result %s, want %s (%v)", r.Result, tc.wantResult, r.Reasons)
			}
			if tc.wantRule != "" && (len(r.Reasons) == 0 || !strings.Contains(out, `"rule": "`+tc.wantRule+`"`)) {
				t.Errorf("reasons %v lack %s", r.Reasons, tc.wantRule)
			}
		})
	}
}

func TestPolicyEvalBundleTarball(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bundle.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = fs.WalkDir(policy.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policy.FS(), name)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "", "policy", "eval", "--policy", p, seedInput)
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	if r := decodeRecord(t, out); r.PolicySource != "bundle" {
		t.Errorf("policy source %q", r.PolicySource)
	}
	// The tarball's policy is the embedded one: same version.
	_, emb, _ := run(t, "", "policy", "eval", seedInput)
	if a, b := decodeRecord(t, out).PolicyVersion, decodeRecord(t, emb).PolicyVersion; a != b {
		t.Errorf("bundle version %s, embedded %s", a, b)
	}
}

func TestPolicyUsage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no subcommand", "", []string{"policy"}, ExitUsage, "eval or test"},
		{"unknown subcommand", "", []string{"policy", "apply"}, ExitUsage, "unknown policy subcommand"},
		{"help", "", []string{"policy", "-h"}, ExitOK, "Subcommands:"},
		{"help command", "", []string{"help", "policy"}, ExitOK, "Subcommands:"},
		{"eval help", "", []string{"policy", "eval", "-h"}, ExitOK, "INPUT is seed 001"},
		{"eval without input", "", []string{"policy", "eval"}, ExitUsage, "one INPUT"},
		{"eval two inputs", "", []string{"policy", "eval", "a", "b"}, ExitUsage, "one INPUT"},
		{"eval unreadable", "", []string{"policy", "eval", "/nonexistent.json"}, ExitUsage, "read /nonexistent.json"},
		{"eval malformed JSON", "{", []string{"policy", "eval", "-"}, ExitUsage, "malformed JSON"},
		{"eval unknown member", `{"state": {}, "action": {"type": "wait"}, "step_index": 1, "derived": {}}`, []string{"policy", "eval", "-"}, ExitUsage, "derived"},
		{"eval policy and opa-url", "", []string{"policy", "eval", "--policy", "x", "--opa-url", "http://127.0.0.1:1", seedInput}, ExitUsage, "exclusive"},
		{"eval input too large", strings.Repeat(" ", 1<<20+1), []string{"policy", "eval", "-"}, ExitUsage, "larger than"},
		{"test help", "", []string{"policy", "test", "-h"}, ExitOK, "Rego unit tests"},
		{"test two dirs", "", []string{"policy", "test", "a", "b"}, ExitUsage, "at most one DIR"},
		{"test missing dir", "", []string{"policy", "test", "/nonexistent/policy"}, ExitUsage, "/nonexistent/policy"},
		// attack: every usage error is found before a browser starts.
		{"attack help", "", []string{"policy", "attack", "-h"}, ExitOK, "attack suite"},
		{"attack argument", "", []string{"policy", "attack", "x"}, ExitUsage, "takes no arguments"},
		{"attack unknown driver", "", []string{"policy", "attack", "--driver", "sandbox,chrome"}, ExitUsage, "want playwright, sandbox or extension"},
		{"attack bad regexp", "", []string{"policy", "attack", "--run", "("}, ExitUsage, "--run"},
		{"attack no scenario", "", []string{"policy", "attack", "--run", "^nothing-like-this$"}, ExitUsage, "matches no scenario"},
		{"attack missing policy", "", []string{"policy", "attack", "--policy", "/nonexistent/policy"}, ExitUsage, "/nonexistent/policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.wantCode, errOut)
			}
			if tc.wantCode == ExitOK {
				// Help a person asked for is on stdout.
				errOut = out
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("output %q lacks %q", errOut, tc.wantErr)
			}
		})
	}
}

func TestPolicyTestEmbedded(t *testing.T) {
	code, out, errOut := run(t, "", "policy", "test", "--min-coverage", "95")
	if code != ExitOK {
		t.Fatalf("exit %d; stderr %s\n%s", code, errOut, out)
	}
	m := regexp.MustCompile(`coverage: ([0-9.]+)% of the policy's lines`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no coverage line:\n%s", out)
	}
	if c, _ := strconv.ParseFloat(m[1], 64); c < 95 {
		t.Errorf("coverage %.1f%%, want at least 95%%", c)
	}
	if !regexp.MustCompile(`\d+ passed, 0 failed`).MatchString(out) {
		t.Errorf("no pass count:\n%s", out)
	}
	code, out, _ = run(t, "", "policy", "test", "-v")
	if code != ExitOK || !strings.Contains(out, "PASS  data.aegis.browser_test.test_base_allowed") {
		t.Errorf("-v: exit %d\n%s", code, out)
	}
	code, _, errOut = run(t, "", "policy", "test", "--min-coverage", "101")
	if code != ExitFailure || !strings.Contains(errOut, "below") {
		t.Errorf("--min-coverage 101: exit %d, stderr %s", code, errOut)
	}
	code, out, _ = run(t, "", "policy", "test", "-json")
	var report struct {
		Tests    []json.RawMessage `json:"tests"`
		Coverage float64           `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(out), &report); code != ExitOK || err != nil || len(report.Tests) == 0 {
		t.Errorf("-json: exit %d, %v\n%s", code, err, out)
	}
}

func TestPolicyTestFailingDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p.rego", "package aegis.browser\n\ndecision := {\"allow\": false}\n")
	write("p_test.rego", "package aegis.browser_test\n\nimport data.aegis.browser\n\ntest_allows if browser.decision.allow\n\ntest_has_decision if browser.decision\n")
	code, out, _ := run(t, "", "policy", "test", dir)
	if code != ExitFailure || !strings.Contains(out, "FAIL  data.aegis.browser_test.test_allows") || !strings.Contains(out, "1 passed, 1 failed") {
		t.Errorf("exit %d\n%s", code, out)
	}
}
