# METADATA
# title: aegis browser action gate
# description: >-
#   Gates every browser action a Navigator proposes. The gate queries one
#   rule, data.aegis.browser.decision, once per action. Every list and
#   threshold is data (data.aegis.config); URLs are parsed and normalized in
#   Go before evaluation (input.derived), so this policy never matches on raw
#   URL strings. See README.md.
package aegis.browser

import data.aegis.config

# ---------------------------------------------------------------------------
# The decision: one object, one evaluation per action.
# ---------------------------------------------------------------------------

# decision is the only rule the gate queries. It is built from the named
# checks below: the action's form, the step budget, the decision log, the
# permission level, the URLs (allowed origins, blocked domains: of the page,
# the element's frame and the effect), the effect's kind, the target
# element, sensitive fields, the session's own policy, where secrets go
# and whether a screenshot may be shown to the model; then the risk
# tag, the approvals it requires and the governed exceptions it applies. An
# undefined decision, or one without every field, is a deny in Go (fail
# closed).
#
# A decision is about the action itself, or, when input.effect is present,
# about an effect of it: a navigation or a state-changing request the
# browser reported the action caused. An effect is judged by every check of
# its action and by its own (its origin, its kind, the permission level's
# effects), and its risk follows the effect alone (see Risk).
decision := {
	"allow": allow,
	"deny": deny,
	"waived": waived,
	"risk": risk,
	"risk_reasons": risk_reasons,
	"requires_approval": requires_approval,
	"approval_reasons": approval_reasons,
	"action_name": action_name,
	"permission": permission,
	"exceptions": exception_results,
}

# Default deny: allow only when no deny rule fired (after governed
# exceptions).
default allow := false

allow if count(deny) == 0

# How the deny rules are organized. Each family of rules has one check, a
# positive rule that holds when the action passes (check_action,
# check_budget, ...): the checks are the source of truth. When one fails,
# its family explains why in words; if no explanation matches, the
# family's catch-all FAMILY_rejected fires anyway, so a failed check always
# denies. fired holds every reason of every failed check.
fired contains r if {
	not check_action
	some r in explain("action", action_reasons)
}

fired contains r if {
	not check_budget
	some r in explain("budget", budget_reasons)
}

fired contains r if {
	not check_decision_log
	some r in explain("decision_log", decision_log_reasons)
}

fired contains r if {
	not check_permission
	some r in explain("permission", permission_reasons)
}

fired contains r if {
	not check_url
	some r in explain("url", url_reasons)
}

fired contains r if {
	not check_effect
	some r in explain("effect", effect_reasons)
}

fired contains r if {
	not check_target
	some r in explain("target", target_reasons)
}

fired contains r if {
	not check_sensitive
	some r in explain("sensitive", sensitive_violations)
}

fired contains r if {
	not check_session_policy
	some r in explain("session_policy", session_policy_reasons)
}

fired contains r if {
	not check_secrets
	some r in explain("secrets", secret_reasons)
}

fired contains r if {
	not check_vision
	some r in explain("vision", vision_reasons)
}

explain(_, reasons) := reasons if count(reasons) > 0

explain(family, reasons) := {reason(concat("_", [family, "rejected"]), sprintf("the %v check failed", [family]))} if {
	count(reasons) == 0
}

# deny holds every rule that fired and that no applied exception waived.
deny contains r if {
	some r in fired
	not waived_rule[r.rule]
}

# waived holds the rules that fired but were waived, with the exception id.
waived contains {"rule": r.rule, "message": r.message, "exception": pair[1]} if {
	some r in fired
	some pair in applied_exceptions
	pair[0] == r.rule
}

waived_rule contains pair[0] if some pair in applied_exceptions

fired_rule contains r.rule if some r in fired

reason(rule, message) := {"rule": rule, "message": message}

default check_action := false

default check_budget := false

default check_decision_log := false

default check_permission := false

default check_url := false

default check_effect := false

default check_target := false

default check_sensitive := false

default check_session_policy := false

default check_secrets := false

default check_vision := false

# ---------------------------------------------------------------------------
# The action and its type.
# ---------------------------------------------------------------------------

