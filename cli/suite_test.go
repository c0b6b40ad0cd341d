package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/driver/drivertest"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
	"github.com/aegis-run/aegis/suite"
)

// suiteTask is a demo-shop task of the suite tests and how it must end.
type suiteTask struct {
	name  string
	steps []string
	want  contract.SessionStatus
}

// demoSuite is the suite of the tests: ten tasks that complete, one the
// policy denies (a foreign origin), one that fails (no such element), one
// whose approval nobody can give.
var demoSuite = []suiteTask{
	{"01-home", []string{`expect "Aegis Demo Shop"`, `extract text`}, contract.SessionCompleted},
	{"02-orders", []string{`navigate /orders`, `extract table "Orders"`}, contract.SessionCompleted},
	{"03-orders-link", []string{`click "Your orders"`, `expect "A-1003"`}, contract.SessionCompleted},
	{"04-form", []string{`navigate /form`, `type "Ada" into "Full name"`, `select "Express" in "Shipping"`, `click "Gift wrap"`}, contract.SessionCompleted},
	{"05-shadow", []string{`navigate /shadow`, `type "SAVE10" into "Coupon code"`, `click "Apply coupon"`}, contract.SessionCompleted},
	{"06-frame", []string{`navigate /frame`, `extract text`}, contract.SessionCompleted},
	{"07-widgets", []string{`navigate /widgets`, `click "Onclick card"`, `expect "Onclick card clicked"`}, contract.SessionCompleted},
	{"08-long", []string{`navigate /long`, `scroll down 800`, `extract text`}, contract.SessionCompleted},
	{"09-login-form", []string{`navigate /login`, `type "demo" into "Username"`}, contract.SessionCompleted},
	{"10-partners", []string{`navigate /external`, `extract links`}, contract.SessionCompleted},
	{"11-foreign-origin", []string{`navigate ` + demosite.ExternalOrigin + `/`}, contract.SessionFailed},
	{"12-no-such-element", []string{`click "css=#does-not-exist"`}, contract.SessionFailed},
	{"13-place-order", []string{`navigate /form`, `type "Ada" into "Full name"`, `click "Place order"`}, contract.SessionFailed},
}

