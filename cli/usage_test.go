package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// TestHelpTopics: help a person asks for is on stdout, for every topic; an
// unknown topic or command is a usage error on stderr that says what is
// known (and what was likely meant).
func TestHelpTopics(t *testing.T) {
	tests := []struct {
		args            []string
		code            int
		inOut, inErr    string
		emptyOut, noErr bool
	}{
		{[]string{"help"}, ExitOK, "Commands:", "", false, true},
		{[]string{"help", "help"}, ExitOK, "Commands:", "", false, true},
		{[]string{"help", "version"}, ExitOK, "Usage: aegis version", "", false, true},
		{[]string{"help", "run"}, ExitOK, "Exit status: 0 completed, 3 aborted", "", false, true},
		{[]string{"help", "demo"}, ExitOK, "Usage: aegis demo", "", false, true},
		{[]string{"help", "report"}, ExitOK, "BUNDLE.report.html", "", false, true},
		{[]string{"help", "policy"}, ExitOK, "Subcommands:", "", false, true},
		{[]string{"help", "policy", "eval"}, ExitOK, "Usage: aegis policy eval", "", false, true},
		{[]string{"help", "witness", "serve"}, ExitOK, "Usage: aegis witness serve", "", false, true},
		{[]string{"help", "extension", "unpack"}, ExitOK, "Usage: aegis extension unpack DIR | id", "", false, true},
		{[]string{"help", "extension", "unpack", "x"}, ExitOK, "Usage: aegis extension unpack DIR | id", "", false, true},
		{[]string{"help", "policy", "evl"}, ExitUsage, "", `no help topic "policy evl" (did you mean "eval"?); the subcommands of policy are: eval, test, diff, attack`, true, false},
		{[]string{"run", "-h"}, ExitOK, "Flags:", "", false, true},
		{[]string{"help", "frobnicate"}, ExitUsage, "", `aegis: no help topic "frobnicate"; the topics are: demo, extension, help, host,`, true, false},
		{[]string{"help", "verfy"}, ExitUsage, "", `no help topic "verfy" (did you mean "verify"?); the topics are: `, true, false},
		{[]string{"verfy", "x"}, ExitUsage, "", "aegis: unknown command \"verfy\" (did you mean \"verify\"?)\nUsage: aegis COMMAND [flags] [args]\nRun \"aegis help\" for the commands.\n", true, false},
	}
	// Help never runs the command: "help extension unpack" wrote the
	// extension into a directory named "-h".
	t.Chdir(t.TempDir())
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, "", tt.args...)
			if entries, _ := os.ReadDir("."); len(entries) != 0 {
				t.Errorf("help wrote %s in the working directory", entries[0].Name())
			}
			if got, want := code, tt.code; got != want {
				t.Errorf("exit %d, want %d; stderr %q", got, want, errOut)
			}
			if !strings.Contains(out, tt.inOut) || tt.emptyOut && out != "" {
				t.Errorf("stdout %q, want it to contain %q", out, tt.inOut)
			}
			if !strings.Contains(errOut, tt.inErr) || tt.noErr && errOut != "" {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.inErr)
			}
		})
	}
}

// TestBadFlagIsShort: a wrong flag prints the flag package's reason, the
// command's synopsis and where its help is; not the whole help.
func TestBadFlagIsShort(t *testing.T) {
	for _, c := range []string{"run", "demo", "verify", "report", "replay", "policy eval"} {
		args := append(strings.Fields(c), "--nope")
		code, out, errOut := run(t, "", args...)
		if code != ExitUsage || out != "" {
			t.Errorf("aegis %s --nope: exit %d, stdout %q", c, code, out)
		}
		for _, want := range []string{"flag provided but not defined: -nope\nUsage: aegis " + c + " ", "Run \"aegis help " + c + "\" for the flags and what they do.\n"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("aegis %s --nope: stderr %q lacks %q", c, errOut, want)
			}
		}
		if got := strings.Count(errOut, "\n"); got > 5 || strings.Contains(errOut, "Flags:") || strings.Contains(errOut, "Exit status") {
			t.Errorf("aegis %s --nope: %d lines, want the short usage:\n%s", c, got, errOut)
		}
	}
}

