// Package canonjson implements the JSON Canonicalization Scheme of RFC 8785:
// one byte sequence per JSON value, so that hashes over JSON documents are
// stable however the document was formatted. Object members are sorted by
// their names' UTF-16 code units, whitespace is dropped, strings use the
// minimal escapes of ECMAScript's JSON.stringify, and numbers are written as
// ECMAScript writes an IEEE 754 double.
//
// aegis hashes canonical bytes wherever a hash must be recomputable: the
// evidence ledger, the action hash an approval is bound to, the DOM hash.
package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/internal/strictjson"
)

// MaxDepth is the nesting Transform and ParseCanonical accept, the same
// bound as the schemas' (schemas.MaxDepth).
const MaxDepth = 64

// ErrNumber is returned for a number that has no IEEE 754 double value
// (too large) or no JSON representation (NaN, infinities).
var ErrNumber = errors.New("canonjson: number out of the IEEE 754 double range")

// ErrUTF8 is returned for a string that is not valid UTF-8.
var ErrUTF8 = errors.New("canonjson: invalid UTF-8 in a string")

// Transform returns the canonical form of the JSON document doc. The
// document must be one JSON value without duplicate object keys (I-JSON, as
// the RFC requires) and valid UTF-8 (ErrUTF8); the error for malformed JSON
// is a *schemas.SyntaxError (the strict reader's, shared with package
// schemas), and a document over 64 MiB is refused (schemas.ErrTooLarge).
// An escaped lone surrogate (\ud800) decodes to U+FFFD, as in
// encoding/json.
func Transform(doc []byte) ([]byte, error) {
	return TransformDepth(doc, MaxDepth)
}

// TransformDepth is Transform with nesting bounded at maxDepth levels
// (clamped to 1..10000) instead of MaxDepth, for documents whose depth a
// trusted producer already bounds.
func TransformDepth(doc []byte, maxDepth int) ([]byte, error) {
	if !utf8.Valid(doc) {
		return nil, ErrUTF8
	}
	v, err := strictjson.Parse(doc, maxDepth)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(doc))
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeValue returns the canonical form of a value as schemas.Parse (or
// ParseCanonical) produces it (maps, slices, strings, bools, nil and json.Number).
func EncodeValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Marshal encodes v with encoding/json and returns the canonical form.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	return Transform(b)
}

func encode(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrNumber, t)
		}
		s, err := FormatNumber(f)
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case string:
		return encodeString(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return LessUTF16(keys[i], keys[j]) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeString(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := encode(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonjson: unexpected value of type %T", v)
	}
	return nil
}

// LessUTF16 orders strings by their UTF-16 code units, as RFC 8785 sorts
// object members. UTF-8 byte order is code point order, which differs from
// UTF-16 order only between a character above U+FFFF (a surrogate pair,
// 0xD800...) and one in U+E000..U+FFFF. It does not allocate.
func LessUTF16(a, b string) bool {
	n := min(len(a), len(b))
	j := 0
	for j < n && a[j] == b[j] {
		j++
	}
	if j == n {
		return len(a) < len(b)
	}
	// Back up to the start of the character that differs.
	for j > 0 && a[j]&0xC0 == 0x80 {
		j--
	}
	ra, _ := utf8.DecodeRuneInString(a[j:])
	rb, _ := utf8.DecodeRuneInString(b[j:])
	if sa, sb := ra > 0xFFFF, rb > 0xFFFF; sa != sb {
		if sa {
			return rb >= 0xE000
		}
		return ra < 0xE000
	}
	return ra < rb
}

const hexDigits = "0123456789abcdef"

func encodeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return ErrUTF8
	}
	buf.Write(AppendString(buf.AvailableBuffer(), s))
	return nil
}

// AppendString appends s to b as RFC 8785 writes a string: '"' and '\\'
// escaped, \b \f \n \r \t in their short forms, other control characters
// as \u00xx, everything else literal. s must be valid UTF-8 (the caller
// checks; invalid bytes would be copied as they are). The bytes that need
// no escape are found eight at a time and copied in runs.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	run := 0 // start of the bytes not yet copied
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			m := stopMask(x)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first byte that needs an escape
		} else if !isStop(s[i]) {
			i++
			continue
		}
		b = append(b, s[run:i]...)
		b = appendEscape(b, s[i])
		i++
		run = i
	}
	b = append(b, s[run:]...)
	return append(b, '"')
}

// shortEscape maps the byte that follows a backslash in a two-byte escape
// of canonical JSON to the byte the escape stands for; 0 for any other.
var shortEscape = [256]byte{'"': '"', '\\': '\\', 'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r'}

// escapeLetter is shortEscape's inverse: the byte that follows the
// backslash in the two-byte escape of a byte; 0 for a byte escaped as
// \u00xx or not at all.
var escapeLetter = func() (t [256]byte) {
	for l, c := range shortEscape {
		if c != 0 {
			t[c] = byte(l)
		}
	}
	return t
}()

// appendEscape appends the escape of a byte that needs one (isStop).
func appendEscape(b []byte, c byte) []byte {
	if l := escapeLetter[c]; l != 0 {
		return append(b, '\\', l)
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// FormatNumber writes f as ECMAScript's Number.prototype.toString does
// (ECMA-262, 7.1.12.1), which is the number format of RFC 8785.
func FormatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", ErrNumber
	}
	if f == 0 {
		return "0", nil // also for -0
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest digits that round-trip, and the decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±xx
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to the digits
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		es := "+"
		if n-1 < 0 {
			es = "-"
		}
		ev := n - 1
		if ev < 0 {
			ev = -ev
		}
		out = digits[:1]
		if k > 1 {
			out += "." + digits[1:]
		}
		out += "e" + es + strconv.Itoa(ev)
	}
	return sign + out, nil
}
