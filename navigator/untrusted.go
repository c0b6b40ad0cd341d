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
// them. It has no border (no proper prefix that is also a suffix), so
// matches never overlap.
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
// it stands for. The replacement spans from the first letter of the
// spelling to its last, and cannot form a new spelling with the text around
// it (its letters hold no "u" and do not end the name's start or begin its
// end), so one pass replaces all of them.
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
// dataName.
func nameSpans(s string) [][2]int {
	var letters []byte // a-z, or 0 for any other letter
	var starts, ends []int
	// emit appends the letters of r, which is s[start:end]; cache holds
	// the skeletons of the non-ASCII characters seen.
	emit := func(r rune, start, end int, cache *map[rune]string) {
		if r < utf8.RuneSelf {
			c := byte(r) | 0x20 // lower case, for letters
			if 'a' <= c && c <= 'z' {
				letters, starts, ends = append(letters, c), append(starts, start), append(ends, end)
			}
			return
		}
		if *cache == nil {
			*cache = map[rune]string{}
		}
		sk, ok := (*cache)[r]
		if !ok {
			sk = gate.Skeleton(string(r))
			(*cache)[r] = sk
		}
		for _, c := range sk {
			switch {
			case 'a' <= c && c <= 'z':
				letters, starts, ends = append(letters, byte(c)), append(starts, start), append(ends, end)
			case unicode.IsLetter(c):
				letters, starts, ends = append(letters, 0), append(starts, start), append(ends, end)
			}
		}
	}
	var cache map[rune]string
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\\' {
			// An escape, at any depth (a JSON document quoted in another,
			// such as the DOM snapshot): the backslashes are separators,
			// \uXXXX is the character it stands for, and the letter of a
			// short escape (\n, \t...) is no letter.
			j := i
			for j < len(s) && s[j] == '\\' {
				j++
			}
			switch {
			case j+5 <= len(s) && s[j] == 'u':
				if v, ok := hex4(s[j+1 : j+5]); ok {
					emit(v, i, j+5, &cache)
					i = j + 5
					continue
				}
			case j < len(s) && strings.IndexByte(`"/bfnrt`, s[j]) >= 0:
				i = j + 1
				continue
			}
			i = j
			continue
		}
		emit(r, i, i+size, &cache)
		i += size
	}
	var spans [][2]int
	text := string(letters)
	for from := 0; ; {
		k := strings.Index(text[from:], dataName)
		if k < 0 {
			return spans
		}
		k += from
		last := k + len(dataName) - 1
		spans = append(spans, [2]int{starts[k], ends[last]})
		from = last + 1
	}
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
