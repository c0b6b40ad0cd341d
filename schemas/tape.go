package schemas

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// TapeKind is the JSON type of a value on a Tape.
type TapeKind uint8

// The kinds of a Tape's values.
const (
	TapeNull TapeKind = iota + 1
	TapeFalse
	TapeTrue
	TapeNumber
	TapeString
	TapeArray
	TapeObject
)

// A Tape is one JSON document parsed into the flat list of its values, in
// document order, each a span of the document's bytes: what a Validator
// walks (ValidateTape) and what a reader queries (Member, Str, Int...)
// without building maps, slices or boxed values. Value 0 is the document.
// An object is followed by its members, each a key (a string) and then the
// member's value; an array by its items. Every value knows the index after
// itself and its descendants, so that any value is skipped in one step.
//
// A parser fills a Tape with Reset, Open, Close, String and Scalar
// (canonjson.ParseTape fills one from canonical bytes, and refuses
// duplicate keys: a Tape holds at most one member of a name). A Tape may be
// refilled for another document, reusing its memory; it refers to the
// document's bytes, which must not change while it is in use, and it is
// not safe for concurrent use.
type Tape struct {
	src  []byte
	vals []tapeVal
}

// tapeVal is one value of a Tape.
type tapeVal struct {
	// start and end delimit the value in the document: a string's bytes
	// between its quotes, as written (escapes included); a number's or a
	// literal's text; an array or object from its bracket to one past the
	// closing one.
	start, end int32
	next       int32 // the index after the value and its descendants
	n          int32 // an object's members, an array's items, a string's decoded length in bytes
	kind       TapeKind
	flags      uint8 // strings: tapeEscaped, tapeNonASCII
}

const (
	tapeEscaped  = 1 << iota // the string holds an escape
	tapeNonASCII             // the string holds a byte >= 0x80
)

// Reset empties t and makes src the document its values refer to.
func (t *Tape) Reset(src []byte) {
	t.src = src
	t.vals = t.vals[:0]
}

// Open appends an array or an object that starts at byte start and
// returns its index, for Close once its contents are appended.
func (t *Tape) Open(kind TapeKind, start int) int {
	t.vals = append(t.vals, tapeVal{start: int32(start), kind: kind})
	return len(t.vals) - 1
}

// Close ends the array or object at index i: end is one past its closing
// bracket, n the number of its items or members.
func (t *Tape) Close(i, end, n int) {
	v := &t.vals[i]
	v.end, v.n, v.next = int32(end), int32(n), int32(len(t.vals))
}

// String appends a string (a value or an object key) whose bytes between
// the quotes, as written, are src[start:end]: decodedLen is its length
// once its escapes are decoded, escaped says it holds an escape (a JSON
// escape of RFC 8259, decoded as encoding/json decodes it) and nonASCII
// that it holds, decoded, a byte >= 0x80 (it is valid UTF-8 either way).
func (t *Tape) String(start, end, decodedLen int, escaped, nonASCII bool) {
	var f uint8
	if escaped {
		f |= tapeEscaped
	}
	if nonASCII {
		f |= tapeNonASCII
	}
	t.vals = append(t.vals, tapeVal{start: int32(start), end: int32(end), n: int32(decodedLen), kind: TapeString, flags: f, next: int32(len(t.vals) + 1)})
}

// Scalar appends a number, true, false or null whose text is
// src[start:end] (a number in the JSON grammar).
func (t *Tape) Scalar(kind TapeKind, start, end int) {
	t.vals = append(t.vals, tapeVal{start: int32(start), end: int32(end), kind: kind, next: int32(len(t.vals) + 1)})
}

// Len returns the number of values on the tape (keys included).
func (t *Tape) Len() int { return len(t.vals) }

// Kind returns the kind of value i, or 0 when i is not a value's index.
func (t *Tape) Kind(i int) TapeKind {
	if i < 0 || i >= len(t.vals) {
		return 0
	}
	return t.vals[i].kind
}

// Span returns where value i is in the document: a string's bytes between
// its quotes, a number's or literal's text, an array or object with its
// brackets.
func (t *Tape) Span(i int) (start, end int) {
	v := &t.vals[i]
	return int(v.start), int(v.end)
}

// Raw returns the bytes of value i as Span delimits them: they are the
// document's, not a copy, and must not be changed.
func (t *Tape) Raw(i int) []byte { return t.raw(i) }

// Count returns the number of members of object i or items of array i.
func (t *Tape) Count(i int) int {
	if k := t.Kind(i); k != TapeObject && k != TapeArray {
		return 0
	}
	return int(t.vals[i].n)
}

// Items returns the indexes of the items of array i, or of the keys of
// object i (a member's value is its key's index plus one).
func (t *Tape) Items(i int) []int {
	k := t.Kind(i)
	if k != TapeObject && k != TapeArray {
		return nil
	}
	out := make([]int, 0, t.vals[i].n)
	for j := i + 1; j < int(t.vals[i].next); j = t.after(j, k) {
		out = append(out, j)
	}
	return out
}

// after returns the index after the item (or member, from its key) at j of
// a container of kind k.
func (t *Tape) after(j int, k TapeKind) int {
	if k == TapeObject {
		return int(t.vals[j+1].next)
	}
	return int(t.vals[j].next)
}

// Member returns the index of the value of the member name of object i, or
// -1 when i is not an object (or -1) or has no such member.
func (t *Tape) Member(i int, name string) int {
	if t.Kind(i) != TapeObject {
		return -1
	}
	vals := t.vals
	for k, end := i+1, int(vals[i].next); k < end; k = int(vals[k+1].next) {
		kv := &vals[k]
		if int(kv.n) != len(name) {
			continue
		}
		if kv.flags&tapeEscaped == 0 {
			if string(t.src[kv.start:kv.end]) == name {
				return k + 1
			}
		} else if t.strIs(k, name) {
			return k + 1
		}
	}
	return -1
}

