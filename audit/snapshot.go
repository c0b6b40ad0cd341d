package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// This file resolves a selector on a recorded DOM snapshot and describes
// the element it addresses as the observer (extension/observer.js,
// describe) would have: the target element of a decision is not recorded,
// so it is reconstructed from the snapshot of the observation before the
// action. The snapshot is the observer's JSON tree: a node is a text string
// or [tag, attrs, children...]; "#document" and "#shadow-root" start a new
// scope. Selectors are matched with a subset of CSS (type, #id, .class,
// attribute selectors, :root, :nth-of-type, :nth-child, :first-child,
// :last-child, :first-of-type, :last-of-type, and the four combinators),
// enough for the selectors the observer generates; anything else is
// reported as unsupported, and the reconstruction is not exact.

// snode is one node of a DOM snapshot.
type snode struct {
	tag    string // lower case; "" for a text node; "#document", "#shadow-root"
	text   string
	attrs  map[string]string
	kids   []*snode // light children (elements and text), in order
	parent *snode   // the parent node in the same scope (an element, or the scope's root)
	inner  *snode   // the #shadow-root, or for a frame its #document
}

func (n *snode) isElement() bool { return n.tag != "" && n.tag[0] != '#' }

func (n *snode) attr(name string) (string, bool) {
	v, ok := n.attrs[name]
	return v, ok
}

// maxSnapshotNodes bounds the nodes parsed from a snapshot.
const maxSnapshotNodes = 500000

// parseSnapshot parses the observer's snapshot JSON into a tree whose root
// is the top "#document".
func parseSnapshot(data string) (*snode, error) {
	var doc struct {
		Root json.RawMessage `json:"root"`
	}
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if len(doc.Root) == 0 {
		return nil, errors.New("snapshot: no root")
	}
	count := 0
	var build func(raw json.RawMessage, parent *snode, depth int) (*snode, error)
	build = func(raw json.RawMessage, parent *snode, depth int) (*snode, error) {
		count++
		if count > maxSnapshotNodes || depth > 2048 {
			return nil, errors.New("snapshot: too large")
		}
		raw = json.RawMessage(strings.TrimSpace(string(raw)))
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			return &snode{text: s, parent: parent}, nil
		}
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return nil, fmt.Errorf("snapshot: node: %w", err)
		}
		if len(arr) == 0 {
			return nil, errors.New("snapshot: empty node")
		}
		n := &snode{parent: parent, attrs: map[string]string{}}
		if err := json.Unmarshal(arr[0], &n.tag); err != nil {
			return nil, fmt.Errorf("snapshot: tag: %w", err)
		}
		n.tag = strings.ToLower(n.tag)
		rest := arr[1:]
		if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] == '{' {
			var attrs map[string]any
			if err := json.Unmarshal(rest[0], &attrs); err != nil {
				return nil, fmt.Errorf("snapshot: attributes: %w", err)
			}
			for k, v := range attrs {
				if s, ok := v.(string); ok {
					n.attrs[strings.ToLower(k)] = s
				}
			}
			rest = rest[1:]
		}
		for _, k := range rest {
			c, err := build(k, n, depth+1)
			if err != nil {
				return nil, err
			}
			if c.tag == "#shadow-root" || c.tag == "#document" {
				// A new scope: it has no parent element in it.
				c.parent = nil
				n.inner = c
				continue
			}
			n.kids = append(n.kids, c)
		}
		return n, nil
	}
	root, err := build(doc.Root, nil, 0)
	if err != nil {
		return nil, err
	}
	if root.tag != "#document" {
		return nil, errors.New("snapshot: the root is not a #document")
	}
	return root, nil
}

// elements lists the elements of a scope in document order, not entering
// shadow roots or frames (they are scopes of their own).
func elements(scope *snode) []*snode {
	var out []*snode
	var walk func(n *snode)
	walk = func(n *snode) {
		for _, k := range n.kids {
			if k.isElement() {
				out = append(out, k)
				walk(k)
			}
		}
	}
	walk(scope)
	return out
}

// errUnsupported marks a selector outside the supported subset of CSS.
var errUnsupported = errors.New("selector outside the supported subset of CSS")

