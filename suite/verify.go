package suite

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aegis-run/aegis/audit"
	"github.com/aegis-run/aegis/evidence"
)

// Verifying a suite whole (aegis verify SUITE.json): the index is valid,
// and each task's bundle lies inside the index's directory, verifies as
// aegis verify verifies a bundle (the evidence package's verifier, through
// audit.Open, which also reads the records), and agrees with its line:
// the task (the line's taskHash, the hash of the task its manifest
// records), the status of the end manifest, the head hash of the seal, and
// the actions, denials and approvals as the report counts them (audit's
// Tally). The index itself is not sealed: a task removed from it together
// with its bundle is not detected, but a bundle left in the directory
// without its line is.

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// PubKey, when set, is the trusted key: every bundle's seal must be
	// signed by it.
	PubKey ed25519.PublicKey
}

// TaskCheck is what Verify established about one task.
type TaskCheck struct {
	// Name and Bundle are the task's, from the index.
	Name   string `json:"name"`
	Bundle string `json:"bundle,omitempty"`
	// Status is the task's status as its line gives it ("" when none).
	Status string `json:"status,omitempty"`
	// Verified says the bundle verified and agrees with the line; for a
	// task without a bundle, that the line is consistent without one.
	Verified bool `json:"verified"`
	// Sealed says the bundle is sealed.
	Sealed bool `json:"sealed,omitempty"`
	// Entries counts the bundle's ledger entries that verified.
	Entries int `json:"entries,omitempty"`
	// Problems say, one each, what does not verify or agree: "headHash:
	// the index says X, the bundle's seal Y".
	Problems []string `json:"problems,omitempty"`
}

// Report is what Verify established about a suite.
type Report struct {
	// Path is the index verified.
	Path string `json:"path"`
	// Index is the index as read.
	Index Index `json:"-"`
	// Tasks holds one check per task, in the index's order.
	Tasks []TaskCheck `json:"tasks"`
	// Problems are the suite's own: bundles in the directory the index
	// does not list.
	Problems []string `json:"problems,omitempty"`
}

// Failed counts the tasks that did not verify.
func (r Report) Failed() int {
	n := 0
	for _, t := range r.Tasks {
		if !t.Verified {
			n++
		}
	}
	return n
}

// MismatchError is Verify's error for a valid index that the evidence
// does not bear out: it names the first task (or suite problem) and how
// many there are. The Report has them all.
type MismatchError struct {
	// Failed counts the tasks that did not verify, of Tasks.
	Failed, Tasks int
	// First is the first problem, with its task.
	First string
}

func (e *MismatchError) Error() string {
	if e.Failed == 0 {
		return "suite does not verify: " + e.First
	}
	return fmt.Sprintf("suite does not verify: %d of %d tasks: %s", e.Failed, e.Tasks, e.First)
}

// Verify checks the suite whose index is at indexPath whole. The error is
// nil when everything verifies; an error wrapping ErrInvalidIndex (with
// an empty Report) when the index is invalid; a *MismatchError when some
// task does not verify; an os error, wrapped, when the index cannot be
// read; or the context's error. Problems of tasks are in the Report.
func Verify(ctx context.Context, indexPath string, opts VerifyOptions) (Report, error) {
	idx, err := ReadIndex(indexPath)
	if err != nil {
		return Report{}, err
	}
	dir := filepath.Dir(indexPath)
	rep := Report{Path: indexPath, Index: idx}
	listed := map[string]bool{}
	for _, t := range idx.Tasks {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Tasks = append(rep.Tasks, checkTask(ctx, dir, t, opts))
		for _, b := range bundlesOf(t) {
			listed[b] = true
		}
	}
	if err := ctx.Err(); err != nil { // a check cut short is no verdict
		return rep, err
	}
	rep.Problems = unlisted(dir, listed)
	if failed := rep.Failed(); failed > 0 || len(rep.Problems) > 0 {
		e := &MismatchError{Failed: failed, Tasks: len(rep.Tasks)}
		for _, t := range rep.Tasks {
			if !t.Verified {
				e.First = fmt.Sprintf("task %q: %s", t.Name, t.Problems[0])
				break
			}
		}
		if e.First == "" {
			e.First = rep.Problems[0]
		}
		return rep, e
	}
	return rep, nil
}

// bundlesOf lists the bundles a task's line names: its own and its
// attempts'.
func bundlesOf(t TaskResult) []string {
	var out []string
	if t.Bundle != "" {
		out = append(out, t.Bundle)
	}
	for _, r := range t.Retries {
		if r.Bundle != "" {
			out = append(out, r.Bundle)
		}
	}
	return out
}