action_type := t if {
	t := input.action.type
	is_string(t)
} else := ""

spec := config.action_types[action_type]

default action_name := "browser.unknown"

action_name := spec.name

check_action if {
	spec := config.action_types[input.action.type]
	every field, want in spec.fields {
		type_name(input.action[field]) == want
	}
	vision_well_formed
}

action_reasons contains reason(
	"action_type_unknown",
	sprintf("action type %v is not one of %v", [json.marshal(object.get(input, ["action", "type"], null)), concat(", ", sort(object.keys(config.action_types)))]),
) if not config.action_types[action_type]

action_reasons contains reason("action_malformed", sprintf("a %v action needs field %q of type %v", [action_type, field, want])) if {
	some field, want in spec.fields
	type_name(object.get(input.action, field, null)) != want
}

# vision (an optional member) asks that a screenshot be shown to the
# model: it is true on an extract screenshot action, or absent or false.
# Any other value, or vision on any other action, is malformed, whatever
# the schema already refused (fail closed).
vision_asked if not object.get(input, ["action", "vision"], false) == false

vision_well_formed if not vision_asked

vision_well_formed if {
	input.action.vision == true
	input.action.type == "extract"
	input.action.extract == "screenshot"
}

action_reasons contains reason("action_malformed", sprintf("vision must be true or false, not %v", [json.marshal(v)])) if {
	v := input.action.vision
	not is_boolean(v)
}

action_reasons contains reason("action_malformed", sprintf("vision asks that a screenshot be shown to the model: only an extract screenshot action may carry it, not a %v action", [vision_action_words])) if {
	input.action.vision == true
	not vision_well_formed
}

vision_action_words := sprintf("%v %v", [action_type, json.marshal(input.action.extract)]) if {
	action_type == "extract"
} else := json.marshal(action_type)

# ---------------------------------------------------------------------------
# Step budget and decision log (seed 001 section 3).
# ---------------------------------------------------------------------------

check_budget if {
	i := input.step_index
	b := input.state.policyContext.maxStepBudget
	is_number(i)
	is_number(b)
	i >= 0
	b >= 1
	i <= b
	i <= config.limits.max_step_budget
}

budget_reasons contains reason("step_budget_invalid", "the session's maxStepBudget is missing or not a positive integer") if {
	not valid_budget
}

budget_reasons contains reason("step_budget_invalid", "the step_index is missing or not a non-negative integer") if {
	not valid_step_index
}

budget_reasons contains reason("step_budget_exceeded", sprintf("step %v is past the step budget of %v", [i, limit])) if {
	valid_budget
	valid_step_index
	i := input.step_index
	limit := min({input.state.policyContext.maxStepBudget, config.limits.max_step_budget})
	i > limit
}

valid_budget if {
	b := input.state.policyContext.maxStepBudget
	is_number(b)
	b >= 1
}

valid_step_index if {
	i := input.step_index
	is_number(i)
	i >= 0
}

# The decision log id's form (an identifier) is checked in Go.
check_decision_log if input.derived.decision_log_id_valid == true

decision_log_reasons contains reason("decision_log_missing", "the session has no valid decisionLogId to record the decision under") if {
	not check_decision_log
}

# ---------------------------------------------------------------------------
# Permission levels and presets (seed 004).
# ---------------------------------------------------------------------------

# The permission level: the session's, else its preset's, else the default
# preset's. An unknown preset is "invalid", which no level is named; an
# unknown level is kept, and no rule allows it.
permission_source := "permission" if {
	input.session.permission != ""
} else := "preset" if {
	input.session.preset != ""
} else := "default"

default permission := "invalid"

permission := p if {
	p := permission_of(input.session.permission, input.session.preset)
	is_string(p)
}

# permission_of is level if it is not "", else the preset's level (the
# default preset's when preset is ""), "invalid" for an unknown preset.
permission_of(level, preset) := object.get(
	{"": object.get(config.presets, object.get({"": config.default_preset}, preset, preset), "invalid")},
	level,
	level,
)

check_permission if {
	input.action.type in config.permissions[permission].allow
	effect_permitted
}