// resolveSelector returns the one element sel addresses in the snapshot,
// entering shadow roots and frames at each ">>>", as the observer does.
func resolveSelector(root *snode, sel string) (*snode, error) {
	segs, err := driver.ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	scope := root
	var el *snode
	for i, seg := range segs {
		if scope == nil {
			return nil, fmt.Errorf("segment %d: nothing to enter", i+1)
		}
		list, err := parseSelectorList(seg)
		if err != nil {
			return nil, err
		}
		var found []*snode
		for _, e := range elements(scope) {
			if list.matches(e) {
				found = append(found, e)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("segment %d: no element matches", i+1)
		case 1:
		default:
			return nil, fmt.Errorf("segment %d: %d elements match", i+1, len(found))
		}
		el = found[0]
		scope = el.inner
	}
	return el, nil
}

// --- a subset of CSS selectors -------------------------------------------

type selectorList []complexSel

type complexSel struct {
	compounds []compound // left to right
	combs     []byte     // combs[i] joins compounds[i] and compounds[i+1]: ' ', '>', '+', '~'
}

type compound struct {
	tag    string // "" or "*" for any
	checks []func(*snode) bool
}

func (l selectorList) matches(e *snode) bool {
	for _, c := range l {
		if c.matches(e, len(c.compounds)-1) {
			return true
		}
	}
	return false
}

func (c complexSel) matches(e *snode, i int) bool {
	if !c.compounds[i].matches(e) {
		return false
	}
	if i == 0 {
		return true
	}
	switch c.combs[i-1] {
	case '>':
		p := parentElement(e)
		return p != nil && c.matches(p, i-1)
	case ' ':
		for p := parentElement(e); p != nil; p = parentElement(p) {
			if c.matches(p, i-1) {
				return true
			}
		}
	case '+':
		s := prevSibling(e)
		return s != nil && c.matches(s, i-1)
	case '~':
		for s := prevSibling(e); s != nil; s = prevSibling(s) {
			if c.matches(s, i-1) {
				return true
			}
		}
	}
	return false
}

func (c compound) matches(e *snode) bool {
	if c.tag != "" && c.tag != "*" && c.tag != e.tag {
		return false
	}
	for _, f := range c.checks {
		if !f(e) {
			return false
		}
	}
	return true
}

func parentElement(e *snode) *snode {
	if e.parent != nil && e.parent.isElement() {
		return e.parent
	}
	return nil
}

func siblings(e *snode) []*snode {
	if e.parent == nil {
		return nil
	}
	var out []*snode
	for _, k := range e.parent.kids {
		if k.isElement() {
			out = append(out, k)
		}
	}
	return out
}

func prevSibling(e *snode) *snode {
	var prev *snode
	for _, s := range siblings(e) {
		if s == e {
			return prev
		}
		prev = s
	}
	return nil
}

// position returns e's 1-based index among its element siblings (of its
// type when ofType), counted from the start or from the end.
func position(e *snode, ofType, fromEnd bool) int {
	sib := siblings(e)
	if fromEnd {
		for i, j := 0, len(sib)-1; i < j; i, j = i+1, j-1 {
			sib[i], sib[j] = sib[j], sib[i]
		}
	}
	n := 0
	for _, s := range sib {
		if ofType && s.tag != e.tag {
			continue
		}
		n++
		if s == e {
			return n
		}
	}
	return 0
}

// selParser parses one selector segment.
type selParser struct {
	s string
	i int
}

func parseSelectorList(s string) (selectorList, error) {
	p := &selParser{s: s}
	var list selectorList
	for {
		c, err := p.complex()
		if err != nil {
			return nil, err
		}
		list = append(list, c)
		p.space()
		if p.i >= len(p.s) {
			return list, nil
		}
		if p.s[p.i] != ',' {
			return nil, fmt.Errorf("%w: unexpected %q", errUnsupported, p.s[p.i:])
		}
		p.i++
	}
}

func (p *selParser) space() bool {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r\f", p.s[p.i]) >= 0 {
		p.i++
	}
	return p.i > start
}

