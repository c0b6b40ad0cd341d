package gate

import (
	"strings"
	"unicode"

	"github.com/aegis-run/aegis/internal/text"
)

// Words splits the strings into words of their Skeleton and joins them
// with single spaces, with a space before the first and after the last
// (" pay now "), so that the policy can match a pattern at the start of a
// word with one contains(words, " pattern"). A word is a run of letters and
// digits; camelCase and PascalCase are split ("btnPayNow" is "btn pay now"),
// judged on the letters' case before folding. Through Skeleton,
// compatibility forms, accents, invisible format characters and look-alike
// letters of other scripts are folded: "Ｐａｙ", "pa\u200By", "pày" and
// "Pаy" (a Cyrillic а) all read "pay".
func Words(parts ...string) string {
	var b strings.Builder
	b.WriteByte(' ')
	for _, p := range parts {
		if p == "" {
			continue
		}
		prevLower, inWord := false, false
		for r, out := range skeletonRunes(p) {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				if inWord {
					b.WriteByte(' ')
				}
				prevLower, inWord = false, false
				continue
			}
			if prevLower && unicode.IsUpper(r) {
				b.WriteByte(' ')
			}
			b.WriteString(out)
			prevLower, inWord = unicode.IsLower(r), true
		}
		if inWord {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// MaxPatternLen is the longest word pattern the policy can match: the
// tails handed to it are cut to this many bytes.
const MaxPatternLen = 64

// Tails returns, for every word of a Words string, the text from that word
// on, cut to MaxPatternLen bytes: " btn pay now " gives "btn pay now",
// "pay now" and "now ". A pattern matches at the start of a word exactly
// when it is a prefix of one of the tails, which the policy checks for a
// whole pattern list at once with strings.any_prefix_match.
func Tails(words string) []any {
	out := []any{}
	for i := 0; i+1 < len(words); i++ {
		if words[i] != ' ' {
			continue
		}
		t := words[i+1:]
		if len(t) > MaxPatternLen {
			t = text.CutBytes(t, MaxPatternLen)
		}
		out = append(out, t)
	}
	return out
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
