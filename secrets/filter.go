package secrets

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The egress filter. Everything that leaves aegis passes it, in one of two
// ways, by what it is:
//
//   - Free text (page text, a DOM snapshot, an element's name, a URL, a
//     progress line, an error message, a live event's message, the
//     output's lastUrl and summary) is masked in place: Redact (Mask)
//     replaces a secret's value, in any of its Forms or found by the
//     normalized check, by the secret's placeholder. The text stays
//     useful and the value is gone.
//   - A structured value (the value of an artifact an extract action
//     produced: a cell of a table, a link's href, an element's text taken
//     as data) is refused whole: Refuse returns a *HeldError, and the
//     caller stores nothing of it and says which secret it held. A value a
//     program will read as data cannot be masked without becoming a
//     different, wrong value.
//
// The model request body is checked once more, last, by Guard: by then
// every part of it has been filtered, so a Guard refusal means a sink
// upstream missed the value.

// Found says what Mask found in a text.
type Found struct {
	// Names are the secrets found, sorted, without duplicates.
	Names []string
	// Derived is set when the normalized check found a value the encoded
	// forms did not: the text held it transformed (spaced out, split,
	// re-cased), a sign the page echoes what was typed.
	Derived bool
}

// Any reports whether anything was found.
func (f Found) Any() bool { return len(f.Names) > 0 }

func (f *Found) add(name string) {
	for _, n := range f.Names {
		if n == name {
			return
		}
	}
	f.Names = append(f.Names, name)
	for i := len(f.Names) - 1; i > 0 && f.Names[i] < f.Names[i-1]; i-- {
		f.Names[i], f.Names[i-1] = f.Names[i-1], f.Names[i]
	}
}

// Mask is Redact that also reports what it found: the encoded forms of
// every value (Forms, longest first) are replaced by the secret's
// placeholder, then every span the normalized check finds (see
// NormalizedSpans; it also finds a value's letters and digits cut short),
// then every value cut short (see maskCut).
func (s *Set) Mask(text string) (string, Found) { return s.mask(text, true) }

// mask is Mask; with cut false, it finds whole values only (no value cut
// short: see Guard).
func (s *Set) mask(text string, cut bool) (string, Found) {
	var found Found
	if s.Len() == 0 || text == "" {
		return text, found
	}
	for _, f := range s.forms {
		if strings.Contains(text, f.text) {
			text = strings.ReplaceAll(text, f.text, Placeholder(f.name))
			found.add(f.name)
		}
	}
	if spans := normalizedSpans(text, s.normTargets(cut)); len(spans) > 0 {
		for _, sp := range spans {
			found.add(sp.Name)
		}
		found.Derived = true
		text = maskSpans(text, spans)
	}
	if !cut {
		return text, found
	}
	// Last, so that a value the normalized check finds whole is not cut
	// into a masked start and a rest it no longer knows.
	for _, name := range s.names {
		var hit bool
		if text, hit = maskCut(text, s.values[name], Placeholder(name)); hit {
			found.add(name)
		}
	}
	return text, found
}

// Holding returns the first secret (by name) whose value text holds in
// any form the filter knows: one of its Forms, its letters and digits by
// the normalized check, or cut short (see Mask). "" when none.
func (s *Set) Holding(text string) string {
	if s.Len() == 0 || text == "" {
		return ""
	}
	_, f := s.Mask(text)
	if !f.Any() {
		return ""
	}
	return f.Names[0]
}

// HoldingWhole is Holding for whole values only: one of a secret's Forms
// or its letters and digits whole by the normalized check, never a value
// cut short, whose start may be an ordinary word ("password" of
// "password123"). It judges text aegis itself wrote, or that was filtered
// before it was bounded: a model request (Guard), a request to the
// browser.
func (s *Set) HoldingWhole(text string) string {
	if s.Len() == 0 || text == "" {
		return ""
	}
	_, f := s.mask(text, false)
	if !f.Any() {
		return ""
	}
	return f.Names[0]
}

// ErrHeld is matched (errors.Is) by every *HeldError.
var ErrHeld = errors.New("secrets: a structured value holds a secret")

// HeldError refuses a structured value that holds a secret. It names the
// secret and what held it, never the value.
type HeldError struct {
	// Name is the secret found.
	Name string
	// What says what the value was ("the extracted text of #mirror").
	What string
}

// Error names the secret and what to do, never the value.
func (e *HeldError) Error() string {
	return fmt.Sprintf("%s holds the value of secret %s (in some encoding), so it was refused and not stored: "+
		"extract something that does not echo the secret, or refer to the secret by its placeholder %s",
		e.What, e.Name, Placeholder(e.Name))
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Refuse returns a *HeldError when value, a structured value described by
// what, holds one of the set's secrets (see Holding); nil otherwise.
func (s *Set) Refuse(what, value string) error {
	if name := s.Holding(value); name != "" {
		return &HeldError{Name: name, What: what}
	}
	return nil
}

// maskCut replaces in text every run that starts with the first
// truncMin(len(value)) bytes of value, extended as far as it keeps
// matching value, by ph, where the text was cut after it (atCut), or
// anywhere once the run is anywhereMin bytes long, and reports whether it
// replaced any. Text cut to a bound (element text, extracted text, a
// progress line) may end, or go on after a marker, with a value cut
// anywhere after its first half: that part is as much the secret as the
// whole. A value no longer than its minimum is left to the forms.
func maskCut(text, value, ph string) (string, bool) {
	k := truncMin(len(value))
	for k < len(value) && !utf8.RuneStart(value[k]) {
		k++ // the head ends where a rune of the value ends
	}
	if len(value) <= k || len(text) < k {
		return text, false
	}
	head, anywhere := value[:k], anywhereMin(len(value))
	var b strings.Builder
	hit := false
	for {
		i := strings.Index(text, head)
		if i < 0 {
			break
		}
		n := k
		for n < len(value) && i+n < len(text) && text[i+n] == value[n] {
			n++
		}
		for n > k && i+n < len(text) && !utf8.RuneStart(text[i+n]) {
			n-- // a rune matched in its first bytes only is another rune
		}
		if n < len(value) && n < anywhere && !atCut(text[i+n:]) {
			// A part of the value, not where a text was cut: the
			// start of a value may be an ordinary word.
			b.WriteString(text[:i+1])
			text = text[i+1:]
			continue
		}
		hit = true
		b.WriteString(text[:i])
		b.WriteString(ph)
		text = text[i+n:]
	}
	if !hit {
		return b.String() + text, false
	}
	b.WriteString(text)
	return b.String(), true
}
