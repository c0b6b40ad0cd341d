package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// Bounds of the budget flags, as the ComputerUseInput schema has them
// (maxActions, maxDurationMs; TestBudgetBoundsMatchSchema checks): used
// to say what a flag wants, in its own unit.
const (
	minActions  = 1
	maxActions  = 200
	minDuration = time.Second
	maxDuration = 30 * time.Minute
)

// taskFields returns the members a task (contract.Input) has, in order.
func taskFields() []string {
	t := reflect.TypeOf(contract.Input{})
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// taskError says what is wrong with a task in the words of what the person
// typed: file is the TASK.json's name ("" for a task made of --goal and
// --url), doc its bytes, o the flags. Problems of members the flags set
// name the flag and its value ("--url example.com: ..."); problems of the
// file name its member ("urls[0] ..."), an unknown member with the known
// one it is likely a typo of. An err that is no schema violation (a JSON
// syntax error) is said as it is.
func taskError(err error, file string, doc []byte, o *runOptions) error {
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) {
		if file != "" {
			return usageError("%s is not a valid task (ComputerUseInput): %v", file, err)
		}
		return usageError("invalid task: %v", err)
	}
	var members map[string]json.RawMessage
	if doc != nil {
		_ = json.Unmarshal(doc, &members)
	}
	known := taskFields()
	// What the flags set is said for the flag; the rest for the file.
	var flagLines, lines []string
	suggested := map[string]bool{}
	unknown := make([]string, 0, len(members))
	for k := range members {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if k == contract.HintMaxTokens {
			// Seed 003's input has no member for it: it is a hint.
			lines = append(lines, fmt.Sprintf("unknown field %q: the token budget is a hint, {\"hints\": {\"%s\": N}} (or --max-tokens)", k, k))
			continue
		}
		if k == contract.HintMaxCostUSD {
			lines = append(lines, fmt.Sprintf("unknown field %q: the cost budget is a hint, {\"hints\": {\"%s\": USD}} (or --max-cost-usd)", k, k))
			continue
		}
		if best := closest(k, known); best != "" {
			suggested[best] = true
			lines = append(lines, fmt.Sprintf("unknown field %q (did you mean %q?)", k, best))
		} else {
			lines = append(lines, fmt.Sprintf("unknown field %q (a task has %s)", k, strings.Join(known, ", ")))
		}
	}
	for _, p := range ve.Problems {
		keyword := p.Keyword[strings.LastIndex(p.Keyword, "/")+1:]
		switch {
		case keyword == "additionalProperties" && members != nil:
			continue // said above
		case keyword == "required" && members != nil:
			for _, k := range known {
				if _, ok := members[k]; !ok && !suggested[k] && strings.Contains(p.Reason, "'"+k+"'") {
					lines = append(lines, fmt.Sprintf("missing field %q", k))
				}
			}
			continue
		}
		if line, ok := taskProblem(p, keyword, file, members, o); ok {
			flagLines = append(flagLines, line)
		} else {
			lines = append(lines, line)
		}
	}
	if file != "" && len(lines) > 0 {
		flagLines = append(flagLines, fmt.Sprintf("%s is not a valid task (ComputerUseInput):\n  %s", file, strings.Join(lines, "\n  ")))
	} else {
		flagLines = append(flagLines, lines...)
	}
	return usageError("%s", strings.Join(flagLines, "\n"))
}

// taskProblem says one schema problem of the task, for the flag that set
// the member when one did (flag true), else for the file's member.
func taskProblem(p schemas.Problem, keyword, file string, members map[string]json.RawMessage, o *runOptions) (line string, flag bool) {
	segs := strings.Split(strings.TrimPrefix(p.Pointer, "/"), "/")
	field := segs[0]
	switch {
	case field == "maxActions" && o.maxActions != 0:
		return fmt.Sprintf("--max-actions %d: want %d to %d", o.maxActions, minActions, maxActions), true
	case field == "maxDurationMs" && o.maxDuration != 0:
		return fmt.Sprintf("--max-duration %v: want %v to %v", o.maxDuration, minDuration, maxDuration), true
	case file == "" && field == "goal":
		return "--goal: " + p.Reason, true
	case file == "" && field == "urls" && len(segs) == 2:
		i, _ := strconv.Atoi(segs[1])
		if i < len(o.urls) {
			return fmt.Sprintf("--url %s: %s", shownURL(o.urls[i]), urlProblem(o.urls[i], keyword, p.Reason, "--url ")), true
		}
	case file == "" && field == "urls":
		return fmt.Sprintf("--url (given %d times): %s", len(o.urls), p.Reason), true
	case field == "urls" && len(segs) == 2:
		var urls []string
		_ = json.Unmarshal(members["urls"], &urls)
		i, _ := strconv.Atoi(segs[1])
		if i < len(urls) {
			return fmt.Sprintf("urls[%d] %q: %s", i, shownURL(urls[i]), urlProblem(urls[i], keyword, p.Reason, "")), false
		}
	}
	name := strings.Join(segs, ".")
	if name == "" {
		name = "the task"
	}
	return name + ": " + p.Reason, file == ""
}