func (p *selParser) complex() (complexSel, error) {
	var c complexSel
	p.space()
	for {
		cp, err := p.compound()
		if err != nil {
			return c, err
		}
		c.compounds = append(c.compounds, cp)
		sp := p.space()
		if p.i >= len(p.s) || p.s[p.i] == ',' {
			return c, nil
		}
		comb := byte(' ')
		if ch := p.s[p.i]; ch == '>' || ch == '+' || ch == '~' {
			comb = ch
			p.i++
			p.space()
		} else if !sp {
			return c, fmt.Errorf("%w: unexpected %q", errUnsupported, p.s[p.i:])
		}
		c.combs = append(c.combs, comb)
	}
}

func (p *selParser) compound() (compound, error) {
	var c compound
	if p.i < len(p.s) && p.s[p.i] == '*' {
		c.tag = "*"
		p.i++
	} else if p.i < len(p.s) && isIdentStart(p.s[p.i]) {
		c.tag = strings.ToLower(p.ident())
	}
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '#':
			p.i++
			id := p.ident()
			if id == "" {
				return c, fmt.Errorf("%w: empty id", errUnsupported)
			}
			c.checks = append(c.checks, func(e *snode) bool { v, ok := e.attr("id"); return ok && v == id })
		case '.':
			p.i++
			cl := p.ident()
			if cl == "" {
				return c, fmt.Errorf("%w: empty class", errUnsupported)
			}
			c.checks = append(c.checks, func(e *snode) bool {
				v, _ := e.attr("class")
				for _, f := range strings.Fields(v) {
					if f == cl {
						return true
					}
				}
				return false
			})
		case '[':
			f, err := p.attribute()
			if err != nil {
				return c, err
			}
			c.checks = append(c.checks, f)
		case ':':
			f, err := p.pseudo()
			if err != nil {
				return c, err
			}
			c.checks = append(c.checks, f)
		default:
			if c.tag == "" && len(c.checks) == 0 {
				return c, fmt.Errorf("%w: unexpected %q", errUnsupported, p.s[p.i:])
			}
			return c, nil
		}
	}
	if c.tag == "" && len(c.checks) == 0 {
		return c, fmt.Errorf("%w: empty compound", errUnsupported)
	}
	return c, nil
}

func isIdentStart(b byte) bool {
	return b == '_' || b == '-' || b == '\\' || b >= 0x80 || (b|0x20 >= 'a' && b|0x20 <= 'z')
}

func isIdentChar(b byte) bool { return isIdentStart(b) || (b >= '0' && b <= '9') }

// ident reads a CSS identifier, with its escapes resolved.
func (p *selParser) ident() string {
	var b strings.Builder
	for p.i < len(p.s) && isIdentChar(p.s[p.i]) {
		if p.s[p.i] == '\\' {
			b.WriteString(p.escape())
			continue
		}
		b.WriteByte(p.s[p.i])
		p.i++
	}
	return b.String()
}

// escape reads a CSS escape at p.i (a backslash).
func (p *selParser) escape() string {
	p.i++ // the backslash
	if p.i >= len(p.s) {
		return "\uFFFD"
	}
	j := p.i
	for j < len(p.s) && j-p.i < 6 && isHex(p.s[j]) {
		j++
	}
	if j > p.i {
		n, _ := strconv.ParseUint(p.s[p.i:j], 16, 32)
		p.i = j
		if p.i < len(p.s) && strings.IndexByte(" \t\n\r\f", p.s[p.i]) >= 0 {
			p.i++
		}
		if n == 0 || n > utf8.MaxRune || (n >= 0xD800 && n <= 0xDFFF) {
			return "\uFFFD"
		}
		return string(rune(n))
	}
	r, size := utf8.DecodeRuneInString(p.s[p.i:])
	p.i += size
	return string(r)
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b|0x20 >= 'a' && b|0x20 <= 'f')
}

// str reads a quoted string at p.i.
func (p *selParser) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 < len(p.s) && p.s[p.i+1] == '\n' {
				p.i += 2
				continue
			}
			b.WriteString(p.escape())
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", fmt.Errorf("%w: unterminated string", errUnsupported)
}

