package gate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/secrets"
)

// Secret placeholders ({{secret:NAME}}) in an action, as the policy judges
// them. The session resolves a placeholder to its value only in the text
// of a type action, right before the driver types it; the policy decides
// whether that may happen, and denies every other use of a placeholder.
// Go derives the facts (which placeholders are in which fields, whether
// the session holds them, where they are bound); the policy holds the
// rules (policy/browser.rego, "Secrets").

// secretBindings normalizes the session's secret bindings (name → the
// origins it is bound to) for input.derived.secret_bindings: each origin
// through originFacts, as the gate normalizes every origin it judges. An
// origin it cannot use is reported through cfgErr (a config error, which
// the policy denies on) and left out.
func secretBindings(bound map[string][]string, cfgErr func(field, raw string, err error)) map[string]any {
	out := make(map[string]any, len(bound))
	names := make([]string, 0, len(bound))
	for n := range bound {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if !secrets.ValidName(name) {
			cfgErr("secrets", name, fmt.Errorf("%q is not a secret name", text.CutRunes(name, 80)))
			continue
		}
		origins := []any{}
		seen := map[string]bool{}
		for _, raw := range bound[name] {
			f := originFacts(raw)
			switch {
			case !f.Valid:
				cfgErr("secrets", name+"@"+raw, fmt.Errorf("secret %s is bound to an unusable origin: %s", name, f.Error))
				continue
			case f.Scheme != "http" && f.Scheme != "https", f.Userinfo, f.Origin == "":
				cfgErr("secrets", name+"@"+raw, fmt.Errorf("secret %s is bound to %q, not an http(s) origin", name, text.CutRunes(raw, 256)))
				continue
			}
			if !seen[f.Origin] {
				seen[f.Origin] = true
				origins = append(origins, f.Origin)
			}
		}
		out[name] = origins
	}
	return out
}

// secretUses lists the secret placeholders of every string of the action
// (input.derived.secret_uses: its members, and each of its policy tags as
// "policyTags"), by member name then order of appearance: the secret's
// name, the member ("text", "url", "value", "selector", "reason", ...),
// whether the member is exactly that one placeholder (whole), and whether
// the session holds the secret (declared). A member holding a malformed
// placeholder (see secrets.Check) is listed in malformed too, with the
// reason.
func secretUses(action map[string]any, bound map[string][]string) (uses, malformed []any) {
	uses, malformed = []any{}, []any{}
	fields := make([]string, 0, len(action))
	for k := range action {
		fields = append(fields, k)
	}
	sort.Strings(fields)
	var strs []struct{ field, s string }
	for _, field := range fields {
		switch v := action[field].(type) {
		case string:
			strs = append(strs, struct{ field, s string }{field, v})
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					strs = append(strs, struct{ field, s string }{field, s})
				}
			}
		}
	}
	for _, f := range strs {
		field, s := f.field, f.s
		if !strings.Contains(s, secrets.Prefix) {
			continue
		}
		if err := secrets.Check(s); err != nil {
			malformed = append(malformed, map[string]any{"field": field, "error": text.CutRunes(err.Error(), 512)})
		}
		for _, name := range secrets.Find(s) {
			_, declared := bound[name]
			uses = append(uses, map[string]any{
				"name":     name,
				"field":    field,
				"whole":    s == secrets.Placeholder(name),
				"declared": declared,
			})
		}
	}
	return uses, malformed
}
