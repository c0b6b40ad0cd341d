package canonjson

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aegis-run/aegis/schemas"
)

// ParseCanonical and Check read bytes that must be exactly a canonical
// form: the byte sequences Transform returns unchanged. They parse in one
// pass, without re-encoding. A canonical document has no duplicate keys
// (members are strictly sorted), no whitespace, and one spelling per
// value, so every reader sees the same value and a hash of the bytes
// commits to it.

// CanonError reports bytes that are not the canonical form of one JSON
// value.
type CanonError struct {
	// Offset is the byte offset of the first deviation.
	Offset int
	// Msg says what is wrong.
	Msg string
}

// Error says where the bytes stop being canonical.
func (e *CanonError) Error() string {
	return fmt.Sprintf("not canonical JSON (RFC 8785) at byte %d: %s", e.Offset, e.Msg)
}

// ParseCanonical parses b, which must be exactly the canonical form of one
// JSON value nested at most schemas.MaxDepth levels, and returns the value
// as schemas.Parse would (maps, slices, strings, bools, nil, json.Number).
// Errors are *CanonError.
func ParseCanonical(b []byte) (any, error) {
	return parseCanonical(b, schemas.MaxDepth, true)
}

// Check returns nil when b is exactly the canonical form of one JSON value
// nested at most maxDepth levels (Transform at that depth returns it
// unchanged), and a *CanonError naming the first deviation otherwise. It
// builds no value.
func Check(b []byte, maxDepth int) error {
	_, err := parseCanonical(b, min(max(maxDepth, 1), schemas.MaxParseDepth), false)
	return err
}

func parseCanonical(b []byte, maxDepth int, build bool) (any, error) {
	if len(b) > schemas.MaxDocumentBytes {
		return nil, &CanonError{0, fmt.Sprintf("document larger than %d bytes", schemas.MaxDocumentBytes)}
	}
	p := canonParser{b: b, maxDepth: maxDepth, build: build}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if p.i != len(b) {
		return nil, p.fail("data after the JSON value")
	}
	return v, nil
}

type canonParser struct {
	b        []byte
	i        int
	maxDepth int
	build    bool // false: check only, build no value
}

func (p *canonParser) fail(msg string) error { return &CanonError{Offset: p.i, Msg: msg} }

func (p *canonParser) value(depth int) (any, error) {
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= p.maxDepth {
			return nil, p.fail(fmt.Sprintf("nesting deeper than %d levels", p.maxDepth))
		}
		return p.object(depth)
	case c == '[':
		if depth >= p.maxDepth {
			return nil, p.fail(fmt.Sprintf("nesting deeper than %d levels", p.maxDepth))
		}
		return p.array(depth)
	case c == '"':
		return p.strValue()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	default:
		return nil, p.fail(fmt.Sprintf("unexpected byte %q", c))
	}
}

func (p *canonParser) literal(lit string) error {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return p.fail("invalid literal")
	}
	p.i += len(lit)
	return nil
}

func (p *canonParser) object(depth int) (any, error) {
	p.i++ // {
	var obj map[string]any
	if p.build {
		obj = map[string]any{}
	}
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return obj, nil
	}
	prev, first := "", true
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("want an object key")
		}
		keyAt := p.i
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if !first && !LessUTF16(prev, key) {
			if prev == key {
				return nil, &CanonError{keyAt, "duplicate object key " + strconv.Quote(key)}
			}
			return nil, &CanonError{keyAt, "object keys not sorted: " + strconv.Quote(key) + " after " + strconv.Quote(prev)}
		}
		prev, first = key, false
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("want ':' after an object key")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.build {
			obj[key] = v
		}
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an object")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, nil
		default:
			return nil, p.fail("want ',' or '}' in an object")
		}
	}
}