// writeSuite writes the demo suite's task files for the shop at base into
// a new directory.
func writeSuite(t *testing.T, base string) string {
	t.Helper()
	dir := t.TempDir()
	for _, st := range demoSuite {
		hints, _ := json.Marshal(map[string]any{"steps": st.steps})
		maxActions, maxMs := 10, 60000
		b, err := json.Marshal(contract.Input{Goal: "demo shop: " + st.name, URLs: []string{base + "/"}, MaxActions: &maxActions, MaxDurationMs: &maxMs, Hints: hints})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, st.name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ownBrowsers makes the commands of the test launch (and close) their own
// browsers instead of the test binary's shared ones, so that the test can
// count the launches of one command.
func ownBrowsers(t *testing.T) {
	saved := sharedBrowsers
	sharedBrowsers = nil
	t.Cleanup(func() { sharedBrowsers = saved })
}

// readIndex reads the suite index in dir as aegis verify does
// (suite.ReadIndex: strictly, against its schema).
func readIndex(t *testing.T, dir string) suite.Index {
	t.Helper()
	idx, err := suite.ReadIndex(filepath.Join(dir, suite.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// readJUnit reads the JUnit report at path.
func readJUnit(t *testing.T, path string) suite.JUnitReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r suite.JUnitReport
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// checkSuiteIndex checks the index of a run of demoSuite: every task's
// status, and every bundle (the retried attempts' too) sealed, verifying,
// with the head hash the index names. want overrides demoSuite's status
// of the tasks it names (nil: none).
func checkSuiteIndex(t *testing.T, dir string, idx suite.Index, want map[string]contract.SessionStatus) {
	t.Helper()
	if len(idx.Tasks) != len(demoSuite) {
		t.Fatalf("%d tasks in the index, want %d", len(idx.Tasks), len(demoSuite))
	}
	verify := func(name, bundle string, want contract.SessionStatus) string {
		t.Helper()
		rep, err := evidence.Verify(context.Background(), filepath.Join(dir, filepath.FromSlash(bundle)), evidence.VerifyOptions{})
		if err != nil {
			t.Errorf("%s: bundle %s does not verify: %v", name, bundle, err)
			return ""
		}
		if want != "" && rep.Status != want {
			t.Errorf("%s: bundle %s sealed %q, want %q", name, bundle, rep.Status, want)
		}
		return rep.HeadHash
	}
	for i, st := range demoSuite {
		got := idx.Tasks[i]
		if w, ok := want[got.Name]; ok {
			st.want = w
		}
		if got.Name != st.name+".json" || got.Status != st.want {
			t.Errorf("task %d = %s %q (%s), want %s.json %q", i, got.Name, got.Status, got.Error, st.name, st.want)
		}
		if got.Completed() != (got.Error == "") {
			t.Errorf("%s: status %q with error %q", got.Name, got.Status, got.Error)
		}
		if st.name == "11-foreign-origin" && got.Denials != 1 {
			t.Errorf("%s: %d denials, want 1", got.Name, got.Denials)
		}
		if got.Bundle == "" || !strings.HasPrefix(got.Bundle, st.name+"/") {
			t.Errorf("%s: bundle %q, want one under %s/", got.Name, got.Bundle, st.name)
			continue
		}
		if head := verify(got.Name, got.Bundle, st.want); head != got.HeadHash {
			t.Errorf("%s: head hash %q in the index, the bundle's is %q", got.Name, got.HeadHash, head)
		}
		for _, r := range got.Retries {
			if r.Bundle != "" {
				verify(got.Name+" (retried attempt)", r.Bundle, "")
			}
		}
	}
}

func TestSuiteOneBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	t.Setenv(EnvModel, "")
	ownBrowsers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	site := demoSite(t)
	tasks := writeSuite(t, site)
	out := t.TempDir()
	launches := driver.Launches()
	var stdout, stderr bytes.Buffer
	reports := t.TempDir()
	junit, summary := filepath.Join(reports, "junit.xml"), filepath.Join(reports, "summary.md")
	if err := os.WriteFile(summary, []byte("## an earlier step\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := Run(ctx, []string{"suite", "--parallel", "2", "--verbose", "--evidence", out, "--junit", junit, "--summary", summary, tasks}, Stdio{Out: &stdout, Err: &stderr})
	if code != ExitSuiteIncomplete {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, ExitSuiteIncomplete, stderr.String())
	}
	if n := driver.Launches() - launches; n != 1 {
		t.Errorf("%d browser launches for the suite, want 1", n)
	}
	idx := readIndex(t, out)
	if idx.FormatVersion != suite.FormatVersion || idx.Parallel != 2 || idx.StoppedBy != "" {
		t.Errorf("index format %q parallel %d stopped by %q", idx.FormatVersion, idx.Parallel, idx.StoppedBy)
	}
	checkSuiteIndex(t, out, idx, nil)
	// The JUnit report: a failure in each task that did not complete.
	rep := readJUnit(t, junit)
	if rep.Tests != len(demoSuite) || rep.Failures != 3 || rep.Skipped != 0 || len(rep.Suite.Cases) != len(demoSuite) {
		t.Errorf("junit: %d tests, %d failures, %d skipped, %d cases; want %d, 3, 0", rep.Tests, rep.Failures, rep.Skipped, len(rep.Suite.Cases), len(demoSuite))
	}
	for i, c := range rep.Suite.Cases {
		if i < len(demoSuite) && (c.Name != demoSuite[i].name+".json" || (c.Failure != nil) != (demoSuite[i].want != contract.SessionCompleted)) {
			t.Errorf("junit case %d: %s, failure %v; want %s.json, %q", i, c.Name, c.Failure != nil, demoSuite[i].name, demoSuite[i].want)
		}
	}
	// The Markdown summary, appended.
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if want := "## an earlier step\n\n### aegis suite: 3 of 13 tasks did not complete\n"; !strings.HasPrefix(string(md), want) {
		t.Errorf("summary file:\n%s\nwant it to start with\n%s", md, want)
	}
	// The suite verifies whole.
	var vout, verr bytes.Buffer
	if code := Run(ctx, []string{"verify", out}, Stdio{Out: &vout, Err: &verr}); code != ExitOK {
		t.Errorf("verify %s: exit %d\n%s%s", out, code, vout.String(), verr.String())
	}
	// Two lines swapped (each task's name and task hash on the other's
	// bundle, status and counts): the task hash ties a line to its bundle.
	swapped := idx
	swapped.Tasks = slices.Clone(idx.Tasks)
	a, b := &swapped.Tasks[0], &swapped.Tasks[1]
	a.Name, b.Name, a.TaskHash, b.TaskHash = b.Name, a.Name, b.TaskHash, a.TaskHash
	if err := suite.WriteIndex(out, swapped); err != nil {
		t.Fatal(err)
	}
	vout.Reset()
	verr.Reset()
	if code := Run(ctx, []string{"verify", out}, Stdio{Out: &vout, Err: &verr}); code != ExitFailure || !strings.Contains(verr.String(), "FAIL  02-orders.json: taskHash: the index says") {
		t.Errorf("verify with two lines swapped: exit %d\n%s%s", code, vout.String(), verr.String())
	}
	// One line per task as it ends, whole, with the running count.
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "[") && strings.Contains(l, "/13] ") {
			n++
			if !strings.HasPrefix(l, "[") || !(strings.Contains(l, "] ok      ") || strings.Contains(l, "] FAILED  ")) {
				t.Errorf("progress line %q", l)
			}
		}
	}
	// --verbose: the sessions' step lines, each whole and prefixed.
	for _, l := range lines {
		if strings.Contains(l, "step ") && strings.Contains(l, "/10  ") && !regexp.MustCompile(`^\[\d\d-[a-z-]+\.json\] (effect of )?step \d+`).MatchString(l) {
			t.Errorf("step line %q", l)
		}
	}
	if !strings.Contains(stderr.String(), "[02-orders.json] step 2/10  navigate") {
		t.Errorf("no step lines with --verbose:\n%s", stderr.String())
	}
	if n != len(demoSuite) || !strings.Contains(stderr.String(), "[13/13] ") {
		t.Errorf("%d progress lines, want %d:\n%s", n, len(demoSuite), stderr.String())
	}
	if !strings.Contains(stderr.String(), "aegis suite: 10 of 13 tasks completed (3 did not complete, 0 not run)") {
		t.Errorf("no summary:\n%s", stderr.String())
	}
	runExampleSuite(t, ctx, site)
}

// runExampleSuite runs the example suite (examples/suite) on the demo
// shop at base, as the example workflow does (its shop's address
// replaced by base), and checks what the workflow checks: exit 1, exactly
// the denied task did not complete (with its one denial), and the suite
// verifies.
func runExampleSuite(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(exampleSuiteDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example tasks: %v %v", files, err)
	}
	tasks := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(exampleShop), []byte(base))
		if err := os.WriteFile(filepath.Join(tasks, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "aegis-evidence")
	var stdout, stderr bytes.Buffer
	if code := Run(ctx, []string{"suite", "--parallel", "2", "--evidence", out, tasks}, Stdio{Out: &stdout, Err: &stderr}); code != ExitSuiteIncomplete {
		t.Fatalf("the example suite: exit %d, want %d\n%s", code, ExitSuiteIncomplete, stderr.String())
	}
	var failed []string
	for _, got := range readIndex(t, out).Tasks {
		if !got.Completed() {
			failed = append(failed, got.Name)
			if got.Status != contract.SessionFailed || got.Denials != 1 {
				t.Errorf("%s: status %q, %d denials; want failed, 1", got.Name, got.Status, got.Denials)
			}
		}
	}
	if got := strings.Join(failed, " "); got != exampleDenied {
		t.Errorf("the example suite: %q did not complete, want exactly %q\n%s", got, exampleDenied, stderr.String())
	}
	var vout, verr bytes.Buffer
	if code := Run(ctx, []string{"verify", out}, Stdio{Out: &vout, Err: &verr}); code != ExitOK {
		t.Errorf("verify the example suite: exit %d\n%s%s", code, vout.String(), verr.String())
	}
}

// irreversibleWhy matches a task's error that says it was not retried
// for a reason the not-retried rule gives (suite's irreversible): an
// approved action, actions without a bundle that shows they changed
// nothing, an effect that may change state. Any other reason (a budget,
// no server left) is not the rule's.
var irreversibleWhy = regexp.MustCompile(`not retried: (the attempt executed \d+ approved action\(s\), which a retry could repeat|the attempt executed \d+ action\(s\) and (left no bundle|its bundle does not show)|step \d+'s action had an effect that may change state)`)

// TestIrreversibleWhy: the pattern takes the reasons irreversible gives
// (as it words them), and no other reason a task is not retried for.
func TestIrreversibleWhy(t *testing.T) {
	tests := []struct {
		why  string
		want bool
	}{
		{"the attempt executed 2 approved action(s), which a retry could repeat", true},
		{"the attempt executed 3 action(s) and left no bundle to show they changed nothing", true},
		{"the attempt executed 3 action(s) and its bundle does not show they changed nothing: bad", true},
		{"step 2's action had an effect that may change state (fetch POST https://x /a, allowed), which a retry could repeat", true},
		{"the suite's --max-tokens budget (100) was reached: 100 tokens", false},
		{"no Playwright server is left", false},
	}
	for _, tc := range tests {
		got := irreversibleWhy.MatchString("failed (the server failed: gone; not retried: " + tc.why + ")")
		if got != tc.want {
			t.Errorf("%q: matched %v, want %v", tc.why, got, tc.want)
		}
	}
}

func TestSuiteFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	t.Setenv(EnvModel, "")
	ownBrowsers(t)
	a, b := drivertest.RunServer(t), drivertest.RunServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	site := demoSite(t)
	tasks := writeSuite(t, site)
	out := t.TempDir()
	// The second server goes away in the middle of its first task: as
	// that session reports its first step.
	var once sync.Once
	var killedTask string
	suiteOnStep = func(at suite.Attempt, _ session.StepReport) {
		if at.Endpoint == b.Endpoint {
			once.Do(func() {
				killedTask = at.Task.Name
				b.Kill()
			})
		}
	}
	defer func() { suiteOnStep = nil }()
	var stdout, stderr bytes.Buffer
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code := Run(ctx, []string{"suite", "--parallel", "2", "--evidence", out, "--junit", junit, "--browser-endpoint", a.Endpoint + "," + b.Endpoint, tasks}, Stdio{Out: &stdout, Err: &stderr})
	if code != ExitSuiteIncomplete {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, ExitSuiteIncomplete, stderr.String())
	}
	if killedTask == "" {
		t.Fatal("no task went to the second server")
	}
	idx := readIndex(t, out)
	// The killed server's first task is retried on the other server
	// unless its attempt may have changed state (the not-retried rule:
	// an approved action, an effect that may change state such as a POST,
	// actions without a readable bundle): then it fails there, saying so.
	// The round-robin makes it 02-orders, killed as it reports its first
	// step, a GET navigation, so it is retried; the checks below hold for
	// any task it is.
	statuses := map[string]contract.SessionStatus{}
	killedHandled := false // retried, or not for a reason the rule gives
	for _, got := range idx.Tasks {
		if got.Name != killedTask || len(got.Retries) > 0 {
			continue
		}
		if got.Completed() || got.Endpoint != b.Endpoint || !irreversibleWhy.MatchString(got.Error) {
			t.Errorf("%s, the killed server's first task, was not retried: %+v; want it failed on %s, saying why it was not retried", killedTask, got, b.Endpoint)
		}
		statuses[got.Name] = got.Status
		killedHandled = true // not retried, for a reason the rule gives (checked above)
	}
	checkSuiteIndex(t, out, idx, statuses)
	// The JUnit report: a failure in each task that did not complete
	// (the retried ones completed or failed on the server left).
	failures := 0
	for i, st := range demoSuite {
		if _, notRetried := statuses[idx.Tasks[i].Name]; st.want != contract.SessionCompleted || notRetried {
			failures++
		}
	}
	rep := readJUnit(t, junit)
	if rep.Tests != len(demoSuite) || rep.Failures != failures || rep.Skipped != 0 || len(rep.Suite.Cases) != len(demoSuite) {
		t.Errorf("junit: %d tests, %d failures, %d skipped, %d cases; want %d, %d, 0", rep.Tests, rep.Failures, rep.Skipped, len(rep.Suite.Cases), len(demoSuite), failures)
	}
	for i, c := range rep.Suite.Cases {
		if i >= len(demoSuite) {
			break
		}
		_, notRetried := statuses[c.Name]
		if wantFailure := demoSuite[i].want != contract.SessionCompleted || notRetried; c.Name != demoSuite[i].name+".json" || (c.Failure != nil) != wantFailure {
			t.Errorf("junit case %d: %s, failure %v; want %s.json, failure %v", i, c.Name, c.Failure != nil, demoSuite[i].name, wantFailure)
		}
	}
	// Any task handed to the killed server before its failure was known
	// was retried too.
	for _, got := range idx.Tasks {
		if _, notRetried := statuses[got.Name]; notRetried {
			continue
		}
		if got.Endpoint != a.Endpoint {
			t.Errorf("%s ran on %q, want the server left, %s", got.Name, got.Endpoint, a.Endpoint)
		}
		if len(got.Retries) == 0 {
			continue
		}
		killedHandled = killedHandled || got.Name == killedTask
		if r := got.Retries[0]; len(got.Retries) != 1 || r.Endpoint != b.Endpoint || r.Error == "" || r.Bundle == "" {
			t.Errorf("%s: retries %+v, want one on %s", got.Name, got.Retries, b.Endpoint)
		}
	}
	if !killedHandled {
		t.Errorf("%s, the killed server's first task, was not retried", killedTask)
	}
	if _, notRetried := statuses[killedTask]; !notRetried && !strings.Contains(stderr.String(), "(retried: "+b.Endpoint+" failed)") {
		t.Errorf("the progress does not say the task was retried:\n%s", stderr.String())
	}
	// The suite verifies whole, the failed server's attempts included.
	var vout, verr bytes.Buffer
	if code := Run(ctx, []string{"verify", out}, Stdio{Out: &vout, Err: &verr}); code != ExitOK {
		t.Errorf("verify %s: exit %d\n%s%s", out, code, vout.String(), verr.String())
	}
}

func TestSuiteUsage(t *testing.T) {
	t.Setenv(EnvModel, "")
	task := writeFile(t, "task.json", `{"goal":"read","urls":["https://example.com/"],"hints":{"steps":["extract text"]}}`, 0o644)
	bare := writeFile(t, "bare.json", `{"goal":"read","urls":["https://example.com/"]}`, 0o644)
	broken := writeFile(t, "broken.json", `{"goal":`, 0o644)
	empty := t.TempDir()
	// Without --evidence, a suite makes its directory under
	// ./aegis-evidence only once every task loaded: none of these.
	t.Chdir(t.TempDir())
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no tasks", []string{"suite"}, "suite needs tasks"},
		{"empty dir", []string{"suite", empty}, "holds no *.json file"},
		{"missing file", []string{"suite", filepath.Join(empty, "none.json")}, "no such file"},
		{"parallel 0", []string{"suite", "--parallel", "0", task}, "--parallel 0: want 1 to 32"},
		{"parallel too many", []string{"suite", "--parallel", "100", task}, "--parallel 100: want 1 to 32"},
		{"ask", []string{"suite", "--approve", "ask", task}, "a suite asks nobody"},
		{"bad approve", []string{"suite", "--approve", "maybe", task}, "--approve"},
		{"endpoint without scheme", []string{"suite", "--browser-endpoint", "127.0.0.1:9", task}, "add ws://"},
		{"empty endpoint", []string{"suite", "--browser-endpoint", "ws://127.0.0.1:9/,", task}, "an empty endpoint"},
		{"negative budget", []string{"suite", "--max-actions", "-1", task}, "is negative"},
		{"no agent", []string{"suite", task, bare}, "bare.json: no agent"},
		{"broken task", []string{"suite", task, broken}, "broken.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := Run(context.Background(), tt.args, Stdio{Out: &out, Err: &errb}); got != ExitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", got, ExitUsage, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr %q, want %q", errb.String(), tt.want)
			}
		})
	}
	if _, err := os.Stat(DefaultEvidenceDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a suite refused left %s behind (%v)", DefaultEvidenceDir, err)
	}
	var out, errb bytes.Buffer
	if got := Run(context.Background(), []string{"suite", "-h"}, Stdio{Out: &out, Err: &errb}); got != ExitOK {
		t.Fatalf("suite -h: exit %d", got)
	}
	for _, want := range []string{"Usage: aegis suite [flags] DIR|TASK.json...", "--parallel", "--browser-endpoint", "--max-tokens", "-junit FILE", "-summary FILE", "Exit status: 0 every task completed",
		"at least 1 action and " + text.Thousands(suite.MinTokenGrant) + " tokens", fmt.Sprintf("maxActions, else %d;", session.DefaultMaxActions)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("suite -h lacks %q", want)
		}
	}
}