# An effect needs its class among the level's effects: "read" for an
# effect that changes no state (GET, HEAD, OPTIONS), "write" for one that
# may. An observe-only session causes no state-changing effect.
effect_permitted if not effect_given

effect_permitted if {
	effect_given
	effect_class in object.get(config.permissions[permission], "effects", [])
}

permission_reasons contains reason("permission_unknown", sprintf("%v %v is not a known permission level or preset (levels: %v; presets: %v)", [
	permission_source,
	json.marshal(object.get(input, ["session", permission_source], config.default_preset)),
	concat(", ", sort(object.keys(config.permissions))),
	concat(", ", sort(object.keys(config.presets))),
])) if not config.permissions[permission]

permission_reasons contains reason("permission_denied", sprintf("permission level %v does not allow %v actions", [permission, json.marshal(action_type)])) if {
	level := config.permissions[permission]
	not action_type in level.allow
}

permission_reasons contains reason("permission_denied", sprintf("permission level %v does not allow %v effects: the %v", [permission, effect_class_words[effect_class], effect_label])) if {
	effect_given
	level := config.permissions[permission]
	not effect_class in object.get(level, "effects", [])
}

# ---------------------------------------------------------------------------
# Origins: the URLs the action is judged on, each parsed and normalized in
# Go. A navigate is judged on its target, any other action on the active
# page; an action on an element in a frame of another origin than the page
# also on that frame's origin (input.derived.frame: the element is where
# the action happens); a decision about an effect also on where the effect
# goes (input.derived.effect.url). The policy matches normalized hosts
# exactly or by dot-suffix: Go lists the keys a URL can match (origin_keys:
# its exact origin, and a wildcard origin for its host and each parent
# domain) and the host's dot-suffixes (host_suffixes: a.b.example,
# b.example, example).
# ---------------------------------------------------------------------------

# places holds the label of every URL the action is judged on: the
# action's own (main_place) and the others (extra_places). A place whose
# facts are missing fails the check (a navigate without target_url facts
# is denied, never judged on the active page instead).
main_place := "navigation target" if {
	action_type == "navigate"
} else := "active page"

extra_places contains "element's frame" if {
	_ = input.derived.frame
}

extra_places contains effect_label if effect_given

places := extra_places | {main_place}

# main_facts: the URL facts of the main place. Two definitions, not an
# else: a navigate without target_url facts leaves them undefined.
main_facts := input.derived.target_url if action_type == "navigate"

main_facts := input.derived.active if action_type != "navigate"

# place_facts maps each place to its URL facts.
place_facts[main_place] := main_facts

place_facts["element's frame"] := input.derived.frame

place_facts[effect_label] := input.derived.effect.url if effect_given

check_url if {
	url_passes(main_facts)
	every place in extra_places {
		url_passes(place_facts[place])
	}
}

# url_passes: the URL is valid, of an allowed scheme, without userinfo, on
# an allowed origin and not in a blocked domain.
url_passes(u) if {
	u.valid == true
	u.userinfo == false
	u.scheme in config.urls.allowed_schemes
	origin_allowed(u)
	not host_blocked(u)
}

origin_allowed(u) if {
	some k in u.origin_keys
	input.derived.allowed_origin_keys[k]
}

host_blocked(u) if {
	some s in u.host_suffixes
	blocked_host[s]
}

blocked_host[d] := "policy data" if some d in config.urls.blocked_domains

blocked_host[d] := "session" if {
	some d in input.derived.blocked_domains
	not d in config.urls.blocked_domains
}

place_str(place, key) := s if {
	s := place_facts[place][key]
	is_string(s)
} else := "(missing)"

place_valid(place) if place_facts[place].valid == true

url_reasons contains reason("url_invalid", sprintf("%v URL %v is not a valid URL: %v", [place, json.marshal(place_str(place, "raw")), place_str(place, "error")])) if {
	some place in places
	not place_valid(place)
}

url_reasons contains reason("url_scheme", sprintf("%v URL scheme %v is not allowed (allowed: %v)", [place, json.marshal(place_str(place, "scheme")), concat(", ", config.urls.allowed_schemes)])) if {
	some place in places
	place_valid(place)
	not object.get(place_facts[place], "scheme", null) in config.urls.allowed_schemes
}

