package navigator

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
)

// The step grammar. Keywords are case-insensitive; strings are quoted with
// "..." or '...' and may escape their quote and the backslash with a
// backslash (\" \' \\); \n and \t stand for a newline and a tab.
//
//	step     = navigate | click | type | select | scroll | wait | extract | expect
//	navigate = "navigate" URL                  absolute http(s) URL, or a path
//	                                           ("/login") resolved against the
//	                                           current page
//	click    = "click" TARGET
//	type     = "type" STRING "into" TARGET
//	select   = "select" STRING ("in" | "from") TARGET
//	scroll   = "scroll" ("up" | "down") [PIXELS]
//	wait     = "wait" DURATION
//	extract  = "extract" ("text" | "table" | "link" | "links" | "screenshot") [TARGET]
//	expect   = "expect" STRING                 the page's visible text must
//	                                           contain STRING
//	TARGET   = STRING                          an accessible name, or
//	                                           "css=SELECTOR"
//	         | css=SELECTOR                    unquoted: the rest of the line
//	URL      = STRING | WORD
//	PIXELS   = INTEGER ["px"]                  1 to 100000
//	DURATION = INTEGER ["ms" | "s"]            1 ms to 60 s; default ms
//
// Only the text of a type step may hold secret placeholders
// ({{secret:NAME}}); the action it makes is always redacted.

// Op is a step's verb.
type Op string

// The step verbs.
const (
	OpNavigate Op = "navigate"
	OpClick    Op = "click"
	OpType     Op = "type"
	OpSelect   Op = "select"
	OpScroll   Op = "scroll"
	OpWait     Op = "wait"
	OpExtract  Op = "extract"
	OpExpect   Op = "expect"
)

// Bounds of a step.
const (
	MaxStepLen   = 12000 // bytes of one step line
	MaxSteps     = 1000  // steps of a task
	MaxNameLen   = 2000  // runes of a target name (the schema's affordance text)
	MaxExpectLen = 2000  // runes of an expect text
	MaxTextLen   = 10000 // runes of a type text (the schema's)
	MaxValueLen  = 2048  // runes of a select value (the schema's)
	MaxSelector  = 2048  // bytes of a css= selector (the schema's)
	MaxURLLen    = 2048  // bytes of a URL (the schema's)
	MaxScrollPx  = 100000
	MaxWaitMs    = 60000
)

// Target is what a step acts on: an accessible name resolved against the
// observed affordances, or a CSS selector used as is.
type Target struct {
	// Name is the accessible name (label, placeholder, text, title) to
	// resolve; "" for a selector.
	Name string
	// CSS is the selector of a css= target; "" for a name.
	CSS string
}

// IsZero reports whether the target is absent.
func (t Target) IsZero() bool { return t.Name == "" && t.CSS == "" }

// String writes the target as the grammar reads it.
func (t Target) String() string {
	if t.CSS != "" {
		return quote("css=" + t.CSS)
	}
	return quote(t.Name)
}

// Step is one parsed step.
type Step struct {
	// Line is the step's 1-based number in its list.
	Line int
	// Source is the step as written.
	Source string
	// Op is the verb.
	Op Op
	// Target is what click, type, select and extract act on.
	Target Target
	// Text is the text of type, the option of select, the text of expect.
	Text string
	// URL is the URL (or path) of navigate.
	URL string
	// Direction is the direction of scroll.
	Direction contract.ScrollDirection
	// Amount is the pixels of scroll (0: one viewport) or the milliseconds
	// of wait.
	Amount int
	// Extract is what extract extracts.
	Extract contract.ExtractKind
}

// String writes the step in canonical form; parsing it gives the same step
// (Line and Source aside).
func (s Step) String() string {
	switch s.Op {
	case OpNavigate:
		return "navigate " + quote(s.URL)
	case OpClick:
		return "click " + s.Target.String()
	case OpType:
		return "type " + quote(s.Text) + " into " + s.Target.String()
	case OpSelect:
		return "select " + quote(s.Text) + " in " + s.Target.String()
	case OpScroll:
		if s.Amount > 0 {
			return fmt.Sprintf("scroll %s %d", s.Direction, s.Amount)
		}
		return "scroll " + string(s.Direction)
	case OpWait:
		return fmt.Sprintf("wait %dms", s.Amount)
	case OpExtract:
		if s.Target.IsZero() {
			return "extract " + string(s.Extract)
		}
		return "extract " + string(s.Extract) + " " + s.Target.String()
	case OpExpect:
		return "expect " + quote(s.Text)
	}
	return ""
}

// quote writes s as a double-quoted step string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// SyntaxError is a step that does not parse: where, and what was expected.
type SyntaxError struct {
	// Line is the step's 1-based number in its list.
	Line int
	// Column is the 1-based column (in characters) of the problem.
	Column int
	// Msg says what was expected and what was found.
	Msg string
}

