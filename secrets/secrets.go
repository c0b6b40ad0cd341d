// Package secrets keeps secret values away from the model. A task refers to
// a secret by a placeholder, {{secret:NAME}}; the Planner and the Navigator
// only ever see and write the placeholder, and the session resolves it to
// the value at the last moment, when the driver types it.
//
// These tools enforce that:
//
//   - Find and Check parse placeholders (NAME is [A-Z][A-Z0-9_]{0,63});
//   - (*Set).Redact is the egress filter for free text: it replaces every
//     known value in a string, in any of its Forms or spelled out by its
//     letters and digits (the normalized check, see Normalize), by its
//     placeholder, for text that came back from the page or leaves aegis;
//     Writer applies it to an output stream a line at a time;
//   - (*Set).Refuse refuses a structured value (an extracted artifact)
//     that holds a value, with a *HeldError naming the secret;
//   - (*Set).Guard returns a function the llm client runs over every request
//     body before it is sent: it refuses a body in which any known value
//     appears whole, in one of its Forms or by the normalized check, in
//     the raw body or in any of its strings once decoded.
//
// A secret is bound to the origins it may be typed on (Secret, Origins):
// the policy lets a secret be typed only into a field that is sensitive by
// the element's own facts on one of them, and denies every other use of
// its placeholder. A secret declared without origins is bound by the
// session to the task's first origin.
//
// Load builds a session's Set from a mode-0600 secrets file and the
// AEGIS_SECRET_* environment variables; the session receives the loaded Set.
package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Prefix and Suffix delimit a placeholder: {{secret:NAME}}.
const (
	Prefix = "{{secret:"
	Suffix = "}}"
)

// MaxNameLen is the longest secret name.
const MaxNameLen = 64

var (
	nameRe        = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	placeholderRe = regexp.MustCompile(`\{\{secret:([A-Z][A-Z0-9_]{0,63})\}\}`)
)

// ValidName reports whether name is a valid secret name: an upper-case
// letter, then at most 63 upper-case letters, digits and underscores.
func ValidName(name string) bool { return nameRe.MatchString(name) }

// Placeholder returns the placeholder of the secret name.
func Placeholder(name string) string { return Prefix + name + Suffix }

