package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aegis-run/aegis/audit"
)

func init() {
	register(command{name: "report", summary: "render an evidence bundle as one self-contained HTML report", run: runReport})
}

const reportUsage = `BUNDLE [-o FILE.html|-]

Writes the evidence bundle (a directory or a packed .tar.zst) as one
self-contained HTML file: no script and no external asset, so it opens
offline in any browser. At the top, whether the bundle verifies (valid,
tampered with the place where it breaks, or unsealed); then the goal, the
plan, each step with its action (typed secrets masked), the policy's
decision and reasons, the risk, the approval and who gave it, the effects
the action caused (requests and navigations of its page, with their
decisions), latencies, DOM hashes and screenshots, and the final output. Of a tampered bundle,
only what precedes the tampered place is shown.

The report goes to -o FILE, or to stdout with -o - or when stdout is not
a terminal (aegis report BUNDLE > report.html); on a terminal it is
written beside the bundle, as BUNDLE.report.html, and its path printed,
unless that file exists (then -o replaces it). A FILE inside the bundle
is refused: the bundle would no longer verify.

Exit status: 0 the report was written and the bundle is valid, 1 the
report was written but the bundle is tampered or unsealed (the report
says so), 2 usage or a bundle that cannot be read, 3 interrupted (Ctrl-C)
before the bundle was verified (no report is written).`

func runReport(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("report", reportUsage, stdio)
	out := fs.String("o", "", "write the report to `FILE` (- for stdout; default: stdout unless it is a terminal, else BUNDLE.report.html)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageError("report takes one BUNDLE, got %d arguments", len(pos))
	}
	if err := notBundle(pos[0]); err != nil {
		return err
	}
	if *out == "" {
		*out = "-"
		if isTerminal(stdio.Out) {
			// HTML is for a browser, not for the terminal.
			if *out, err = reportPath(pos[0]); err != nil {
				return usageError("%v", err)
			}
			if _, err := os.Lstat(*out); err == nil {
				return usageError("%s exists: give -o %s to replace it, or -o another FILE.html", *out, *out)
			}
		}
	}
	if *out != "-" {
		if fi, err := os.Stat(filepath.Dir(*out)); err != nil || !fi.IsDir() {
			return usageError("-o %s: the directory %s does not exist", *out, filepath.Dir(*out))
		}
		if insideDir(*out, pos[0]) {
			return usageError("-o %s: inside the bundle %s, where the report would be a file its ledger does not record (aegis verify: extra); write it beside the bundle", *out, pos[0])
		}
	}
	b, err := audit.Open(ctx, pos[0], audit.OpenOptions{AllowTampered: true, AllowUnsealed: true})
	if ierr := asInterrupted(ctx, "report "+pos[0], ctx.Err()); ierr != nil {
		// A verification cut short is no verdict: no report says
		// "tampered" for it.
		if err == nil {
			b.Close()
		}
		return ierr
	}
	if err != nil {
		return usageError("%v", err)
	}
	defer b.Close()
	var buf bytes.Buffer
	if err := audit.RenderReport(b, &buf); err != nil {
		return exitCode(ExitFailure, err)
	}
	if *out == "-" {
		if _, err := stdio.Out.Write(buf.Bytes()); err != nil {
			return err
		}
	} else {
		if err := writeFileAtomic(*out, buf.Bytes()); err != nil {
			return exitCode(ExitFailure, fmt.Errorf("-o %s: %w", *out, err))
		}
		fmt.Fprintf(stdio.Err, "aegis: report of %s written to %s (open it in a browser)\n", b.Manifest.SessionID, *out)
	}
	v := b.Verification
	switch v.Status {
	case audit.StatusTampered:
		return exitCode(ExitFailure, fmt.Errorf("the bundle is tampered (%s); the report says so at the top", v.Place()))
	case audit.StatusUnsealed:
		return exitCode(ExitFailure, errors.New("the bundle is unsealed; the report says so at the top"))
	}
	return nil
}

// reportPath is where the report of bundle goes without -o when stdout
// is a terminal: beside the bundle (never inside, where it would be a
// file the ledger does not record: "aegis report ." names the bundle by
// its absolute path), named after it: DIR.report.html, or
// NAME.report.html for NAME.tar.zst.
func reportPath(bundle string) (string, error) {
	abs, err := filepath.Abs(bundle)
	if err != nil {
		return "", fmt.Errorf("the report's path beside %s: %w", bundle, err)
	}
	return strings.TrimSuffix(abs, ".tar.zst") + ".report.html", nil
}

// insideDir reports whether path is dir or inside it, links resolved
// (path's directory exists; path itself may not). A dir that is no
// directory (a packed bundle) holds nothing.
func insideDir(path, dir string) bool {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return false
	}
	d, err := resolved(dir)
	if err != nil {
		return false
	}
	parent, err := resolved(filepath.Dir(path))
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(d, filepath.Join(parent, filepath.Base(path)))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolved is the absolute path p names, its links resolved.
func resolved(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, renamed into place.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".aegis-report-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
