package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/policy"
)

// The bundle of one real "aegis demo" run, shared by the auditor command
// tests (the run takes a few seconds).
var auditDemo struct {
	once   sync.Once
	dir    string // the bundle
	origin string // the shop it was recorded on (closed since)
	err    string
}

// demoRun runs "aegis demo" once and returns a copy of its bundle and the
// origin it recorded.
func demoRun(t *testing.T) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs aegis demo in Chromium")
	}
	auditDemo.once.Do(func() {
		root, err := os.MkdirTemp("", "aegis-cli-audit-")
		if err != nil {
			auditDemo.err = err.Error()
			return
		}
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if code := Run(ctx, []string{"demo", "--evidence", root}, Stdio{Out: &out, Err: &errb}); code != ExitOK {
			auditDemo.err = "aegis demo: exit " + strconv.Itoa(code) + ": " + errb.String() + out.String()
			return
		}
		m, _ := filepath.Glob(filepath.Join(root, "*", "manifest.json"))
		if len(m) != 1 {
			auditDemo.err = "aegis demo wrote no bundle"
			return
		}
		auditDemo.dir = filepath.Dir(m[0])
		var man struct {
			Task struct {
				URLs []string `json:"urls"`
			} `json:"task"`
		}
		b, _ := os.ReadFile(m[0])
		_ = json.Unmarshal(b, &man)
		auditDemo.origin = regexp.MustCompile(`^http://[^/]+`).FindString(man.Task.URLs[0])
	})
	if auditDemo.err != "" {
		t.Fatal(auditDemo.err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(auditDemo.dir))
	if err := os.CopyFS(dst, os.DirFS(auditDemo.dir)); err != nil {
		t.Fatal(err)
	}
	return dst, auditDemo.origin
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code = Run(ctx, args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// shop serves a fresh demo shop for a replay.
func shop(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := demosite.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Close() })
	return s.URL()
}

