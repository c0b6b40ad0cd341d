package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// sessionFacts are the parts of the input that depend only on the session:
// its allowlist, blocked domains and exceptions, normalized, its
// classification ("" made restricted), the unusable entries of its lists
// (an empty sensitive selector, an unknown classification among them), and
// input.policy and input.session as given. Its sensitive selectors are
// matched by the browser (contract.Element.SensitiveSelector), never
// against the selector the model wrote.
type sessionFacts struct {
	origins      []any          // normalized allowed origins, for messages
	originKeys   map[string]any // allowlist keys (see originKey)
	starts       map[string]any // the addresses of the task's start URLs
	configErrors []any          // unusable entries of the session's lists
	blocked      []any          // normalized blocked domains
	exceptions   []any          // exception facts (see exceptionFacts)
	secrets      map[string]any // secret name → its normalized bound origins
	class        string         // the classification: "" made restricted
	policy       map[string]any // input.policy as given
	session      map[string]any // input.session as given
}

// newSessionFacts normalizes the session's lists; an entry that cannot be
// used goes to configErrors, which the policy denies on.
func newSessionFacts(req *Request) *sessionFacts {
	sf := &sessionFacts{
		origins:      []any{},
		originKeys:   map[string]any{},
		starts:       map[string]any{},
		configErrors: []any{},
		blocked:      []any{},
		exceptions:   []any{},
	}
	cfgErr := func(field, raw string, err error) {
		sf.configErrors = append(sf.configErrors, map[string]any{"field": field, "raw": text.CutRunes(raw, 256), "error": text.CutRunes(err.Error(), 512)})
	}
	rawOrigins := make([]any, 0, len(req.Session.AllowedOrigins))
	for _, raw := range req.Session.AllowedOrigins {
		rawOrigins = append(rawOrigins, raw)
		o, err := ParseAllowedOrigin(raw)
		if err != nil {
			cfgErr("allowed_origins", raw, err)
			continue
		}
		sf.origins = append(sf.origins, o.Origin)
		sf.originKeys[originKey(o)] = o.Origin
		// An entry written as a URL is one of the task's start URLs,
		// given by the person: its name does not make it high risk.
		if f := NormalizeURL(raw); f.Valid && f.Address != "" {
			sf.starts[f.Address] = text.CutRunes(raw, MaxURLLength)
		}
	}
	rawBlocked := make([]any, 0, len(req.Policy.BlockedDomains))
	for _, raw := range req.Policy.BlockedDomains {
		rawBlocked = append(rawBlocked, raw)
		d, err := NormalizeDomain(raw)
		if err != nil {
			cfgErr("blocked_domains", raw, err)
			continue
		}
		sf.blocked = append(sf.blocked, d)
	}
	rawSelectors := make([]any, 0, len(req.Policy.SensitiveSelectors))
	for _, raw := range req.Policy.SensitiveSelectors {
		rawSelectors = append(rawSelectors, raw)
		if strings.TrimSpace(raw) == "" {
			cfgErr("sensitive_selectors", raw, errors.New("empty selector"))
		}
	}
	rawExceptions := make([]any, 0, len(req.Policy.GovernedExceptions))
	for _, e := range req.Policy.GovernedExceptions {
		rawExceptions = append(rawExceptions, map[string]any{
			"id": e.ID, "rule": e.Rule, "reason": e.Reason, "expires_at": e.ExpiresAt, "decision_log_id": e.DecisionLogID,
		})
		sf.exceptions = append(sf.exceptions, exceptionFacts(e))
	}
	sf.secrets = secretBindings(req.Session.Secrets, cfgErr)
	sf.class = string(req.Session.Classification)
	if sf.class == "" {
		sf.class = string(contract.DefaultClassification)
	} else if !req.Session.Classification.Valid() {
		sf.class = text.CutRunes(sf.class, 64)
		cfgErr("classification", sf.class, fmt.Errorf("not a classification: want one of %s", contract.ClassificationNames()))
	}
	sf.policy = map[string]any{
		"blocked_domains":     rawBlocked,
		"sensitive_selectors": rawSelectors,
		"governed_exceptions": rawExceptions,
	}
	sf.session = map[string]any{
		"id":              req.SessionID,
		"allowed_origins": rawOrigins,
		"permission":      req.Session.Permission,
		"preset":          req.Session.Preset,
		"classification":  sf.class,
	}
	return sf
}

