// Package text cuts strings that aegis records, sends or shows to a bound,
// always at a rune boundary so that a cut never leaves half a character.
package text

import "unicode/utf8"

// CutBytes returns s cut to at most n bytes, at a rune boundary.
func CutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// CutRunes returns s cut to at most n runes (characters).
func CutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Ellipsis marks where Ellipsize cut.
const Ellipsis = "…"

// Ellipsize returns s cut to at most n bytes at a rune boundary, with
// Ellipsis appended when it was cut (so the result may be up to
// len(Ellipsis) bytes longer than n).
func Ellipsize(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return CutBytes(s, n) + Ellipsis
}
