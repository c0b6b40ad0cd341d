package canonjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/aegis-run/aegis/internal/strictjson"
)

// ParseCanonical and Check read bytes that must be exactly a
// canonical form: the byte sequences Transform returns unchanged. They
// parse in one pass, without re-encoding. A canonical document has no
// duplicate keys (members are strictly sorted), no whitespace, and one
// spelling per value, so every reader sees the same value and a hash of
// the bytes commits to it.

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
// JSON value nested at most MaxDepth levels, and returns the value as
// Transform reads it (maps, slices, strings, bools, nil, json.Number).
// Errors are *CanonError.
func ParseCanonical(b []byte) (any, error) {
	return parseCanonical(b, MaxDepth, true)
}

// Check returns nil when b is exactly the canonical form of one JSON value
// nested at most maxDepth levels (Transform at that depth returns it
// unchanged), and a *CanonError naming the first deviation otherwise. It
// builds no value.
func Check(b []byte, maxDepth int) error {
	_, err := parseCanonical(b, min(max(maxDepth, 1), strictjson.MaxDepthBound), false)
	return err
}

func parseCanonical(b []byte, maxDepth int, build bool) (any, error) {
	if len(b) > strictjson.MaxDocumentBytes {
		return nil, &CanonError{0, fmt.Sprintf("document larger than %d bytes", strictjson.MaxDocumentBytes)}
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
	case c == '{' || c == '[':
		if depth >= p.maxDepth {
			return nil, p.fail(fmt.Sprintf("nesting deeper than %d levels", p.maxDepth))
		}
		if c == '{' {
			return p.object(depth)
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
	var prev, key []byte // the keys as written, between their quotes
	var prevEscaped bool
	for n := 1; ; n++ {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.fail("want an object key")
		}
		keyAt := p.i
		var keyStr string
		var escaped bool
		if p.build {
			var err error
			if keyStr, err = p.key(); err != nil {
				return nil, err
			}
			key = p.b[keyAt+1 : p.i-1]
			escaped = bytes.IndexByte(key, '\\') >= 0
		} else {
			s, err := p.scanStr()
			if err != nil {
				return nil, err
			}
			key, escaped = p.b[s.start:s.end], s.escaped
		}
		if n > 1 && !keysInOrder(prev, key, prevEscaped || escaped) {
			pk, k := decodeCanon(prev), decodeCanon(key)
			if p.build {
				k = keyStr
			}
			if pk == k {
				return nil, &CanonError{keyAt, "duplicate object key " + strconv.Quote(k)}
			}
			return nil, &CanonError{keyAt, "object keys not sorted: " + strconv.Quote(k) + " after " + strconv.Quote(pk)}
		}
		prev, prevEscaped = key, escaped
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.fail("want ':' after an object key")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.build {
			obj[keyStr] = v
		}
		end, err := p.next('}', "an object")
		if err != nil {
			return nil, err
		}
		if end {
			return obj, nil
		}
	}
}

// keysInOrder reports whether the key after prev (both as written between
// their quotes) sorts after it, as canonical order requires: by UTF-16
// code units, compared decoded when either holds an escape. Without
// escapes, and with the first difference between ASCII bytes (or no
// difference: a prefix), byte order decides, as it agrees with UTF-16
// order there.
func keysInOrder(prev, key []byte, escaped bool) bool {
	if !escaped {
		n := min(len(prev), len(key))
		i := 0
		for i < n && prev[i] == key[i] {
			i++
		}
		if i == n {
			return len(prev) < len(key)
		}
		if prev[i] < utf8.RuneSelf && key[i] < utf8.RuneSelf {
			return prev[i] < key[i]
		}
	}
	return LessUTF16(decodeCanon(prev), decodeCanon(key))
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
		end, err := p.next(']', "an array")
		if err != nil {
			return nil, err
		}
		if end {
			return arr, nil
		}
	}
}

// next steps past what follows a member of an object or an element of an
// array (what names which): a ',' (end false) or the closing byte end
// (end true); anything else is an error.
func (p *canonParser) next(closing byte, what string) (end bool, err error) {
	if p.i >= len(p.b) {
		return false, p.fail("unexpected end of input in " + what)
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, nil
	case closing:
		p.i++
		return true, nil
	}
	return false, p.fail("want ',' or '" + string(closing) + "' in " + what)
}

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// key parses an object member name (building).
func (p *canonParser) key() (string, error) {
	s, err := p.scanStr()
	if err != nil {
		return "", err
	}
	return s.decode(p.b), nil
}

// strValue parses a string value, boxed when building.
func (p *canonParser) strValue() (any, error) {
	s, err := p.scanStr()
	if err != nil || !p.build {
		return nil, err
	}
	return s.decode(p.b), nil
}

// scanned is what scanStr found of a string.
type scanned struct {
	start, end int  // its bytes between the quotes
	escaped    bool // it holds an escape
}

