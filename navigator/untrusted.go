package navigator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aegis-run/aegis/gate"
)

// The delimiters of a data section: what a prompt puts around everything
// the page wrote, or that quotes it (the observation; the progress and
// feedback; the plan a Planner revises and the reason why). The system
// prompts say that text inside them is data, never instructions.
//
// The page cannot write them: every string inside a data section passes
// Neutralize, which replaces every spelling of their name a reader could
// take for it. And a page's "<" and ">" never reach the prompt as such:
// the sections hold JSON documents, which escape them (\u003c, \u003e).
const (
	DataOpen  = "<untrusted-page-data>"
	DataClose = "</untrusted-page-data>"
	// NeutralizedDelimiter is what Neutralize puts in place of a spelling of
	// the delimiters' name: no longer than any spelling it replaces (a
	// spelling has 17 letters, and no character that can be part of one
	// reads as more letters than it has bytes), and valid in a URL, a
	// selector or an identifier, so that a field stays valid under its
	// schema.
	NeutralizedDelimiter = "removed-delimiter"
)

// dataName is the letters of the delimiters' name, as Neutralize reads
// them.
const dataName = "untrustedpagedata"

// DataSection returns the content of a user message that carries doc as
// data: header, then doc between DataOpen and DataClose, each on a line
// of its own. doc must already be neutralized (see NeutralizeJSON).
func DataSection(header string, doc []byte) string {
	var b strings.Builder
	b.Grow(len(header) + len(DataOpen) + len(doc) + len(DataClose) + 2)
	b.WriteString(header)
	b.WriteString(DataOpen)
	b.WriteByte('\n')
	b.Write(doc)
	b.WriteByte('\n')
	b.WriteString(DataClose)
	return b.String()
}

// ReadDataSection returns the document of a message content that
// DataSection made with header, and whether it is one. It is for tests and
// tools that read what the model was sent.
func ReadDataSection(content, header string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(content, header+DataOpen+"\n")
	if !ok {
		return nil, false
	}
	doc, ok := strings.CutSuffix(rest, "\n"+DataClose)
	if !ok {
		return nil, false
	}
	return []byte(doc), true
}

// Neutralize returns s with every spelling of the data delimiters' name
// replaced by NeutralizedDelimiter, so that text from the page can neither
// close a data section nor open one. A spelling is the name's letters in
// order with anything that is not a letter between them (spaces, hyphens,
// punctuation, digits, invisible characters, combining marks, JSON escapes
// such as \n), read through gate.Skeleton: in any case, in fullwidth,
// mathematical or circled letters, and with look-alike letters of other
// scripts (a Cyrillic "а"). A JSON \uXXXX escape is read as the character
// it stands for; a backslash before another letter both as an escape and
// as a stray character ("u\ntrusted" reads either way). The replacement
// spans from the first letter of the spelling to its last, and forms no
// new spelling with the text around it (its letters hold no "u", which
// starts the name, nor the name's last letter, "a"), so one pass replaces
// all of them.
func Neutralize(s string) string {
	spans := nameSpans(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp[0]])
		b.WriteString(NeutralizedDelimiter)
		prev = sp[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}