// TestReplayDemoBundle: the bundle of a real "aegis demo" run replays
// without divergence on a new shop (another port, --map-origin) when its
// two approvals are given again; with --approve deny (or nobody to ask)
// they are not, and the command says so and exits 1.
func TestReplayDemoBundle(t *testing.T) {
	bundle, recorded := demoRun(t)
	url := shop(t)
	var m audit.OriginMap
	if err := m.Add(recorded + "=" + url); err != nil {
		t.Fatal(err)
	}
	var asked int
	rep, err := audit.Replay(context.Background(), bundle, audit.ReplayOptions{
		Origins: m, EvidenceRoot: t.TempDir(),
		Approver: audit.ApproverFunc(func(_ context.Context, req audit.ApprovalRequest) (audit.ApprovalAnswer, error) {
			asked++
			return audit.ApprovalAnswer{Approved: true, Approver: "cli-test"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reproduced() || rep.Diverged != 0 || asked != 2 || len(rep.Steps) != 12 {
		for _, s := range rep.Steps {
			t.Logf("%+v", s)
		}
		t.Fatalf("replay of the demo bundle: reproduced=%v, %d diverged, asked %d, %d steps", rep.Reproduced(), rep.Diverged, asked, len(rep.Steps))
	}

	url2 := shop(t)
	code, out, errs := runCLI(t, "replay", bundle, "--map-origin", recorded+"="+url2, "--approve", "deny", "--evidence", t.TempDir())
	if code != ExitFailure || !strings.Contains(out, "needs an approval again, and it was refused") || !strings.Contains(out, "12 steps: ") {
		t.Fatalf("replay --approve deny: exit %d\n%s\n%s", code, out, errs)
	}
	// Without a terminal and without --approve, nobody can be asked: the
	// step says so, not that someone refused.
	urlNobody := shop(t)
	code, out, errs = runCLI(t, "replay", bundle, "--map-origin", recorded+"="+urlNobody, "--evidence", t.TempDir())
	if code != ExitFailure || !strings.Contains(out, "approval_unavailable: the approver failed: nobody could be asked: stdin is not a terminal") || strings.Contains(out, "terminal:replay") {
		t.Fatalf("replay without a terminal: exit %d\n%s\n%s", code, out, errs)
	}
	url3 := shop(t)
	code, out, _ = runCLI(t, "replay", bundle, "--json", "--map-origin", recorded+"="+url3, "--approve", "deny", "--evidence", t.TempDir())
	var got struct {
		Reproduced bool `json:"reproduced"`
		Steps      []audit.StepResult
		Blocked    int `json:"blocked"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != ExitFailure || got.Reproduced || got.Blocked != 2 {
		t.Fatalf("replay --json: exit %d, %+v, %v\n%s", code, got, err, out)
	}
}

// TestReplayCommandErrors: usage errors exit 2; a tampered bundle is
// refused with exit 1, naming the place.
func TestReplayCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no bundle", []string{"replay"}, ExitUsage, "one BUNDLE"},
		{"bad origin", []string{"replay", "x", "--map-origin", "http://a.example/path=http://b.example"}, ExitUsage, "path"},
		{"bad driver", []string{"replay", "x", "--driver", "extension"}, ExitUsage, "playwright or sandbox"},
		{"both policies", []string{"replay", "x", "--policy", "d", "--policy-from-bundle"}, ExitUsage, "exclusive"},
		{"bad approve", []string{"replay", "x", "--approve", "always"}, ExitUsage, "approve"},
		{"ask without a terminal", []string{"replay", "x", "--approve", "ask"}, ExitUsage, "terminal"},
		{"missing bundle", []string{"replay", filepath.Join(t.TempDir(), "none"), "--evidence", t.TempDir()}, ExitUsage, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, want %d; stderr %q, want %q", code, tc.code, errs, tc.want)
			}
		})
	}
	bundle := copyBundle(t)
	p := filepath.Join(bundle, "decisions.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte(`"allow":true`), []byte(`"allow":false`), 1), 0o644)
	code, _, errs := runCLI(t, "replay", bundle, "--evidence", t.TempDir())
	if code != ExitFailure || !strings.Contains(errs, "does not verify") || !strings.Contains(errs, "decisions.jsonl line 1") {
		t.Errorf("replay of a tampered bundle: exit %d, %q", code, errs)
	}
}

// TestReplaySeveralBundlesErrors: each bundle of several is replayed (or
// refused) in turn, its error said, and the exit status is the highest.
func TestReplaySeveralBundlesErrors(t *testing.T) {
	dir := t.TempDir()
	none1, none2 := filepath.Join(dir, "none1"), filepath.Join(dir, "none2")
	code, out, errs := runCLI(t, "replay", none1, none2, "--evidence", t.TempDir())
	if code != ExitUsage || strings.Count(errs, "no such file") != 2 || !strings.Contains(errs, "none1") || !strings.Contains(errs, "none2") {
		t.Errorf("replay of two missing bundles: exit %d, want %d; stderr %q", code, ExitUsage, errs)
	}
	if !strings.Contains(out, "replay of "+none1) || !strings.Contains(out, "replay of "+none2) {
		t.Errorf("stdout does not name each bundle: %q", out)
	}
}

// replayObjects decodes replay's --json output: one object per bundle.
func replayObjects(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	d := json.NewDecoder(strings.NewReader(out))
	for d.More() {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatalf("replay --json output: %v\n%s", err, out)
		}
		objs = append(objs, m)
	}
	return objs
}

// TestReplaySeveralBundlesJSON: with --json, a bundle that could not be
// replayed is one object naming it and the error, so a consumer reads one
// object per bundle.
func TestReplaySeveralBundlesJSON(t *testing.T) {
	dir := t.TempDir()
	none1, none2 := filepath.Join(dir, "none1"), filepath.Join(dir, "none2")
	code, out, errs := runCLI(t, "replay", "--json", none1, none2, "--evidence", t.TempDir())
	if code != ExitUsage {
		t.Errorf("exit %d, want %d; stderr %q", code, ExitUsage, errs)
	}
	objs := replayObjects(t, out)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2:\n%s", len(objs), out)
	}
	for i, want := range []string{none1, none2} {
		if objs[i]["bundle"] != want || !strings.Contains(fmt.Sprint(objs[i]["error"]), "no such file") {
			t.Errorf("object %d = %v, want bundle %q with its error", i+1, objs[i], want)
		}
	}
}

// TestReplayInterrupted: after an interrupt (the context ends) no further
// bundle is replayed: the command says how many were not, exits 1, and
// with --json prints one object per bundle not replayed.
func TestReplayInterrupted(t *testing.T) {
	dir := t.TempDir()
	none1, none2 := filepath.Join(dir, "none1"), filepath.Join(dir, "none2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, asJSON := range []bool{false, true} {
		args := []string{"replay", none1, none2, "--evidence", t.TempDir()}
		if asJSON {
			args = append(args, "--json")
		}
		var out, errb bytes.Buffer
		code := Run(ctx, args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitFailure || strings.Contains(errb.String(), "no such file") || !strings.Contains(errb.String(), "2 bundles not replayed") {
			t.Errorf("json=%v: exit %d, want %d, no bundle tried; stderr %q", asJSON, code, ExitFailure, errb.String())
		}
		if !asJSON {
			continue
		}
		objs := replayObjects(t, out.String())
		if len(objs) != 2 || objs[0]["bundle"] != none1 || objs[1]["bundle"] != none2 || !strings.Contains(fmt.Sprint(objs[1]["error"]), "interrupted") {
			t.Errorf("json: %v, want one object per bundle not replayed", objs)
		}
	}
}

// TestReportCommand: the demo bundle's report is written (exit 0) with
// every step; a tampered bundle's report is written too, says so at the
// top, and exits 1.
func TestReportCommand(t *testing.T) {
	bundle, _ := demoRun(t)
	out := filepath.Join(t.TempDir(), "report.html")
	code, _, errs := runCLI(t, "report", bundle, "-o", out)
	if code != ExitOK {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 12; i++ {
		if !bytes.Contains(page, []byte(">Step "+strconv.Itoa(i)+": ")) {
			t.Errorf("the report lacks step %d", i)
		}
	}
	if bytes.Contains(page, []byte("aegis-demo-Pa55w0rd")) {
		t.Error("the report holds the demo's password")
	}

	tampered := copyBundle(t)
	p := filepath.Join(tampered, "actions.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte(`"ok":true`), []byte(`"ok":false`), 1), 0o644)
	code, stdout, errs := runCLI(t, "report", tampered)
	i := strings.Index(stdout, "<body>")
	if code != ExitFailure || i < 0 || !strings.Contains(stdout[i:i+400], "TAMPERED") || !strings.Contains(errs, "actions.jsonl line 1") {
		t.Errorf("report of a tampered bundle: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI(t, "report"); code != ExitUsage {
		t.Errorf("report without a bundle: exit %d", code)
	}
	if code, _, _ := runCLI(t, "report", filepath.Join(t.TempDir(), "none")); code != ExitUsage {
		t.Errorf("report of a missing bundle: exit %d", code)
	}
}

// policyDirWith writes the embedded policy with its data changed by edit.
func policyDirWith(t *testing.T, edit func(config map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"browser.rego", "data.json"} {
		b, err := policy.FS().(interface{ ReadFile(string) ([]byte, error) }).ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "data.json" {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			edit(doc["aegis"].(map[string]any)["config"].(map[string]any))
			b, _ = json.Marshal(doc)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPolicyDiffCommand: the same policy changes nothing (exit 0); a
// stricter and a looser one list the changes with both reasons (exit 1).
func TestPolicyDiffCommand(t *testing.T) {
	bundle, _ := demoRun(t)
	code, out, errs := runCLI(t, "policy", "diff", bundle)
	if code != ExitOK || !strings.Contains(out, "0 would change") {
		t.Fatalf("policy diff under the same policy: exit %d\n%s%s", code, out, errs)
	}
	stricter := policyDirWith(t, func(c map[string]any) { c["limits"].(map[string]any)["max_step_budget"] = 10 })
	code, out, _ = runCLI(t, "policy", "diff", bundle, "--policy", stricter)
	if code != ExitFailure || !strings.Contains(out, "allow -> deny") || !strings.Contains(out, "step_budget_exceeded") || !strings.Contains(out, "2 would change") {
		t.Errorf("policy diff, stricter: exit %d\n%s", code, out)
	}
	looser := policyDirWith(t, func(c map[string]any) { c["risk"].(map[string]any)["approval_required"] = []any{} })
	code, out, _ = runCLI(t, "policy", "diff", bundle, "--policy", looser, "--json")
	var r audit.DiffReport
	// One change: "Place order". The password, typed where its secret is
	// bound, needed no approval (and cannot be judged again: ErrSecretText).
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitFailure || len(r.Changes) != 1 || len(r.Unevaluated) != 1 {
		t.Fatalf("policy diff, looser: exit %d, %v\n%s", code, err, out)
	}
	for _, c := range r.Changes {
		if c.Recorded.Verdict != audit.VerdictApproval || c.Now.Verdict != audit.VerdictAllow || len(c.Recorded.Reasons) == 0 {
			t.Errorf("looser change %+v: want approval (with its reasons) -> allow", c)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"policy", "diff"}, ExitUsage},
		{[]string{"policy", "diff", bundle, "--policy", filepath.Join(t.TempDir(), "none")}, ExitUsage},
		{[]string{"policy", "diff", filepath.Join(t.TempDir(), "none")}, ExitUsage},
	} {
		if code, _, errs := runCLI(t, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errs)
		}
	}
}
