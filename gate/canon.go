package gate

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
)

// isID reports whether s is an identifier of the contract
// (browser-state.schema.json#/$defs/id): 1 to 128 characters from letters,
// digits, '.', '_' and '-', starting with a letter or digit.
func isID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// isRuleName reports whether s is a rule name: a lowercase letter, then up
// to 63 lowercase letters, digits and underscores.
func isRuleName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isActionName reports whether s is a policy action name: "browser." and a
// lowercase letter, then up to 31 lowercase letters and underscores.
func isActionName(s string) bool {
	const p = "browser."
	if len(s) <= len(p) || len(s) > len(p)+32 || s[:len(p)] != p {
		return false
	}
	n := s[len(p):]
	if n[0] < 'a' || n[0] > 'z' {
		return false
	}
	for i := 1; i < len(n); i++ {
		if c := n[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// isSHA256Hex reports whether s is 64 lowercase hex digits.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// appendCanonical appends the RFC 8785 canonical JSON of v, a value built of
// map[string]any, []any, string, bool, nil and integral json.Number, as
// canonjson.EncodeValue writes it (a test cross-checks the two). It is a
// fast path for the action hash: object keys are sorted by UTF-16 code
// units, which for the ASCII keys of the action and element is byte order;
// a non-ASCII key reports false and the caller falls back to canonjson.
func appendCanonical(b []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		if t {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case json.Number:
		n, err := strconv.ParseInt(string(t), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return b, false
		}
		return strconv.AppendInt(b, n, 10), true
	case string:
		return appendCanonicalString(b, t)
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		var buf [16]string // the action has at most 14 members: no allocation
		keys := buf[:0]
		for k := range t {
			for i := 0; i < len(k); i++ {
				if k[i] >= 0x80 {
					return b, false
				}
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			b, _ = appendCanonicalString(b, k)
			b = append(b, ':')
			if b, ok = appendCanonical(b, t[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendCanonicalString writes s as RFC 8785 does; invalid UTF-8 reports
// false.
func appendCanonicalString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return b, false
	}
	return canonjson.AppendString(b, s), true
}