// decode returns the string, its escapes decoded.
func (s scanned) decode(b []byte) string {
	if !s.escaped {
		return string(b[s.start:s.end])
	}
	return decodeCanon(b[s.start:s.end])
}

// decodeCanon decodes the bytes between the quotes of a string already
// checked canonical.
func decodeCanon(raw []byte) string {
	buf := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		if raw[i+1] == 'u' {
			buf = append(buf, unhex(raw[i+4])<<4|unhex(raw[i+5]))
			i += 6
			continue
		}
		buf = append(buf, shortEscape[raw[i+1]])
		i += 2
	}
	return string(buf)
}

// scanStr checks the canonical string at p.i (which is '"') and moves p.i
// past it. It finds the bytes that need a look (quotes, backslashes,
// control characters) eight bytes at a time and jumps to the first, then
// checks the string's UTF-8 in one pass (escapes are ASCII: they do not
// change whether it is valid).
func (p *canonParser) scanStr() (scanned, error) {
	b := p.b
	first := p.i + 1
	i := first
	var high uint64 // the string's bytes ORed together
	escaped := false
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			m := stopMask(x)
			if m == 0 {
				high |= x
				i += 8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			high |= x & (1<<(8*k) - 1)
			i += k
			// A two-byte escape, the common stop in text (a line feed),
			// is passed here without leaving the loop.
			if b[i] != '\\' || i+1 >= len(b) || shortEscape[b[i+1]] == 0 {
				break
			}
			escaped = true
			i += 2
		}
		for i < len(b) && !isStop(b[i]) {
			high |= uint64(b[i])
			i++
		}
		if i >= len(b) {
			p.i = i
			return scanned{}, p.fail("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			nonASCII := high&msbs != 0
			if nonASCII && !utf8.Valid(b[first:i]) {
				// Name the first byte at fault.
				for p.i = first; p.i < i; {
					r, n := utf8.DecodeRune(b[p.i:i])
					if r == utf8.RuneError && n <= 1 {
						break
					}
					p.i += n
				}
				return scanned{}, p.fail("invalid UTF-8 in a string")
			}
			p.i = i + 1
			return scanned{start: first, end: i, escaped: escaped}, nil
		case c == '\\':
			escaped = true
			if i+1 < len(b) && shortEscape[b[i+1]] != 0 {
				i += 2
				continue
			}
			p.i = i
			_, n, err := p.escape()
			if err != nil {
				return scanned{}, err
			}
			i += n
		default: // a control character
			p.i = i
			return scanned{}, p.fail("control character in a string must be escaped")
		}
	}
}

// isStop reports whether a string byte needs a look: a control character,
// '"' or '\\'.
func isStop(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }

// stopMask returns, for the eight bytes of x, a mask whose lowest set bit
// is the high bit of the first byte that is a control character, '"' or
// '\\' (bytes of multi-byte characters pass), and 0 when there is none.
// Bits above the lowest may be set for bytes that are not such bytes (a
// borrow carries into the byte after a match).
func stopMask(x uint64) uint64 {
	ctl := (x - lsbs*0x20) &^ x
	q := x ^ (lsbs * '"')
	q = (q - lsbs) &^ q
	bs := x ^ (lsbs * '\\')
	bs = (bs - lsbs) &^ bs
	return (ctl | q | bs) & msbs
}

// escape reads the canonical escape at p.i and returns the byte it stands
// for and its length. RFC 8785 escapes exactly '"', '\\' and the control
// characters: \b \t \n \f \r by name, the others as \u00xx in lower case.
func (p *canonParser) escape() (byte, int, error) {
	b := p.b[p.i:]
	if len(b) < 2 {
		return 0, 0, p.fail("unterminated escape")
	}
	if c := shortEscape[b[1]]; c != 0 {
		return c, 2, nil
	}
	if b[1] != 'u' {
		return 0, 0, p.fail(fmt.Sprintf("non-canonical escape \\%c", b[1]))
	}
	if len(b) < 6 || b[2] != '0' || b[3] != '0' || !isLowerHex(b[4]) || !isLowerHex(b[5]) {
		return 0, 0, p.fail("non-canonical \\u escape: only control characters are escaped, as \\u00xx in lower case")
	}
	v := unhex(b[4])<<4 | unhex(b[5])
	if v >= 0x20 || escapeLetter[v] != 0 {
		return 0, 0, p.fail("non-canonical \\u escape")
	}
	return v, 6, nil
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
			return p.numberValue(start, i)
		}
	}
	s := string(b[start:i])
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
	return p.numberValue(start, i)
}

// numberValue returns the number b[start:end] when building.
func (p *canonParser) numberValue(start, end int) (any, error) {
	if !p.build {
		return nil, nil
	}
	return json.Number(p.b[start:end]), nil
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
		i = digits(s, i)
	} else {
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// digits returns the index after the run of decimal digits in s at i.
func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}