url_reasons contains reason("url_userinfo", sprintf("%v URL %v carries a user name or password before its host %v; refused because it disguises the real host", [place, json.marshal(place_str(place, "raw")), place_str(place, "host")])) if {
	some place in places
	place_valid(place)
	not place_facts[place].userinfo == false
}

url_reasons contains reason("origin_not_allowed", sprintf("%v origin %v is not one of the session's allowed origins (%v)", [place, place_str(place, "origin"), concat(", ", input.derived.allowed_origins)])) if {
	some place in places
	place_valid(place)
	not origin_allowed(place_facts[place])
}

url_reasons contains reason("blocked_domain", sprintf("%v host %v is in the blocked domain %v (%v)", [place, place_str(place, "host"), s, blocked_host[s]])) if {
	some place in places
	place_valid(place)
	some s in place_facts[place].host_suffixes
	blocked_host[s]
}

# ---------------------------------------------------------------------------
# Effects (issue 15): what the action caused in the browser, as the browser
# reported it. The browser's boundary refuses what leaves the allowlist by
# itself; what it holds for the policy (state-changing requests to allowed
# origins, and navigations a caller asks about) is judged here on its kind,
# method, origin, path and field names, never on the words that led to it.
# ---------------------------------------------------------------------------

effect_given if {
	_ = input.effect
}

# effect_class is "read" only for an effect Go found to change no state;
# anything else (a missing fact included) is "write".
effect_class := "read" if {
	input.derived.effect.changes_state == false
} else := "write"

effect_class_words := {"read": "read-only", "write": "state-changing"}

effect_changes_state if effect_class == "write"

effect_label := sprintf("effect (%v)", [concat(" ", [w |
	some k in ["method", "kind"]
	w := object.get(input.effect, k, "")
	is_string(w)
	w != ""
])]) if {
	is_object(input.effect)
} else := "effect (malformed)"

effect_target := sprintf("%v%v", [object.get(input.effect, "origin", ""), object.get(input.effect, "path", "")]) if {
	is_object(input.effect)
} else := "(nowhere)"

check_effect if not effect_given

check_effect if {
	effect_given
	input.effect.kind in config.effects.allowed_kinds
}

effect_reasons contains reason("effect_kind_denied", sprintf("the %v to %v is of a kind the policy does not allow (allowed: %v)", [effect_label, effect_target, concat(", ", config.effects.allowed_kinds)])) if {
	is_object(input.effect)
	not object.get(input.effect, "kind", null) in config.effects.allowed_kinds
}

# ---------------------------------------------------------------------------
# The target element and sensitive fields (seed 001): judged on the element
# the driver resolved, never on the selector the model wrote (whose words
# would let the model call a search box a password field, or a password
# field a search box).
# ---------------------------------------------------------------------------

has_target if is_object(input.target)

check_target if spec.requires_target == false

check_target if has_target

target_reasons contains reason("target_unresolved", sprintf("a %v action needs the element the driver resolved for its selector, and there is none", [action_type])) if {
	not check_target
}

check_sensitive if not sensitive_violation

sensitive_violation if count(sensitive_violations) > 0

sensitive_violations contains reason("sensitive_unredacted", sprintf("typing into a sensitive field (%v) with redact false would put the secret in logs; set redact true", [sensitive_why])) if {
	input.action.type == "type"
	sensitive
	not input.action.redact == true
}

sensitive_violations contains reason("sensitive_extract", sprintf("extracting the value of a sensitive field (%v) would hand the secret to the model", [sensitive_why])) if {
	input.action.type == "extract"
	input.derived.target.tag in config.sensitive.value_tags
	sensitive
}

# A field is sensitive by the element's own facts (its input type, its
# autocomplete tokens, a sensitive selector the browser found it to
# match), or by its words (its name, id or label): words are the page's,
# so they make a field sensitive (fail-safe) but never make it a place a
# secret may be typed (see Secrets).
sensitive_fact_reasons contains sprintf("the element is an input of type %v", [t]) if {
	input.derived.target.tag == "input"
	t := input.derived.target.type
	t in config.sensitive.input_types
}

