package gate

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// This file holds what the gate builds for an effect (Request.Effect): a
// navigation or request the action caused in the browser, which the policy
// judges on its method, origin, path and field names rather than on the
// action's words.

// RuleEffectInvalid: the effect breaks the contract's bounds (an unknown
// kind, a string over its length, a path that does not start with '/').
const RuleEffectInvalid = "effect_invalid"

// RuleEffectRefused: the driver's boundary refused the effect by itself
// (Effect.Refused); no policy can allow it after the fact.
const RuleEffectRefused = contract.RuleEffectRefused

// maxEffectFieldWords bounds the words of one field name that the policy
// matches: field names are short, and a hostile page must not grow the
// input without bound.
const maxEffectFieldWords = 16

// effectFacts is input.derived.effect: the URL facts of the effect's origin
// and path (as NormalizeURL gives them for a navigation target, so the
// allowlist, blocked domains and high-risk path words apply to it alike),
// whether it may change state on the server (contract.Effect.ChangesState),
// and the words of its field names (field_terms: every run of 1 to
// MaxURLPatternWords consecutive words of each name, "cardNumber" holding
// "card", "number" and "card number").
func effectFacts(e *contract.Effect) map[string]any {
	terms := map[string]any{}
	for _, f := range e.Fields {
		words := strings.Fields(Words(f))
		if len(words) > maxEffectFieldWords {
			words = words[:maxEffectFieldWords]
		}
		for t := range PathTerms(words) {
			terms[t] = true
		}
	}
	return map[string]any{
		"url":           urlFactsMap(effectURL(e)),
		"changes_state": e.ChangesState(),
		"field_terms":   terms,
		"truncated":     effectTruncated(e),
	}
}

// effectTruncated reports whether the effect is at one of its bounds, so
// that the driver may have cut it: as many field names as are kept (a page
// that pads a body with names that sort first pushes "cardNumber" out), or
// a path as long as is kept (padding pushes "/pay" out). What was cut
// cannot be judged; the policy makes such a state-changing effect high
// risk.
func effectTruncated(e *contract.Effect) bool {
	return len(e.Fields) >= contract.MaxEffectFields || utf8.RuneCountInString(e.Path) >= contract.MaxEffectPath
}

// effectURL is the URL an effect goes to, as facts: its origin normalized
// (see originFacts), its address the origin and the path, its path words
// those of the path. The query is not part of an effect.
func effectURL(e *contract.Effect) URLFacts {
	f := originFacts(e.Origin)
	f.Raw = e.Origin + e.Path
	if !f.Valid {
		return f
	}
	if e.Path != "" && e.Path[0] != '/' {
		return URLFacts{Raw: f.Raw, Scheme: f.Scheme, Error: "the effect's path does not start with /"}
	}
	if f.Address != "" {
		f.Address = f.Origin + e.Path
		if e.Path == "" {
			f.Address = f.Origin + "/"
		}
	}
	f.PathWords = pathWords(e.Path)
	return f
}

// originFacts normalizes an origin the browser reported (an effect's, or
// the document an element is in): NormalizeURL's facts, or not valid when
// it is more than scheme://host[:port] (a path, a query, a fragment) or
// an opaque origin ("null").
func originFacts(origin string) URLFacts {
	f := NormalizeURL(origin)
	if !f.Valid {
		return f
	}
	if _, rest, _ := cutScheme(origin); !strings.HasPrefix(rest, "//") || strings.ContainsAny(rest[2:], "/?#") {
		return URLFacts{Raw: origin, Scheme: f.Scheme, Error: "not an origin (scheme://host[:port])"}
	}
	return f
}

// checkEffect enforces the effect contract's bounds (decision-record.schema
// #/$defs/effect), so that the policy never judges, and the record never
// holds, an effect past them.
func checkEffect(e *contract.Effect) error {
	switch e.Kind {
	case contract.EffectNavigation, contract.EffectFrame, contract.EffectRequest, contract.EffectDownload, contract.EffectPeer:
	default:
		return fmt.Errorf("effect kind %q is not navigation, frame, request, download or peer", text.CutRunes(string(e.Kind), 64))
	}
	for _, f := range []struct {
		name  string
		value string
		max   int
	}{
		{"method", e.Method, contract.MaxEffectMethod},
		{"origin", e.Origin, contract.MaxEffectOrigin},
		{"path", e.Path, contract.MaxEffectPath},
		{"resourceType", e.ResourceType, contract.MaxEffectResourceType},
		{"refused", e.Refused, contract.MaxEffectReason},
	} {
		if err := checkEffectString(f.name, f.value, f.max); err != nil {
			return err
		}
	}
	if e.Path != "" && e.Path[0] != '/' {
		return errors.New("effect path does not start with /")
	}
	if len(e.Fields) > contract.MaxEffectFields {
		return fmt.Errorf("effect has %d field names, more than %d", len(e.Fields), contract.MaxEffectFields)
	}
	for i, f := range e.Fields {
		if f == "" {
			return fmt.Errorf("effect field name %d is empty", i)
		}
		if err := checkEffectString("field name", f, contract.MaxEffectField); err != nil {
			return err
		}
	}
	return nil
}

func checkEffectString(name, value string, max int) error {
	if !utf8.ValidString(value) {
		return fmt.Errorf("effect %s is not valid UTF-8", name)
	}
	if n := utf8.RuneCountInString(value); n > max {
		return fmt.Errorf("effect %s has %d characters, more than %d", name, n, max)
	}
	return nil
}
