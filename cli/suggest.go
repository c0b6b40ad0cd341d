package cli

import (
	"strings"

	"github.com/aegis-run/aegis/internal/text"
)

// didYouMean returns ` (did you mean "X"?)` for the known name closest to
// got by edit distance, or "" when none is close enough to be a likely
// typo (at most a third of the longer name, and 3, edits away).
func didYouMean(got string, known []string) string {
	if best := closest(got, known); best != "" {
		return ` (did you mean "` + best + `"?)`
	}
	return ""
}

// closest returns the known name closest to got (ignoring case, so that
// "URLS" is "urls"), or "" when none is within the distance didYouMean
// allows or got is known.
func closest(got string, known []string) string {
	best, bestDist := "", 0
	g := strings.ToLower(got)
	for _, k := range known {
		d := text.EditDistance(g, strings.ToLower(k))
		limit := min(3, max(1, max(len(got), len(k))/3))
		if k == got || d > limit {
			continue
		}
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
