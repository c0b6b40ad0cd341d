package cli

import "strings"

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
		d := editDistance(g, strings.ToLower(k))
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

// editDistance is the Levenshtein distance of a and b (insertions,
// deletions and substitutions of bytes), with adjacent transpositions
// counting one (the commonest typo: "gaol" for "goal").
func editDistance(a, b string) int {
	// prev2, prev and cur are rows i-2, i-1 and i of the table.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