// nameSpans returns the spans of s, in order and disjoint, that spell
// dataName: from the first byte of its first letter to the last byte of
// its last. A run of backslashes is a separator; followed by uXXXX, the
// whole is the character it stands for (a JSON escape, at any depth: a
// JSON document quoted in another, such as the DOM snapshot); followed by
// another character, that character may be read or not: a reader may take
// "\n" for a newline or for a stray backslash before an "n", at every
// depth of quoting. So a letter right after a backslash is optional to a
// spelling.
func nameSpans(s string) [][2]int {
	var spans [][2]int
	// The matcher is the set of prefixes of dataName the letters so far
	// can end (bit k: the last letters spell dataName[:k]; bit 0 always),
	// with where each of those spellings starts.
	const full = len(dataName)
	set := uint32(1)
	var starts [full + 1]int
	letter := func(c byte, start, end int, optional bool) {
		if set == 1 && c != dataName[0] {
			return // nothing spelled, nothing started
		}
		next := uint32(1)
		var nstarts [full + 1]int
		for k := range full {
			if set&(1<<k) != 0 && dataName[k] == c {
				next |= 1 << (k + 1)
				nstarts[k+1] = starts[k]
				if k == 0 {
					nstarts[1] = start
				}
			}
		}
		if optional {
			// The letter not read: every prefix stays, the one that
			// starts later (the shorter span) kept where both do.
			for k := 1; k <= full; k++ {
				if set&(1<<k) != 0 && (next&(1<<k) == 0 || starts[k] > nstarts[k]) {
					next |= 1 << k
					nstarts[k] = starts[k]
				}
			}
		}
		set, starts = next, nstarts
		if set&(1<<full) != 0 {
			spans = append(spans, [2]int{starts[full], end})
			set = 1
		}
	}
	// cache holds the skeletons of the non-ASCII characters seen.
	var cache map[rune]string
	emit := func(r rune, start, end int, optional bool) {
		if r < utf8.RuneSelf {
			if c := byte(r) | 0x20; 'a' <= c && c <= 'z' { // lower case, for letters
				letter(c, start, end, optional)
			}
			return
		}
		if cache == nil {
			cache = map[rune]string{}
		}
		sk, ok := cache[r]
		if !ok {
			sk = gate.Skeleton(string(r))
			cache[r] = sk
		}
		for _, c := range sk {
			switch {
			case 'a' <= c && c <= 'z':
				letter(byte(c), start, end, optional)
			case unicode.IsLetter(c):
				letter(0, start, end, optional) // a letter of no spelling
			}
		}
	}
	afterBackslash := false
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			j := i
			for j < len(s) && s[j] == '\\' {
				j++
			}
			if j+5 <= len(s) && s[j] == 'u' {
				if v, ok := hex4(s[j+1 : j+5]); ok {
					emit(v, i, j+5, false)
					i = j + 5
					continue
				}
			}
			i, afterBackslash = j, true
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		emit(r, i, i+size, afterBackslash)
		i, afterBackslash = i+size, false
	}
	return spans
}

// hex4 reads four hexadecimal digits.
func hex4(s string) (rune, bool) {
	var v rune
	for i := range 4 {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | rune(c-'0')
		case 'a' <= c|0x20 && c|0x20 <= 'f':
			v = v<<4 | rune(c|0x20-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// NeutralizeJSON returns doc, a JSON document, with every string in it
// (object keys included) passed through Neutralize: doc itself when no
// string changes, else the document encoded again by encoding/json (object
// members then in the order of their names). Every field is covered,
// whatever the document's shape, so a field added to a document later is
// neutralized too.
func NeutralizeJSON(doc []byte) ([]byte, error) {
	if len(nameSpans(string(doc))) == 0 {
		// A string reads in the document as it reads by itself: each
		// escape encoding/json writes is a backslash before a character
		// that may be skipped (\n, \", \\) or stands for the character
		// it escapes (\u003c, \u0000), so every spelling of a string is one
		// of the document. None in the document: none in any string.
		return doc, nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("navigator: neutralize: %w", err)
	}
	changed := false
	v = neutralizeValue(v, &changed)
	if !changed {
		return doc, nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("navigator: neutralize: %w", err)
	}
	return out, nil
}

// neutralizeValue passes every string of a decoded JSON value through
// Neutralize, and sets changed when one changes.
func neutralizeValue(v any, changed *bool) any {
	switch t := v.(type) {
	case string:
		n := Neutralize(t)
		*changed = *changed || n != t
		return n
	case []any:
		for i, e := range t {
			t[i] = neutralizeValue(e, changed)
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[neutralizeValue(k, changed).(string)] = neutralizeValue(e, changed)
		}
		return out
	}
	return v
}