// Error reads "step N, column C: what was expected, found what".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("step %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// ParseSteps parses a task's steps, one per element; the first error
// stops it.
func ParseSteps(lines []string) ([]Step, error) {
	if len(lines) == 0 {
		return nil, &SyntaxError{Line: 1, Column: 1, Msg: "no steps"}
	}
	if len(lines) > MaxSteps {
		return nil, &SyntaxError{Line: MaxSteps + 1, Column: 1, Msg: fmt.Sprintf("more than %d steps", MaxSteps)}
	}
	steps := make([]Step, 0, len(lines))
	for i, l := range lines {
		s, err := ParseStep(i+1, l)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// ParseStep parses one step; line is its number, for errors.
func ParseStep(line int, src string) (Step, error) {
	p := &parser{line: line, src: src}
	s, err := p.step()
	if err != nil {
		return Step{}, err
	}
	s.Line = line
	s.Source = src
	return s, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tCSS
)

// String names the token kind.
func (k tokKind) String() string {
	switch k {
	case tEOF:
		return "end of step"
	case tWord:
		return "a word"
	case tString:
		return "a quoted string"
	case tCSS:
		return "a css= selector"
	}
	return "?"
}

type token struct {
	kind tokKind
	text string // the word, the unquoted string, the selector
	col  int    // 1-based column of its first character
	raw  string // as written
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the step"
	case tString:
		return "the string " + clip(t.raw)
	}
	return strconv.Quote(clip(t.raw))
}

// clip shortens page- or user-written text for error messages.
func clip(s string) string { return clipN(s, 80) }

func clipN(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		return string(r[:n]) + "…"
	}
	return s
}

type parser struct {
	line int
	src  string
	pos  int // byte offset of the next token
}

func (p *parser) errAt(col int, format string, args ...any) error {
	return &SyntaxError{Line: p.line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// col returns the 1-based character column of byte offset off.
func (p *parser) col(off int) int { return utf8.RuneCountInString(p.src[:off]) + 1 }

// next reads the next token.
func (p *parser) next() (token, error) {
	for p.pos < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if !unicode.IsSpace(r) {
			break
		}
		p.pos += n
	}
	start := p.pos
	col := p.col(start)
	if p.pos >= len(p.src) {
		return token{kind: tEOF, col: col}, nil
	}
	c := p.src[p.pos]
	if c == '"' || c == '\'' {
		var b strings.Builder
		i := p.pos + 1
		for i < len(p.src) {
			r, n := utf8.DecodeRuneInString(p.src[i:])
			if r == utf8.RuneError && n == 1 {
				return token{}, p.errAt(p.col(i), "invalid UTF-8")
			}
			switch {
			case r == rune(c):
				p.pos = i + 1
				return token{kind: tString, text: b.String(), col: col, raw: p.src[start:p.pos]}, nil
			case r == '\\':
				if i+1 >= len(p.src) {
					return token{}, p.errAt(p.col(i), "expected a character after the backslash, found the end of the step")
				}
				switch e := p.src[i+1]; e {
				case '"', '\'', '\\':
					b.WriteByte(e)
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					return token{}, p.errAt(p.col(i), `unknown escape \%c (want \", \', \\, \n or \t)`, e)
				}
				i += 2
				continue
			case r < 0x20 && r != '\t':
				return token{}, p.errAt(p.col(i), "control character in a string")
			}
			b.WriteRune(r)
			i += n
		}
		return token{}, p.errAt(col, "unterminated string: expected a closing %c", c)
	}
	if strings.HasPrefix(strings.ToLower(p.src[p.pos:]), "css=") {
		raw := strings.TrimRightFunc(p.src[p.pos:], unicode.IsSpace)
		p.pos = len(p.src)
		return token{kind: tCSS, text: strings.TrimSpace(raw[len("css="):]), col: col, raw: raw}, nil
	}
	i := p.pos
	for i < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[i:])
		if r == utf8.RuneError && n == 1 {
			return token{}, p.errAt(p.col(i), "invalid UTF-8")
		}
		if unicode.IsSpace(r) || r == '"' || r == '\'' {
			break
		}
		i += n
	}
	p.pos = i
	return token{kind: tWord, text: p.src[start:i], col: col, raw: p.src[start:i]}, nil
}

// expectKeyword reads a word that must be one of want.
func (p *parser) expectKeyword(what string, want ...string) (token, error) {
	t, err := p.next()
	if err != nil {
		return t, err
	}
	if t.kind == tWord {
		for _, w := range want {
			if strings.EqualFold(t.text, w) {
				t.text = w
				return t, nil
			}
		}
	}
	return t, p.errAt(t.col, "expected %s, found %s", what, t.describe())
}