// TestSuiteInterrupted interrupts a suite as its first task starts: that
// session ends aborted with its bundle sealed, the other tasks are not
// run, the index is written, exit 3.
func TestSuiteInterrupted(t *testing.T) {
	t.Setenv(EnvModel, "")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	tasks := writeSuite(t, "http://127.0.0.1:9")
	// Without --evidence, the suite makes a directory of its own under
	// ./aegis-evidence.
	t.Chdir(t.TempDir())
	suiteOnStart = func(suite.Attempt) { cancel(ErrInterrupted) }
	defer func() { suiteOnStart = nil }()
	var stdout, stderr bytes.Buffer
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code := Run(ctx, []string{"suite", "--junit", junit, tasks}, Stdio{Out: &stdout, Err: &stderr})
	if code != ExitAborted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, ExitAborted, stderr.String())
	}
	dirs, err := filepath.Glob(filepath.Join(DefaultEvidenceDir, "suite-*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("suite directories %v (%v), want one under %s", dirs, err, DefaultEvidenceDir)
	}
	out := dirs[0]
	idx := readIndex(t, out)
	if idx.StoppedBy != suite.StopInterrupted {
		t.Errorf("index stopped by %q, want %q", idx.StoppedBy, suite.StopInterrupted)
	}
	rep := readJUnit(t, junit)
	if p := rep.Suite.Properties; rep.Skipped != len(demoSuite)-1 || len(p) == 0 || p[0].Name != "stoppedBy" || p[0].Value != string(suite.StopInterrupted) {
		t.Errorf("junit: %d skipped, properties %+v; want %d skipped, stoppedBy interrupted", rep.Skipped, p, len(demoSuite)-1)
	}
	first := idx.Tasks[0]
	if first.Status != contract.SessionAborted || first.Bundle == "" {
		t.Fatalf("first task %+v, want aborted with a bundle", first)
	}
	if rep, err := evidence.Verify(context.Background(), filepath.Join(out, first.Bundle), evidence.VerifyOptions{}); err != nil || rep.Status != contract.SessionAborted {
		t.Errorf("the aborted task's bundle: %v %+v", err, rep)
	}
	for _, got := range idx.Tasks[1:] {
		if got.Status != "" || !got.Skipped || got.Error != "not run: the suite was interrupted: interrupted" {
			t.Errorf("%s = %+v, want not run", got.Name, got)
		}
	}
	if !strings.Contains(stderr.String(), "aegis suite: stopped: the suite was interrupted") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	// A second suite gets a directory of its own, and each verifies.
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	defer cancel2(nil)
	suiteOnStart = func(suite.Attempt) { cancel2(ErrInterrupted) }
	if code := Run(ctx2, []string{"suite", tasks}, Stdio{Out: &stdout, Err: &stderr}); code != ExitAborted {
		t.Fatalf("the second suite: exit %d, want %d\nstderr:\n%s", code, ExitAborted, stderr.String())
	}
	if dirs, _ = filepath.Glob(filepath.Join(DefaultEvidenceDir, "suite-*")); len(dirs) != 2 {
		t.Fatalf("suite directories %v, want two", dirs)
	}
	for _, d := range dirs {
		var vout, verr bytes.Buffer
		if code := Run(context.Background(), []string{"verify", d}, Stdio{Out: &vout, Err: &verr}); code != ExitOK {
			t.Errorf("verify %s: exit %d\n%s%s", d, code, vout.String(), verr.String())
		}
	}
}

