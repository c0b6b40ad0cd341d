package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/aegis-run/aegis/suite"
)

// suiteMark is what every suite index holds near its start (its
// formatVersion); a file that holds it is read as an index.
const suiteMark = `"aegis-suite/`

// suiteIndexPath returns the suite index that path names, if it names
// one: a file named suite.json or holding an index's formatVersion in its
// first 4 KiB, or a directory (that is not a bundle) holding suite.json.
func suiteIndexPath(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	if fi.IsDir() {
		p := filepath.Join(path, suite.IndexFile)
		if suite.IsBundle(path) {
			return "", false
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
		return "", false
	}
	if !fi.Mode().IsRegular() {
		return "", false
	}
	if filepath.Base(path) == suite.IndexFile {
		return path, true
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	if bytes.HasPrefix(head[:n], zstdMagic) { // a packed bundle
		return "", false
	}
	return path, bytes.Contains(head[:n], []byte(suiteMark))
}

// suiteResult is the --json output of verify for a suite.
type suiteResult struct {
	Path     string            `json:"path"`
	Valid    bool              `json:"valid"`
	Tasks    []suite.TaskCheck `json:"tasks,omitempty"`
	Problems []string          `json:"problems,omitempty"`
	Failure  string            `json:"failure,omitempty"`
}

// verifySuite verifies the suite whose index is at index, printing a
// line per task.
func verifySuite(ctx context.Context, index string, pub ed25519.PublicKey, asJSON bool, stdio Stdio) error {
	rep, err := suite.Verify(ctx, index, suite.VerifyOptions{PubKey: pub})
	var me *suite.MismatchError
	switch {
	case err == nil, errors.As(err, &me), errors.Is(err, suite.ErrInvalidIndex):
	case errors.Is(context.Cause(ctx), ErrInterrupted):
		return asInterrupted(ctx, "verify "+index, err) // no verdict
	default:
		return usageError("%v", err) // unreadable
	}
	res := suiteResult{Path: index, Valid: err == nil, Tasks: rep.Tasks, Problems: rep.Problems}
	if err != nil {
		res.Failure = err.Error()
	}
	if asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printSuite(stdio, rep, err)
	}
	if err != nil {
		return exitCode(ExitFailure, nil)
	}
	return nil
}

// printSuite writes one line per task, the suite's own problems, and the
// verdict: successes on stdout, failures on stderr. Names and reasons
// come from the index: their control characters are shown as "?", so
// that no index can write escape sequences to the terminal.
func printSuite(stdio Stdio, rep suite.Report, err error) {
	if errors.Is(err, suite.ErrInvalidIndex) {
		fmt.Fprintf(stdio.Err, "%s: INVALID: %s\n", rep.Path, printable(err.Error()))
		return
	}
	for i, c := range rep.Tasks {
		t := rep.Index.Tasks[i]
		if !c.Verified {
			fmt.Fprintf(stdio.Err, "FAIL  %s: %s\n", printable(c.Name), printable(strings.Join(c.Problems, "; ")))
			continue
		}
		what := string(t.Status)
		switch {
		case t.Skipped:
			what = "skipped: " + t.Error
		case t.Status == "" && t.Bundle == "":
			what = "no session: " + t.Error
		case t.Status == "":
			what = "did not complete: " + t.Error
		}
		line := fmt.Sprintf("ok    %s: %s", c.Name, what)
		if c.Bundle != "" {
			seal := "sealed"
			if !c.Sealed {
				seal = "unsealed"
			}
			line += fmt.Sprintf("; actions %d, denials %d, approvals %d; bundle %s %s, %d entries, verified", t.Actions, t.Denials, t.Approvals, c.Bundle, seal, c.Entries)
		}
		fmt.Fprintln(stdio.Out, printable(line))
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stdio.Err, "%s: %s\n", rep.Path, printable(p))
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: INVALID: %s\n", rep.Path, printable(err.Error()))
		return
	}
	tot := rep.Index.Totals()
	fmt.Fprintf(stdio.Out, "%s: valid: %d tasks (%d completed, %d not completed, %d skipped), every bundle verified and as the index says\n",
		rep.Path, tot.Tasks, tot.Completed, tot.Failed, tot.Skipped)
}

// printable replaces control and format characters (a terminal's
// escapes, bidi overrides that would make a line read backwards) with "?",
// and invalid UTF-8 with U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
