// Package strictjson reads one JSON value strictly: it refuses what
// encoding/json accepts silently (duplicate object keys, nesting beyond a
// bound, trailing data) and numbers that a validator cannot hold exactly
// (too long, or with an exponent too large). It is the one JSON reader in
// front of the schema validator (package schemas) and of canonical JSON
// (package canonjson), built on encoding/json's tokenizer.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxDocumentBytes bounds a document handed to Parse. Chrome's own cap on a
// native message is 64 MiB; nothing aegis accepts is larger.
const MaxDocumentBytes = 64 << 20

// MaxDepthBound is the deepest nesting Parse accepts a bound of: far below
// what exhausts a goroutine's stack, and at encoding/json's own limit.
const MaxDepthBound = 10000

// MaxNumberLen bounds the text of one number, and MaxNumberExponent the
// magnitude of its exponent. JSON writers never come near either
// (JavaScript writes at most 17 significant digits and exponents up to
// 308), while the schema validator turns numbers into exact rationals
// (math/big): past an exponent of about a million that fails and
// jsonschema/v5 then dereferences a nil *big.Rat (a panic), and long digit
// strings cost it time that grows faster than their length.
const (
	MaxNumberLen      = 100
	MaxNumberExponent = 999
)

// SyntaxError reports a document that is not a single well-formed JSON
// value within Parse's bounds.
type SyntaxError struct {
	// Offset is the byte offset at which the problem was found.
	Offset int64
	Msg    string
}

// Error says where the document stops being acceptable, and why.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte offset %d: %s", e.Offset, e.Msg)
}

// ErrTooLarge is returned for documents over MaxDocumentBytes.
var ErrTooLarge = fmt.Errorf("document larger than %d bytes", MaxDocumentBytes)

// Parse decodes doc as exactly one JSON value, with objects as
// map[string]any, arrays as []any and numbers as json.Number, refusing
// duplicate object keys, nesting deeper than maxDepth levels (clamped to
// 1..MaxDepthBound), numbers beyond MaxNumberLen or MaxNumberExponent,
// documents over MaxDocumentBytes and trailing data. Errors are
// *SyntaxError or ErrTooLarge. Strings decode as encoding/json decodes
// them: invalid UTF-8 and lone surrogates become U+FFFD.
func Parse(doc []byte, maxDepth int) (any, error) {
	if len(doc) > MaxDocumentBytes {
		return nil, ErrTooLarge
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	p := &parser{d: d, doc: doc, maxDepth: min(max(maxDepth, 1), MaxDepthBound)}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.tokenStart()
	if _, err := d.Token(); err != io.EOF {
		return nil, &SyntaxError{Offset: off, Msg: "unexpected data after the JSON value"}
	}
	return v, nil
}

// parser walks a document token by token so that it can refuse what
// encoding/json accepts silently.
type parser struct {
	d        *json.Decoder
	doc      []byte
	maxDepth int
}

// tokenStart returns the offset of the next token: the decoder's offset
// points at the end of the previous one, before any separator.
func (p *parser) tokenStart() int64 {
	i := p.d.InputOffset()
	skipSpace := func() {
		for i < int64(len(p.doc)) && (p.doc[i] == ' ' || p.doc[i] == '\t' || p.doc[i] == '\n' || p.doc[i] == '\r') {
			i++
		}
	}
	skipSpace()
	if i < int64(len(p.doc)) && (p.doc[i] == ',' || p.doc[i] == ':') {
		i++
		skipSpace()
	}
	return i
}

func (p *parser) value(depth int) (any, error) {
	off := p.tokenStart()
	tok, err := p.d.Token()
	if err != nil {
		return nil, syntaxError(err, off)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= p.maxDepth {
			return nil, &SyntaxError{Offset: off, Msg: fmt.Sprintf("nesting deeper than %d levels", p.maxDepth)}
		}
		switch t {
		case '{':
			return p.object(depth)
		case '[':
			return p.array(depth)
		default:
			return nil, &SyntaxError{Offset: off, Msg: "unexpected " + string(t)}
		}
	case json.Number:
		if msg := checkNumber(string(t)); msg != "" {
			return nil, &SyntaxError{Offset: off, Msg: msg}
		}
		return t, nil
	default:
		return t, nil
	}
}

// object reads the members of an object whose '{' was read.
func (p *parser) object(depth int) (any, error) {
	obj := map[string]any{}
	for p.d.More() {
		koff := p.tokenStart()
		kt, err := p.d.Token()
		if err != nil {
			return nil, syntaxError(err, koff)
		}
		key, ok := kt.(string)
		if !ok {
			return nil, &SyntaxError{Offset: koff, Msg: "object key is not a string"}
		}
		if _, dup := obj[key]; dup {
			return nil, &SyntaxError{Offset: koff, Msg: "duplicate object key " + strconv.Quote(key)}
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj[key] = v
	}
	if _, err := p.d.Token(); err != nil {
		return nil, syntaxError(err, p.d.InputOffset())
	}
	return obj, nil
}

// array reads the elements of an array whose '[' was read.
func (p *parser) array(depth int) (any, error) {
	arr := []any{}
	for p.d.More() {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	if _, err := p.d.Token(); err != nil {
		return nil, syntaxError(err, p.d.InputOffset())
	}
	return arr, nil
}

// checkNumber says what is wrong with a number token, or "" if nothing.
func checkNumber(s string) string {
	if len(s) > MaxNumberLen {
		return fmt.Sprintf("number longer than %d characters", MaxNumberLen)
	}
	_, exp, ok := strings.Cut(strings.ToLower(s), "e")
	if !ok {
		return ""
	}
	digits := strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if n, err := strconv.Atoi(digits); len(digits) > 4 || err == nil && n > MaxNumberExponent {
		return fmt.Sprintf("number exponent beyond ±%d", MaxNumberExponent)
	}
	return ""
}

func syntaxError(err error, off int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &SyntaxError{Offset: se.Offset, Msg: se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &SyntaxError{Offset: off, Msg: "unexpected end of input"}
	}
	return &SyntaxError{Offset: off, Msg: err.Error()}
}