sensitive_fact_reasons contains sprintf("the element's autocomplete is %v", [token]) if {
	some token in input.derived.target.autocomplete
	token in config.sensitive.autocomplete
}

# The session's sensitive selectors are matched by the browser on the
# element itself (the driver masks the same ones).
sensitive_fact_reasons contains sprintf("the browser found it matches the sensitive selector %q", [s]) if {
	s := input.derived.target.sensitive_selector
	is_string(s)
	s != ""
}

sensitive_word_reasons contains sprintf("its name, id or label matches %q", [p]) if {
	some p in config.sensitive.name_patterns
	strings.any_prefix_match(input.derived.field_tails, p)
}

sensitive_reasons := sensitive_fact_reasons | sensitive_word_reasons

sensitive if count(sensitive_reasons) > 0

sensitive_by_facts if count(sensitive_fact_reasons) > 0

sensitive_why := concat("; ", sort(sensitive_reasons))

# ---------------------------------------------------------------------------
# Secrets (issue 16): a secret is bound to the origins it may be typed on
# (input.derived.secret_bindings: name -> normalized origins, from the
# session). Go lists every {{secret:NAME}} placeholder in every string of
# the action (input.derived.secret_uses: the name, the member, whether the
# member is exactly that placeholder, whether the session holds it) and
# every malformed one (input.derived.secret_malformed). One use is
# allowed: the whole text of a type action, into a field sensitive by the
# element's own facts, on an origin the secret is bound to (where the
# element is: its frame's origin when the browser reported another one
# than the page's, else the active page's). That is the person's intent
# (medium risk, secret_typed); every other use of a placeholder is denied.
# ---------------------------------------------------------------------------

# secret_place: the URL facts of where the element is.
secret_place := input.derived.frame if {
	_ = input.derived.frame
} else := input.derived.active

secret_place_origin := o if {
	secret_place.valid == true
	o := secret_place.origin
	is_string(o)
	o != ""
} else := "(no origin)"

secret_bound_origins(name) := bound if {
	bound := input.derived.secret_bindings[name]
	is_array(bound)
} else := []

# secret_use_ok: the one use of a placeholder the policy allows.
secret_use_ok(u) if {
	u.declared == true
	input.action.type == "type"
	u.field == "text"
	u.whole == true
	sensitive_by_facts
	secret_place_origin in secret_bound_origins(u.name)
}

check_secrets if {
	count(input.derived.secret_malformed) == 0
	every u in input.derived.secret_uses {
		secret_use_ok(u)
	}
}

# secret_typed: the action types a declared secret where it belongs.
secret_typed if {
	count(input.derived.secret_uses) > 0
	check_secrets
}

secret_reasons contains reason("secret_undeclared", sprintf("the action's %v holds the placeholder {{secret:%v}}, but this session holds no secret %v (it holds: %v)", [u.field, u.name, u.name, secret_names_held])) if {
	some u in input.derived.secret_uses
	not u.declared == true
}

secret_reasons contains reason("secret_undeclared", sprintf("the action's %v holds a malformed secret placeholder: %v", [m.field, m.error])) if {
	some m in input.derived.secret_malformed
}

secret_reasons contains reason("secret_misdirected", sprintf("secret %v may only be typed, as the whole text of a type action, into a field sensitive by its own facts (its input type, its autocomplete, or a sensitive selector) on %v; this %v action puts it in its %v on %v: %v", [
	u.name,
	secret_origins_words(u.name),
	action_type,
	u.field,
	secret_place_origin,
	concat("; ", sort(secret_misdirected_why(u))),
])) if {
	some u in input.derived.secret_uses
	u.declared == true
	not secret_use_ok(u)
}

secret_names_held := concat(", ", sort(object.keys(input.derived.secret_bindings))) if {
	count(input.derived.secret_bindings) > 0
} else := "none"

secret_origins_words(name) := concat(", ", secret_bound_origins(name)) if {
	count(secret_bound_origins(name)) > 0
} else := "no origin"

# secret_misdirected_why says why a use of a secret is not the one allowed.
secret_misdirected_why(u) := {w |
	some check in ["type", "field", "whole", "facts", "origin"]
	w := secret_why(check, u)
}