// Find returns the names of the placeholders in s, in order of first
// appearance, without duplicates. Malformed placeholders are ignored: use
// Check to refuse them.
func Find(s string) []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range placeholderRe.FindAllStringSubmatch(s, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

// Contains reports whether s holds a well-formed placeholder.
func Contains(s string) bool { return placeholderRe.MatchString(s) }

// Check reports an error if s holds the start of a placeholder ("{{secret:")
// that is not a well-formed placeholder, such as {{secret:password}} or an
// unterminated one, so that a typo never types a literal placeholder.
func Check(s string) error {
	rest := s
	off := 0
	for {
		i := strings.Index(rest, Prefix)
		if i < 0 {
			return nil
		}
		loc := placeholderRe.FindStringIndex(rest[i:])
		if loc == nil || loc[0] != 0 {
			bad := rest[i:]
			if j := strings.Index(bad, Suffix); j >= 0 {
				bad = bad[:j+len(Suffix)]
			}
			if len(bad) > 80 {
				bad = bad[:80] + "..."
			}
			return fmt.Errorf("malformed secret placeholder %q at byte %d: want {{secret:NAME}} with NAME of [A-Z][A-Z0-9_]{0,63}", bad, off+i)
		}
		off += i + loc[1]
		rest = rest[i+loc[1]:]
	}
}

// Set holds the values of the secrets of one session. The zero value and
// nil are empty sets. A Set never prints its values: String and
// MarshalJSON list names only.
type Set struct {
	names   []string            // sorted
	values  map[string]string   // name → value
	origins map[string][]string // name → declared origins (normalized, sorted); absent: none declared
	forms   []form              // every value's forms, longest first (Redact, Guard)
}

// NewSet returns the set of the given secrets (name → value), none bound
// to declared origins. Names must be valid; empty values are refused,
// since an empty value cannot be guarded.
func NewSet(values map[string]string) (*Set, error) {
	m := make(map[string]Secret, len(values))
	for name, v := range values {
		m[name] = Secret{Value: v}
	}
	return NewBoundSet(m)
}

// NewBoundSet returns the set of the given secrets (name → value and the
// origins it is bound to), as NewSet does; each secret's origins are
// checked and normalized with ParseOrigin (Origins returns them).
func NewBoundSet(secrets map[string]Secret) (*Set, error) {
	s := &Set{values: make(map[string]string, len(secrets)), origins: map[string][]string{}}
	for name, sec := range secrets {
		if !ValidName(name) {
			return nil, fmt.Errorf("secrets: invalid secret name %q (want [A-Z][A-Z0-9_]{0,63})", name)
		}
		if sec.Value == "" {
			return nil, fmt.Errorf("secrets: secret %s has an empty value", name)
		}
		origins, err := parseOrigins(sec.Origins)
		if err != nil {
			return nil, fmt.Errorf("secrets: secret %s: %w", name, err)
		}
		if origins != nil {
			s.origins[name] = origins
		}
		s.values[name] = sec.Value
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	s.forms = buildForms(s.values)
	return s, nil
}

// Names returns the secret names, sorted. The model may be told the names:
// they are what it writes in placeholders.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.names...)
}

// Has reports whether the set holds the secret name.
func (s *Set) Has(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.values[name]
	return ok
}

// Len returns the number of secrets.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// String lists the names only, never a value.
func (s *Set) String() string {
	return "secrets[" + strings.Join(s.Names(), ",") + "]"
}

// MarshalJSON writes the names only, never a value.
func (s *Set) MarshalJSON() ([]byte, error) {
	n := s.Names()
	if n == nil {
		n = []string{}
	}
	return json.Marshal(n)
}

// UnknownError reports a placeholder whose secret is not in the set.
type UnknownError struct {
	// Name is the unknown secret's name.
	Name string
}

// Error names the unknown secret.
func (e *UnknownError) Error() string {
	return fmt.Sprintf("secrets: unknown secret %s (placeholder %s)", e.Name, Placeholder(e.Name))
}

// Resolve replaces every placeholder of text by its secret's value. It
// refuses malformed placeholders (see Check) and unknown names
// (*UnknownError). The session calls it right before the driver types; the
// result must go nowhere else.
func (s *Set) Resolve(text string) (string, error) {
	if err := Check(text); err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	var unknown error
	out := placeholderRe.ReplaceAllStringFunc(text, func(m string) string {
		name := m[len(Prefix) : len(m)-len(Suffix)]
		if v, ok := s.lookup(name); ok {
			return v
		}
		if unknown == nil {
			unknown = &UnknownError{Name: name}
		}
		return m
	})
	if unknown != nil {
		return "", unknown
	}
	return out, nil
}

func (s *Set) lookup(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	v, ok := s.values[name]
	return v, ok
}

// Redact is the egress filter for free text (see Mask): it replaces every
// occurrence of a secret value in text, raw or in one of its common
// encodings (Forms), by the secret's placeholder, longest forms first,
// then masks every span whose letters and digits, once escapes are
// decoded and compatibility forms and case folded (see Normalize), spell
// a secret of at least MinNormalizedLen of them, forward or reversed (the
// normalized check: a value spaced out, split across elements, escaped
// deeper than Forms lists), then every value cut short by a bound on the
// text (its first half at least, see maskCut). Use it on anything that
// came back from the page or leaves aegis as text. A value the page
// transformed otherwise (encrypted, re-encoded in a way Forms does not
// list, or shorter than MinNormalizedLen and split, spaced out or
// escaped deeper) is beyond it.
func (s *Set) Redact(text string) string {
	masked, _ := s.Mask(text)
	return masked
}

// LeakError reports a request body that holds a secret value. It names the
// secret, never its value.
type LeakError struct {
	// Name is the secret whose value was found.
	Name string
}

// Error names the secret, never its value.
func (e *LeakError) Error() string {
	return fmt.Sprintf("secrets: the value of secret %s appears in a request to the model; refusing to send it", e.Name)
}

// ErrLeak is matched (errors.Is) by every *LeakError.
var ErrLeak = errors.New("secrets: secret value in a request to the model")

// Is makes errors.Is(err, ErrLeak) true for a *LeakError.
func (e *LeakError) Is(target error) bool { return target == ErrLeak }

// Guard returns a function that refuses (with a *LeakError) any body in
// which the value of one of the set's secrets appears: one of its Forms
// in the raw bytes, or, in any string or object key of the body once
// decoded as JSON (so that no escaping, \", \u0041, \/, hides a value),
// one of its Forms or its letters and digits by the normalized check
// (escapes decoded at any depth, compatibility forms and case folded: see
// Normalize). It looks for whole values only: a value cut short is masked
// where the text was bounded, before it went into the request, and the
// start of a value can be a word of aegis's own prompt ("password" of
// "password123"). Give it to llm.Config.Guard. A nil or empty set gives a
// guard that accepts everything.
func (s *Set) Guard() func(body []byte) error {
	if s.Len() == 0 {
		return func([]byte) error { return nil }
	}
	check := func(text string) error {
		if name := s.HoldingWhole(text); name != "" {
			return &LeakError{Name: name}
		}
		return nil
	}
	return func(body []byte) error {
		for _, f := range s.forms {
			if bytes.Contains(body, []byte(f.text)) {
				return &LeakError{Name: f.name}
			}
		}
		return walkStrings(body, check)
	}
}

// walkStrings calls f on every string and object key of the JSON document
// body; a body that is not JSON is left to the raw check.
func walkStrings(body []byte, f func(string) error) error {
	d := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
		if str, ok := tok.(string); ok {
			if err := f(str); err != nil {
				return err
			}
		}
	}
}