// raw returns the bytes of value i (see Span).
func (t *Tape) raw(i int) []byte {
	v := &t.vals[i]
	return t.src[v.start:v.end]
}

// strIs reports whether string i is s, decoded, without allocating when it
// holds no escape.
func (t *Tape) strIs(i int, s string) bool {
	v := &t.vals[i]
	if v.kind != TapeString || int(v.n) != len(s) {
		return false
	}
	if v.flags&tapeEscaped == 0 {
		return string(t.src[v.start:v.end]) == s
	}
	d, _ := unquote(t.src[v.start:v.end])
	return d == s
}

// StrIs reports whether value i is the string s.
func (t *Tape) StrIs(i int, s string) bool {
	return t.Kind(i) == TapeString && t.strIs(i, s)
}

// Str returns string i decoded; "" when i is not a string (or -1).
func (t *Tape) Str(i int) string {
	if t.Kind(i) != TapeString {
		return ""
	}
	return t.str(i)
}

func (t *Tape) str(i int) string {
	v := &t.vals[i]
	if v.flags&tapeEscaped == 0 {
		return string(t.src[v.start:v.end])
	}
	s, _ := unquote(t.src[v.start:v.end])
	return s
}

// Int returns number i as an int64; ok is false when i is not a number
// written as an integer that fits.
func (t *Tape) Int(i int) (n int64, ok bool) {
	if t.Kind(i) != TapeNumber {
		return 0, false
	}
	n, err := strconv.ParseInt(string(t.raw(i)), 10, 64)
	return n, err == nil
}

// Value returns value i as Parse returns a value: maps, slices, strings,
// bools, nil and json.Number; nil when i is not a value's index.
func (t *Tape) Value(i int) any {
	switch t.Kind(i) {
	case TapeObject:
		m := make(map[string]any, t.vals[i].n)
		for k, end := i+1, int(t.vals[i].next); k < end; k = int(t.vals[k+1].next) {
			m[t.str(k)] = t.Value(k + 1)
		}
		return m
	case TapeArray:
		a := make([]any, 0, t.vals[i].n)
		for k, end := i+1, int(t.vals[i].next); k < end; k = int(t.vals[k].next) {
			a = append(a, t.Value(k))
		}
		return a
	case TapeString:
		return t.str(i)
	case TapeNumber:
		return json.Number(t.raw(i))
	case TapeTrue:
		return true
	case TapeFalse:
		return false
	}
	return nil
}

// runes returns the number of characters of string i, decoded.
func (t *Tape) runes(i int) int {
	v := &t.vals[i]
	switch {
	case v.flags&tapeNonASCII == 0:
		return int(v.n)
	case v.flags&tapeEscaped == 0:
		return utf8.RuneCount(t.src[v.start:v.end])
	}
	return utf8.RuneCountInString(t.str(i))
}

// typeName names the JSON type of value i as jsonType does.
func (t *Tape) typeName(i int) string {
	switch t.vals[i].kind {
	case TapeNull:
		return "null"
	case TapeFalse, TapeTrue:
		return "boolean"
	case TapeNumber:
		return "number"
	case TapeString:
		return "string"
	case TapeArray:
		return "array"
	}
	return "object"
}

// equalValue reports whether value i equals x (a value as Parse returns
// it), as Equal does.
func (t *Tape) equalValue(i int, x any) bool {
	v := &t.vals[i]
	switch y := x.(type) {
	case nil:
		return v.kind == TapeNull
	case bool:
		return v.kind == TapeTrue && y || v.kind == TapeFalse && !y
	case string:
		return t.strIs(i, y)
	case []any:
		if v.kind != TapeArray || int(v.n) != len(y) {
			return false
		}
		k := i + 1
		for _, e := range y {
			if !t.equalValue(k, e) {
				return false
			}
			k = int(t.vals[k].next)
		}
		return true
	case map[string]any:
		if v.kind != TapeObject || int(v.n) != len(y) {
			return false
		}
		for k, end := i+1, int(v.next); k < end; k = int(t.vals[k+1].next) {
			e, ok := y[t.str(k)]
			if !ok || !t.equalValue(k+1, e) {
				return false
			}
		}
		return true
	}
	ys, ok := numText(x)
	if !ok || v.kind != TapeNumber {
		return false
	}
	xs := t.raw(i)
	if string(xs) == ys {
		return true
	}
	if plainInteger(xs) && plainInteger(ys) {
		return false
	}
	return equalNumbers(string(xs), ys)
}

// equal reports whether values i and j are equal, as Equal does.
func (t *Tape) equal(i, j int) bool {
	a, b := &t.vals[i], &t.vals[j]
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case TapeString:
		if a.n != b.n {
			return false
		}
		if (a.flags|b.flags)&tapeEscaped == 0 {
			return string(t.raw(i)) == string(t.raw(j))
		}
		return t.str(i) == t.str(j)
	case TapeNumber:
		return equalNumbers(string(t.raw(i)), string(t.raw(j)))
	case TapeArray:
		if a.n != b.n {
			return false
		}
		for k, l := i+1, j+1; k < int(a.next); k, l = int(t.vals[k].next), int(t.vals[l].next) {
			if !t.equal(k, l) {
				return false
			}
		}
		return true
	case TapeObject:
		if a.n != b.n {
			return false
		}
		for k := i + 1; k < int(a.next); k = int(t.vals[k+1].next) {
			l := t.Member(j, t.str(k))
			if l < 0 || !t.equal(k+1, l) {
				return false
			}
		}
		return true
	}
	return true // null, true, false
}