secret_why("type", _) := "only a type action's text is typed" if {
	not input.action.type == "type"
}

secret_why("field", u) := sprintf("a placeholder in the %v is never typed", [u.field]) if {
	input.action.type == "type"
	u.field != "text"
}

secret_why("whole", u) := "the text holds more than the placeholder" if {
	input.action.type == "type"
	u.field == "text"
	not u.whole == true
}

secret_why("facts", u) := sprintf("the field is not sensitive by its own facts (%v)", [secret_field_words]) if {
	input.action.type == "type"
	u.field == "text"
	not sensitive_by_facts
}

secret_why("origin", u) := sprintf("%v is not an origin the secret is bound to", [secret_place_origin]) if {
	not secret_place_origin in secret_bound_origins(u.name)
}

secret_field_words := sprintf("only its words say so: %v", [concat("; ", sort(sensitive_word_reasons))]) if {
	count(sensitive_word_reasons) > 0
} else := "nothing about it is"

# ---------------------------------------------------------------------------
# Vision escalation (issue 20): an extract screenshot action with vision
# true asks that the screenshot (masked like every screenshot) be shown to
# the model with the next observation. The session's data classification
# and the policy data decide (vision.classifications), never the model or
# the page: a sensitive session never shows pixels to a model. The
# classification is the session's (input.session.classification) and the
# browser state's (input.state.policyContext.classification), which the
# gate fills with the same value; "" or absent is restricted, and two
# values that differ are judged as neither (no data names them).
# ---------------------------------------------------------------------------

given_classifications contains object.get({"": "restricted"}, c, c) if {
	some path in [["session", "classification"], ["state", "policyContext", "classification"]]
	c := object.get(input, path, "")
}

classification := c if {
	count(given_classifications) == 1
	some c in given_classifications
} else := sprintf("inconsistent (%v)", [concat(" and ", sort([json.marshal(c) | some c in given_classifications]))])

vision_allowed if config.vision.classifications[classification] == true

check_vision if not vision_asked

check_vision if {
	vision_asked
	vision_allowed
}

vision_allowed_classifications contains c if {
	some c, allowed in config.vision.classifications
	allowed == true
}

vision_allowed_words := concat(", ", sort(vision_allowed_classifications)) if {
	count(vision_allowed_classifications) > 0
} else := "no classification"

vision_reasons contains reason("vision_not_allowed", sprintf("showing the screenshot to the model is not allowed: the session's classification is %v; the policy data (vision.classifications) allows vision for %v", [classification, vision_allowed_words])) if {
	vision_asked
	not vision_allowed
}

# ---------------------------------------------------------------------------
# The session's own policy additions must all be usable.
# ---------------------------------------------------------------------------

check_session_policy if count(input.derived.config_errors) == 0

session_policy_reasons contains reason("session_policy_invalid", sprintf("%v entry %v is not usable: %v", [e.field, json.marshal(e.raw), e.error])) if {
	some e in input.derived.config_errors
}

# ---------------------------------------------------------------------------
# Risk (seed 000: low, medium, high) and approvals (seed 002).
# ---------------------------------------------------------------------------

risk_reason(rule, message, level) := {"rule": rule, "message": message, "risk": level}

# The risk of a decision about an effect follows the effect alone: what
# the action's element or the model said does not raise it (the action was
# judged, and approved if it had to be, on its own) nor lower it.
risk_reasons := effect_risk_reasons if {
	effect_given
} else := action_risk_reasons

# A click or select is high risk when the element's words match a
# high-risk pattern: its text, label, name and id as the browser described
# them (subject_tails), normalized in Go (case, compatibility forms,
# invisible characters, look-alike letters of other scripts).
action_risk_reasons contains risk_reason("high_risk_pattern", sprintf("a %v on an element matching %q is high risk", [action_type, p]), "high") if {
	spec.high_risk_patterns == true
	strings.any_prefix_match(input.derived.subject_tails, config.risk.high_risk_patterns) # any at all, then which
	some p in config.risk.high_risk_patterns
	strings.any_prefix_match(input.derived.subject_tails, p)
}

