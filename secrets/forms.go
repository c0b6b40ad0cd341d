package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// MinDerivedLen is the shortest value (in bytes) whose derived forms
// (base64, hex, reversed) are looked for: a shorter one would match
// ordinary text by chance. Escaped forms are looked for at any length.
const MinDerivedLen = 8

// minBase64Core is the fewest base64 characters of a value's encoding at an
// alignment that are looked for.
const minBase64Core = 8

// form is one way a secret's value may be written: the text to look for
// and the secret it belongs to.
type form struct {
	text string
	name string
}

// Forms returns the ways a secret's value may be written that Redact and
// Guard look for (see formsOf), the raw value first: for other parts of
// aegis that mask values (the evidence writer), so that every sink knows
// the same encodings.
func Forms(value string) []string { return formsOf(value) }

// formsOf returns the ways value may appear in text that left aegis or
// came back from the page, the raw value first: JSON-escaped (up to
// MaxJSONDepth times, a JSON string inside a JSON string; with <, > and &
// escaped as Go writes them, and left as they are, as JavaScript writes
// them), percent-encoded once and twice (query and path forms and
// JavaScript's encodeURIComponent, upper- and lower-case hex),
// HTML-escaped (the named references Go writes, and numeric references,
// decimal and hexadecimal in either case, for every character or for
// those that are not letters or digits), and for a value of at least
// MinDerivedLen bytes its base64 encodings (standard and URL alphabets, at
// each of the three byte alignments inside a longer encoding), its hex
// (both cases) and the value reversed (raw and JSON-escaped). Duplicates
// are dropped.
func formsOf(value string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	add(value)
	// Both JSON writers: Go's (<, >, & as \u003c...) and those that leave
	// them as they are (JavaScript's JSON.stringify, RFC 8785, the DOM
	// snapshot), once and nested.
	for _, esc := range []func(string) string{jsonEscape, jsonEscapePlain} {
		for d, cur := 0, value; d < MaxJSONDepth; d++ {
			next := esc(cur)
			if next == cur {
				break // nothing to escape: every depth is the value
			}
			cur = next
			add(cur)
		}
	}
	for _, esc := range []func(string) string{url.QueryEscape, url.PathEscape, uriComponent} {
		// Encoded twice, the second encoding's escapes are %25 (no
		// letters); the first's hex digits come after them.
		once, lower := esc(value), lowerPercent(esc(value))
		add(once)
		add(lower)
		add(esc(once))
		add(esc(lower))
	}
	add(html.EscapeString(value))
	for _, numeric := range []string{"&#%d;", "&#x%x;", "&#x%X;"} {
		add(htmlNumeric(value, numeric, true))
		add(htmlNumeric(value, numeric, false))
	}
	if len(value) < MinDerivedLen {
		return out
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for align := 0; align < 3; align++ {
			add(base64Core(enc, value, align))
		}
	}
	h := hex.EncodeToString([]byte(value))
	add(h)
	add(strings.ToUpper(h))
	rev := reverse(value)
	add(rev)
	add(jsonEscape(rev))
	add(jsonEscapePlain(rev))
	return out
}

// MaxJSONDepth is how deep Forms lists a value JSON-escaped (a JSON
// string inside a JSON string, and so on). Deeper escaping is left to the
// normalized check, which decodes \uXXXX and skips backslashes at any
// depth (values of at least MinNormalizedLen letters and digits).
const MaxJSONDepth = 4

// htmlNumeric is value with its runes written as HTML numeric character
// references in format ("&#%d;", "&#x%x;", "&#x%X;"): every rune, or,
// with all false, those that are not ASCII letters or digits only.
func htmlNumeric(value, format string, all bool) string {
	var b strings.Builder
	for _, r := range value {
		if !all && r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

// jsonEscape is value as encoding/json writes it inside a string, without
// the quotes.
func jsonEscape(value string) string {
	b, _ := json.Marshal(value)
	return string(b[1 : len(b)-1])
}

// jsonEscapePlain is value as a JSON writer that does not escape <, >
// and & writes it inside a string, without the quotes.
func jsonEscapePlain(value string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(value) // a string always encodes
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// uriComponent is value as JavaScript's encodeURIComponent writes it:
// every byte percent-encoded but letters, digits and -_.!~*'().
func uriComponent(value string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(value); i++ {
		c := value[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// lowerPercent writes the hex digits of percent escapes in lower case.
func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// base64Core is the part of the encoding of value, starting align bytes
// into a group of three, that depends on value's bytes alone: what any
// base64 text holding value at that alignment contains. "" when it is
// shorter than minBase64Core.
func base64Core(enc *base64.Encoding, value string, align int) string {
	padded := make([]byte, align+len(value))
	copy(padded[align:], value)
	s := strings.TrimRight(enc.EncodeToString(padded), "=")
	skip := [3]int{0, 2, 3}[align] // characters that hold bits of the leading bytes
	end := len(padded) * 8 / 6     // characters made of whole bits of padded
	if end-skip < minBase64Core {
		return ""
	}
	return s[skip:end]
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// buildForms lists the forms of every secret of values, longest first, so
// that a form is replaced before any shorter one inside it.
func buildForms(values map[string]string) []form {
	var out []form
	for name, v := range values {
		for _, f := range formsOf(v) {
			out = append(out, form{text: f, name: name})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i].text) != len(out[j].text) {
			return len(out[i].text) > len(out[j].text)
		}
		if out[i].text != out[j].text {
			return out[i].text < out[j].text
		}
		return out[i].name < out[j].name
	})
	return out
}
