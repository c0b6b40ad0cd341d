package suite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// WriteReports writes the reports CI reads, each when its path is not
// "": the JUnit XML to junitPath (replaced atomically), and the Markdown
// summary appended to mdPath (created when missing), since a job summary
// file such as GitHub's $GITHUB_STEP_SUMMARY collects the summaries of
// every step. Both are written even when one fails; the error names each
// failure.
func WriteReports(idx Index, junitPath, mdPath string) error {
	var errs []error
	if junitPath != "" {
		var b bytes.Buffer
		err := WriteJUnit(&b, idx)
		if err == nil {
			err = writeAtomic(junitPath, b.Bytes())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--junit %s: %w", junitPath, err))
		}
	}
	if mdPath != "" {
		if err := appendMarkdown(mdPath, idx); err != nil {
			errs = append(errs, fmt.Errorf("--summary %s: %w", mdPath, err))
		}
	}
	return errors.Join(errs...)
}

// appendMarkdown appends the summary to path in one write.
func appendMarkdown(path string, idx Index) error {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, idx); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("suite: summary: %w", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("suite: summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("suite: summary: %w", err)
	}
	return nil
}
