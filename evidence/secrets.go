package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
	"github.com/aegis-run/aegis/secrets"
)

// MinSecretLen is the shortest secret value Options.Secrets accepts:
// masking every occurrence of a shorter one would mangle unrelated text
// (times, ids, hashes) and still not hide it.
const MinSecretLen = 4

var reSecretName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// masker replaces known sensitive values with placeholders: the secrets
// of Options.Secrets by {{secret:NAME}}, and the text of redacted type
// actions by {{redacted}}. Longer values are replaced first, in one pass,
// so a placeholder is never rescanned.
type masker struct {
	pairs []maskPair
	r     *strings.Replacer
}

type maskPair struct {
	value, placeholder string
	escaped            string // value as canonical JSON writes it in a string
}

func newPair(value, placeholder string) maskPair {
	e := canonjson.AppendString(nil, value)
	return maskPair{value: value, placeholder: placeholder, escaped: string(e[1 : len(e)-1])}
}

func newMasker(values map[string]string) (*masker, error) {
	m := &masker{}
	for name, v := range values {
		if !reSecretName.MatchString(name) {
			return nil, fmt.Errorf("evidence: secret name %q: want 1 to 64 letters, digits, '.', '_' or '-'", name)
		}
		if len(v) < MinSecretLen {
			return nil, fmt.Errorf("evidence: secret %s: value shorter than %d bytes cannot be masked safely", name, MinSecretLen)
		}
		// The raw value and its common encodings (JSON- and HTML-escaped,
		// percent-encoded, base64, hex, reversed: secrets.Forms), so that a
		// page that echoes a typed secret encoded does not get it into the
		// bundle either.
		for _, f := range secrets.Forms(v) {
			if len(f) >= MinSecretLen {
				m.pairs = append(m.pairs, newPair(f, secretPlaceholder(name)))
			}
		}
	}
	for _, p := range m.pairs {
		for _, q := range m.pairs {
			if strings.Contains(q.placeholder, p.value) || strings.Contains(RedactedText, p.value) {
				return nil, fmt.Errorf("evidence: a secret value occurs in the placeholder %s: it could not be masked", q.placeholder)
			}
		}
	}
	m.build()
	return m, nil
}

// addRedacted adds a value to mask as {{redacted}} from now on. A text
// that a placeholder holds (the text the caller already redacted, or part
// of it) is not added: the placeholders are what the writer writes.
func (m *masker) addRedacted(v string) {
	if len(v) < MinSecretLen || strings.Contains(RedactedText, v) {
		return
	}
	for _, p := range m.pairs {
		if p.value == v || strings.Contains(p.placeholder, v) {
			return
		}
	}
	m.pairs = append(m.pairs, newPair(v, RedactedText))
	m.build()
}

func (m *masker) build() {
	sort.SliceStable(m.pairs, func(i, j int) bool {
		if len(m.pairs[i].value) != len(m.pairs[j].value) {
			return len(m.pairs[i].value) > len(m.pairs[j].value)
		}
		return m.pairs[i].value < m.pairs[j].value
	})
	if len(m.pairs) == 0 {
		m.r = nil
		return
	}
	args := make([]string, 0, 2*len(m.pairs))
	for _, p := range m.pairs {
		args = append(args, p.value, p.placeholder)
	}
	m.r = strings.NewReplacer(args...)
}

// maskString returns s with every known value replaced, and whether any was.
func (m *masker) maskString(s string) (string, bool) {
	if m.r == nil || !m.anyIn(s) {
		return s, false // the replacer would return s, allocating twice
	}
	out := m.r.Replace(s)
	return out, out != s
}

// anyIn reports whether a known value occurs in s (by chance or not).
func (m *masker) anyIn(s string) bool {
	for _, p := range m.pairs {
		if strings.Contains(s, p.value) {
			return true
		}
	}
	return false
}

// ErrSecret is wrapped by the error for a record that holds a secret
// value (Options.Secrets, or the text of a redacted type action) where it
// cannot be masked: in a structural field (an id, a hash, a file name, a
// kind, a time), in a member name, or across the record's bytes. The
// record is refused, never stored; the error names the place, never the
// value.
var ErrSecret = errors.New("evidence: a secret value where it cannot be masked")

