package secrets

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinNormalizedLen is the fewest letters and digits a secret's value must
// hold for the normalized check (see Normalize) to look for it. A shorter
// normalized value ("alice", "1234") turns up in ordinary text once
// separators and case are ignored, and masking it there would mangle the
// page for the model, so such a value is matched by its encoded forms
// only (Forms).
const MinNormalizedLen = 8

// Normalize returns the letters and digits of s, escapes decoded,
// compatibility forms folded and case-folded (see walkNorm): what the
// normalized check compares. A value a page echoed with separators put
// in ("s e c r e t", "s-e-c-r-e-t", text split across elements that the
// observer joins with spaces), its case changed, written in fullwidth
// letters or escaped (JSON at any depth, HTML references, percent-encoded
// once or twice) normalizes like the value itself.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	walkNorm(s, func(r rune, _, _ int) { b.WriteRune(r) })
	return b.String()
}

// fold is the case-folded form of r: the smallest rune of its case orbit
// (unicode.SimpleFold), so that every case variant of a letter folds to
// the same rune.
func fold(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// normTarget is one string the normalized check looks for: a secret's
// normalized value, forward or reversed. A run of the text that starts
// with its first min bytes (truncMin of its runes) matches, as far as it
// keeps matching, where a text was cut (atCut), and anywhere from its
// first anywhere bytes (anywhereMin of its runes) on: a value cut short is
// found too.
type normTarget struct {
	text     string
	name     string
	min      int
	anywhere int
}

// truncMin is the shortest part of a value of n bytes or runes that the
// filter masks when it finds the value cut short (its first truncMin
// bytes or runes, extended as far as they keep matching) where a text was
// cut (atCut): at least MinNormalizedLen and at least half the value.
// Text is cut to a bound (element text, extracted text, a progress line)
// with the cut anywhere, so the start of a value at the end of a cut text
// must go too. Elsewhere a part of a value is masked from anywhereMin on:
// the start of a value may be an ordinary word ("password" of
// "password-2024!"), which page text holds anywhere.
func truncMin(n int) int { return max(MinNormalizedLen, (n+1)/2) }

// anywhereMin is the shortest part of a value of n bytes or runes the
// filter masks wherever it finds it: three quarters of the value, and
// more than truncMin (a value of 8 to 10 letters and digits is then
// masked whole only, but for a cut text).
func anywhereMin(n int) int { return max(truncMin(n)+1, (3*n+3)/4) }

// cutMarkers are what the drivers, the observer and the session append
// where they cut a text to its bound.
var cutMarkers = []string{"…", "...", "[aegis: text truncated]", "#truncated"}

// atCut reports whether rest, the text after a part of a value, is where
// a text was cut: a cut marker follows, after spaces at most. The end of a
// text alone is not a cut (a label, a selector, a title ends where it
// ends): every bound that cuts page text marks the cut (the observer, the
// drivers and the session append "…" or their truncation markers).
func atCut(rest string) bool {
	rest = strings.TrimLeft(rest, " \t\r\n")
	for _, m := range cutMarkers {
		if strings.HasPrefix(rest, m) {
			return true
		}
	}
	return false
}

// newNormTarget is the target of the normalized text t of secret name;
// with cut false, it matches t whole only.
func newNormTarget(t, name string, cut bool) normTarget {
	if !cut {
		return normTarget{text: t, name: name, min: len(t), anywhere: len(t)}
	}
	runes := utf8.RuneCountInString(t)
	return normTarget{text: t, name: name, min: runePrefix(t, truncMin(runes)), anywhere: runePrefix(t, anywhereMin(runes))}
}

// runePrefix is the length in bytes of the first k runes of t (all of t
// when it has fewer).
func runePrefix(t string, k int) int {
	for i := range t {
		if k == 0 {
			return i
		}
		k--
	}
	return len(t)
}

// normTargets lists the normalized values (forward and reversed) of the
// set's secrets that are at least MinNormalizedLen runes long; with cut
// false, they match whole values only.
func (s *Set) normTargets(cut bool) []normTarget {
	if s.Len() == 0 {
		return nil
	}
	var out []normTarget
	for _, name := range s.names {
		n := Normalize(s.values[name])
		if utf8.RuneCountInString(n) < MinNormalizedLen {
			continue
		}
		out = append(out, newNormTarget(n, name, cut))
		if r := reverse(n); r != n {
			out = append(out, newNormTarget(r, name, cut))
		}
	}
	return out
}

// normText is a text normalized (see Normalize) with, for every byte of
// the normalized text that starts a rune, the span of the original text
// that rune came from.
type normText struct {
	norm  string
	start []int // start[i]: byte offset in the original of the rune at norm[i]
	end   []int // end[i]: byte offset just past it
}

func normalizeMapped(s string) normText {
	var b strings.Builder
	b.Grow(len(s))
	start := make([]int, 0, len(s))
	end := make([]int, 0, len(s))
	walkNorm(s, func(r rune, from, to int) {
		n := b.Len()
		b.WriteRune(r)
		// Every byte of the written rune maps to the original span; only
		// the first is read.
		for range b.Len() - n {
			start = append(start, from)
			end = append(end, to)
		}
	})
	return normText{norm: b.String(), start: start, end: end}
}

// Span is a part of a text, text[Start:End], in which the normalized
// check found the secret Name.
type Span struct {
	Start, End int
	Name       string
}

// normalizedSpans returns the spans of text whose letters and digits,
// case-folded, are one of targets or its start cut short (at least its
// first truncMin runes), in order and merged where they overlap. A span starts at the first letter or digit of the match and
// ends after its last, so the separators around it are kept.
func normalizedSpans(text string, targets []normTarget) []Span {
	if len(targets) == 0 || text == "" {
		return nil
	}
	// Most texts hold no secret: the offsets are mapped only for one that
	// does.
	ns, found := Normalize(text), false
	for _, t := range targets {
		found = found || strings.Contains(ns, t.text[:t.min])
	}
	if !found {
		return nil
	}
	nt := normalizeMapped(text)
	var spans []Span
	for _, t := range targets {
		head := t.text[:t.min]
		for from := 0; from+len(head) <= len(nt.norm); {
			i := strings.Index(nt.norm[from:], head)
			if i < 0 {
				break
			}
			i += from
			n := len(head)
			for n < len(t.text) && i+n < len(nt.norm) && nt.norm[i+n] == t.text[n] {
				n++
			}
			// A rune matched only in its first bytes is another rune.
			for i+n < len(nt.norm) && !utf8.RuneStart(nt.norm[i+n]) {
				n--
			}
			end := nt.end[i+n-1]
			if n < len(t.text) && n < t.anywhere && !atCut(text[end:]) {
				from = i + 1 // a part of the value, not where a text was cut
				continue
			}
			spans = append(spans, Span{Start: nt.start[i], End: end, Name: t.name})
			from = i + n
		}
	}
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].Start != spans[j].Start {
			return spans[i].Start < spans[j].Start
		}
		return spans[i].End > spans[j].End
	})
	merged := spans[:1]
	for _, sp := range spans[1:] {
		top := &merged[len(merged)-1]
		if sp.Start < top.End {
			top.End = max(top.End, sp.End)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// NormalizedSpans returns the spans of text in which the normalized check
// finds one of the set's secrets (see Normalize and MinNormalizedLen), in
// order, overlapping ones merged: what Redact masks beyond the encoded
// forms.
func (s *Set) NormalizedSpans(text string) []Span {
	return normalizedSpans(text, s.normTargets(true))
}

// maskSpans replaces every span of text (in order, disjoint) by its
// secret's placeholder.
func maskSpans(text string, spans []Span) string {
	var b strings.Builder
	b.Grow(len(text))
	prev := 0
	for _, sp := range spans {
		b.WriteString(text[prev:sp.Start])
		b.WriteString(Placeholder(sp.Name))
		prev = sp.End
	}
	b.WriteString(text[prev:])
	return b.String()
}
