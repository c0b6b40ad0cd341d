package contract

import "unicode/utf8"

// Strings are written as encoding/json writes them by the marshalers of
// this package and by callers that build JSON around its values (the
// Navigator's prompt), which also need the length of that encoding before
// writing it.

// AppendJSONString appends s JSON-encoded as encoding/json writes it, quotes
// included: HTML-safe, with '"', '\\' and \b \f \n \r \t escaped in two
// bytes, the other control characters, '<', '>', '&', U+2028 and U+2029 as
// \u escapes, and each byte of invalid UTF-8 as \ufffd. Whatever s holds,
// the result is one JSON string and only that (tests hold it to
// encoding/json, and JSONStringLen to its length).
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		x := escapeExtra[c]
		if x == 0 {
			i++
			continue
		}
		if x != multiByte {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// JSONStringLen is the length of s JSON-encoded as encoding/json writes it,
// without the quotes: HTML-safe, '"', '\\' and \b \f \n \r \t escaped in
// two bytes, the other control characters, '<', '>', '&', U+2028, U+2029
// and each byte of invalid UTF-8 (as \ufffd) in six. It is counted, not
// encoded (a test holds it to encoding/json).
func JSONStringLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); {
		if x := escapeExtra[s[i]]; x != multiByte {
			n += int(x)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // one byte written as \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3 // three bytes written as \u202x
		}
		i += size
	}
	return n
}

// multiByte marks, in escapeExtra, the bytes that start (or are not) a
// multi-byte character.
const multiByte = 0xff

// escapeExtra is, for each ASCII byte, how many bytes encoding/json writes
// for it beyond the byte itself.
var escapeExtra = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = multiByte
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 1
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 5
		}
	}
	return t
}()