// checkTask checks one task's line against its bundles.
func checkTask(ctx context.Context, dir string, t TaskResult, opts VerifyOptions) TaskCheck {
	c := TaskCheck{Name: t.Name, Bundle: t.Bundle, Status: string(t.Status)}
	problem := func(format string, args ...any) { c.Problems = append(c.Problems, fmt.Sprintf(format, args...)) }
	for i, r := range t.Retries {
		if r.Bundle == "" {
			continue
		}
		// An attempt's bundle is often unsealed (its browser went away):
		// its entries must verify.
		full, err := bundleDir(dir, r.Bundle)
		if err == nil {
			_, err = evidence.Verify(ctx, full, evidence.VerifyOptions{PubKey: opts.PubKey, AllowUnsealed: true})
		}
		if err != nil {
			problem("attempt %d's bundle %s: %v", i+1, r.Bundle, err)
		}
	}
	switch {
	case t.Bundle != "":
		checkBundle(ctx, dir, t, opts, &c, problem)
	case t.Status != "":
		problem("the index gives status %q but no bundle bears it out", t.Status)
	}
	c.Verified = len(c.Problems) == 0
	return c
}

// checkBundle verifies the task's bundle and compares it with the line.
func checkBundle(ctx context.Context, dir string, t TaskResult, opts VerifyOptions, c *TaskCheck, problem func(string, ...any)) {
	full, err := bundleDir(dir, t.Bundle)
	if err != nil {
		problem("%v", err)
		return
	}
	b, err := audit.Open(ctx, full, audit.OpenOptions{PubKey: opts.PubKey, AllowUnsealed: true})
	if err != nil {
		var te *audit.TamperedError
		if errors.As(err, &te) {
			err = te.Err // the verifier's words: file, line, entry, check
		}
		problem("bundle %s does not verify: %v", t.Bundle, err)
		return
	}
	defer b.Close()
	v := b.Verification.Report
	c.Sealed, c.Entries = v.Sealed, v.Entries
	// The line is this task's: the bundle's manifest records the task the
	// session ran (a line swapped with another's names another task).
	switch h, err := TaskHash(b.Manifest.Task); {
	case err != nil:
		problem("taskHash: the bundle's task: %v", err)
	case h != t.TaskHash:
		problem("taskHash: the index says %q, the task in bundle %s hashes to %q: the line is not this bundle's task", t.TaskHash, t.Bundle, h)
	}
	if !v.Sealed {
		if t.Status != "" || t.HeadHash != "" {
			problem("bundle %s is unsealed (%d intact entries): nothing bears out the index's status %q and head hash %q", t.Bundle, v.Entries, t.Status, t.HeadHash)
		}
		return // a session cut short: its entries verified, no status claimed
	}
	status := ""
	if b.End != nil {
		status = string(b.End.Status)
	}

	tally := b.Tally()
	for _, d := range []struct {
		what      string
		index, in string
	}{
		{"status", string(t.Status), status},
		{"headHash", t.HeadHash, v.HeadHash},
		{"actions", fmt.Sprint(t.Actions), fmt.Sprint(tally.Executed)},
		{"denials", fmt.Sprint(t.Denials), fmt.Sprint(tally.Denied)},
		{"approvals", fmt.Sprint(t.Approvals), fmt.Sprint(tally.Approved)},
	} {
		if d.index != d.in {
			problem("%s: the index says %q, the bundle %q", d.what, d.index, d.in)
		}
	}
}

// bundleDir returns the directory of the bundle rel inside dir, refusing
// what would leave dir: an absolute path, a .. segment, or a symbolic
// link on the way (whether it points in or out: a bundle is where the
// index says, or nowhere). Inside the bundle, the verifier accepts
// regular files only.
func bundleDir(dir, rel string) (string, error) {
	if !localBundle(rel) {
		return "", fmt.Errorf("bundle %q is not a path inside the index's directory", rel)
	}
	p := dir
	for _, seg := range strings.Split(rel, "/") {
		p = filepath.Join(p, seg)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("bundle %s: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("bundle %s: %s is a symbolic link: refused (the bundle must lie inside the index's directory)", rel, p)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("bundle %s: %s is not a directory", rel, p)
		}
	}
	return p, nil
}

// unlisted walks dir (without following links) for bundles the index
// does not list: a task's line removed while its bundle stayed.
func unlisted(dir string, listed map[string]bool) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return nil
		}
		if !IsBundle(p) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil && !listed[filepath.ToSlash(rel)] {
			out = append(out, fmt.Sprintf("bundle %s is in the suite's directory but the index does not list it", filepath.ToSlash(rel)))
		}
		return filepath.SkipDir
	})
	return out
}

// IsBundle reports whether dir holds a bundle's manifest or ledger (an
// unsealed bundle may lack the first, never both) as regular files: a
// symbolic link named manifest.json does not make a bundle (the verifier
// reads regular files only), though dir itself may be reached through
// one. aegis verify uses it both to find the bundles a suite's directory
// holds and to tell a bundle from a suite or an evidence root.
func IsBundle(dir string) bool {
	for _, f := range []string{evidence.FileManifest, filepath.FromSlash(evidence.FileLedger)} {
		if fi, err := os.Lstat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}
