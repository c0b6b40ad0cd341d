package driver

import (
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/contract"
)

// SelectorSeparator joins the segments of a selector. Each segment is a CSS
// selector; each separator enters the element the previous segment matched:
// its open shadow root, or for an <iframe> or <frame> its same-origin
// document.
const SelectorSeparator = ">>>"

// MaxSegments bounds how many segments a selector may have.
const MaxSegments = 32

// ParseSelector splits a selector into its CSS segments, exactly as the
// observer does in the page (split, in extension/observer/resolve.js):
// ">>>" splits only outside quotes, brackets and parentheses and when not
// escaped by a backslash; segments are trimmed of CSS whitespace and none
// may be empty.
// It does not check that the segments are valid CSS: the browser does.
//
// A selector that does not parse addresses nothing, so the error is an
// *Error with CodeElementNotFound.
func ParseSelector(sel string) ([]string, error) {
	fail := func(msg string) ([]string, error) {
		return nil, newErr(contract.CodeElementNotFound, sel, "invalid selector: "+msg, nil)
	}
	if sel == "" {
		return fail("empty")
	}
	if len(sel) > MaxSelector {
		return fail(fmt.Sprintf("longer than %d bytes", MaxSelector))
	}
	var segs []string
	start, brackets, parens := 0, 0, 0
	var quote byte
	for i := 0; i < len(sel); {
		c := sel[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[':
			brackets++
		case c == ']':
			if brackets > 0 {
				brackets--
			}
		case c == '(':
			parens++
		case c == ')':
			if parens > 0 {
				parens--
			}
		case c == '>' && brackets == 0 && parens == 0 && strings.HasPrefix(sel[i:], SelectorSeparator):
			segs = append(segs, sel[start:i])
			i += len(SelectorSeparator)
			start = i
			continue
		}
		i++
	}
	if quote != 0 {
		return fail("unterminated string")
	}
	segs = append(segs, sel[min(start, len(sel)):])
	for i, s := range segs {
		s = strings.Trim(s, " \t\n\r\f")
		if s == "" {
			return fail("empty segment")
		}
		segs[i] = s
	}
	if len(segs) > MaxSegments {
		return fail(fmt.Sprintf("more than %d segments", MaxSegments))
	}
	return segs, nil
}

// JoinSelector joins segments into one selector.
func JoinSelector(segments ...string) string {
	return strings.Join(segments, " "+SelectorSeparator+" ")
}
