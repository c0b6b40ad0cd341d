package text

import "strconv"

// Thousands writes n in decimal with commas between groups of three
// digits, such as 12,345 (token counts on progress lines and in reports).
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}