func (p *canonParser) array(depth int) (any, error) {
	p.i++ // [
	var arr []any
	if p.build {
		arr = []any{}
	}
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.build {
			arr = append(arr, v)
		}
		if p.i >= len(p.b) {
			return nil, p.fail("unexpected end of input in an array")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr, nil
		default:
			return nil, p.fail("want ',' or ']' in an array")
		}
	}
}

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// quoted returns the bytes of the string at p.i when it has no escape and
// its length fits, without moving p.i; ok is false otherwise.
func (p *canonParser) quoted() (raw []byte, ok bool) {
	end := p.i + 1
	for end < len(p.b) && end-p.i <= 64 {
		switch c := p.b[end]; {
		case c == '"':
			return p.b[p.i+1 : end], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		end++
	}
	return nil, false
}

// key parses an object member name.
func (p *canonParser) key() (string, error) {
	if raw, ok := p.quoted(); ok {
		if v, ok := schemas.Intern(raw); ok {
			p.i += len(raw) + 2
			return v.(string), nil
		}
	}
	return p.str(true)
}

// strValue parses a string value, boxed.
func (p *canonParser) strValue() (any, error) {
	if raw, ok := p.quoted(); ok {
		if v, ok := schemas.Intern(raw); ok {
			p.i += len(raw) + 2
			return v, nil
		}
	}
	s, err := p.str(p.build)
	if err != nil || !p.build {
		return nil, err
	}
	return s, nil
}

// str parses a canonical string at p.i (which is '"'). It first finds
// the end, eight bytes at a time through everything but quotes,
// backslashes and control characters, then checks the span's UTF-8 in one
// pass (escapes are ASCII: they do not change whether it is valid). With
// keep false it only checks, and returns "".
func (p *canonParser) str(keep bool) (string, error) {
	b := p.b
	p.i++
	first := p.i
	start := p.i
	var buf []byte // the decoded string once an escape was seen
	var high uint64
	i := p.i
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if stringStop(x) {
				break
			}
			high |= x
			i += 8
		}
		if i >= len(b) {
			p.i = i
			return "", p.fail("unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			if high&msbs != 0 && !ValidUTF8(b[first:i]) {
				// Name the first byte at fault.
				for p.i = first; p.i < i; {
					if b[p.i] < utf8.RuneSelf {
						p.i++
						continue
					}
					n := utf8Seq(b, p.i)
					if n == 0 {
						break
					}
					p.i += n
				}
				return "", p.fail("invalid UTF-8 in a string")
			}
			if !keep {
				p.i = i + 1
				return "", nil
			}
			var s string
			if buf == nil {
				s = string(b[start:i])
			} else {
				buf = append(buf, b[start:i]...)
				s = string(buf)
			}
			p.i = i + 1
			return s, nil
		case c == '\\':
			if buf == nil {
				buf = make([]byte, 0, i-start+16)
			}
			buf = append(buf, b[start:i]...)
			p.i = i
			r, n, err := p.escape()
			if err != nil {
				return "", err
			}
			buf = append(buf, r)
			i += n
			start = i
		case c < 0x20:
			p.i = i
			return "", p.fail("control character in a string must be escaped")
		default:
			high |= uint64(c)
			i++
		}
	}
}

// stringStop reports whether any of the eight bytes of x is a control
// character, '"' or '\\' (bytes of multi-byte characters pass).
func stringStop(x uint64) bool {
	ctl := (x - lsbs*0x20) &^ x
	q := x ^ (lsbs * '"')
	q = (q - lsbs) &^ q
	bs := x ^ (lsbs * '\\')
	bs = (bs - lsbs) &^ bs
	return (ctl|q|bs)&msbs != 0
}

// escape reads the canonical escape at p.i and returns the byte it stands
// for and its length. RFC 8785 escapes exactly '"', '\\' and the control
// characters: \b \t \n \f \r by name, the others as \u00xx in lower case.
func (p *canonParser) escape() (byte, int, error) {
	b := p.b[p.i:]
	if len(b) < 2 {
		return 0, 0, p.fail("unterminated escape")
	}
	switch b[1] {
	case '"':
		return '"', 2, nil
	case '\\':
		return '\\', 2, nil
	case 'b':
		return '\b', 2, nil
	case 't':
		return '\t', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'f':
		return '\f', 2, nil
	case 'r':
		return '\r', 2, nil
	case 'u':
		if len(b) < 6 || b[2] != '0' || b[3] != '0' || !isLowerHex(b[4]) || !isLowerHex(b[5]) {
			return 0, 0, p.fail("non-canonical \\u escape: only control characters are escaped, as \\u00xx in lower case")
		}
		v := unhex(b[4])<<4 | unhex(b[5])
		if v >= 0x20 || v == '\b' || v == '\t' || v == '\n' || v == '\f' || v == '\r' {
			return 0, 0, p.fail("non-canonical \\u escape")
		}
		return v, 6, nil
	default:
		return 0, 0, p.fail(fmt.Sprintf("non-canonical escape \\%c", b[1]))
	}
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// number parses a number and checks it is written as ECMAScript writes
// the double it denotes.
func (p *canonParser) number() (any, error) {
	b := p.b
	start := p.i
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := i
	for i < len(b) && ('0' <= b[i] && b[i] <= '9' || b[i] == '.' || b[i] == 'e' || b[i] == 'E' || b[i] == '+' || b[i] == '-') {
		i++
	}
	s := string(b[start:i])
	p.i = i
	// Fast path: a short integer without a leading zero is canonical.
	if n := i - digits; n > 0 && n <= 15 && (b[digits] != '0' || n == 1) && !(n == 1 && b[digits] == '0' && digits > start) {
		allDigits := true
		for _, c := range b[digits:i] {
			if c < '0' || c > '9' {
				allDigits = false
				break
			}
		}
		if allDigits {
			return json.Number(s), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !validNumberSyntax(s) {
		p.i = start
		return nil, p.fail("invalid number " + strconv.Quote(s))
	}
	c, err := FormatNumber(f)
	if err != nil || c != s {
		p.i = start
		return nil, p.fail(fmt.Sprintf("number %s is not in canonical form (%s)", s, c))
	}
	return json.Number(s), nil
}

// validNumberSyntax checks the JSON number grammar (strconv accepts more:
// hex, underscores, "Inf").
func validNumberSyntax(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return false
	}
	if s[i] == '0' {
		i++
	} else if '1' <= s[i] && s[i] <= '9' {
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}
