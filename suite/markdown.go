package suite

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/aegis-run/aegis/internal/text"
)

// The Markdown summary, for a CI job's summary page (GitHub's
// $GITHUB_STEP_SUMMARY, GitLab's and others' Markdown views): a heading
// with the verdict, what stopped the suite (if anything did), a totals
// line, and a table of the tasks. Everything
// from the index is text to the page, never markup: see mdText.

// mdSpecial are the characters that mean something inside a table cell
// of GitHub-flavoured Markdown: the cell's end (|), the escape (a backslash), code
// spans, emphasis and strike-through, links and images, and what starts
// an autolink (www. and http: and user@host).
const mdSpecial = "\\`*_~[]!|:@."

// maxCellBytes bounds a cell: names and reasons are cut to it, with an
// ellipsis.
const maxCellBytes = 400

// WriteMarkdown writes the suite's summary as GitHub-flavoured Markdown
// to w.
func WriteMarkdown(w io.Writer, idx Index) error {
	t := idx.Totals()
	var b strings.Builder
	verdict := "every task completed"
	if t.Completed != t.Tasks {
		verdict = fmt.Sprintf("%d of %d tasks did not complete", t.Tasks-t.Completed, t.Tasks)
	}
	fmt.Fprintf(&b, "### aegis suite: %s\n\n", verdict)
	if idx.StoppedBy != "" {
		fmt.Fprintf(&b, "**Stopped:** %s.\n\n", mdText(idx.StoppedBy.Says()))
	}
	fmt.Fprintf(&b, "%s: %d completed, %d not completed, %d skipped; %s, %s, %s",
		plural(t.Tasks, "task"), t.Completed, t.Failed, t.Skipped,
		plural(t.Actions, "action"), plural(t.Denials, "denial"), plural(t.Approvals, "approval"))
	if t.Tokens > 0 {
		fmt.Fprintf(&b, ", %s tokens", text.Thousands(t.Tokens))
	}
	if t.Retried > 0 {
		fmt.Fprintf(&b, "; %s retried after a server failed", plural(t.Retried, "task"))
	}
	fmt.Fprintf(&b, "; %s s with %d in parallel.\n\n", seconds(idx.DurationMs), idx.Parallel)
	b.WriteString("| task | status | actions | denials | approvals | duration | bundle |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|---|\n")
	for _, r := range idx.Tasks {
		status := statusWord(r)
		if !r.Completed() {
			status += ": " + reason(r)
		}
		if len(r.Retries) > 0 {
			status += fmt.Sprintf(" (retried after %s failed)", r.Retries[len(r.Retries)-1].Endpoint)
		}
		bundle := r.Bundle
		if bundle == "" {
			bundle = "none"
		}
		fmt.Fprintf(&b, "| %s | %s %s | %d | %d | %d | %s s | %s |\n",
			mdText(r.Name), statusMark(r), mdText(status), r.Actions, r.Denials, r.Approvals, seconds(r.DurationMs), mdText(bundle))
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("suite: markdown: %w", err)
	}
	return nil
}

// statusMark is a sign for the status column that reads without colour.
func statusMark(r TaskResult) string {
	switch {
	case r.Completed():
		return "✅"
	case r.Skipped:
		return "⏭️"
	}
	return "❌"
}

// mdText makes s plain text inside a table cell: cut to maxCellBytes;
// line breaks and other control characters become spaces (a newline
// would end the row); HTML's special characters become entities (no tag
// or comment opens); and every other character Markdown gives a meaning
// to is escaped with a backslash (| would end the cell, [ open a link,
// ` a code span, * _ ~ emphasis, : . @ an autolink), so the page shows the
// name as written. Invalid UTF-8 becomes U+FFFD.
func mdText(s string) string {
	s = text.Ellipsize(s, maxCellBytes)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case strings.ContainsRune(mdSpecial, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plural writes n and the word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