// TestSuiteClassification: each task of a suite runs under its own
// classification: a task without hints.classification is restricted (the
// default) even when the task loaded after it says public. Its bundle's
// observations record the classification the session ran under. A second
// suite into the same --evidence directory is refused.
func TestSuiteClassification(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	t.Setenv(EnvModel, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site := demoSite(t)
	tasks := t.TempDir()
	for _, tc := range []struct{ name, hints string }{
		{"a-unhinted", `{"steps":["expect \"Aegis Demo Shop\""]}`},
		{"b-public", `{"steps":["expect \"Aegis Demo Shop\""],"classification":"public"}`},
	} {
		doc := `{"goal":"read","urls":["` + site + `/"],"hints":` + tc.hints + `}`
		if err := os.WriteFile(filepath.Join(tasks, tc.name+".json"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Run(ctx, []string{"suite", "--evidence", out, tasks}, Stdio{Out: &stdout, Err: &stderr}); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	idx := readIndex(t, out)
	want := []contract.Classification{contract.ClassRestricted, contract.ClassPublic}
	for i, task := range idx.Tasks {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(task.Bundle), "dom", "0.json"))
		if err != nil {
			t.Fatal(err)
		}
		var obs contract.Observation
		if err := json.Unmarshal(b, &obs); err != nil {
			t.Fatal(err)
		}
		if got := obs.State.PolicyContext.Classification; got != want[i] {
			t.Errorf("%s ran under %q, want %q", task.Name, got, want[i])
		}
	}
	// The directory holds a suite now: a second one is refused, before
	// it runs anything.
	stderr.Reset()
	if code := Run(ctx, []string{"suite", "--evidence", out, tasks}, Stdio{Out: &stdout, Err: &stderr}); code != ExitUsage {
		t.Errorf("a second suite into %s: exit %d, want %d", out, code, ExitUsage)
	}
	if want := "already holds a suite or evidence bundles (its suite.json)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if after := readIndex(t, out); after.StartedAt != idx.StartedAt {
		t.Error("the refused suite replaced the index")
	}
}

// TestSuiteDirRefused: --evidence DIR holding an evidence bundle (aegis
// run's) is refused; the error, like every error of the command, passes
// the secrets' filter (a secret's value in the path shows as its
// placeholder).
func TestSuiteDirRefused(t *testing.T) {
	t.Setenv(EnvModel, "")
	const secret = "sw0rdfish-0f-the-suite"
	t.Setenv("AEGIS_SECRET_SUITE_TOKEN", secret)
	task := writeFile(t, "task.json", `{"goal":"read","urls":["https://example.com/"],"hints":{"steps":["extract text"]}}`, 0o644)
	dir := filepath.Join(t.TempDir(), "evidence-"+secret)
	bundle := filepath.Join(dir, "s-0123456789abcdef")
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, evidence.FileManifest), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"suite", "--evidence", dir, task}, Stdio{Out: &stdout, Err: &stderr}); code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if want := "already holds a suite or evidence bundles"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if strings.Contains(stderr.String(), secret) {
		t.Errorf("stderr shows the secret: %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "evidence-"+secrets.Placeholder("SUITE_TOKEN")) {
		t.Errorf("stderr %q: want the secret's placeholder", stderr.String())
	}
}

