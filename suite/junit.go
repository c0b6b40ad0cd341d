package suite

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// The JUnit XML report, in the shape GitLab, Jenkins (JUnit and xUnit
// plugins) and GitHub's JUnit actions read: a testsuites root holding one
// testsuite, a testcase per task (name, classname, time in seconds), a
// failure element in every task that did not complete, a skipped element
// in every task that was not run, and, when something stopped the suite
// (Index.StoppedBy), the testsuite's properties stoppedBy (the index's
// word) and stoppedByReason (in words). GitLab shows a failure's text,
// not its message attribute, so the text repeats the reason and adds the
// status and the bundle. encoding/xml escapes every name and reason, and
// writes each character XML 1.0 does not allow (control characters,
// invalid UTF-8) as U+FFFD, so a hostile task name cannot break the
// document.

// JUnitClassname is every testcase's classname: CI pages group test cases
// by it.
const JUnitClassname = "aegis"

// JUnitReport is the JUnit document WriteJUnit writes, its root: to read
// a report back (tests, tools).
type JUnitReport struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr"`
	JUnitCounts
	Suite JUnitSuite `xml:"testsuite"`
}

// JUnitCounts are the attributes the root and the testsuite share: how
// many test cases, failures, errors (always 0: a task that did not
// complete is a failure) and skipped, and the time in seconds.
type JUnitCounts struct {
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

// JUnitSuite is the report's one testsuite.
type JUnitSuite struct {
	Name string `xml:"name,attr"`
	JUnitCounts
	// Timestamp is when the suite started.
	Timestamp string `xml:"timestamp,attr,omitempty"`
	// Properties say what stopped the suite (stoppedBy, stoppedByReason),
	// when something did; they come before the test cases, as JUnit's
	// schema orders them.
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is a property of the testsuite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is a task's testcase: a failure when it did not complete, a
// skipped when it was not run, neither when it completed.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
}

// JUnitFailure says why a task did not complete: Message the reason,
// Type the status ("error" when no session ended), Text the reason,
// status, counts and bundle (what GitLab shows).
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped says why a task was not run.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the suite as JUnit XML to w.
func WriteJUnit(w io.Writer, idx Index) error {
	t := idx.Totals()
	counts := JUnitCounts{Tests: t.Tasks, Failures: t.Failed, Skipped: t.Skipped, Time: seconds(idx.DurationMs)}
	suite := JUnitSuite{Name: "aegis suite", JUnitCounts: counts, Timestamp: idx.StartedAt}
	if idx.StoppedBy != "" {
		suite.Properties = []JUnitProperty{
			{Name: "stoppedBy", Value: string(idx.StoppedBy)},
			{Name: "stoppedByReason", Value: idx.StoppedBy.Says()},
		}
	}
	for _, r := range idx.Tasks {
		c := JUnitCase{Name: r.Name, Classname: JUnitClassname, Time: seconds(r.DurationMs)}
		switch {
		case r.Skipped:
			c.Skipped = &JUnitSkipped{Message: reason(r)}
		case !r.Completed():
			c.Failure = &JUnitFailure{Message: reason(r), Type: statusWord(r), Text: failureText(r)}
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := JUnitReport{Name: "aegis", JUnitCounts: counts, Suite: suite}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("suite: junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("suite: junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("suite: junit: %w", err)
	}
	return nil
}

// seconds writes milliseconds as seconds with three decimals, as JUnit's
// time attributes are.
func seconds(ms int64) string {
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// statusWord is how the task ended in one word: its status, "skipped",
// or "error" when no session ended.
func statusWord(r TaskResult) string {
	switch {
	case r.Skipped:
		return "skipped"
	case r.Status == "":
		return "error"
	}
	return string(r.Status)
}

// reason says why the task did not complete: its error, else its status.
func reason(r TaskResult) string {
	if r.Error != "" {
		return r.Error
	}
	return "the session ended " + statusWord(r)
}

// failureText is the body of a failure element: the reason, the status,
// the counts, the bundle, and the attempts on servers that failed.
func failureText(r TaskResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nstatus: %s\nactions: %d, denials: %d, approvals: %d\n", reason(r), statusWord(r), r.Actions, r.Denials, r.Approvals)
	if r.Bundle != "" {
		fmt.Fprintf(&b, "bundle: %s\n", r.Bundle)
	} else {
		b.WriteString("bundle: none\n")
	}
	if r.Endpoint != "" {
		fmt.Fprintf(&b, "endpoint: %s\n", r.Endpoint)
	}
	for _, a := range r.Retries {
		fmt.Fprintf(&b, "retried after %s failed: %s\n", a.Endpoint, a.Error)
	}
	return b.String()
}
