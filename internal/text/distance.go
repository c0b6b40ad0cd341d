package text

// maxDistanceRunes caps each input of EditDistance, so that hostile page
// text cannot make it slow (the table is quadratic).
const maxDistanceRunes = 200

// EditDistance is the Levenshtein distance of a and b in runes
// (insertions, deletions and substitutions), with an adjacent
// transposition counting one (the commonest typo: "gaol" for "goal").
// Each input is cut to its first 200 runes.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxDistanceRunes {
		ra = ra[:maxDistanceRunes]
	}
	if len(rb) > maxDistanceRunes {
		rb = rb[:maxDistanceRunes]
	}
	// prev2, prev and cur are rows i-2, i-1 and i of the table.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