# The model's own words (its selector, a select's value: model_tails) may
# raise the risk of its action, never lower it: a model that writes
# "#pay-now" asks for approval, a model that writes "#continue" for a Pay
# button changes nothing, since the element's words are judged above.
action_risk_reasons contains risk_reason("high_risk_model_words", sprintf("a %v whose selector or value, as the model wrote it, matches %q is high risk", [action_type, p]), "high") if {
	spec.high_risk_patterns == true
	strings.any_prefix_match(input.derived.model_tails, config.risk.high_risk_patterns)
	some p in config.risk.high_risk_patterns
	strings.any_prefix_match(input.derived.model_tails, p)
}

# A navigation is high risk when a high-risk URL pattern is one of the
# words of the target's path and query, or a run of consecutive words
# (path_terms, from Go: "/account/log-out?x=1" holds "log out"): whole
# words, so "pay" matches /pay, /api/pay and /pay-now, not /display or
# /repayment. The task's own start URLs, given by the person, are exempt
# when navigated to exactly (start_url_target): their names are the
# person's choice, not the model's. The origin and blocked-domain checks
# still apply to them.
action_risk_reasons contains risk_reason("high_risk_url", sprintf("navigating to a URL whose path or query holds the words %q is high risk", [p]), "high") if {
	input.action.type == "navigate"
	not start_url_target
	some p in config.risk.high_risk_url_patterns
	input.derived.target_url.path_terms[p]
}

# start_url_target: the navigation target is, without its fragment and
# with its origin normalized, one of the task's start URLs.
start_url_target if input.derived.start_addresses[input.derived.target_url.address]

# Typing into a sensitive field is high risk (model-invented text into a
# password field needs a person), unless it types a declared secret where
# it belongs (see Secrets): the person declared it for that origin, so it
# is medium risk, secret_typed, and needs no approval.
action_risk_reasons contains risk_reason("sensitive_field", sprintf("a %v into a sensitive field (%v) is high risk", [action_type, sensitive_why]), "high") if {
	input.action.type == "type"
	sensitive
	not secret_typed
}

action_risk_reasons contains risk_reason("secret_typed", sprintf("typing secret %v into a field sensitive by its own facts (%v) on %v, an origin the secret is bound to, is what the person declared it for", [concat(", ", sort({u.name | some u in input.derived.secret_uses})), concat("; ", sort(sensitive_fact_reasons)), secret_place_origin]), "medium") if {
	secret_typed
}

action_risk_reasons contains risk_reason("sensitive_field", sprintf("a %v into a sensitive field (%v) is high risk", [action_type, sensitive_why]), "high") if {
	input.action.type == "select"
	sensitive
}

# An effect that may change state on the server, to a payment, checkout,
# order, delete, account-closure or transfer endpoint (the words of its
# path, whole words as for navigations), is high risk, whatever the
# button said.
effect_risk_reasons contains risk_reason("effect_high_risk_path", sprintf("a state-changing %v to %v, whose path holds the words %q, is high risk", [effect_label, effect_target, p]), "high") if {
	effect_changes_state
	some p in config.risk.high_risk_effect_path_patterns
	input.derived.effect.url.path_terms[p]
}

# So is one that sends a field whose name holds payment words (a card
# number, a CVV, an IBAN, an amount): the names only, never the values.
effect_risk_reasons contains risk_reason("effect_high_risk_field", sprintf("a state-changing %v to %v sending a field named %q is high risk", [effect_label, effect_target, p]), "high") if {
	effect_changes_state
	some p in config.risk.high_risk_effect_field_patterns
	input.derived.effect.field_terms[p]
}

# And one the driver may have cut to its bounds (as many field names as
# are kept, a path as long as is kept): a page can pad a body or a path so
# that the words that would make it high risk are cut off.
effect_risk_reasons contains risk_reason("effect_truncated", sprintf("a state-changing %v to %v was cut to the bounds of what is judged (field names or path): what was cut cannot be judged, so it is high risk", [effect_label, effect_target]), "high") if {
	effect_changes_state
	input.derived.effect.truncated
}

# And one whose method destroys what it names (DELETE).
effect_risk_reasons contains risk_reason("effect_high_risk_method", sprintf("a %v to %v is high risk", [effect_label, effect_target]), "high") if {
	input.effect.method in config.effects.high_risk_methods
}

