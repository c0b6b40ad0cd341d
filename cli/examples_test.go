package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/schemas"
)

// The example suite (examples/suite) and the example CI workflow that
// runs it (docs/ci/github-actions.yml; README.md, "CI suites").
const (
	exampleSuiteDir = "../examples/suite"
	exampleWorkflow = "../docs/ci/github-actions.yml"
	// exampleShop is where the workflow serves the demo shop.
	exampleShop = "http://127.0.0.1:8080"
	// exampleDenied is the task the policy must deny, as the workflow
	// expects it.
	exampleDenied = "external-denied.json"
)

// TestExampleSuiteTasks: the example tasks are valid task documents
// (schema, strict decoding, steps the offline agent parses) on the
// workflow's demo shop, three to five of them, and exactly one of them,
// the one the workflow expects, steps outside its origins (the policy
// must deny it).
func TestExampleSuiteTasks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(exampleSuiteDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(files); n < 3 || n > 5 {
		t.Fatalf("got %d example tasks, want 3 to 5", n)
	}
	var leaving []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in contract.Input
		if err := contract.Decode(schemas.KindInput, data, &in); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		steps, err := navigator.StepsFromHints(in.Hints)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, u := range in.URLs {
			if !strings.HasPrefix(u, exampleShop+"/") {
				t.Errorf("%s: URL %s is not on the workflow's shop %s", f, u, exampleShop)
			}
		}
		for _, s := range steps {
			if s.Op != navigator.OpNavigate {
				continue
			}
			if u, err := url.Parse(s.URL); err == nil && u.IsAbs() && u.Scheme+"://"+u.Host != exampleShop {
				leaving = append(leaving, filepath.Base(f))
			}
		}
	}
	if got, want := strings.Join(leaving, " "), exampleDenied; got != want {
		t.Errorf("tasks navigating outside the shop: got %q, want %q", got, want)
	}
}

// workflow is what the test reads of a GitHub Actions workflow.
type workflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		RunsOn         string `yaml:"runs-on"`
		TimeoutMinutes int    `yaml:"timeout-minutes"`
		Steps          []struct {
			Name string            `yaml:"name"`
			ID   string            `yaml:"id"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestExampleWorkflow: the example workflow parses as YAML (strictly: no
// member the test does not know), uses only GitHub's own actions, and
// its scripts call only make targets the Makefile has, aegis commands
// and flags that exist, and files the repository holds.
func TestExampleWorkflow(t *testing.T) {
	f, err := os.Open(exampleWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var wf workflow
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("%s: %v", exampleWorkflow, err)
	}
	if wf.Name == "" || len(wf.On) == 0 || len(wf.Jobs) != 1 {
		t.Fatalf("%s: want a name, triggers and one job: %+v", exampleWorkflow, wf)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.Uses != "" && !regexp.MustCompile(`^actions/[a-z-]+@v\d+$`).MatchString(s.Uses) {
				t.Errorf("step uses %q: want only GitHub's own actions, pinned to a major version", s.Uses)
			}
			if p := s.With["go-version-file"]; p != "" {
				scripts = append(scripts, p)
			}
			scripts = append(scripts, s.Run)
		}
	}
	all := strings.Join(scripts, "\n")
	for _, m := range regexp.MustCompile(`\bmake ([a-z-]+)`).FindAllStringSubmatch(all, -1) {
		if !regexp.MustCompile(`(?m)^` + m[1] + `:`).Match(makefile) {
			t.Errorf("make %s: the Makefile has no such target", m[1])
		}
	}
	for _, p := range regexp.MustCompile(`\b(?:examples/[\w./-]+|go\.mod)`).FindAllString(all, -1) {
		if _, err := os.Stat(filepath.Join("..", p)); err != nil {
			t.Errorf("the workflow names %s: %v", p, err)
		}
	}
	if !strings.Contains(all, exampleDenied) || !strings.Contains(all, exampleShop[len("http://"):]) {
		t.Errorf("the workflow does not expect %s denied on %s", exampleDenied, exampleShop)
	}
	// Each aegis command line, continued lines joined: the command exists
	// and has every flag given.
	joined := strings.ReplaceAll(all, "\\\n", " ")
	calls := regexp.MustCompile(`bin/aegis ([a-z]+)([^\n&|;]*)`).FindAllStringSubmatch(joined, -1)
	if len(calls) == 0 {
		t.Fatal("the workflow runs no aegis command")
	}
	suiteFlags := map[string]bool{}
	for _, c := range calls {
		name := c[1]
		if _, ok := commands[name]; !ok {
			t.Errorf("aegis %s: no such command", name)
			continue
		}
		_, help, _ := run(t, "", "help", name)
		for _, fl := range regexp.MustCompile(`(?:^|\s)--([a-z-]+)`).FindAllStringSubmatch(c[2], -1) {
			// A flag's line in the help: "  -NAME", then its argument or
			// the line's end (-max is not -max-actions).
			if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(fl[1]) + `( |$)`).MatchString(help) {
				t.Errorf("aegis %s --%s: no such flag", name, fl[1])
			}
			if name == "suite" {
				suiteFlags[fl[1]] = true
			}
		}
	}
	// The workflow's point: a suite that writes what CI reads.
	for _, fl := range []string{"parallel", "evidence", "junit", "summary"} {
		if !suiteFlags[fl] {
			t.Errorf("the workflow's aegis suite lacks --%s", fl)
		}
	}
}