// TestSuiteTokenBudget: a suite's --max-tokens stops the suite (exit 4,
// stoppedBy max-tokens) when a task is cut short by its grant, as a real
// session under a token budget is: it refuses a call that would pass
// the budget before sending it, and ends aborted with fewer tokens than
// its limit. Each task needs four model calls (the plan, three Navigator
// calls) of 4,000 tokens each, 3,000 of them prompt: the first task is
// granted the suite's 29,000 and completes with 16,000; the second is
// granted the 13,000 left, makes three calls (12,000) and its fourth,
// predicted at more than the 1,000 left, is never sent. The third,
// whose own budget of 500 would fit in what is left, is not run: a task
// cut short stops the suite.
func TestSuiteTokenBudget(t *testing.T) {
	site := demoSite(t)
	t.Setenv(EnvModel, "")
	srv := llmtest.NewServer(t)
	usage := map[string]int{"prompt_tokens": 3000, "completion_tokens": 1000, "total_tokens": 4000}
	var mu sync.Mutex
	navCalls := map[string]int{} // by task goal
	goals := []string{"Wait for alpha", "Wait for bravo", "Wait for charlie"}
	srv.Always(func(w http.ResponseWriter, r *llmtest.Request) {
		if strings.HasPrefix(r.Messages[0].Content, "You are the Planner") {
			llmtest.WriteCompletion(w, "fake", `{"goal":"x","steps":[{"id":"s1","description":"wait","successCriteria":"waited"}]}`, usage)
			return
		}
		goal := ""
		for _, m := range r.Messages {
			for _, g := range goals {
				if strings.Contains(m.Content, g) {
					goal = g
				}
			}
		}
		mu.Lock()
		navCalls[goal]++
		n := navCalls[goal]
		mu.Unlock()
		status := "continue"
		if n >= 3 {
			status = "done"
		}
		llmtest.WriteCompletion(w, "fake", fmt.Sprintf(`{"actions":[{"id":"w%d","type":"wait","reason":"wait","policyTags":[],"durationMs":1}],"status":%q,"summary":"waiting"}`, n, status), usage)
	})
	dir := t.TempDir()
	for i, g := range goals {
		in := contract.Input{Goal: g, URLs: []string{site + "/orders"}}
		if i == 2 {
			var err error
			if in, err = in.WithMaxTokens(500); err != nil {
				t.Fatal(err)
			}
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%d.json", i+1)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"suite", "--evidence", out, "--max-tokens", "29000", "--llm-base-url", srv.URL, "--model", "fake", dir}, Stdio{Out: &stdout, Err: &stderr})
	if code != ExitSuiteStopped {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, ExitSuiteStopped, stderr.String())
	}
	idx := readIndex(t, out)
	if idx.StoppedBy != suite.StopTokens {
		t.Errorf("stopped by %q, want %q", idx.StoppedBy, suite.StopTokens)
	}
	first, second, third := idx.Tasks[0], idx.Tasks[1], idx.Tasks[2]
	if !first.Completed() || first.Tokens != 16000 {
		t.Errorf("t1 = %+v, want completed with 16,000 tokens", first)
	}
	if second.Status != contract.SessionAborted || second.Tokens != 12000 || !strings.Contains(second.Error, "would be passed") {
		t.Errorf("t2 = %+v, want aborted by its budget before passing it, 12,000 tokens", second)
	}
	if !third.Skipped || !strings.Contains(third.Error, "a task cut short") {
		t.Errorf("t3 = %+v, want not run", third)
	}
	if n := len(srv.Requests()); n != 7 {
		t.Errorf("%d model requests, want 7 (4 and 3)", n)
	}
	if !strings.Contains(stderr.String(), "aegis suite: stopped: the suite's --max-tokens budget (29000)") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
