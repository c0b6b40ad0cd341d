package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
)

// TestStepReportsAndOutputRedacted: what goes to people without passing
// the evidence writer (step reports for progress lines and the popup, the
// ComputerUseOutput on stdout) holds no secret value, raw or encoded: the
// page echoed it into an element's text, a GET form put it in the URL.
func TestStepReportsAndOutputRedacted(t *testing.T) {
	const value = "hunter2-hunter2"
	set, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(s string) bool {
		return strings.Contains(s, value) || strings.Contains(s, "aHVudGVyMi1odW50ZXIy") || strings.Contains(s, "2retnuh-2retnuh")
	}
	rep := redactReport(set, StepReport{
		Action:  contract.Action{ID: "a1", Type: contract.ActExtract, Selector: "#mirror", Reason: "read " + value},
		Target:  &contract.Element{Tag: "p", ID: "mirror", Text: "You typed: " + value, Label: "2retnuh-2retnuh"},
		Reasons: []contract.Reason{{Rule: "x", Message: "saw aHVudGVyMi1odW50ZXIy"}},
		Effect:  &contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Path: "/login/" + value},
		Error:   "timeout: " + value,
	})
	b, _ := json.Marshal(rep)
	if leaks(string(b)) {
		t.Errorf("step report holds the secret: %s", b)
	}
	if !strings.Contains(rep.Target.Text, "{{secret:PW}}") {
		t.Errorf("target text %q, want the placeholder", rep.Target.Text)
	}

	r := &run{cfg: &Config{Secrets: set}, id: "s-1", curURL: "http://127.0.0.1:8080/welcome?pw=" + value,
		artifacts: []contract.Artifact{{ID: "art-1", Type: contract.ArtifactText, Value: "You typed: " + value, SourceURL: "http://127.0.0.1:8080/welcome?pw=" + value}}}
	out := r.output(ending{status: contract.SessionCompleted, summary: "signed in as " + value}, Result{})
	ob, _ := json.Marshal(out)
	if leaks(string(ob)) {
		t.Errorf("output holds the secret: %s", ob)
	}
	if out.LastURL == nil || !strings.Contains(*out.LastURL, "{{secret:PW}}") {
		t.Errorf("lastUrl %v, want the placeholder in it", out.LastURL)
	}
}

// TestJudgeRefusesUnknownKinds: an effect of a kind the contract does not
// know is refused before anything is asked, not recorded as a request.
func TestJudgeRefusesUnknownKinds(t *testing.T) {
	e := &effects{}
	err := e.Judge(t.Context(), contract.Effect{Kind: "teleport", Method: "GET", Origin: "https://shop.example", Path: "/"})
	if err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Fatalf("Judge(teleport) = %v, want a refusal of the unknown kind", err)
	}
}