// freeText lists, by record shape, where a record holds free text, the
// only strings the writer masks: messages, reasons, descriptions, page
// text, selectors, URLs. Every other string is structural (ids, hashes,
// file names, kinds, enumerated values, times): rewriting one would
// corrupt what the records say of each other, so one that holds a secret
// value is refused instead, and so is a member name. A path names members
// by name, the items of an array by "*", and a path ending in "/**" every
// string below it (the free-form hints of a task).
var freeText = map[string][]string{
	string(schemas.KindManifest): {"goal", "task/goal", "task/urls/*", "task/hints/**"},
	string(schemas.KindPlan):     {"goal", "steps/*/description", "steps/*/successCriteria"},
	string(schemas.KindDecision): {"error", "approval/approver", "reasons/*/message", "riskReasons/*/message",
		"approvalReasons/*/message", "waived/*/message", "exceptions/*/reason", "exceptions/*/why", "target/**",
		"action/reason", "action/selector", "action/text", "action/value", "action/url", "activeUrl"},
	shapeActionLine: {"action/reason", "action/selector", "action/text", "action/value", "action/url",
		"result/error/message", "result/url"},
	string(schemas.KindEvent):     {"message", "summary", "url"},
	string(schemas.KindModelCall): {"error"},
	string(schemas.KindObservation): {"domText", "state/title", "state/activeUrl", "affordances/*/role",
		"affordances/*/selector", "affordances/*/text", "extractedArtifacts/*/value",
		"extractedArtifacts/*/sourceSelector", "extractedArtifacts/*/sourceUrl"},
	shapeArtifact:                     {"value", "sourceSelector", "sourceUrl"},
	string(schemas.KindImageArtifact): {"sourceUrl"},
}

// shapeActionLine names a line of actions.jsonl for freeText.
const shapeActionLine = "action line"

// freeTextOf returns the free-text paths of a record of a shape: a
// screenshot artifact's value is the uri of its image, not text.
func freeTextOf(shape string, tree any) map[string]bool {
	out := map[string]bool{}
	for _, p := range freeText[shape] {
		out[p] = true
	}
	if shape == shapeArtifact && strMember(tree, "type") == "screenshot" {
		delete(out, "value")
	}
	return out
}

