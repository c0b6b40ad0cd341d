// Package suite runs many tasks as one CI job (aegis suite): every task a
// session of its own with its own evidence bundle, on a shared browser or
// spread over a fleet of Playwright servers, summed up in a suite index
// that aegis verify checks whole, and in the reports CI systems read (JUnit
// XML, a Markdown summary).
package suite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// FormatVersion names the suite index format.
const FormatVersion = "aegis-suite/1"

// Index is a suite's index (suite.json): what ran, how each task ended,
// and where its evidence is.
type Index struct {
	// FormatVersion is FormatVersion.
	FormatVersion string `json:"formatVersion"`
	// StartedAt and EndedAt bound the suite's run, RFC 3339.
	StartedAt string `json:"startedAt"`
	EndedAt   string `json:"endedAt"`
	// DurationMs is the suite's wall time in milliseconds.
	DurationMs int64 `json:"durationMs"`
	// Parallel is how many tasks ran at once.
	Parallel int `json:"parallel"`
	// Tasks holds one result per task, in the order the tasks were given.
	Tasks []TaskResult `json:"tasks"`
	// StoppedBy is what stopped the suite before every task ran to its
	// end (a task not run, or cancelled); "" when nothing did.
	StoppedBy Stop `json:"stoppedBy,omitempty"`
}

// Stop names what stopped a suite before every task ran to its end.
type Stop string

// What stops a suite: Index.StoppedBy.
const (
	StopDuration    Stop = "max-duration" // Options.MaxDuration ran out
	StopActions     Stop = "max-actions"  // Options.MaxActions was reached
	StopTokens      Stop = "max-tokens"   // Options.MaxTokens was reached
	StopInterrupted Stop = "interrupted"  // the caller's context ended (Ctrl-C)
)

// Says is the stop in words, for the reports: "the suite's --max-actions
// budget was reached".
func (s Stop) Says() string {
	switch s {
	case StopDuration:
		return "the suite's --max-duration budget ran out"
	case StopActions:
		return "the suite's --max-actions budget was reached"
	case StopTokens:
		return "the suite's --max-tokens budget was reached"
	case StopInterrupted:
		return "the suite was interrupted"
	}
	return "stopped: " + string(s)
}

// TaskResult is one task's line in the index.
type TaskResult struct {
	// Name names the task: its file's path as given (or relative to the
	// suite directory).
	Name string `json:"name"`
	// TaskHash ties the line to its task: TaskHash of the task as the
	// suite handed it to the session, which the bundle's manifest records
	// (its "task"); aegis verify compares the two.
	TaskHash string `json:"taskHash"`
	// Status is how the session ended (contract.SessionStatus, failed
	// included), as its sealed bundle says; "" when no session could
	// start, its bundle could not be sealed, or the task was not run (see
	// Error).
	Status contract.SessionStatus `json:"status,omitempty"`
	// DurationMs is the task's wall time in milliseconds.
	DurationMs int64 `json:"durationMs"`
	// Actions, Denials and Approvals count the session's executed
	// actions, denied actions and approved actions.
	Actions   int `json:"actions"`
	Denials   int `json:"denials"`
	Approvals int `json:"approvals"`
	// Tokens is what the session's model calls used (0 offline).
	Tokens int `json:"tokens,omitempty"`
	// Bundle is the task's evidence bundle, relative to the index's
	// directory; "" when none was written.
	Bundle string `json:"bundle,omitempty"`
	// HeadHash is the bundle's ledger head at its seal.
	HeadHash string `json:"headHash,omitempty"`
	// Error says why the task did not complete, for people (and JUnit's
	// failure message); "" when it completed.
	Error string `json:"error,omitempty"`
	// Endpoint is the Playwright server the task ran on; "" for a browser
	// the suite launched.
	Endpoint string `json:"endpoint,omitempty"`
	// Retries are the earlier attempts of the task, each on a server that
	// failed (the suite retries a task once, elsewhere).
	Retries []Retry `json:"retries,omitempty"`
	// Skipped says the task was not run: a suite budget ran out or the
	// suite was stopped before its turn (Error says which). A skipped task
	// has no status and no bundle.
	Skipped bool `json:"skipped,omitempty"`
}

// TaskHash returns the SHA-256, as 64 lowercase hex digits, of the
// canonical JSON (RFC 8785) of the task: what an index line records of its
// task (TaskResult.TaskHash), and what aegis verify computes from the task
// a bundle's manifest records.
func TaskHash(in contract.Input) (string, error) {
	b, err := canonjson.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("suite: task hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Retry is an attempt of a task that its server's failure ended.
type Retry struct {
	// Endpoint is the server that failed.
	Endpoint string `json:"endpoint"`
	// Error says how it failed.
	Error string `json:"error"`
	// Bundle is the attempt's evidence bundle, if it wrote one.
	Bundle string `json:"bundle,omitempty"`
}

// Completed reports whether the task completed.
func (t TaskResult) Completed() bool { return t.Status == contract.SessionCompleted }

// Totals sums up a suite: how many tasks ended how, and what they did.
type Totals struct {
	// Tasks counts every task; Completed, Failed and Skipped split them:
	// Failed counts every task that ran and did not complete (any other
	// status, or no session at all), Skipped those not run.
	Tasks, Completed, Failed, Skipped int
	// Actions, Denials, Approvals and Tokens are the tasks' sums.
	Actions, Denials, Approvals, Tokens int
	// Retried counts the tasks retried after a server failed.
	Retried int
}

// Totals sums up the index's tasks.
func (idx Index) Totals() Totals {
	var t Totals
	for _, r := range idx.Tasks {
		t.Tasks++
		switch {
		case r.Skipped:
			t.Skipped++
		case r.Completed():
			t.Completed++
		default:
			t.Failed++
		}
		t.Actions += r.Actions
		t.Denials += r.Denials
		t.Approvals += r.Approvals
		t.Tokens += r.Tokens
		if len(r.Retries) > 0 {
			t.Retried++
		}
	}
	return t
}

// AllCompleted reports whether every task of the suite completed and
// nothing stopped it: what the suite's exit status says.
func (idx Index) AllCompleted() bool {
	t := idx.Totals()
	return t.Completed == t.Tasks && idx.StoppedBy == ""
}