func (p *selParser) attribute() (func(*snode) bool, error) {
	p.i++ // [
	p.space()
	name := strings.ToLower(p.ident())
	if name == "" {
		return nil, fmt.Errorf("%w: attribute without a name", errUnsupported)
	}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return func(e *snode) bool { _, ok := e.attr(name); return ok }, nil
	}
	op := ""
	if p.i < len(p.s) && strings.IndexByte("~^$*|", p.s[p.i]) >= 0 {
		op = p.s[p.i : p.i+1]
		p.i++
	}
	if p.i >= len(p.s) || p.s[p.i] != '=' {
		return nil, fmt.Errorf("%w: bad attribute selector", errUnsupported)
	}
	p.i++
	p.space()
	var val string
	if p.i < len(p.s) && (p.s[p.i] == '"' || p.s[p.i] == '\'') {
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		val = v
	} else {
		val = p.ident()
		if val == "" {
			return nil, fmt.Errorf("%w: bad attribute value", errUnsupported)
		}
	}
	p.space()
	fold := false
	if p.i < len(p.s) && (p.s[p.i] == 'i' || p.s[p.i] == 'I' || p.s[p.i] == 's' || p.s[p.i] == 'S') {
		fold = p.s[p.i]|0x20 == 'i'
		p.i++
		p.space()
	}
	if p.i >= len(p.s) || p.s[p.i] != ']' {
		return nil, fmt.Errorf("%w: unterminated attribute selector", errUnsupported)
	}
	p.i++
	return func(e *snode) bool {
		v, ok := e.attr(name)
		if !ok {
			return false
		}
		want := val
		if fold {
			v, want = strings.ToLower(v), strings.ToLower(want)
		}
		switch op {
		case "":
			return v == want
		case "~":
			for _, f := range strings.Fields(v) {
				if f == want {
					return true
				}
			}
			return false
		case "^":
			return want != "" && strings.HasPrefix(v, want)
		case "$":
			return want != "" && strings.HasSuffix(v, want)
		case "*":
			return want != "" && strings.Contains(v, want)
		case "|":
			return v == want || strings.HasPrefix(v, want+"-")
		}
		return false
	}, nil
}

func (p *selParser) pseudo() (func(*snode) bool, error) {
	p.i++ // :
	name := strings.ToLower(p.ident())
	arg := ""
	if p.i < len(p.s) && p.s[p.i] == '(' {
		end := strings.IndexByte(p.s[p.i:], ')')
		if end < 0 {
			return nil, fmt.Errorf("%w: unterminated %s(", errUnsupported, name)
		}
		arg = strings.TrimSpace(p.s[p.i+1 : p.i+end])
		p.i += end + 1
	}
	nth := func(ofType, fromEnd bool) (func(*snode) bool, error) {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: :%s(%s)", errUnsupported, name, arg)
		}
		return func(e *snode) bool { return position(e, ofType, fromEnd) == n }, nil
	}
	switch name {
	case "root":
		return func(e *snode) bool { return e.parent != nil && e.parent.tag == "#document" }, nil
	case "nth-of-type":
		return nth(true, false)
	case "nth-child":
		return nth(false, false)
	case "nth-last-of-type":
		return nth(true, true)
	case "nth-last-child":
		return nth(false, true)
	case "first-child":
		return func(e *snode) bool { return position(e, false, false) == 1 }, nil
	case "last-child":
		return func(e *snode) bool { return position(e, false, true) == 1 }, nil
	case "first-of-type":
		return func(e *snode) bool { return position(e, true, false) == 1 }, nil
	case "last-of-type":
		return func(e *snode) bool { return position(e, true, true) == 1 }, nil
	}
	return nil, fmt.Errorf("%w: :%s", errUnsupported, name)
}

// --- describe, as the observer does ---------------------------------------

