package gate

import (
	"iter"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// This file holds the normalizer the element's words go through before the
// policy matches risk and sensitivity words on them. The page writes those
// words (a button's caption, an input's label, name and id) and the page is
// hostile: "Pаy now" with a Cyrillic а, "ＰＡＹ", "P\u200Bay" and "𝐏𝐚𝐲" all
// read "Pay" to a person and must read "pay" to the policy.

// Skeleton returns the text as the policy reads it, character by character:
//
//   - compatibility forms folded (Unicode NFKD, the compatibility mapping
//     NFKC applies: fullwidth and mathematical letters, ligatures,
//     superscripts, circled letters become the letters they are forms of);
//   - combining marks (accents, so "pày" is "pay"), zero-width and other
//     format characters (U+200B, U+200D, U+00AD, U+FEFF, tag characters),
//     variation selectors and the other default-ignorable code points
//     (Hangul fillers) removed;
//   - look-alike letters of other scripts mapped to the Latin letter they
//     pass for (the table below: Cyrillic, Greek, Armenian, Cherokee, Lisu,
//     Latin small capitals and IPA letters), capitals by their own shape
//     where it differs from their small letter's (Greek Η is h, η is n);
//   - case-folded (upper then lower case, rune by rune, so that ı, ſ and
//     the Kelvin sign fold too; ß is "ss").
//
// Characters that are neither letters nor digits are kept as they are
// after the folding (Words splits on them). Look-alikes within Latin and
// the digits (I and l, rn and m, 0 and O) are not mapped: they collide with
// real words ("PIN", "taxId"), and an element that spells a risk word with
// them is caught by what the action causes, not by its words.
func Skeleton(s string) string {
	if isPlainASCII(s) {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for _, out := range skeletonRunes(s) {
		b.WriteString(out)
	}
	return b.String()
}

// skeletonRunes yields, for every character of s that Skeleton keeps, the
// character after compatibility folding (what its case and class are read
// from) and the text Skeleton writes for it.
func skeletonRunes(s string) iter.Seq2[rune, string] {
	return func(yield func(rune, string) bool) {
		if !isPlainASCII(s) {
			// Invalid bytes read as U+FFFD, before the folding, which
			// would otherwise leave the characters after them unfolded.
			s = norm.NFKD.String(strings.ToValidUTF8(s, "\uFFFD"))
		}
		for _, r := range s {
			if r < 0x80 {
				if !yield(r, asciiLower[r]) {
					return
				}
				continue
			}
			if ignorable(r) {
				continue
			}
			if !yield(r, skeletonOf(r)) {
				return
			}
		}
	}
}

// asciiLower holds the one-character strings of ASCII, lowercased.
var asciiLower = func() (t [0x80]string) {
	for i := range t {
		t[i] = strings.ToLower(string(rune(i)))
	}
	return t
}()

// ignorable reports whether r is dropped: a combining mark, a format
// character, a variation selector or another default-ignorable code point.
func ignorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// skeletonOf is the text written for a non-ASCII character: its Latin
// look-alike, else its case fold.
func skeletonOf(r rune) string {
	if s, ok := confusableCapitals[r]; ok {
		return s
	}
	f := fold(r)
	if s, ok := confusableSmall[f]; ok {
		return s
	}
	return string(f)
}

// fold is r's case fold: the lower case of its upper case, so that the
// letters whose lower case is not their fold (ı, ſ, ς) fold with the rest.
func fold(r rune) rune {
	return unicode.ToLower(unicode.ToUpper(r))
}

// confusableCapitals maps capitals that pass for a Latin capital to that
// letter, lowercased, where it is not the letter their small letter passes
// for (Greek Η is an H, η an n). A capital absent here reads as its small
// letter, so that a skeleton is its own skeleton.
var confusableCapitals = map[rune]string{
	// Cyrillic
	'А': "a", 'В': "b", 'Е': "e", 'Ѕ': "s", 'І': "i", 'Ј': "j", 'К': "k", 'М': "m", 'Н': "h",
	'О': "o", 'Р': "p", 'С': "c", 'Т': "t", 'У': "y", 'Х': "x", 'Ү': "y", 'Һ': "h", 'Ԛ': "q",
	'Ԝ': "w", 'Ӏ': "l",
	// Greek
	'Α': "a", 'Β': "b", 'Ε': "e", 'Ζ': "z", 'Η': "h", 'Ι': "i", 'Κ': "k", 'Μ': "m", 'Ν': "n",
	'Ο': "o", 'Ρ': "p", 'Τ': "t", 'Υ': "y", 'Χ': "x", 'Ϳ': "j",
	// Armenian
	'Օ': "o", 'Ս': "u",
	// Cherokee
	'Ꭵ': "i", 'Ꮃ': "w", 'Ꮓ': "z", 'Ꮩ': "v", 'Ꮪ': "s", 'Ꮯ': "c",
	// Latin
	'ẞ': "ss",
}

// confusableSmall maps case-folded letters that pass for a small Latin
// letter (and letters without case that pass for a Latin capital) to that
// letter.
var confusableSmall = map[rune]string{
	// Cyrillic
	'а': "a", 'в': "b", 'г': "r", 'е': "e", 'к': "k", 'м': "m", 'н': "h", 'о': "o", 'п': "n",
	'р': "p", 'с': "c", 'т': "t", 'у': "y", 'х': "x", 'ь': "b", 'ѕ': "s", 'і': "i", 'ј': "j",
	'ԁ': "d", 'һ': "h", 'ԛ': "q", 'ԝ': "w", 'ү': "y", 'ӏ': "l", 'ꙇ': "i",
	// Greek
	'α': "a", 'β': "b", 'γ': "y", 'ε': "e", 'η': "n", 'ι': "i", 'κ': "k", 'μ': "u", 'ν': "v",
	'ο': "o", 'ρ': "p", 'σ': "o", 'τ': "t", 'υ': "u", 'χ': "x", 'ω': "w", 'ϳ': "j",
	// Armenian
	'օ': "o", 'ս': "u", 'ո': "n", 'հ': "h", 'զ': "q", 'ց': "g",
	// Cherokee small letters
	'ꭵ': "i", 'ꮃ': "w", 'ꮓ': "z", 'ꮩ': "v", 'ꮪ': "s", 'ꮯ': "c",
	// Latin small capitals and IPA letters
	'ᴀ': "a", 'ʙ': "b", 'ᴄ': "c", 'ᴅ': "d", 'ᴇ': "e", 'ꜰ': "f", 'ɢ': "g", 'ʜ': "h", 'ɪ': "i",
	'ᴊ': "j", 'ᴋ': "k", 'ʟ': "l", 'ᴍ': "m", 'ɴ': "n", 'ᴏ': "o", 'ᴘ': "p", 'ʀ': "r", 'ꜱ': "s",
	'ᴛ': "t", 'ᴜ': "u", 'ᴠ': "v", 'ᴡ': "w", 'ʏ': "y", 'ᴢ': "z",
	'ɑ': "a", 'ɡ': "g", 'ȷ': "j", 'ɩ': "i", 'ǀ': "l", 'ß': "ss",
	// Lisu (letters without case, shaped as Latin capitals)
	'ꓮ': "a", 'ꓐ': "b", 'ꓚ': "c", 'ꓓ': "d", 'ꓰ': "e", 'ꓝ': "f", 'ꓖ': "g", 'ꓧ': "h", 'ꓲ': "i",
	'ꓙ': "j", 'ꓗ': "k", 'ꓡ': "l", 'ꓟ': "m", 'ꓠ': "n", 'ꓳ': "o", 'ꓑ': "p", 'ꓣ': "r", 'ꓢ': "s",
	'ꓔ': "t", 'ꓴ': "u", 'ꓦ': "v", 'ꓪ': "w", 'ꓫ': "x", 'ꓬ': "y", 'ꓜ': "z",
}
