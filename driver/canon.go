package driver

import (
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
)

// canonicalSnapshot returns the canonical form (RFC 8785) of a snapshot:
// exactly what canonjson.TransformDepth returns at snapshotMaxDepth, errors
// included. The observer
// writes its snapshot canonical already (members in UTF-16 order,
// JSON.stringify's escapes, which are RFC 8785's, small integers), so the
// common case is one pass that checks doc is its own canonical form and
// returns it as it is; anything else, or anything the check is unsure of,
// goes through canonjson.TransformDepth.
func canonicalSnapshot(doc []byte) ([]byte, error) {
	if isCanonical(doc) {
		return doc, nil
	}
	return canonjson.TransformDepth(doc, snapshotMaxDepth)
}

// snapshotMaxDepth bounds the JSON nesting of a snapshot: the observer
// walks at most MaxMaxDepth elements deep and nests an element two levels
// below its parent (its node and its children), with a few levels for the
// document, shadow roots and frames. Anything deeper is refused.
const snapshotMaxDepth = 2*MaxMaxDepth + 16

// isCanonical reports whether doc is one JSON value that TransformDepth
// would return unchanged and without error. It may say false for such a
// document (keys with escapes, numbers other than small integers, nesting
// near snapshotMaxDepth); it never says true for any other.
func isCanonical(doc []byte) bool {
	if len(doc) > schemas.MaxDocumentBytes || !utf8.Valid(doc) {
		return false
	}
	c := canonChecker{doc: doc}
	return c.value(0) && c.i == len(doc)
}

type canonChecker struct {
	doc []byte
	i   int
}

func (c *canonChecker) value(depth int) bool {
	if c.i >= len(c.doc) {
		return false
	}
	switch b := c.doc[c.i]; {
	case b == '{' || b == '[':
		// ParseDepth refuses a container at depth snapshotMaxDepth; stay
		// clear.
		if depth >= snapshotMaxDepth-1 {
			return false
		}
		if b == '{' {
			return c.object(depth)
		}
		return c.array(depth)
	case b == '"':
		_, ok := c.str()
		return ok
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return false
}

func (c *canonChecker) literal(lit string) bool {
	if len(c.doc)-c.i < len(lit) || string(c.doc[c.i:c.i+len(lit)]) != lit {
		return false
	}
	c.i += len(lit)
	return true
}

func (c *canonChecker) array(depth int) bool {
	c.i++ // '['
	if c.i < len(c.doc) && c.doc[c.i] == ']' {
		c.i++
		return true
	}
	for {
		if !c.value(depth + 1) {
			return false
		}
		if done, ok := c.separator(']'); done || !ok {
			return ok
		}
	}
}

// separator consumes what follows a member or element: a comma (more
// follow), or end, which closes the container (done).
func (c *canonChecker) separator(end byte) (done, ok bool) {
	if c.i >= len(c.doc) {
		return false, false
	}
	switch c.doc[c.i] {
	case ',':
		c.i++
		return false, true
	case end:
		c.i++
		return true, true
	}
	return false, false
}

func (c *canonChecker) object(depth int) bool {
	c.i++ // '{'
	if c.i < len(c.doc) && c.doc[c.i] == '}' {
		c.i++
		return true
	}
	var prev string
	for n := 0; ; n++ {
		if c.i >= len(c.doc) || c.doc[c.i] != '"' {
			return false
		}
		key, ok := c.str()
		// A key with an escape would have to be decoded to be ordered.
		if !ok || key == nil {
			return false
		}
		// Strictly increasing: in canonical order, and no duplicates.
		if n > 0 && !canonjson.LessUTF16(prev, string(key)) {
			return false
		}
		prev = string(key)
		if c.i >= len(c.doc) || c.doc[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth + 1) {
			return false
		}
		if done, ok := c.separator('}'); done || !ok {
			return ok
		}
	}
}

// str checks a string in canonical form (only the escapes RFC 8785 writes)
// and returns its contents when it has no escape, nil when it has one.
func (c *canonChecker) str() ([]byte, bool) {
	c.i++ // '"'
	start := c.i
	escaped := false
	for c.i < len(c.doc) {
		b := c.doc[c.i]
		switch {
		case b == '"':
			c.i++
			if escaped {
				return nil, true
			}
			return c.doc[start : c.i-1], true
		case b < 0x20:
			return nil, false
		case b != '\\':
			c.i++
			continue
		}
		escaped = true
		if c.i+1 >= len(c.doc) {
			return nil, false
		}
		switch c.doc[c.i+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			c.i += 2
		case 'u':
			// Only \u00xx for a control character without a short form,
			// in lowercase hex.
			if len(c.doc)-c.i < 6 || c.doc[c.i+2] != '0' || c.doc[c.i+3] != '0' || (c.doc[c.i+4] != '0' && c.doc[c.i+4] != '1') {
				return nil, false
			}
			h := c.doc[c.i+5]
			var lo byte
			switch {
			case h >= '0' && h <= '9':
				lo = h - '0'
			case h >= 'a' && h <= 'f':
				lo = h - 'a' + 10
			default:
				return nil, false
			}
			switch (c.doc[c.i+4]-'0')<<4 | lo {
			case '\b', '\t', '\n', '\f', '\r':
				return nil, false
			}
			c.i += 6
		default:
			return nil, false
		}
	}
	return nil, false
}

// number accepts the integers of at most 15 digits, without a sign on
// zero: FormatNumber writes them as they are.
func (c *canonChecker) number() bool {
	neg := c.doc[c.i] == '-'
	if neg {
		c.i++
	}
	start := c.i
	for c.i < len(c.doc) && c.doc[c.i] >= '0' && c.doc[c.i] <= '9' {
		c.i++
	}
	n := c.i - start
	if n == 0 || n > 15 || c.doc[start] == '0' && (n > 1 || neg) {
		return false
	}
	if c.i < len(c.doc) {
		switch c.doc[c.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}