// checkTaskURLs refuses the task's URLs that no session can allow,
// though some pass the schema's uri format ("localhost:8080" reads as the
// scheme "localhost"): an allowed URL is an absolute http(s) URL with a
// host and without user info. It says why, with the fix, for the flag or
// the file member that gave them.
func checkTaskURLs(urls []string, file string) error {
	var lines []string
	for i, u := range urls {
		why := allowedURLProblem(u)
		switch {
		case why == "":
			continue
		case file == "":
			lines = append(lines, fmt.Sprintf("--url %s: %s", shownURL(u), strings.ReplaceAll(why, "FIX", "--url ")))
		default:
			lines = append(lines, fmt.Sprintf("urls[%d] %q: %s", i, shownURL(u), strings.ReplaceAll(why, "FIX", "")))
		}
	}
	switch {
	case len(lines) == 0:
		return nil
	case file != "":
		return usageError("%s is not a valid task (ComputerUseInput):\n  %s", file, strings.Join(lines, "\n  "))
	}
	return usageError("%s", strings.Join(lines, "\n"))
}

// allowedURLProblem says why u cannot be an allowed URL, "" when it can;
// FIX stands where the fix's prefix goes. Strings the schema refuses
// anyway (spaces) are left to it.
func allowedURLProblem(u string) string {
	if strings.ContainsAny(u, " \t\n") {
		return ""
	}
	if noScheme(u) {
		return "an allowed URL needs a scheme: add " + schemeFor(u) + " (FIX" + withScheme(shownURL(u)) + ")"
	}
	pu, err := url.Parse(u)
	switch {
	case err != nil:
		return ""
	case pu.Scheme != "http" && pu.Scheme != "https":
		return fmt.Sprintf("only http and https pages can be allowed, not %s:", pu.Scheme)
	case pu.Host == "":
		return "the URL names no host (such as https://example.com/)"
	case pu.User != nil:
		return "an allowed URL carries no user name or password (give credentials as secrets: aegis help run)"
	}
	return ""
}

// noScheme reports whether u is a host (and port) written without the
// scheme an allowed URL needs: "example.com", "localhost:8080".
func noScheme(u string) bool {
	if strings.Contains(u, "://") {
		return false
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme == "" {
		return true
	}
	if pu.Opaque == "" {
		return false
	}
	// "localhost:8080/v1": the scheme "localhost", then a port.
	port, _, _ := strings.Cut(pu.Opaque, "/")
	_, err = strconv.Atoi(port)
	return err == nil
}

// urlProblem says why u is not a URL the task can allow, with a hint when
// it lacks its scheme: "needs a scheme: add https:// (--url
// https://example.com)"; prefix is what the fix is written after.
func urlProblem(u, keyword, reason, prefix string) string {
	if keyword != "format" {
		return reason
	}
	if why := allowedURLProblem(u); why != "" {
		return strings.ReplaceAll(why, "FIX", prefix)
	}
	return "not an absolute URL (such as https://example.com)"
}

// hintTypo says which member of the task's hints is likely a misspelt
// "steps" or "script": ` (the task's hints have "step": did you mean
// "steps"?)`, or "".
func hintTypo(in contract.Input) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(in.Hints, &m) != nil {
		return ""
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if best := closest(k, []string{"steps", "script"}); best != "" {
			return fmt.Sprintf(" (the task's hints have %q: did you mean %q?)", k, best)
		}
	}
	return ""
}