# A navigation the action caused (a followed link, a form submission, a
# script's location=) follows the rules of a navigate action: high risk
# when its path holds a high-risk URL pattern. No start-URL exemption: the
# page chose this URL, not the person.
effect_risk_reasons contains risk_reason("high_risk_url", sprintf("a %v to %v, whose path holds the words %q, is high risk", [effect_label, effect_target, p]), "high") if {
	input.effect.kind in {"navigation", "frame"}
	some p in config.risk.high_risk_url_patterns
	input.derived.effect.url.path_terms[p]
}

# Showing a screenshot to the model is a read, of the base risk of an
# extract (low): the page's text reaches the model anyway, and the
# screenshot is masked like every screenshot. A site that wants a person to
# approve each one sets vision.risk to a level in risk.approval_required
# ("high"); a level the data misspells counts as high.
action_risk_reasons contains risk_reason("vision_escalation", sprintf("showing the (masked) screenshot to the model is %v risk (vision.risk)", [level]), level) if {
	vision_asked
	level := object.get(config, ["vision", "risk"], "low")
}

# base_risk: an action type's own risk; for an effect, that of a
# state-changing effect (config.effects.risk.changes_state), else that of
# its kind; high when the data has none.
base_risk := effect_base_risk if {
	effect_given
} else := spec.risk if {
	config.action_types[action_type]
} else := "high"

effect_base_risk := r if {
	effect_changes_state
	r := config.effects.risk.changes_state
} else := r if {
	not effect_changes_state
	r := config.effects.risk[input.effect.kind]
} else := "high"

risk_levels contains base_risk

risk_levels contains r.risk if some r in risk_reasons

# The highest level present; a level the data misspelled counts as high.
risk := "high" if {
	"high" in risk_levels
} else := "high" if {
	some l in risk_levels
	not l in {"low", "medium"}
} else := "medium" if {
	"medium" in risk_levels
} else := "low"

approval_reasons contains reason("risk_requires_approval", sprintf("%v risk requires human approval", [risk])) if risk in config.risk.approval_required

# The permission level's confirmation is for the action: an effect of an
# action the person confirmed needs approval for its own risk only.
approval_reasons contains reason("permission_requires_confirmation", sprintf("permission level %v requires confirmation for %v actions", [permission, action_type])) if {
	not effect_given
	action_type in config.permissions[permission].confirm
}

requires_approval := count(approval_reasons) > 0

# ---------------------------------------------------------------------------
# Governed exceptions (seed 001): named, scoped to one rule, with a reason,
# an expiry and a decision log link. Go checks their form and parses the
# expiry (input.derived.exceptions); the policy decides what they waive.
# ---------------------------------------------------------------------------

exception_fields(e) := {k: v |
	some k in ["id", "rule", "reason", "expires_at", "decision_log_id"]
	v := e[k]
}

exception_well_formed(e) if {
	count(e.problems) == 0
	is_string(e.id)
	is_string(e.rule)
	is_number(e.expires_ns)
	e.expires_ns > input.derived.now_ns
}

exception_status(e) := {"status": "malformed", "why": concat("; ", e.problems)} if {
	count(e.problems) > 0
} else := {"status": "expired", "why": sprintf("expired at %v, not after the decision time %v", [e.expires_at, input.now])} if {
	e.expires_ns <= input.derived.now_ns
} else := {"status": "out_of_scope", "why": sprintf("rule %v may not be waived by an exception", [e.rule])} if {
	not e.rule in config.exceptions.waivable
} else := {"status": "out_of_scope", "why": sprintf("rule %v did not fire for this action", [e.rule])} if {
	not fired_rule[e.rule]
} else := {"status": "applied", "why": sprintf("waives rule %v", [e.rule])} if {
	exception_well_formed(e)
} else := {"status": "malformed", "why": "the exception's facts are incomplete"}

exception_results := [object.union(exception_fields(e), exception_status(e)) | some e in input.derived.exceptions]

applied_exceptions contains [e.rule, e.id] if {
	some e in input.derived.exceptions
	s := exception_status(e)
	s.status == "applied"
}