func (p *parser) expectString(what string, maxRunes int) (token, error) {
	t, err := p.next()
	if err != nil {
		return t, err
	}
	if t.kind != tString {
		return t, p.errAt(t.col, "expected %s (a quoted string), found %s", what, t.describe())
	}
	if n := utf8.RuneCountInString(t.text); n > maxRunes {
		return t, p.errAt(t.col, "%s is %d characters long (at most %d)", what, n, maxRunes)
	}
	return t, nil
}

// target reads a TARGET.
func (p *parser) target(what string, optional bool) (Target, error) {
	save := p.pos
	t, err := p.next()
	if err != nil {
		return Target{}, err
	}
	var tg Target
	isCSS := t.kind == tCSS
	switch t.kind {
	case tEOF:
		if optional {
			p.pos = save
			return Target{}, nil
		}
		return Target{}, p.errAt(t.col, "expected %s (a quoted name or css=SELECTOR), found the end of the step", what)
	case tCSS:
		tg.CSS = t.text
	case tString:
		if text := strings.TrimSpace(t.text); len(text) >= 4 && strings.EqualFold(text[:4], "css=") {
			isCSS = true
			tg.CSS = strings.TrimSpace(text[4:])
		} else {
			tg.Name = text
			if tg.Name == "" {
				return Target{}, p.errAt(t.col, "expected %s, found an empty name", what)
			}
			if n := utf8.RuneCountInString(tg.Name); n > MaxNameLen {
				return Target{}, p.errAt(t.col, "the name of %s is %d characters long (at most %d)", what, n, MaxNameLen)
			}
		}
	default:
		return Target{}, p.errAt(t.col, "expected %s (a quoted name or css=SELECTOR), found %s", what, t.describe())
	}
	if isCSS {
		if tg.CSS == "" {
			return Target{}, p.errAt(t.col, "expected a selector after css=, found nothing")
		}
		if len(tg.CSS) > MaxSelector {
			return Target{}, p.errAt(t.col, "the selector is %d bytes long (at most %d)", len(tg.CSS), MaxSelector)
		}
	}
	if strings.Contains(tg.Name+tg.CSS, secrets.Prefix) {
		return Target{}, p.errAt(t.col, "secret placeholders are allowed only in the text of a type step")
	}
	return tg, nil
}

func (p *parser) end() error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != tEOF {
		return p.errAt(t.col, "expected the end of the step, found %s", t.describe())
	}
	return nil
}

func (p *parser) noSecret(t token, what string) error {
	if strings.Contains(t.text, secrets.Prefix) {
		return p.errAt(t.col, "secret placeholders are allowed only in the text of a type step, not in %s", what)
	}
	return nil
}

var verbs = []string{"navigate", "click", "type", "select", "scroll", "wait", "extract", "expect"}