// buildInput builds the policy input document: the seed's shape (state,
// action, step_index, policy), the session, the target element, the
// effect, the pinned time, and the facts computed in Go (derived) that the
// policy matches on. action, target and effect are the request's as
// actionhash.Action, Element and Effect give them. The embedded engine and a remote OPA
// evaluate the same document. See policy/README.md for the document.
//
// The words risk and sensitivity are matched on come from the element the
// browser described (subject_tails: its text, label, name and id;
// field_tails: its name, id and label), through Skeleton. The model's own
// words (its selector, a select's value) are model_tails, which the policy
// may only raise risk on: a model that writes "#pay" makes its click high
// risk, and a model cannot make an element's words read otherwise.
func buildInput(req *Request, now time.Time, action, target, effect map[string]any) map[string]any {
	a := &req.Action
	sf := newSessionFacts(req)
	var tgt contract.Element
	if req.Target != nil {
		tgt = *req.Target
	}
	active := NormalizeURL(req.ActiveURL)
	uses, malformed := secretUses(action, req.Session.Secrets)
	derived := map[string]any{
		"now_ns":                now.UnixNano(),
		"active":                urlFactsMap(active),
		"decision_log_id_valid": contract.IsID(req.Session.DecisionLogID),
		"subject_tails":         Tails(Words(tgt.Text, tgt.Label, tgt.Name, tgt.ID)),
		"model_tails":           Tails(Words(a.Selector, a.Value)),
		"field_tails":           Tails(Words(tgt.Name, tgt.ID, tgt.Label)),
		"action_field_types":    fieldTypes(action),
		"has_target":            target != nil,
		"allowed_origins":       sf.origins,
		"allowed_origin_keys":   sf.originKeys,
		"start_addresses":       sf.starts,
		"config_errors":         sf.configErrors,
		"blocked_domains":       sf.blocked,
		"exceptions":            sf.exceptions,
		"secret_bindings":       sf.secrets,
		"secret_uses":           uses,
		"secret_malformed":      malformed,
	}
	if a.Type == contract.ActNavigate {
		derived["target_url"] = urlFactsMap(NormalizeURL(a.URL))
	}
	doc := map[string]any{
		"state": map[string]any{
			"sessionId": req.SessionID,
			"activeUrl": req.ActiveURL,
			"policyContext": map[string]any{
				"maxStepBudget":  req.Session.MaxStepBudget,
				"decisionLogId":  req.Session.DecisionLogID,
				"classification": sf.class,
			},
		},
		"action":     action,
		"step_index": req.StepIndex,
		"policy":     sf.policy,
		"session":    sf.session,
		"now":        now.Format(time.RFC3339Nano),
		"derived":    derived,
	}
	if target != nil {
		derived["target"] = targetFacts(tgt)
		doc["target"] = target
		// The element is in a frame of another origin than the page: the
		// action is judged on that origin too (input.derived.frame).
		if tgt.Origin != "" {
			if f := originFacts(tgt.Origin); !f.Valid || f.Origin != active.Origin || active.Origin == "" {
				derived["frame"] = urlFactsMap(f)
			}
		}
	}
	if effect != nil {
		doc["effect"] = effect
		derived["effect"] = effectFacts(req.Effect)
	}
	return doc
}

// targetFacts is input.derived.target: the element's tag and type
// lowercased and trimmed, its autocomplete tokens lowercased, and the
// session's sensitive selector the browser found it to match ("" for
// none). With field_tails (the words of its name, id and label) these are
// the only facts sensitivity is judged on: the selector the model wrote
// makes no field sensitive, and none less so.
func targetFacts(e contract.Element) map[string]any {
	ac := []any{}
	for _, tok := range strings.Fields(strings.ToLower(e.Autocomplete)) {
		ac = append(ac, tok)
	}
	return map[string]any{
		"tag":                strings.ToLower(strings.TrimSpace(e.Tag)),
		"type":               strings.ToLower(strings.TrimSpace(e.Type)),
		"autocomplete":       ac,
		"sensitive_selector": e.SensitiveSelector,
	}
}

// fieldTypes maps each member of the action to its JSON type name, as
// Rego's type_name names it.
func fieldTypes(action map[string]any) map[string]any {
	out := make(map[string]any, len(action))
	for k, v := range action {
		switch v.(type) {
		case string:
			out[k] = "string"
		case bool:
			out[k] = "boolean"
		case json.Number:
			out[k] = "number"
		case []any:
			out[k] = "array"
		case map[string]any:
			out[k] = "object"
		default:
			out[k] = "null"
		}
	}
	return out
}