// TestTaskErrors: what is wrong with a task is said for the flag or the
// member the person typed, with a hint: the scheme a URL lacks, the bounds
// of a budget in the flag's unit, the field a misspelt one likely is.
func TestTaskErrors(t *testing.T) {
	t.Setenv(EnvModel, "")
	file := func(body string) string { return writeFile(t, "task.json", body, 0o644) }
	tests := []struct {
		name string
		args []string
		want string // stderr, FILE for the task file
	}{
		{"url without scheme", []string{"--goal", "x", "--url", "example.com"},
			"aegis: --url example.com: an allowed URL needs a scheme: add https:// (--url https://example.com)\n"},
		{"host and port", []string{"--goal", "x", "--url", "https://a.example", "--url", "localhost:8080"},
			"aegis: --url localhost:8080: an allowed URL needs a scheme: add http:// (--url http://localhost:8080)\n"},
		{"not a URL", []string{"--goal", "x", "--url", "not a url"},
			"aegis: --url not a url: not an absolute URL (such as https://example.com)\n"},
		{"another scheme", []string{"--goal", "x", "--url", "ftp://a.example/"},
			"aegis: --url ftp://a.example/: only http and https pages can be allowed, not ftp:\n"},
		{"no host", []string{"--goal", "x", "--url", "https://"},
			"aegis: --url https://: the URL names no host (such as https://example.com/)\n"},
		{"user info", []string{"--goal", "x", "--url", "https://bob:pw@a.example/"},
			"aegis: --url https://bob:xxxxx@a.example/: an allowed URL carries no user name or password (give credentials as secrets: aegis help run)\n"},
		{"credentials without scheme", []string{"--goal", "x", "--url", "bob:pw@a.example/?key=k3y"},
			"aegis: --url bob:xxxxx@a.example/?key=xxxxx: only http and https pages can be allowed, not bob:\n"},
		{"key in the query, no scheme", []string{"--goal", "x", "--url", "a.example/feed?key=k3y&v=2"},
			"aegis: --url a.example/feed?key=xxxxx&v=xxxxx: an allowed URL needs a scheme: add https:// (--url https://a.example/feed?key=xxxxx&v=xxxxx)\n"},
		{"file user info", []string{file(`{"goal":"x","urls":["https://bob:pw@a.example/"]}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  urls[0] \"https://bob:xxxxx@a.example/\": an allowed URL carries no user name or password (give credentials as secrets: aegis help run)\n"},
		{"too many actions", []string{"--goal", "x", "--url", "https://a.example", "--max-actions", "500"},
			"aegis: --max-actions 500: want 1 to 200\n"},
		{"negative actions", []string{"--goal", "x", "--url", "https://a.example", "--max-actions", "-1"},
			"aegis: --max-actions -1: want 1 to 200\n"},
		{"no tokens", []string{"--goal", "x", "--url", "https://a.example", "--max-tokens", "-5"},
			"aegis: --max-tokens -5: want 1 to 1,000,000,000\n"},
		{"too many tokens", []string{"--goal", "x", "--url", "https://a.example", "--max-tokens", "2000000000"},
			"aegis: --max-tokens 2000000000: want 1 to 1,000,000,000\n"},
		{"tokens not a number", []string{"--goal", "x", "--url", "https://a.example", "--max-tokens", "50k"},
			"invalid value \"50k\" for flag -max-tokens: parse error\nUsage: aegis run [flags] TASK.json|-\n       aegis run [flags] --goal \"...\" --url URL [--url URL...]\nRun \"aegis help run\" for the flags and what they do.\n"},
		{"file token hint", []string{file(`{"goal":"x","urls":["https://a.example"],"hints":{"maxTokens":1.5}}`)},
			"aegis: FILE: contract: hints.maxTokens is 1.5: want an integer from 1 to 1000000000\n"},
		{"token budget at the top", []string{file(`{"goal":"x","urls":["https://a.example"],"maxTokens":5000}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  unknown field \"maxTokens\": the token budget is a hint, {\"hints\": {\"maxTokens\": N}} (or --max-tokens)\n"},
		{"no cost", []string{"--goal", "x", "--url", "https://a.example", "--max-cost-usd", "-0.5"},
			"aegis: --max-cost-usd -0.5: want more than 0 and at most 1,000,000 (US dollars)\n"},
		{"too much cost", []string{"--goal", "x", "--url", "https://a.example", "--max-cost-usd", "2e6"},
			"aegis: --max-cost-usd 2e+06: want more than 0 and at most 1,000,000 (US dollars)\n"},
		{"cost NaN", []string{"--goal", "x", "--url", "https://a.example", "--max-cost-usd", "NaN"},
			"aegis: --max-cost-usd NaN: want more than 0 and at most 1,000,000 (US dollars)\n"},
		{"cost not a number", []string{"--goal", "x", "--url", "https://a.example", "--max-cost-usd", "$5"},
			"invalid value \"$5\" for flag -max-cost-usd: parse error\nUsage: aegis run [flags] TASK.json|-\n       aegis run [flags] --goal \"...\" --url URL [--url URL...]\nRun \"aegis help run\" for the flags and what they do.\n"},
		{"file cost hint", []string{file(`{"goal":"x","urls":["https://a.example"],"hints":{"maxCostUsd":0}}`)},
			"aegis: FILE: contract: hints.maxCostUsd is 0: want a number greater than 0 and at most 1000000 (US dollars)\n"},
		{"cost budget at the top", []string{file(`{"goal":"x","urls":["https://a.example"],"maxCostUsd":5}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  unknown field \"maxCostUsd\": the cost budget is a hint, {\"hints\": {\"maxCostUsd\": USD}} (or --max-cost-usd)\n"},
		{"misspelt classification", []string{"--goal", "x", "--url", "https://a.example", "--classification", "senstive"},
			"aegis: --classification \"senstive\": want public, restricted, sensitive (did you mean \"sensitive\"?)\n"},
		{"unknown classification", []string{"--goal", "x", "--url", "https://a.example", "--classification", "secret"},
			"aegis: --classification \"secret\": want public, restricted, sensitive\n"},
		{"file classification hint", []string{file(`{"goal":"x","urls":["https://a.example"],"hints":{"classification":"Secret"}}`)},
			"aegis: FILE: contract: hints.classification is \"Secret\": want one of public, restricted, sensitive\n"},
		{"too long", []string{"--goal", "x", "--url", "https://a.example", "--max-duration", "1h"},
			"aegis: --max-duration 1h0m0s: want 1s to 30m0s\n"},
		{"goal too long", []string{"--goal", strings.Repeat("g", 1001), "--url", "https://a.example"},
			"aegis: --goal: length must be <= 1000, but got 1001\n"},
		{"misspelt field", []string{file(`{"gaol":"x","urls":["https://a.example"]}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  unknown field \"gaol\" (did you mean \"goal\"?)\n"},
		{"singular urls", []string{file(`{"goal":"x","url":["https://a.example"]}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  unknown field \"url\" (did you mean \"urls\"?)\n"},
		{"unknown field", []string{file(`{"goal":"x","urls":["https://a.example"],"colour":"red"}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  unknown field \"colour\" (a task has goal, urls, maxActions, maxDurationMs, hints)\n"},
		{"missing field", []string{file(`{"urls":["https://a.example"]}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  missing field \"goal\"\n"},
		{"file url without scheme", []string{file(`{"goal":"x","urls":["a.example"],"maxActions":0}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  maxActions: must be >= 1 but found 0\n  urls[0] \"a.example\": an allowed URL needs a scheme: add https:// (https://a.example)\n"},
		{"file host and port", []string{file(`{"goal":"x","urls":["localhost:8080"]}`)},
			"aegis: FILE is not a valid task (ComputerUseInput):\n  urls[0] \"localhost:8080\": an allowed URL needs a scheme: add http:// (http://localhost:8080)\n"},
		{"file and flag", []string{"--max-actions", "201", file(`{"goal":"x","urls":["https://a.example"]}`)},
			"aegis: --max-actions 201: want 1 to 200\n"},
		{"misspelt hint", []string{file(`{"goal":"x","urls":["https://a.example"],"hints":{"step":["extract text"]}}`)},
			"aegis: no agent: configure a model (--model or $AEGIS_MODEL) or give the task hints.steps or hints.script (the task's hints have \"step\": did you mean \"steps\"?)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run"}, tt.args...)
			code, out, errOut := run(t, "", args...)
			if code != ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			want := tt.want
			if n := len(tt.args); n > 0 && strings.HasSuffix(tt.args[n-1], "task.json") {
				want = strings.ReplaceAll(want, "FILE", tt.args[n-1])
			}
			if got := errOut; got != want {
				t.Errorf("stderr\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestBudgetBoundsMatchSchema: the bounds the budget flags' errors state
// are the schema's.
func TestBudgetBoundsMatchSchema(t *testing.T) {
	valid := func(actions, ms int) bool {
		in := contract.Input{Goal: "x", URLs: []string{"https://a.example"}, MaxActions: &actions, MaxDurationMs: &ms}
		_, err := contract.Encode(schemas.KindInput, in)
		return err == nil
	}
	ms := func(d time.Duration) int { return int(d.Milliseconds()) }
	tests := []struct {
		name       string
		actions, d int
		want       bool
	}{
		{"least", minActions, ms(minDuration), true},
		{"most", maxActions, ms(maxDuration), true},
		{"too few actions", minActions - 1, ms(minDuration), false},
		{"too many actions", maxActions + 1, ms(minDuration), false},
		{"too short", minActions, ms(minDuration) - 1, false},
		{"too long", minActions, ms(maxDuration) + 1, false},
	}
	for _, tt := range tests {
		if got := valid(tt.actions, tt.d); got != tt.want {
			t.Errorf("%s: valid = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"goal", "urls", "maxActions", "maxDurationMs", "hints"}
	tests := []struct{ got, want string }{
		{"gaol", "goal"},
		{"url", "urls"},
		{"URLS", "urls"},
		{"maxaction", "maxActions"},
		{"max_actions", "maxActions"},
		{"maxDuration", "maxDurationMs"},
		{"maxDurationSeconds", ""},
		{"hint", "hints"},
		{"colour", ""},
		{"goal", ""}, // itself is no suggestion
		{"x", ""},
	}
	for _, tt := range tests {
		if got := closest(tt.got, known); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.got, got, tt.want)
		}
	}
}

// TestFlagErrors: the flags of run, demo, replay and report whose values
// cannot work are refused before anything starts, in the words of the
// flag as typed, with the fix.
func TestFlagErrors(t *testing.T) {
	bundle := copyBundle(t)
	task := []string{"run", "--goal", "x", "--url", "https://a.example"}
	tests := []struct {
		name string
		env  string // AEGIS_LLM_BASE_URL
		args []string
		want string // stderr
	}{
		{"no approval time", "", append(task, "--approval-timeout", "0"),
			"aegis: --approval-timeout 0s: want a positive duration, such as 5m (the default)\n"},
		{"negative approval time", "", []string{"demo", "--approval-timeout", "-1s"},
			"aegis: --approval-timeout -1s: want a positive duration, such as 5m (the default)\n"},
		{"endpoint without scheme", "", append(task, "--browser-endpoint", "localhost:3000"),
			"aegis: --browser-endpoint localhost:3000: want the Playwright server's WebSocket address: add ws:// (--browser-endpoint ws://localhost:3000)\n"},
		{"model URL without scheme", "", append(task, "--llm-base-url", "api.example.com/v1", "--model", "m"),
			"aegis: --llm-base-url api.example.com/v1: the URL needs a scheme: add https:// (--llm-base-url https://api.example.com/v1)\n"},
		{"local model URL", "", append(task, "--llm-base-url", "localhost:11434/v1", "--model", "m"),
			"aegis: --llm-base-url localhost:11434/v1: the URL needs a scheme: add http:// (--llm-base-url http://localhost:11434/v1)\n"},
		{"model URL of another scheme", "", append(task, "--llm-base-url", "ftp://a.example/v1", "--model", "m"),
			"aegis: --llm-base-url ftp://a.example/v1: want the endpoint's http(s) URL up to /v1, such as https://api.openai.com/v1\n"},
		{"model URL from the environment", "127.0.0.1:8000/v1", []string{"demo"},
			"aegis: $AEGIS_LLM_BASE_URL=127.0.0.1:8000/v1: the URL needs a scheme: add http:// ($AEGIS_LLM_BASE_URL=http://127.0.0.1:8000/v1)\n"},
		{"endpoint with credentials", "", append(task, "--browser-endpoint", "pw:s3cret@localhost:3000/?token=t0k"),
			"aegis: --browser-endpoint pw:xxxxx@localhost:3000/?token=xxxxx: want the Playwright server's WebSocket address: add ws:// (--browser-endpoint ws://pw:xxxxx@localhost:3000/?token=xxxxx)\n"},
		{"model URL with a key", "", append(task, "--llm-base-url", "ftp://u:s3cret@a.example/v1?api-key=k3y", "--model", "m"),
			"aegis: --llm-base-url ftp://u:xxxxx@a.example/v1?api-key=xxxxx: want the endpoint's http(s) URL up to /v1, such as https://api.openai.com/v1\n"},
		{"model URL with a key from the environment", "127.0.0.1:8000/v1?key=k3y", []string{"demo"},
			"aegis: $AEGIS_LLM_BASE_URL=127.0.0.1:8000/v1?key=xxxxx: the URL needs a scheme: add http:// ($AEGIS_LLM_BASE_URL=http://127.0.0.1:8000/v1?key=xxxxx)\n"},
		{"origin without scheme", "", []string{"replay", bundle, "--map-origin", "example.com=localhost:8080"},
			"invalid value \"example.com=localhost:8080\" for flag -map-origin: an origin needs its scheme: --map-origin https://example.com=http://localhost:8080\n"},
		{"report into nowhere", "", []string{"report", bundle, "-o", "/nonexistent/dir/r.html"},
			"aegis: -o /nonexistent/dir/r.html: the directory /nonexistent/dir does not exist\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvLLMBaseURL, tt.env)
			code, out, errOut := run(t, "", tt.args...)
			if code != ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			if !strings.HasPrefix(errOut, tt.want) {
				t.Errorf("stderr\n got %q\nwant %q", errOut, tt.want)
			}
		})
	}
}

// TestShownURL: a URL echoed in a message keeps what says which it is and
// masks what may be a credential: the password, query and fragment values.
func TestShownURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.com/a?b", "https://example.com/a?b"},
		{"https://ada:pw@example.com/", "https://ada:xxxxx@example.com/"},
		{"https://ada@example.com/", "https://ada@example.com/"},
		{"https://example.com/p?key=s3cret&x=&y", "https://example.com/p?key=xxxxx&x=&y"},
		{"https://example.com/#access_token=s3cret", "https://example.com/#access_token=xxxxx"},
		{"ada:pw@example.com?k=v", "ada:xxxxx@example.com?k=xxxxx"},
		{"https://ex.com/a@b:c", "https://ex.com/a@b:c"},
		{"https://a:b:c@ex.com", "https://a:xxxxx@ex.com"},
		{"example.com", "example.com"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := shownURL(tt.in); got != tt.want {
			t.Errorf("shownURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSchemeFor: a URL typed without a scheme gets http:// on a loopback
// host (however spelt) and https:// elsewhere.
func TestSchemeFor(t *testing.T) {
	tests := []struct{ url, want string }{
		{"localhost:8080", "http://"},
		{"LOCALHOST.:8080/x", "http://"},
		{"127.0.0.1:1234", "http://"},
		{"127.10.0.1", "http://"},
		{"[::1]:8080", "http://"},
		{"[0:0:0:0:0:0:0:1]:8080", "http://"},
		{"example.com", "https://"},
		{"localhost.example.com", "https://"},
		{"128.0.0.1", "https://"},
	}
	for _, tt := range tests {
		if got := schemeFor(tt.url); got != tt.want {
			t.Errorf("schemeFor(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

// TestSessionClassification: runTask records --classification in the
// task's hints.classification, the stricter of the flag and the task's own
// (never weakening it), and records nothing without the flag; other hints
// are kept. What the session makes of the recorded classification
// (restricted when none) is session's TestClassificationAndVisionProbe.
func TestSessionClassification(t *testing.T) {
	task := func(hints string) contract.Input {
		in := contract.Input{Goal: "x", URLs: []string{"https://a.example"}}
		if hints != "" {
			in.Hints = []byte(hints)
		}
		return in
	}
	for _, tt := range []struct {
		flag, hints string
		want        contract.Classification // "": none recorded
	}{
		{"", "", ""},
		{"public", "", contract.ClassPublic},
		{"", `{"classification":"public"}`, contract.ClassPublic},
		{"public", `{"classification":"sensitive"}`, contract.ClassSensitive},
		{"sensitive", `{"classification":"public"}`, contract.ClassSensitive},
		{"restricted", `{"classification":"public"}`, contract.ClassRestricted},
		{"public", `{"classification":"restricted"}`, contract.ClassRestricted},
		{"sensitive", `{"maxTokens":100}`, contract.ClassSensitive},
	} {
		in, err := setClassification(tt.flag, task(tt.hints), "task.json")
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.Classification()
		if err != nil || got != tt.want {
			t.Errorf("--classification %q, hints %s: the task records %q, %v; want %q", tt.flag, tt.hints, got, err, tt.want)
		}
		if n, err := in.MaxTokens(); strings.Contains(tt.hints, "maxTokens") && (err != nil || n != 100) {
			t.Errorf("--classification %q, hints %s: hints %s lost maxTokens", tt.flag, tt.hints, in.Hints)
		}
	}
}