func (p *parser) step() (Step, error) {
	if len(p.src) > MaxStepLen {
		return Step{}, p.errAt(1, "the step is %d bytes long (at most %d)", len(p.src), MaxStepLen)
	}
	if !utf8.ValidString(p.src) {
		return Step{}, p.errAt(1, "invalid UTF-8")
	}
	for i, r := range p.src {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return Step{}, p.errAt(p.col(i), "control character %U in the step (write \\n or \\t inside a string)", r)
		}
	}
	v, err := p.next()
	if err != nil {
		return Step{}, err
	}
	if v.kind == tEOF {
		return Step{}, p.errAt(v.col, "empty step: expected one of %s", strings.Join(verbs, ", "))
	}
	op := Op("")
	if v.kind == tWord {
		for _, w := range verbs {
			if strings.EqualFold(v.text, w) {
				op = Op(w)
			}
		}
	}
	if op == "" {
		return Step{}, p.errAt(v.col, "expected a verb (%s), found %s", strings.Join(verbs, ", "), v.describe())
	}
	s := Step{Op: op}
	switch op {
	case OpNavigate:
		t, err := p.next()
		if err != nil {
			return s, err
		}
		if t.kind != tWord && t.kind != tString {
			return s, p.errAt(t.col, "expected a URL, found %s", t.describe())
		}
		if err := p.noSecret(t, "a URL"); err != nil {
			return s, err
		}
		if err := checkURL(t.text); err != nil {
			return s, p.errAt(t.col, "%v", err)
		}
		s.URL = t.text
	case OpClick:
		if s.Target, err = p.target("the element to click", false); err != nil {
			return s, err
		}
	case OpType:
		t, err := p.expectString("the text to type", MaxTextLen)
		if err != nil {
			return s, err
		}
		if err := secrets.Check(t.text); err != nil {
			return s, p.errAt(t.col, "%v", err)
		}
		s.Text = t.text
		if _, err := p.expectKeyword(`"into"`, "into"); err != nil {
			return s, err
		}
		if s.Target, err = p.target("the field to type into", false); err != nil {
			return s, err
		}
	case OpSelect:
		t, err := p.expectString("the option to select", MaxValueLen)
		if err != nil {
			return s, err
		}
		if err := p.noSecret(t, "a select option"); err != nil {
			return s, err
		}
		s.Text = t.text
		if _, err := p.expectKeyword(`"in" or "from"`, "in", "from"); err != nil {
			return s, err
		}
		if s.Target, err = p.target("the select element", false); err != nil {
			return s, err
		}
	case OpScroll:
		d, err := p.expectKeyword(`"up" or "down"`, "up", "down")
		if err != nil {
			return s, err
		}
		s.Direction = contract.ScrollDirection(d.text)
		save := p.pos
		t, err := p.next()
		if err != nil {
			return s, err
		}
		if t.kind == tEOF {
			p.pos = save
			break
		}
		n, err := p.number(t, "a pixel count", map[string]int{"": 1, "px": 1}, " [px]", MaxScrollPx)
		if err != nil {
			return s, err
		}
		s.Amount = n
	case OpWait:
		t, err := p.next()
		if err != nil {
			return s, err
		}
		n, err := p.number(t, "a duration", map[string]int{"": 1, "ms": 1, "s": 1000}, " [ms|s]", MaxWaitMs)
		if err != nil {
			return s, err
		}
		s.Amount = n
	case OpExtract:
		k, err := p.expectKeyword(`what to extract ("text", "table", "link" or "screenshot")`, "text", "table", "link", "links", "screenshot")
		if err != nil {
			return s, err
		}
		if k.text == "links" {
			k.text = "link"
		}
		s.Extract = contract.ExtractKind(k.text)
		if s.Target, err = p.target("the element to extract from", true); err != nil {
			return s, err
		}
	case OpExpect:
		t, err := p.expectString("the text to expect", MaxExpectLen)
		if err != nil {
			return s, err
		}
		if err := p.noSecret(t, "an expect text"); err != nil {
			return s, err
		}
		if strings.TrimSpace(t.text) == "" {
			return s, p.errAt(t.col, "expected a non-empty text to expect")
		}
		s.Text = t.text
	}
	if err := p.end(); err != nil {
		return s, err
	}
	return s, nil
}

// number reads INTEGER with an optional unit, glued ("500ms") or as the
// next word ("500 ms"); units maps a unit to its multiplier.
func (p *parser) number(t token, what string, units map[string]int, unitHint string, maxV int) (int, error) {
	if t.kind != tWord {
		return 0, p.errAt(t.col, "expected %s (an integer%s), found %s", what, unitHint, t.describe())
	}
	digits := t.text
	unit := ""
	i := 0
	for i < len(digits) && digits[i] >= '0' && digits[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, p.errAt(t.col, "expected %s (an integer%s), found %s", what, unitHint, t.describe())
	}
	digits, unit = t.text[:i], strings.ToLower(t.text[i:])
	if unit == "" {
		save := p.pos
		u, err := p.next()
		if err != nil {
			return 0, err
		}
		if _, ok := units[strings.ToLower(u.text)]; ok && u.kind == tWord {
			unit = strings.ToLower(u.text)
		} else {
			p.pos = save
		}
	}
	mult, ok := units[unit]
	if !ok {
		return 0, p.errAt(t.col+i, "expected a unit (%s), found %q", strings.TrimSpace(strings.Trim(unitHint, " []")), unit)
	}
	if len(digits) > 9 {
		return 0, p.errAt(t.col, "%s out of range: %s (at most %d)", what, t.text, maxV)
	}
	n, _ := strconv.Atoi(digits)
	n *= mult
	if n < 1 || n > maxV {
		return 0, p.errAt(t.col, "%s out of range: %s (1 to %d)", what, t.text, maxV)
	}
	return n, nil
}

// checkURL accepts an absolute http(s) URL or an absolute path.
func checkURL(s string) error {
	if s == "" {
		return fmt.Errorf("expected a URL, found an empty string")
	}
	if len(s) > MaxURLLen {
		return fmt.Errorf("the URL is %d bytes long (at most %d)", len(s), MaxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("expected a URL: %v", err)
	}
	if u.IsAbs() {
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("expected an http or https URL, found scheme %q", u.Scheme)
		}
		if u.Host == "" {
			return fmt.Errorf("expected a URL with a host, found %q", s)
		}
		return nil
	}
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
		return fmt.Errorf("expected an absolute http(s) URL or a path starting with /, found %q", s)
	}
	return nil
}
