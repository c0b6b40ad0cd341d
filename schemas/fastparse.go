package schemas

import (
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// scanParse is Parse's single pass over the bytes. It accepts exactly the
// documents that the token parser (parseTokens, built on encoding/json)
// accepts and returns the same value, at a fraction of the cost: no token
// allocations, no reflection, eight plain ASCII bytes at a time through
// strings, and the member names and enumerated values of the schemas
// interned. It gives no account of a failure: on false, Parse runs the
// token parser, whose error (offset and message) is the one reported. A
// differential fuzz test (FuzzParseAgreement) holds the two to the same
// verdict and value.
func scanParse(doc []byte, maxDepth int) (any, bool) {
	loadIntern()
	p := scanner{b: doc, s: string(doc), maxDepth: maxDepth}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.b)
}

type scanner struct {
	b        []byte
	s        string // b as a string: plain strings are its substrings, no copy each
	i        int
	maxDepth int
}

// space skips JSON white space.
func (p *scanner) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *scanner) value(depth int) (any, bool) {
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= p.maxDepth {
			return nil, false
		}
		return p.object(depth)
	case c == '[':
		if depth >= p.maxDepth {
			return nil, false
		}
		return p.array(depth)
	case c == '"':
		return p.stringValue()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *scanner) literal(lit string) bool {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return false
	}
	p.i += len(lit)
	return true
}

func (p *scanner) object(depth int) (any, bool) {
	p.i++ // {
	obj := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return obj, true
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		if _, dup := obj[key]; dup {
			return nil, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		obj[key] = v
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return obj, true
		default:
			return nil, false
		}
	}
}

func (p *scanner) array(depth int) (any, bool) {
	p.i++ // [
	arr := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return arr, true
		default:
			return nil, false
		}
	}
}

// number scans the JSON number grammar and applies Parse's bounds.
func (p *scanner) number() (any, bool) {
	b, start, i := p.b, p.i, p.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	plain := true
	if i < len(b) && b[i] == '.' {
		plain = false
		i++
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		plain = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return nil, false
		}
	}
	p.i = i
	s := p.s[start:i]
	if (!plain || len(s) > MaxNumberLen) && checkNumber(s) != "" {
		return nil, false
	}
	return json.Number(s), true
}

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// special reports whether any byte of x is a control character, '"', '\\'
// or not ASCII: the bytes a string scan must look at one by one.
func special(x uint64) bool {
	ctl := (x - lsbs*0x20) &^ x
	q := x ^ (lsbs * '"')
	q = (q - lsbs) &^ q
	bs := x ^ (lsbs * '\\')
	bs = (bs - lsbs) &^ bs
	return (x|ctl|q|bs)&msbs != 0
}

// key scans an object member name.
func (p *scanner) key() (string, bool) {
	start := p.i + 1
	raw, plain, ok := p.scanString()
	if !ok {
		return "", false
	}
	if plain {
		if v, ok := internTable[string(raw)]; ok {
			return v.(string), true
		}
		return p.s[start : start+len(raw)], true
	}
	return unquote(raw)
}

// stringValue scans a string value, boxed.
func (p *scanner) stringValue() (any, bool) {
	start := p.i + 1
	raw, plain, ok := p.scanString()
	if !ok {
		return nil, false
	}
	if plain {
		if v, ok := internTable[string(raw)]; ok {
			return v, true
		}
		return p.s[start : start+len(raw)], true
	}
	s, ok := unquote(raw)
	if !ok {
		return nil, false
	}
	return s, true
}

// scanString finds the end of the string at p.i (a '"') and returns its
// bytes between the quotes. plain says they need no decoding: no escape,
// and valid UTF-8 throughout.
func (p *scanner) scanString() (raw []byte, plain, ok bool) {
	b := p.b
	start := p.i + 1
	i := start
	plain = true
	for {
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return nil, false, false
		}
		switch c := b[i]; {
		case c == '"':
			p.i = i + 1
			return b[start:i], plain, true
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return nil, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, false, false
				}
				i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				plain = false // encoding/json replaces it with U+FFFD
			}
			i += n
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hex4 decodes the four hex digits at b[0:4], which scanString checked.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unquote decodes the bytes of a string between its quotes, already
// checked by scanString, as encoding/json does: escapes decoded, a valid
// surrogate pair combined, a lone surrogate and each byte of invalid UTF-8
// replaced by U+FFFD.
func unquote(s []byte) (string, bool) {
	out := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := hex4(s[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							r += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				out = utf8.AppendRune(out, rr)
				continue
			default: // '"', '\\', '/'
				out = append(out, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			rr, n := utf8.DecodeRune(s[r:])
			out = utf8.AppendRune(out, rr)
			r += n
		}
	}
	return string(out), true
}

// internTable holds the strings the schemas name (member names, enumerated
// and constant values, required names), each also boxed as an any: parsing
// one of them allocates nothing. Built once, from the embedded schemas.
var (
	internTable = map[string]any{}
	internOnce  sync.Once
)

// loadIntern fills internTable from the embedded schemas, once.
func loadIntern() {
	internOnce.Do(func() {
		entries, _ := fs.ReadDir(files, ".")
		for _, e := range entries {
			b, err := files.ReadFile(e.Name())
			if err != nil {
				continue
			}
			var v any
			if json.Unmarshal(b, &v) == nil {
				internStrings(v, "")
			}
		}
	})
}

// internStrings adds to internTable every member name of a properties
// object and every string of an enum, const or required, in the schema
// value v.
func internStrings(v any, parentKey string) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if parentKey == "properties" {
				internTable[k] = k
			}
			internStrings(x, k)
		}
	case []any:
		for _, x := range t {
			internStrings(x, parentKey)
		}
	case string:
		if parentKey == "enum" || parentKey == "const" || parentKey == "required" {
			internTable[t] = t
		}
	}
}

// Intern returns the string b spells, boxed, when the schemas name it (a
// member name, an enumerated or constant value), without allocating; ok is
// false for any other string. Parsers of aegis documents use it to share
// one copy of the strings every document repeats.
func Intern(b []byte) (v any, ok bool) {
	loadIntern()
	v, ok = internTable[string(b)]
	return v, ok
}