// jsSpace reports whether r is white space for the observer's
// /[\s\u00a0\u200b\ufeff]/ (JavaScript's \s).
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff, 0x200b:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// norm collapses white space runs to one space and trims, as the
// observer's norm.
func norm(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if jsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// cut16 keeps the first n UTF-16 code units of s, never splitting a
// surrogate pair, as the observer's cut.
func cut16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := len(utf16.Encode([]rune{r}))
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

var (
	buttonInputs = map[string]bool{"button": true, "submit": true, "reset": true, "image": true}
	valueInputs  = map[string]bool{"date": true, "time": true, "datetime-local": true, "month": true, "week": true, "color": true, "range": true}
	secretName   = regexp.MustCompile(`(?i)(pass(word|wd|code|phrase)?|pwd|secret|otp|one[-_ ]?time|totp|2fa|mfa|cvv|cvc|csc|card[-_ ]?(num|no|number)|cc[-_ ]?(num|number)|ssn|security[-_ ]?code|(^|[^a-z])pin([^a-z]|$))`)
)

func inputType(e *snode) string {
	v, _ := e.attr("type")
	return strings.ToLower(strings.TrimSpace(v))
}

func isEditable(e *snode) bool {
	v, ok := e.attr("contenteditable")
	if !ok || strings.EqualFold(v, "false") {
		return false
	}
	if p := parentElement(e); p != nil && isEditable(p) {
		return false
	}
	return true
}

// sensitive is the observer's isSensitive without session selectors (they
// are not recorded in the bundle).
func sensitive(e *snode) bool {
	if e.tag == "input" && inputType(e) == "password" {
		return true
	}
	if e.tag == "input" || e.tag == "textarea" || e.tag == "select" || isEditable(e) {
		if ac, _ := e.attr("autocomplete"); ac != "" {
			for _, tok := range strings.Fields(strings.ToLower(ac)) {
				if strings.HasPrefix(tok, "cc-") || tok == "one-time-code" || tok == "current-password" || tok == "new-password" {
					return true
				}
			}
		}
		name, _ := e.attr("name")
		id, _ := e.attr("id")
		if secretName.MatchString(name + " " + id) {
			return true
		}
	}
	return false
}

func roleOf(e *snode) string {
	if r, _ := e.attr("role"); norm(r) != "" {
		return strings.ToLower(strings.Split(norm(r), " ")[0])
	}
	switch e.tag {
	case "a", "area":
		if _, ok := e.attr("href"); ok {
			return "link"
		}
		return ""
	case "button", "summary":
		return "button"
	case "select":
		_, multiple := e.attr("multiple")
		size, _ := e.attr("size")
		if n, err := strconv.Atoi(strings.TrimSpace(size)); multiple || (err == nil && n > 1) {
			return "listbox"
		}
		return "combobox"
	case "textarea":
		return "textbox"
	case "option":
		return "option"
	case "img":
		return "img"
	case "table":
		return "table"
	case "input":
		ty := inputType(e)
		switch {
		case ty == "checkbox":
			return "checkbox"
		case ty == "radio":
			return "radio"
		case ty == "range":
			return "slider"
		case ty == "number":
			return "spinbutton"
		case ty == "search":
			return "searchbox"
		case buttonInputs[ty]:
			return "button"
		case ty == "hidden" || ty == "file" || valueInputs[ty]:
			return ""
		}
		return "textbox"
	}
	if isEditable(e) {
		return "textbox"
	}
	return ""
}

// boundedText is the observer's boundedText: the text of a subtree,
// without form values, sensitive elements, scripts and styles.
func boundedText(e *snode, max int) string {
	var b strings.Builder
	var walk func(n *snode)
	walk = func(n *snode) {
		if b.Len() >= 4*max+64 {
			return
		}
		if !n.isElement() {
			if n.tag == "" {
				b.WriteString(" " + n.text)
			}
			return
		}
		switch n.tag {
		case "script", "style", "template", "noscript", "textarea", "select":
			return
		}
		if sensitive(n) {
			return
		}
		if n.tag == "img" {
			if alt, _ := n.attr("alt"); alt != "" {
				b.WriteString(" " + alt)
			}
			return
		}
		if n.tag == "input" {
			if buttonInputs[inputType(n)] {
				v, _ := n.attr("value")
				if v == "" {
					v, _ = n.attr("alt")
				}
				b.WriteString(" " + v)
			}
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(e)
	return cut16(norm(b.String()), max)
}

// scopeRoot returns the root of e's scope (a #document or #shadow-root).
func scopeRoot(e *snode) *snode {
	for e.parent != nil {
		e = e.parent
	}
	return e
}

// labels returns the <label> elements of e: those whose for names e's id
// in its scope, and the label ancestor without a for.
func labels(e *snode) []*snode {
	var out []*snode
	id, hasID := e.attr("id")
	for _, l := range elements(scopeRoot(e)) {
		if l.tag != "label" {
			continue
		}
		if f, ok := l.attr("for"); ok {
			if hasID && f == id && id != "" {
				out = append(out, l)
			}
			continue
		}
		for p := parentElement(e); p != nil; p = parentElement(p) {
			if p == l {
				// A label without for labels its first labelable
				// descendant only.
				if firstLabelable(l) == e {
					out = append(out, l)
				}
				break
			}
		}
	}
	return out
}

func firstLabelable(l *snode) *snode {
	for _, e := range elements(l) {
		switch e.tag {
		case "button", "meter", "output", "progress", "select", "textarea":
			return e
		case "input":
			if inputType(e) != "hidden" {
				return e
			}
		}
	}
	return nil
}

func labelsText(e *snode, max int) string {
	ls := labels(e)
	if len(ls) > 4 {
		ls = ls[:4]
	}
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, boundedText(l, max))
	}
	return norm(strings.Join(parts, " "))
}

func byIDs(e *snode, ids string, max int) string {
	root := scopeRoot(e)
	var parts []string
	fields := strings.Fields(ids)
	if len(fields) > 16 {
		fields = fields[:16]
	}
	for _, id := range fields {
		for _, t := range elements(root) {
			if v, _ := t.attr("id"); v == id {
				if al, _ := t.attr("aria-label"); al != "" {
					parts = append(parts, al)
				} else {
					parts = append(parts, boundedText(t, max))
				}
				break
			}
		}
	}
	return norm(strings.Join(parts, " "))
}

func accessibleName(e *snode, max int) string {
	s := ""
	if lb, _ := e.attr("aria-labelledby"); lb != "" {
		s = byIDs(e, lb, max)
	}
	if s == "" {
		al, _ := e.attr("aria-label")
		s = norm(al)
	}
	switch {
	case s == "" && (e.tag == "input" || e.tag == "select" || e.tag == "textarea" || e.tag == "meter" || e.tag == "progress"):
		s = labelsText(e, max)
		if s == "" && e.tag == "input" {
			if ty := inputType(e); buttonInputs[ty] {
				v, _ := e.attr("value")
				if v == "" {
					v, _ = e.attr("alt")
				}
				if v == "" {
					switch ty {
					case "reset":
						v = "Reset"
					case "submit":
						v = "Submit"
					}
				}
				s = norm(v)
			}
		}
		if s == "" {
			ph, _ := e.attr("placeholder")
			s = norm(ph)
		}
	case s == "" && e.tag == "img":
		alt, _ := e.attr("alt")
		s = norm(alt)
	case s == "" && !sensitive(e):
		s = boundedText(e, max)
	}
	if s == "" {
		t, _ := e.attr("title")
		s = norm(t)
	}
	return cut16(s, max)
}

// describeSnapshot describes e as the observer's describe would.
func describeSnapshot(e *snode) contract.Element {
	out := contract.Element{Tag: e.tag}
	if ty, _ := e.attr("type"); ty != "" && (e.tag == "input" || e.tag == "button") {
		out.Type = ty
	}
	out.Name, _ = e.attr("name")
	out.ID, _ = e.attr("id")
	out.Autocomplete, _ = e.attr("autocomplete")
	out.Role = roleOf(e)
	if sensitive(e) {
		first := func(names ...string) string {
			for _, n := range names {
				if n == "labels" {
					if s := labelsText(e, 1024); s != "" {
						return s
					}
					continue
				}
				if v, _ := e.attr(n); v != "" {
					return v
				}
			}
			return ""
		}
		out.Label = norm(first("aria-label", "labels", "placeholder", "title"))
	} else {
		out.Label = accessibleName(e, 1024)
	}
	if !(e.tag == "input" || e.tag == "textarea" || e.tag == "select") && !sensitive(e) {
		out.Text = boundedText(e, 1024)
	}
	return out
}
