package audit

import (
	"strings"
	"unicode/utf8"
)

// Bounds of a text diff.
const (
	// MaxDiffLines bounds the lines a diff shows.
	MaxDiffLines = 40
	// MaxDiffLineChars bounds each line shown, in characters.
	MaxDiffLineChars = 200
	// maxLCSCells bounds the work of the line alignment.
	maxLCSCells = 4 << 20
)

// TextDiff returns a short line-based diff of the visible text: lines only
// in want prefixed "- ", lines only in got prefixed "+ ", at most
// MaxDiffLines lines of at most MaxDiffLineChars characters; "" when the
// texts are equal. Common leading and trailing lines are skipped; the rest
// is aligned on the longest common subsequence of lines when that is
// cheap, else shown as removed then added.
func TextDiff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	var out []string
	emit := func(prefix, line string) {
		out = append(out, prefix+clip(line, MaxDiffLineChars))
	}
	if len(a)*len(b) <= maxLCSCells && len(a) > 0 && len(b) > 0 {
		// lcs[i][j] is the LCS length of a[i:] and b[j:].
		lcs := make([][]int32, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for (i < len(a) || j < len(b)) && len(out) <= MaxDiffLines {
			switch {
			case i < len(a) && j < len(b) && a[i] == b[j]:
				i, j = i+1, j+1
			case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
				emit("+ ", b[j])
				j++
			default:
				emit("- ", a[i])
				i++
			}
		}
	} else {
		for _, l := range a {
			if len(out) > MaxDiffLines {
				break
			}
			emit("- ", l)
		}
		for _, l := range b {
			if len(out) > MaxDiffLines {
				break
			}
			emit("+ ", l)
		}
	}
	if len(out) > MaxDiffLines {
		out = append(out[:MaxDiffLines], "… (diff cut)")
	}
	return strings.Join(out, "\n")
}

// clip bounds s to n characters, marking a cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
