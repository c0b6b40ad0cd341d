package secrets

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxEntity is the longest HTML character reference walkNorm decodes
// ("&CounterClockwiseContourIntegral;" is 33 bytes).
const maxEntity = 40

// walkNorm calls emit, in order, for every letter and digit of s, folded
// (see fold), with the span s[start:end] it came from: what the
// normalized check compares. Escapes are decoded first, each escape one
// span, so that the escaping a page or a document added does not put its
// own letters and digits between those of a value:
//
//   - JSON's \uXXXX (nested at any depth: the backslashes before it are
//     separators);
//   - HTML character references ending in ';' (named, decimal &#84; and
//     hexadecimal &#x54;, any case), escaped again or not (&amp;lt;);
//   - runs of percent escapes (%54, UTF-8 over several escapes) and
//     percent escapes encoded again (%2554).
//
// Every rune is then folded to its compatibility form (NFKC, rune by rune:
// fullwidth "Ｓ" is "S", "①" is "1", "ﬁ" is "fi"), and what is a letter or
// digit of that is case-folded. Other characters are separators.
func walkNorm(s string, emit func(r rune, start, end int)) {
	var tmp []byte
	emitRune := func(r rune, start, end int) {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
				emit(fold(r), start, end)
			}
			return
		}
		var rb [utf8.UTFMax]byte
		n := utf8.EncodeRune(rb[:], r)
		tmp = norm.NFKC.Append(tmp[:0], rb[:n]...)
		for _, c := range string(tmp) {
			if unicode.IsLetter(c) || unicode.IsDigit(c) {
				emit(fold(c), start, end)
			}
		}
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			if i+6 <= len(s) && s[i+1] == 'u' && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
				emitRune(rune(unhex(s[i+2]))<<12|rune(unhex(s[i+3]))<<8|rune(unhex(s[i+4]))<<4|rune(unhex(s[i+5])), i, i+6)
				i += 6
				continue
			}
		case '&':
			if end, ref := entityEnd(s, i); end > 0 {
				for _, r := range html.UnescapeString(ref) {
					emitRune(r, i, end)
				}
				i = end
				continue
			}
		case '%':
			if end := walkPercent(s, i, emitRune); end > i {
				i = end
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		emitRune(r, i, i+size)
		i += size
	}
}

// entityEnd returns the end of the HTML character reference that starts
// at s[i] ('&'), or 0 when none does (html.UnescapeString would leave it
// as it is), and the reference itself. A reference escaped again
// ("&amp;lt;", "&amp;amp;#84;") is one reference.
func entityEnd(s string, i int) (int, string) {
	k := i + 1
	for strings.HasPrefix(s[k:], "amp;") && refEnd(s, k+4) > 0 {
		k += 4
	}
	end := refEnd(s, k)
	if end == 0 {
		return 0, ""
	}
	return end, "&" + s[k:end]
}

// refEnd returns the end of the reference name (letters, digits, '#')
// and ';' at s[k:] when "&" and it are a character reference, 0 when not.
func refEnd(s string, k int) int {
	for j := k; j < len(s) && j < k+maxEntity; j++ {
		c := s[j]
		if c == ';' {
			if j == k {
				return 0
			}
			if ref := "&" + s[k:j+1]; html.UnescapeString(ref) == ref {
				return 0
			}
			return j + 1
		}
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '#') {
			return 0
		}
	}
	return 0
}

// walkPercent decodes the run of percent escapes that starts at s[i]
// ('%'), a %25 before two hex digits being the escape encoded again, and
// calls emit for every rune of the bytes decoded, with the span of its
// escapes; it returns the end of the run (i when there is none).
func walkPercent(s string, i int, emit func(r rune, start, end int)) int {
	var bs []byte
	var starts, ends []int
	j := i
	for j+3 <= len(s) && s[j] == '%' && isHex(s[j+1]) && isHex(s[j+2]) {
		p := j + 1
		for s[p] == '2' && s[p+1] == '5' && p+4 <= len(s) && isHex(s[p+2]) && isHex(s[p+3]) {
			p += 2
		}
		bs = append(bs, unhex(s[p])<<4|unhex(s[p+1]))
		starts, ends = append(starts, j), append(ends, p+2)
		j = p + 2
	}
	for k := 0; k < len(bs); {
		r, size := utf8.DecodeRune(bs[k:])
		if r != utf8.RuneError || size > 1 {
			emit(r, starts[k], ends[k+size-1])
		}
		k += size
	}
	return j
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