// maskRecord masks the known values in the free-text strings of a parsed
// record of the named shape, in place, and returns the JSON Pointers (RFC
// 6901) of the strings it masked, sorted. A known value anywhere else
// (another string, a member name) is an error wrapping ErrSecret.
func (m *masker) maskRecord(shape string, tree any) (any, []string, error) {
	if m.r == nil {
		return tree, nil, nil
	}
	free := freeTextOf(shape, tree)
	var masked []string
	// path names the place as freeText does (array items as "*"), ptr
	// as a JSON Pointer does.
	var walk func(v any, path, ptr string) (any, error)
	walk = func(v any, path, ptr string) (any, error) {
		switch t := v.(type) {
		case string:
			if free[path] || isBelowFree(free, path) {
				s, c := m.maskString(t)
				if c {
					masked = append(masked, ptr)
				}
				return s, nil
			}
			if _, found := m.findIn([]byte(t)); found {
				return nil, fmt.Errorf("%w: %s is not free text", ErrSecret, pointer(path))
			}
		case []any:
			for i, x := range t {
				nx, err := walk(x, join(path, "*"), ptr+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				t[i] = nx
			}
		case map[string]any:
			for k, x := range t {
				if _, found := m.findIn([]byte(k)); found {
					return nil, fmt.Errorf("%w: a member name of %s", ErrSecret, pointer(path))
				}
				nx, err := walk(x, join(path, k), ptr+"/"+pointerEscaper.Replace(k))
				if err != nil {
					return nil, err
				}
				t[k] = nx
			}
		}
		return v, nil
	}
	out, err := walk(tree, "", "")
	sort.Strings(masked)
	return out, masked, err
}

// pointerEscaper escapes a member name for a JSON Pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointerUnescaper reads a JSON Pointer's reference token back (RFC 6901).
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// isBelowFree reports whether path is below a free path ending in "/**".
func isBelowFree(free map[string]bool, path string) bool {
	for p := range free {
		if prefix, ok := strings.CutSuffix(p, "/**"); ok && strings.HasPrefix(path, prefix+"/") {
			return true
		}
	}
	return false
}

func join(path, seg string) string {
	if path == "" {
		return seg
	}
	return path + "/" + seg
}

// pointer renders a path for an error ("/" for the record itself).
func pointer(path string) string { return "/" + path }

// findIn returns the placeholder of the first known value found in b, as
// it is or as canonical JSON escapes it. An occurrence that lies inside a
// value the writer or the driver generated is chance, not a leak, and is
// not counted (see byChance): a PIN "2026" occurs in every time of the
// year, and any short string of hex digits in some hash.
func (m *masker) findIn(b []byte) (string, bool) {
	for _, p := range m.pairs {
		if occurs(b, p.value) || p.escaped != p.value && occurs(b, p.escaped) {
			return p.placeholder, true
		}
	}
	return "", false
}

// findInString is findIn for a string; it copies s only when a value
// (or its escaped spelling) occurs in it.
func (m *masker) findInString(s string) (string, bool) {
	for _, p := range m.pairs {
		if strings.Contains(s, p.value) || p.escaped != p.value && strings.Contains(s, p.escaped) {
			return m.findIn([]byte(s))
		}
	}
	return "", false
}

// occurs reports whether v occurs in b other than by chance.
func occurs(b []byte, v string) bool {
	for from := 0; ; {
		i := bytes.Index(b[from:], []byte(v))
		if i < 0 {
			return false
		}
		i += from
		if !byChance(b, i, i+len(v)) {
			return true
		}
		from = i + 1
	}
}

// minDigestHex is the shortest run of hex digits taken for a digest
// (SHA-256 is 64, a decision id's part 32).
const minDigestHex = 32

// byChance reports whether b[i:j] lies inside a generated value that
// cannot carry text: a run of at least minDigestHex hex digits (a hash),
// a JSON number (a count, a latency, a size), or a string that is an RFC
// 3339 time. Each of these is computed (hashes, clocks, measurements),
// never copied from a page or a model, so a secret found inside one got
// there by coincidence; anywhere else it is a leak.
func byChance(b []byte, i, j int) bool {
	run := func(in func(byte) bool) (int, int) {
		s, e := i, j
		for s > 0 && in(b[s-1]) {
			s--
		}
		for e < len(b) && in(b[e]) {
			e++
		}
		return s, e
	}
	within := func(s, e int, in func(byte) bool) bool {
		for k := s; k < e; k++ {
			if !in(b[k]) {
				return false
			}
		}
		return true
	}
	if within(i, j, isHexDigit) {
		if s, e := run(isHexDigit); e-s >= minDigestHex {
			return true
		}
	}
	if within(i, j, isNumberByte) {
		s, e := run(isNumberByte)
		if s > 0 && e < len(b) && bytes.IndexByte([]byte(":,["), b[s-1]) >= 0 && bytes.IndexByte([]byte(",]}"), b[e]) >= 0 {
			if _, err := strconv.ParseFloat(string(b[s:e]), 64); err == nil {
				return true
			}
		}
	}
	if within(i, j, isTimeByte) {
		s, e := run(isTimeByte)
		if (s == 0 || b[s-1] == '"') && (e == len(b) || b[e] == '"') {
			if _, err := time.Parse(time.RFC3339Nano, string(b[s:e])); err == nil {
				return true
			}
		}
	}
	return false
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
func isTimeByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == ':' || c == '.' || c == 'T' || c == 'Z'
}

// check returns an error wrapping ErrSecret when b, bytes about to be
// written, holds a known value, as it is or escaped: what masking left
// (a value spanning two strings, or a placeholder and the text beside it)
// or what was never masked (a ledger entry's hashes and times).
func (m *masker) check(what string, b []byte) error {
	if _, found := m.findIn(b); found {
		return fmt.Errorf("%w: in the bytes of %s", ErrSecret, what)
	}
	return nil
}

// canonicalize marshals v, masks the free text of a record of the shape,
// and returns its canonical bytes, having checked that no known value is
// left in them, and the JSON Pointers of the strings it masked. A decision
// records them itself, in masked (replacing any the caller set): FORMAT.md,
// section 8, rule 15.
func canonicalize(shape string, v any, m *masker) (canon []byte, masked []string, err error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	tree, err := schemas.DecodeOwn(b)
	if err != nil {
		return nil, nil, err
	}
	if shape == string(schemas.KindDecision) {
		if obj, ok := tree.(map[string]any); ok {
			delete(obj, memberMasked)
		}
	}
	if tree, masked, err = m.maskRecord(shape, tree); err != nil {
		return nil, nil, err
	}
	if obj, ok := tree.(map[string]any); ok && shape == string(schemas.KindDecision) && len(masked) > 0 {
		list := make([]any, len(masked))
		for i, p := range masked {
			list[i] = p
		}
		obj[memberMasked] = list
	}
	if canon, err = canonjson.EncodeValue(tree); err != nil {
		return nil, nil, err
	}
	if err := m.check("the record", canon); err != nil {
		return nil, nil, err
	}
	return canon, masked, nil
}
