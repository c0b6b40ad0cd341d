# Unit tests of the browser gate policy. Inputs are written as the Go gate
# builds them (input.derived holds the facts Go computes); each test changes
# the base input in one way.
package aegis.browser_test

import data.aegis.browser
import data.aegis.config

# ---------------------------------------------------------------------------
# Fixtures.
# ---------------------------------------------------------------------------

shop_url := {
	"raw": "https://shop.example/cart",
	"valid": true,
	"error": "",
	"scheme": "https",
	"host": "shop.example",
	"port": 443,
	"origin": "https://shop.example",
	"userinfo": false,
	"ip": "",
	"address": "https://shop.example/cart",
	"path_terms": {"cart": true},
	"origin_keys": ["https://shop.example:443", "https://*.shop.example:443", "https://*.example:443"],
	"host_suffixes": ["shop.example", "example"],
}

# url returns URL facts for host whose path holds the given terms (words
# and runs of words, as gate.PathTerms lists them): the path is the single
# words, one segment each.
url(scheme, host, port, terms) := {
	"raw": url_address(scheme, host, terms),
	"valid": true,
	"error": "",
	"scheme": scheme,
	"host": host,
	"port": port,
	"origin": sprintf("%v://%v", [scheme, host]),
	"userinfo": false,
	"ip": "",
	"address": url_address(scheme, host, terms),
	"path_terms": {t: true | some t in terms},
	"origin_keys": [sprintf("%v://%v:%v", [scheme, host, port])],
	"host_suffixes": [host],
}

url_address(scheme, host, terms) := sprintf("%v://%v/%v", [scheme, host, concat("/", [t | some t in terms; not contains(t, " ")])])

base := {
	"state": {
		"sessionId": "s-1",
		"activeUrl": "https://shop.example/cart",
		"policyContext": {"maxStepBudget": 25, "decisionLogId": "dec-2026-01-23-001"},
	},
	"action": {"id": "a1", "type": "click", "reason": "open the next page", "policyTags": [], "selector": "#next"},
	"step_index": 3,
	"policy": {"blocked_domains": ["payments.example"], "sensitive_selectors": [], "governed_exceptions": []},
	"session": {"id": "s-1", "allowed_origins": ["https://shop.example"], "permission": "", "preset": ""},
	"now": "2026-01-23T10:00:00Z",
	"derived": {
		"now_ns": 1769162400000000000,
		"active": shop_url,
		"allowed_origins": ["https://shop.example"],
		"allowed_origin_keys": {"https://shop.example:443": "https://shop.example"},
		"start_addresses": {"https://shop.example/": "https://shop.example"},
		"config_errors": [],
		"blocked_domains": ["payments.example"],
		"decision_log_id_valid": true,
		"has_target": false,
		"subject_tails": ["next "],
		"model_tails": ["next "],
		"field_tails": [],
		"action_field_types": {"id": "string", "type": "string", "reason": "string", "policyTags": "array", "selector": "string"},
		"exceptions": [],
		"secret_bindings": {},
		"secret_uses": [],
		"secret_malformed": [],
	},
}

# with_action replaces the action's fields (and their Go facts).
with_action(inp, fields, types) := object.union(inp, {
	"action": object.union({"id": "a1", "reason": "r", "policyTags": []}, fields),
	"derived": {"action_field_types": object.union({"id": "string", "reason": "string", "policyTags": "array"}, types)},
})

type_action(redact) := with_action(base, {"type": "type", "selector": "#pw", "text": "hunter2", "redact": redact}, {"type": "string", "selector": "string", "text": "string", "redact": "boolean"})

with_target(inp, tag, typ, autocomplete) := object.union(inp, {
	"target": {"tag": tag, "type": typ, "name": "", "id": "", "autocomplete": "", "role": "", "label": "", "text": ""},
	"derived": {"target": {"tag": tag, "type": typ, "autocomplete": autocomplete, "sensitive_selector": ""}, "has_target": true},
})

password_field := with_target(type_action(true), "input", "password", [])

navigate(u) := object.union(
	with_action(base, {"type": "navigate", "url": u.raw}, {"type": "string", "url": "string"}),
	{"derived": {"target_url": u}},
)

# decide evaluates the decision for inp, as the gate does.
decide(inp) := d if {
	d := browser.decision with input as inp
}

rules(d) := {r.rule | some r in d.deny}

denied_by(inp, rule) if {
	d := decide(inp)
	d.allow == false
	rule in rules(d)
}

exception(id, rule, expires_ns, problems) := {
	"id": id,
	"rule": rule,
	"reason": "incident 42",
	"expires_at": "2026-02-15T00:00:00Z",
	"decision_log_id": "dec-approval-7",
	"expires_ns": expires_ns,
	"problems": problems,
}

live := 1771113600000000000

with_exceptions(inp, es) := object.union(inp, {"derived": {"exceptions": es}})

# ---------------------------------------------------------------------------
# The decision.
# ---------------------------------------------------------------------------

test_base_allowed if {
	d := decide(base)
	d.allow == true
	d.deny == set()
	d.risk == "medium"
	d.requires_approval == false
	d.action_name == "browser.click"
	d.permission == "full"
	d.exceptions == []
}

test_every_field_is_present if {
	d := decide(base)
	object.keys(d) == {
		"allow", "deny", "waived", "risk", "risk_reasons", "requires_approval",
		"approval_reasons", "action_name", "permission", "exceptions",
	}
}

test_every_action_type_allowed_with_its_fields if {
	every t, spec in config.action_types {
		fields := {f: sample[want] | some f, want in spec.fields}
		inp0 := with_action(base, object.union({"type": t}, fields), object.union({"type": "string"}, spec.fields))
		inp1 := object.union(inp0, {"derived": {"target_url": shop_url}})
		inp := with_target(inp1, "input", "text", [])
		d := decide(inp)
		d.allow == true
		d.action_name == spec.name
	}
}

sample := {"string": "ok", "boolean": true, "number": 100}

# ---------------------------------------------------------------------------
# Action type and fields.
# ---------------------------------------------------------------------------

test_unknown_action_type_denied if {
	inp := with_action(base, {"type": "shell", "selector": "#x"}, {"type": "string", "selector": "string"})
	denied_by(inp, "action_type_unknown")
	d := decide(inp)
	d.action_name == "browser.unknown"
	d.risk == "high"
}

test_missing_action_type_denied if {
	inp := json.remove(base, ["/action/type"])
	denied_by(inp, "action_type_unknown")
}

test_action_missing_field_denied if {
	inp := json.remove(base, ["/action/selector", "/derived/action_field_types/selector"])
	denied_by(inp, "action_malformed")
}

test_action_field_of_wrong_type_denied if {
	inp := object.union(base, {"action": {"selector": 7}, "derived": {"action_field_types": {"selector": "number"}}})
	denied_by(inp, "action_malformed")
}

# ---------------------------------------------------------------------------
# Step budget and decision log.
# ---------------------------------------------------------------------------

test_step_at_budget_allowed if {
	d := decide(object.union(base, {"step_index": 25}))
	d.allow == true
}

test_step_past_budget_denied if {
	denied_by(object.union(base, {"step_index": 26}), "step_budget_exceeded")
}

test_step_past_policy_cap_denied if {
	inp := object.union(base, {"step_index": 30, "state": {"policyContext": {"maxStepBudget": 100}}})
	denied_by(inp, "step_budget_exceeded") with config.limits.max_step_budget as 20
}

test_negative_step_denied if {
	denied_by(object.union(base, {"step_index": -1}), "step_budget_invalid")
}

test_missing_step_denied if {
	denied_by(json.remove(base, ["/step_index"]), "step_budget_invalid")
}

test_zero_budget_denied if {
	inp := object.union(base, {"step_index": 0, "state": {"policyContext": {"maxStepBudget": 0}}})
	denied_by(inp, "step_budget_invalid")
}

test_budget_not_a_number_denied if {
	inp := object.union(base, {"state": {"policyContext": {"maxStepBudget": "25"}}})
	denied_by(inp, "step_budget_invalid")
}

test_decision_log_missing_denied if {
	denied_by(object.union(base, {"derived": {"decision_log_id_valid": false}}), "decision_log_missing")
}

# ---------------------------------------------------------------------------
# Permission levels and presets.
# ---------------------------------------------------------------------------

with_session(inp, permission, preset) := object.union(inp, {"session": {"permission": permission, "preset": preset}})

test_default_preset_is_power if {
	d := decide(base)
	d.permission == config.presets[config.default_preset]
}

test_disabled_denies_everything if {
	every t in ["click", "extract", "wait"] {
		inp := with_session(with_action(base, {"type": t, "selector": "#x", "extract": "text", "durationMs": 10}, {"type": "string", "selector": "string", "extract": "string", "durationMs": "number"}), "disabled", "")
		denied_by(inp, "permission_denied")
	}
}

test_safe_preset_is_disabled if {
	denied_by(with_session(base, "", "safe"), "permission_denied")
	d := decide(with_session(base, "", "safe"))
	d.permission == "disabled"
}

test_observe_allows_extract_only_kinds if {
	ext := with_action(base, {"type": "extract", "extract": "text"}, {"type": "string", "extract": "string"})
	decide(with_session(ext, "observe", "")).allow == true
	denied_by(with_session(base, "observe", ""), "permission_denied")
}

test_control_pauses_input if {
	d := decide(with_session(base, "control", ""))
	d.allow == true
	d.requires_approval == true
	"permission_requires_confirmation" in {r.rule | some r in d.approval_reasons}
}

test_balanced_preset_is_control if {
	d := decide(with_session(base, "", "balanced"))
	d.permission == "control"
	d.requires_approval == true
}

test_control_does_not_confirm_scroll if {
	inp := with_action(base, {"type": "scroll", "direction": "down"}, {"type": "string", "direction": "string"})
	d := decide(with_session(inp, "control", ""))
	d.allow == true
	d.requires_approval == false
	d.risk == "low"
}

test_full_and_power_do_not_confirm if {
	decide(with_session(base, "full", "")).requires_approval == false
	decide(with_session(base, "", "power")).requires_approval == false
	decide(with_session(base, "", "developer")).requires_approval == false
}

test_permission_beats_preset if {
	decide(with_session(base, "full", "safe")).allow == true
}

test_unknown_permission_denied if {
	denied_by(with_session(base, "root", ""), "permission_unknown")
}

test_unknown_preset_denied if {
	inp := with_session(base, "", "yolo")
	denied_by(inp, "permission_unknown")
	decide(inp).permission == "invalid"
}

test_non_string_permission_denied if {
	inp := with_session(base, 5, "")
	denied_by(inp, "permission_unknown")
	decide(inp).permission == "invalid"
}

# ---------------------------------------------------------------------------
# Origins.
# ---------------------------------------------------------------------------

test_navigate_within_allowlist_allowed if {
	d := decide(navigate(url("https", "shop.example", 443, ["products"])))
	d.allow == true
	d.action_name == "browser.navigate"
}

test_navigate_outside_allowlist_denied if {
	denied_by(navigate(url("https", "evil.example", 443, [])), "origin_not_allowed")
}

test_navigate_other_port_denied if {
	denied_by(navigate(url("https", "shop.example", 8443, [])), "origin_not_allowed")
}

test_wildcard_allowlist_allows_subdomains if {
	u := object.union(url("https", "a.shop.example", 443, []), {"origin_keys": ["https://a.shop.example:443", "https://*.a.shop.example:443", "https://*.shop.example:443", "https://*.example:443"]})
	inp := object.union(navigate(u), {"derived": {"allowed_origin_keys": {"https://*.shop.example:443": "https://*.shop.example"}}})
	decide(inp).allow == true
}

test_navigate_blocked_domain_denied if {
	u := object.union(url("https", "pay.payments.example", 443, []), {"host_suffixes": ["pay.payments.example", "payments.example", "example"]})
	inp := object.union(navigate(u), {"derived": {"allowed_origin_keys": {"https://pay.payments.example:443": "x"}}})
	denied_by(inp, "blocked_domain")
	some r in decide(inp).deny
	r.rule == "blocked_domain"
	contains(r.message, "(session)")
}

test_policy_data_blocked_domain_denied if {
	inp := object.union(base, {"derived": {"blocked_domains": []}})
	denied_by(inp, "blocked_domain") with config.urls.blocked_domains as ["example"]
	some r in decide(inp).deny with config.urls.blocked_domains as ["example"]
	contains(r.message, "(policy data)")
}

test_blocked_suffix_lookalike_allowed if {
	# "xample" is a string suffix of shop.example but not a domain of it.
	# Neither the active page nor a navigation target is blocked by it.
	inp := object.union(base, {"derived": {"blocked_domains": ["xample"]}})
	d := decide(inp)
	d.allow == true
	nav := object.union(navigate(url("https", "shop.example", 443, ["products"])), {"derived": {"blocked_domains": ["xample"]}})
	decide(nav).allow == true
}

test_javascript_url_denied if {
	u := {"raw": "javascript:alert(1)", "valid": true, "error": "", "scheme": "javascript", "host": "", "port": 0, "origin": "", "userinfo": false, "ip": "", "address": "", "path_terms": {}, "origin_keys": [], "host_suffixes": []}
	denied_by(navigate(u), "url_scheme")
	denied_by(navigate(u), "origin_not_allowed")
}

test_invalid_url_denied if {
	u := {"raw": "https://exa mple.com", "valid": false, "error": "contains whitespace", "scheme": "https", "host": "", "port": 0, "origin": "", "userinfo": false, "ip": "", "address": "", "path_terms": {}, "origin_keys": [], "host_suffixes": []}
	denied_by(navigate(u), "url_invalid")
}

test_navigate_without_facts_denied if {
	inp := with_action(base, {"type": "navigate", "url": "https://shop.example/"}, {"type": "string", "url": "string"})
	denied_by(inp, "url_invalid")
	some r in decide(inp).deny
	contains(r.message, "(missing)")
}

test_userinfo_denied if {
	u := object.union(url("https", "evil.example", 443, []), {"raw": "https://shop.example@evil.example/", "userinfo": true})
	denied_by(navigate(u), "url_userinfo")
	denied_by(navigate(u), "origin_not_allowed")
}

test_action_on_page_outside_allowlist_denied if {
	inp := object.union(base, {"derived": {"active": url("https", "evil.example", 443, [])}})
	denied_by(inp, "origin_not_allowed")
	some r in decide(inp).deny
	contains(r.message, "active page")
}

test_action_on_about_blank_denied if {
	blank := {"raw": "about:blank", "valid": true, "error": "", "scheme": "about", "host": "", "port": 0, "origin": "", "userinfo": false, "ip": "", "address": "", "path_terms": {}, "origin_keys": [], "host_suffixes": []}
	denied_by(object.union(base, {"derived": {"active": blank}}), "url_scheme")
}

test_navigate_from_about_blank_allowed if {
	blank := {"raw": "about:blank", "valid": true, "error": "", "scheme": "about", "host": "", "port": 0, "origin": "", "userinfo": false, "ip": "", "address": "", "path_terms": {}, "origin_keys": [], "host_suffixes": []}
	inp := object.union(navigate(url("https", "shop.example", 443, [])), {"derived": {"active": blank}})
	decide(inp).allow == true
}

test_unusable_session_entry_denied if {
	inp := object.union(base, {"derived": {"config_errors": [{"field": "allowed_origins", "raw": "ftp://x", "error": "scheme ftp is not http or https"}]}})
	denied_by(inp, "session_policy_invalid")
}

test_failed_check_without_explanation_still_denies if {
	inp := json.remove(base, ["/derived/config_errors"])
	denied_by(inp, "session_policy_rejected")
}

# ---------------------------------------------------------------------------
# Targets and sensitive fields.
# ---------------------------------------------------------------------------

test_type_without_target_denied if {
	denied_by(type_action(true), "target_unresolved")
}

test_type_into_plain_field_allowed if {
	inp := with_target(type_action(false), "input", "text", [])
	inp2 := object.union(inp, {"derived": {"field_tails": ["q "]}})
	d := decide(inp2)
	d.allow == true
	d.requires_approval == false
}

test_password_input_called_pw_is_sensitive if {
	inp := with_target(type_action(false), "input", "password", [])
	denied_by(inp, "sensitive_unredacted")
}

test_password_input_redacted_needs_approval if {
	d := decide(password_field)
	d.allow == true
	d.risk == "high"
	d.requires_approval == true
	"sensitive_field" in {r.rule | some r in d.risk_reasons}
	"risk_requires_approval" in {r.rule | some r in d.approval_reasons}
}

test_autocomplete_cc_number_is_sensitive if {
	inp := with_target(type_action(false), "input", "text", ["cc-number"])
	denied_by(inp, "sensitive_unredacted")
}

test_one_time_code_is_sensitive if {
	inp := with_target(type_action(false), "input", "text", ["one-time-code"])
	denied_by(inp, "sensitive_unredacted")
}

test_name_ssn_is_sensitive if {
	inp0 := with_target(type_action(false), "input", "text", [])
	inp := object.union(inp0, {"derived": {"field_tails": ["user ssn ", "ssn "]}})
	denied_by(inp, "sensitive_unredacted")
}

# The selector the model wrote makes no field sensitive: a search box
# addressed as #q:not([name=password]) is a search box.
test_selector_words_do_not_make_a_field_sensitive if {
	every sel in ["#q:not([name=password])", "input[type=password], #q", "#q:not([autocomplete=cc-number])", "#ssn-or-q"] {
		inp0 := with_target(type_action(true), "input", "search", [])
		inp := object.union(inp0, {"action": {"selector": sel}, "derived": {"field_tails": ["q "]}})
		d := decide(inp)
		d.allow == true
		d.risk == "medium"
		d.requires_approval == false
		not "sensitive_field" in {r.rule | some r in d.risk_reasons}
	}
}

# Nor does it make one less sensitive: a password field addressed as
# #search is a password field.
test_selector_words_do_not_hide_a_sensitive_field if {
	inp0 := with_target(type_action(false), "input", "password", [])
	inp := object.union(inp0, {"action": {"selector": "#search"}})
	denied_by(inp, "sensitive_unredacted")
}

# The session's sensitive selectors count when the browser found the
# element to match one, not when the model's selector spells one.
test_session_selector_matched_by_the_browser_applies if {
	inp0 := with_target(type_action(false), "input", "text", [])
	inp := object.union(inp0, {"policy": {"sensitive_selectors": ["#secret-box"]}, "derived": {"target": {"sensitive_selector": "#secret-box"}}})
	denied_by(inp, "sensitive_unredacted")
	d := decide(object.union(inp, {"action": {"redact": true}}))
	d.risk == "high"
	some r in d.risk_reasons
	r.rule == "sensitive_field"
	contains(r.message, `the sensitive selector "#secret-box"`)
}

test_session_selector_in_the_model_selector_only_does_not_apply if {
	inp0 := with_target(type_action(false), "input", "text", [])
	inp := object.union(inp0, {"action": {"selector": "#secret-box"}, "policy": {"sensitive_selectors": ["#secret-box"]}, "derived": {"field_tails": ["q "]}})
	d := decide(inp)
	d.allow == true
	d.risk == "medium"
}

test_select_in_sensitive_field_is_high_risk if {
	inp0 := with_action(base, {"type": "select", "selector": "#exp", "value": "12"}, {"type": "string", "selector": "string", "value": "string"})
	inp := with_target(inp0, "select", "", ["cc-exp-month"])
	d := decide(inp)
	d.allow == true
	d.risk == "high"
}

test_extract_of_password_value_denied if {
	inp0 := with_action(base, {"type": "extract", "selector": "#pw", "extract": "text"}, {"type": "string", "selector": "string", "extract": "string"})
	inp := with_target(inp0, "input", "password", [])
	denied_by(inp, "sensitive_extract")
}

test_extract_of_page_text_allowed if {
	inp0 := with_action(base, {"type": "extract", "selector": "#help", "extract": "text"}, {"type": "string", "selector": "string", "extract": "string"})
	inp := object.union(with_target(inp0, "p", "", []), {"derived": {"field_tails": ["password ", "help "]}})
	decide(inp).allow == true
}

test_click_on_password_field_is_not_sensitive if {
	inp := with_target(base, "input", "password", [])
	d := decide(inp)
	d.allow == true
	d.risk == "medium"
}

# ---------------------------------------------------------------------------
# Risk.
# ---------------------------------------------------------------------------

test_scroll_is_low_risk if {
	inp := with_action(base, {"type": "scroll", "direction": "down"}, {"type": "string", "direction": "string"})
	decide(inp).risk == "low"
}

test_click_pay_is_high_risk if {
	inp := object.union(base, {"derived": {"subject_tails": ["btn pay now ", "pay now ", "now "]}})
	d := decide(inp)
	d.allow == true
	d.risk == "high"
	d.requires_approval == true
	some r in d.risk_reasons
	r.rule == "high_risk_pattern"
	contains(r.message, "\"pay\"")
}

test_click_submit_order_is_high_risk if {
	inp := object.union(base, {"derived": {"subject_tails": ["submit order ", "order "]}})
	decide(inp).risk == "high"
}

test_click_submit_is_not_high_risk if {
	inp := object.union(base, {"derived": {"subject_tails": ["submit "]}})
	decide(inp).risk == "medium"
}

test_click_display_is_not_pay if {
	inp := object.union(base, {"derived": {"subject_tails": ["display settings ", "settings "]}})
	decide(inp).risk == "medium"
}

test_type_text_matching_pattern_is_not_high_risk if {
	inp := object.union(with_target(type_action(false), "input", "text", []), {"derived": {"subject_tails": ["delete "], "field_tails": ["q "]}})
	d := decide(inp)
	d.risk == "medium"
	d.allow == true
}

test_navigate_to_checkout_is_high_risk if {
	d := decide(navigate(url("https", "shop.example", 443, ["checkout", "step", "1", "checkout step", "step 1", "checkout step 1"])))
	d.risk == "high"
	some r in d.risk_reasons
	r.rule == "high_risk_url"
	contains(r.message, "\"checkout\"")
}

# ---------------------------------------------------------------------------
# High-risk URL patterns: whole words of the path and query, and the task's
# own start URLs (issue 15).
# ---------------------------------------------------------------------------

url_risk(terms) := decide(navigate(url("https", "shop.example", 443, terms))).risk

test_url_pattern_matches_a_word_of_a_segment if {
	# /pay-now, /api/pay, /account/delete
	url_risk(["pay", "now", "pay now"]) == "high"
	url_risk(["api", "pay", "api pay"]) == "high"
	url_risk(["account", "delete", "account delete"]) == "high"
}

test_url_pattern_does_not_match_inside_a_word if {
	# /display, /repayment-faq, /undelete-help, /paypal
	url_risk(["display"]) == "medium"
	url_risk(["repayment", "faq", "repayment faq"]) == "medium"
	url_risk(["undelete", "help", "undelete help"]) == "medium"
	url_risk(["paypal"]) == "medium"
}

test_url_pattern_of_several_words_matches_consecutive_words if {
	# /account/log-out matches "log out"; /log/in/out does not
	url_risk(["account", "log", "out", "account log", "log out", "account log out"]) == "high"
	url_risk(["log", "in", "out", "log in", "in out", "log in out"]) == "medium"
}

# start is a navigation to the task's start URL https://shop.example/checkout.
start := object.union(
	navigate(object.union(url("https", "shop.example", 443, ["checkout"]), {"raw": "https://shop.example/checkout#top", "address": "https://shop.example/checkout"})),
	{
		"session": {"allowed_origins": ["https://shop.example/checkout"]},
		"derived": {"start_addresses": {"https://shop.example/checkout": "https://shop.example/checkout"}},
	},
)

test_start_url_is_not_raised_by_its_name if {
	d := decide(start)
	d.allow == true
	d.risk == "medium"
	d.requires_approval == false
	count(d.risk_reasons) == 0
}

test_other_url_of_the_start_origin_is_raised if {
	# the same path with another query is not the start URL
	inp := object.union(start, {"derived": {"target_url": {"address": "https://shop.example/checkout?amount=500"}}})
	d := decide(inp)
	d.risk == "high"
	d.requires_approval == true
	some r in d.risk_reasons
	r.rule == "high_risk_url"
}

test_start_url_exemption_needs_the_start_list if {
	inp := json.remove(start, ["/derived/start_addresses"])
	decide(inp).risk == "high"
}

test_start_url_exemption_needs_the_target_address if {
	inp := json.remove(start, ["/derived/target_url/address"])
	decide(inp).risk == "high"
}

test_start_url_on_a_blocked_domain_is_denied if {
	inp := object.union(start, {"derived": {"blocked_domains": ["shop.example"]}})
	denied_by(inp, "blocked_domain")
}

test_start_url_off_the_allowlist_is_denied if {
	inp := json.patch(start, [{"op": "replace", "path": "/derived/allowed_origin_keys", "value": {"https://other.example:443": "https://other.example"}}])
	denied_by(inp, "origin_not_allowed")
}

test_start_url_does_not_lower_a_click_on_it if {
	# on the start page, a click on "Pay now" is still high risk
	inp := object.union(base, {"derived": {
		"active": start.derived.target_url,
		"start_addresses": start.derived.start_addresses,
		"subject_tails": ["pay now ", "now "],
	}})
	d := decide(inp)
	d.risk == "high"
	some r in d.risk_reasons
	r.rule == "high_risk_pattern"
}

test_misspelled_risk_level_counts_as_high if {
	d := decide(base) with config.action_types.click.risk as "severe"
	d.risk == "high"
}

test_low_risk_level_data if {
	d := decide(base) with config.action_types.click.risk as "low"
	d.risk == "low"
}

test_high_base_risk_requires_approval if {
	d := decide(base) with config.action_types.click.risk as "high"
	d.risk == "high"
	d.requires_approval == true
}

test_policy_tags_from_the_model_change_nothing if {
	inp := object.union(base, {"action": {"policyTags": ["approved", "low-risk", "exception:all"]}})
	decide(inp) == decide(base)
}

# The model's own words (selector, value) raise risk, never lower it; the
# element's words are judged on their own.
test_model_words_raise_risk if {
	inp := object.union(base, {"derived": {"subject_tails": ["continue "], "model_tails": ["pay now ", "now "]}})
	d := decide(inp)
	d.risk == "high"
	d.requires_approval == true
	some r in d.risk_reasons
	r.rule == "high_risk_model_words"
}

test_model_words_do_not_lower_risk if {
	inp := object.union(base, {"derived": {"subject_tails": ["pay now ", "now "], "model_tails": ["continue "]}})
	d := decide(inp)
	d.risk == "high"
	{r.rule | some r in d.risk_reasons} == {"high_risk_pattern"}
}

test_element_words_without_risk_words_are_not_high if {
	# "Continue" on the button, "#continue" from the model: not high by
	# words (what the click causes is judged as an effect)
	inp := object.union(base, {"derived": {"subject_tails": ["continue "], "model_tails": ["continue "]}})
	d := decide(inp)
	d.risk == "medium"
	d.requires_approval == false
}

# ---------------------------------------------------------------------------
# The element's frame (issue 15): an element in a frame of another origin
# than the page is judged on that origin too.
# ---------------------------------------------------------------------------

in_frame(u) := object.union(with_target(base, "button", "submit", []), {"derived": {"frame": u}})

test_element_in_foreign_frame_denied if {
	inp := in_frame(url("https", "evil.example", 443, []))
	denied_by(inp, "origin_not_allowed")
	some r in decide(inp).deny
	contains(r.message, "element's frame origin https://evil.example")
}

test_element_in_allowed_frame_of_another_origin_allowed if {
	u := object.union(url("https", "a.docs.example", 443, []), {"origin_keys": ["https://a.docs.example:443", "https://*.a.docs.example:443", "https://*.docs.example:443", "https://*.example:443"]})
	denied_by(in_frame(u), "origin_not_allowed") # only shop.example is allowed
	inp := object.union(in_frame(u), {"derived": {"allowed_origin_keys": {"https://*.docs.example:443": "https://*.docs.example"}}})
	decide(inp).allow == true
}

test_element_in_opaque_frame_denied if {
	null_origin := {"raw": "null", "valid": false, "error": "not an absolute URL (no scheme)", "scheme": "", "host": "", "port": 0, "origin": "", "userinfo": false, "ip": "", "address": "", "path_terms": {}, "origin_keys": [], "host_suffixes": []}
	denied_by(in_frame(null_origin), "url_invalid")
}

test_element_in_frame_of_blocked_domain_denied if {
	u := object.union(url("https", "pay.payments.example", 443, []), {"host_suffixes": ["pay.payments.example", "payments.example", "example"]})
	inp := object.union(in_frame(u), {"derived": {"allowed_origin_keys": {"https://pay.payments.example:443": "x"}}})
	denied_by(inp, "blocked_domain")
}

# ---------------------------------------------------------------------------
# Effects (issue 15): judged on what the action caused, not on its words.
# ---------------------------------------------------------------------------

changes_state(method) := false if {
	method in {"GET", "HEAD", "OPTIONS"}
} else := true

# with_effect makes inp a decision about an effect of its action: of kind
# and method, to u (URL facts, as for a navigation) at path, sending fields
# whose words (as gate.PathTerms lists them) are field_terms.
with_effect(inp, kind, method, u, path, fields, field_terms) := object.union(inp, {
	"effect": {"kind": kind, "method": method, "origin": u.origin, "path": path, "fields": fields},
	"derived": {"effect": {
		"url": u,
		"changes_state": changes_state(method),
		"field_terms": {t: true | some t in field_terms},
	}},
})

shop(terms) := url("https", "shop.example", 443, terms)

post_pay := with_effect(base, "request", "POST", shop(["pay"]), "/pay", [], [])

post_cart := with_effect(base, "request", "POST", shop(["api", "cart", "api cart"]), "/api/cart", ["qty", "sku"], ["qty", "sku"])

test_effect_post_pay_is_high_risk if {
	d := decide(post_pay)
	d.allow == true
	d.risk == "high"
	d.requires_approval == true
	some r in d.risk_reasons
	r.rule == "effect_high_risk_path"
	contains(r.message, "effect (POST request) to https://shop.example/pay")
}

test_effect_post_cart_is_medium_and_allowed_balanced if {
	d := decide(with_session(post_cart, "", "balanced"))
	d.permission == "control"
	d.allow == true
	d.risk == "medium"
	d.requires_approval == false
	count(d.risk_reasons) == 0
}

test_effect_get_navigation_follows_navigate_rules if {
	d := decide(with_effect(base, "navigation", "GET", shop(["pay"]), "/pay", [], []))
	d.risk == "high"
	{r.rule | some r in d.risk_reasons} == {"high_risk_url"}
	d2 := decide(with_effect(base, "navigation", "GET", shop(["products"]), "/products", [], []))
	d2.allow == true
	d2.risk == "medium"
	d2.requires_approval == false
	# a page's navigation to a start URL is not exempt: the page chose it
	d3 := decide(object.union(with_effect(base, "navigation", "GET", shop(["checkout"]), "/checkout", [], []), {"derived": {"start_addresses": {"https://shop.example/checkout": "https://shop.example/checkout"}}}))
	d3.risk == "high"
}

test_effect_read_request_is_low_risk if {
	d := decide(with_effect(base, "request", "GET", shop(["api", "pay", "api pay"]), "/api/pay", [], []))
	d.allow == true
	d.risk == "low"
}

test_effect_to_foreign_origin_denied if {
	inp := with_effect(base, "request", "POST", url("https", "evil.example", 443, ["collect"]), "/collect", ["q"], ["q"])
	denied_by(inp, "origin_not_allowed")
	some r in decide(inp).deny
	contains(r.message, "effect (POST request) origin https://evil.example")
}

test_effect_to_blocked_domain_denied if {
	u := object.union(url("https", "pay.payments.example", 443, []), {"host_suffixes": ["pay.payments.example", "payments.example", "example"]})
	inp := object.union(with_effect(base, "request", "POST", u, "/", [], []), {"derived": {"allowed_origin_keys": {"https://pay.payments.example:443": "x", "https://shop.example:443": "y"}}})
	denied_by(inp, "blocked_domain")
}

test_effect_risk_follows_the_effect_not_the_words if {
	# a "Pay now" button whose click posts to the cart: the effect is medium
	worded := object.union(post_cart, {"derived": {"subject_tails": ["pay now ", "now "], "model_tails": ["pay "]}})
	d := decide(worded)
	d.risk == "medium"
	d.requires_approval == false
	# a "Continue" button whose click posts to /pay: the effect is high
	plain := object.union(post_pay, {"derived": {"subject_tails": ["continue "], "model_tails": ["continue "]}})
	decide(plain).risk == "high"
}

test_effect_field_names_raise_risk if {
	inp := with_effect(base, "request", "POST", shop(["api", "step", "api step"]), "/api/step", ["cardNumber", "name"], ["card", "number", "card number", "name"])
	d := decide(inp)
	d.risk == "high"
	some r in d.risk_reasons
	r.rule == "effect_high_risk_field"
	contains(r.message, `"card number"`)
}

test_effect_delete_method_is_high_risk if {
	d := decide(with_effect(base, "request", "DELETE", shop(["api", "items", "3"]), "/api/items/3", [], []))
	d.risk == "high"
	{r.rule | some r in d.risk_reasons} == {"effect_high_risk_method"}
}

test_effect_observe_permission_denies_state_changes if {
	ext := with_action(base, {"type": "extract", "extract": "text"}, {"type": "string", "extract": "string"})
	inp := with_session(with_effect(ext, "request", "POST", shop(["api", "cart"]), "/api/cart", [], []), "observe", "")
	denied_by(inp, "permission_denied")
	some r in decide(inp).deny
	contains(r.message, "does not allow state-changing effects")
	read := with_session(with_effect(ext, "request", "GET", shop(["api", "cart"]), "/api/cart", [], []), "observe", "")
	decide(read).allow == true
}

test_effect_without_changes_state_fact_counts_as_state_changing if {
	ext := with_action(base, {"type": "extract", "extract": "text"}, {"type": "string", "extract": "string"})
	inp := json.remove(with_session(with_effect(ext, "request", "GET", shop(["api"]), "/api", [], []), "observe", ""), ["/derived/effect/changes_state"])
	denied_by(inp, "permission_denied")
	decide(inp).risk == "medium"
}

test_effect_control_does_not_confirm_effects if {
	d := decide(with_session(post_cart, "control", ""))
	not "permission_requires_confirmation" in {r.rule | some r in d.approval_reasons}
	d.requires_approval == false
}

test_effect_kind_peer_denied if {
	inp := object.union(base, {
		"effect": {"kind": "peer"},
		"derived": {"effect": {"url": {"raw": "", "valid": false, "error": "empty URL", "scheme": "", "host": "", "port": 0, "origin": "", "userinfo": false, "ip": "", "address": "", "path_terms": {}, "origin_keys": [], "host_suffixes": []}, "changes_state": true, "field_terms": {}}},
	})
	denied_by(inp, "effect_kind_denied")
	denied_by(inp, "url_invalid")
	d := decide(inp)
	d.risk == "medium"
	some r in d.deny
	r.rule == "effect_kind_denied"
	contains(r.message, "effect (peer)")
}

test_effect_kind_without_risk_data_is_high if {
	inp := with_effect(base, "teleport", "GET", shop([]), "/", [], [])
	denied_by(inp, "effect_kind_denied")
	decide(inp).risk == "high"
}

test_effect_download_is_high_risk_and_denied if {
	inp := with_effect(base, "download", "GET", shop(["file"]), "/file", [], [])
	denied_by(inp, "effect_kind_denied")
	decide(inp).risk == "high"
}

test_effect_malformed_denied if {
	inp := object.union(base, {"effect": "POST /pay"})
	denied_by(inp, "effect_rejected")
	denied_by(inp, "url_invalid")
	some r in decide(inp).deny
	r.rule == "url_invalid"
	contains(r.message, "effect (malformed)")
}

test_effect_missing_url_facts_denied if {
	inp := json.remove(post_pay, ["/derived/effect/url"])
	denied_by(inp, "url_invalid")
}

test_effect_of_denied_action_denied if {
	denied_by(with_effect(outside, "request", "POST", shop(["api"]), "/api", [], []), "origin_not_allowed")
}

# ---------------------------------------------------------------------------
# Governed exceptions.
# ---------------------------------------------------------------------------

outside := object.union(base, {"derived": {"active": url("https", "evil.example", 443, [])}})

test_valid_exception_waives_its_rule if {
	inp := with_exceptions(outside, [exception("ge-1", "origin_not_allowed", live, [])])
	d := decide(inp)
	d.allow == true
	some w in d.waived
	w.rule == "origin_not_allowed"
	w.exception == "ge-1"
	d.exceptions[0].status == "applied"
	d.exceptions[0].id == "ge-1"
}

test_expired_exception_waives_nothing if {
	inp := with_exceptions(outside, [exception("ge-1", "origin_not_allowed", 1769162400000000000, [])])
	denied_by(inp, "origin_not_allowed")
	d := decide(inp)
	d.exceptions[0].status == "expired"
	contains(d.exceptions[0].why, "expired at")
}

test_malformed_exception_waives_nothing if {
	inp := with_exceptions(outside, [exception("ge-1", "", live, ["it names no rule to waive"])])
	denied_by(inp, "origin_not_allowed")
	d := decide(inp)
	d.exceptions[0].status == "malformed"
	d.exceptions[0].why == "it names no rule to waive"
}

test_exception_for_unwaivable_rule_is_out_of_scope if {
	inp := with_exceptions(object.union(base, {"derived": {"decision_log_id_valid": false}}), [exception("ge-1", "decision_log_missing", live, [])])
	denied_by(inp, "decision_log_missing")
	d := decide(inp)
	d.exceptions[0].status == "out_of_scope"
	contains(d.exceptions[0].why, "may not be waived")
}

test_exception_for_another_rule_is_out_of_scope if {
	inp := with_exceptions(outside, [exception("ge-1", "step_budget_exceeded", live, [])])
	denied_by(inp, "origin_not_allowed")
	d := decide(inp)
	d.exceptions[0].status == "out_of_scope"
	contains(d.exceptions[0].why, "did not fire")
}

test_exception_waives_only_its_rule if {
	inp := with_exceptions(object.union(outside, {"step_index": 99}), [exception("ge-1", "origin_not_allowed", live, [])])
	d := decide(inp)
	rules(d) == {"step_budget_exceeded"}
}

test_exception_on_an_allowed_action_is_out_of_scope if {
	d := decide(with_exceptions(base, [exception("ge-1", "origin_not_allowed", live, [])]))
	d.allow == true
	d.exceptions[0].status == "out_of_scope"
}

test_exception_with_incomplete_facts_is_malformed if {
	e := json.remove(exception("ge-1", "origin_not_allowed", live, []), ["/id"])
	d := decide(with_exceptions(outside, [e]))
	d.allow == false
	d.exceptions[0].status == "malformed"
}

# ---------------------------------------------------------------------------
# The data itself: normalized as the rules assume.
# ---------------------------------------------------------------------------

word_pattern(p) if regex.match(`^[a-z0-9]+( [a-z0-9]+)*$`, p)

test_data_patterns_are_normalized_words if {
	every p in config.risk.high_risk_patterns {
		word_pattern(p)
		count(p) <= 64
	}
	every p in config.risk.high_risk_url_patterns {
		word_pattern(p)
		count(split(p, " ")) <= 3 # gate.MaxURLPatternWords
	}
	every p in config.sensitive.name_patterns {
		word_pattern(p)
	}
	every p in array.concat(config.risk.high_risk_effect_path_patterns, config.risk.high_risk_effect_field_patterns) {
		word_pattern(p)
		count(split(p, " ")) <= 3 # gate.MaxURLPatternWords
	}
}

test_data_effects_are_complete if {
	every k in config.effects.allowed_kinds {
		k in {"navigation", "frame", "request", "download", "peer"}
		config.effects.risk[k] in {"low", "medium", "high"}
	}
	config.effects.risk.changes_state in {"medium", "high"}
	every m in config.effects.high_risk_methods {
		m == upper(m)
	}
	config.permissions.disabled.effects == []
	config.permissions.observe.effects == ["read"]
	every level in object.keys(config.permissions) {
		every c in config.permissions[level].effects {
			c in {"read", "write"}
		}
	}
}

test_data_blocked_domains_are_normalized if {
	every d in config.urls.blocked_domains {
		d == lower(d)
		not endswith(d, ".")
		not startswith(d, "*")
		d != ""
	}
}

test_data_action_types_are_complete if {
	every t, spec in config.action_types {
		spec.name == concat(".", ["browser", t])
		spec.risk in {"low", "medium", "high"}
		is_boolean(spec.requires_target)
		is_boolean(spec.high_risk_patterns)
		is_object(spec.fields)
	}
}

test_data_permissions_and_presets if {
	object.keys(config.permissions) == {"disabled", "observe", "control", "full"}
	config.presets.safe == "disabled"
	config.presets.balanced == "control"
	config.presets.power == "full"
	config.presets.developer == "full"
	count(config.permissions.disabled.allow) == 0
	every t in config.permissions.observe.allow {
		config.action_types[t].risk == "low"
	}
	config.presets[config.default_preset]
}

test_data_waivable_rules_exclude_the_floor if {
	every r in ["url_scheme", "url_userinfo", "url_invalid", "sensitive_unredacted", "sensitive_extract", "decision_log_missing", "action_type_unknown", "action_malformed", "permission_unknown", "session_policy_invalid"] {
		not r in config.exceptions.waivable
	}
}

test_unknown_default_preset_denied if {
	inp := base
	denied_by(inp, "permission_unknown") with config.default_preset as "nope"
	some r in decide(inp).deny with config.default_preset as "nope"
	startswith(r.message, "default")
}

test_effect_cut_to_its_bounds_is_high_risk if {
	inp := object.union(with_effect(base, "request", "POST", shop(["api", "step"]), "/api/step", [], []), {"derived": {"effect": {"truncated": true}}})
	d := decide(inp)
	d.risk == "high"
	{r.rule | some r in d.risk_reasons} == {"effect_truncated"}
}

test_effect_cut_but_read_only_is_not_raised if {
	inp := object.union(with_effect(base, "request", "GET", shop(["api", "search"]), "/api/search", [], []), {"derived": {"effect": {"truncated": true}}})
	decide(inp).risk == "low"
}

# ---------------------------------------------------------------------------
# Secrets: bound to origins, typed only where they belong.
# ---------------------------------------------------------------------------

# with_secret is inp with the session holding PW bound to origins, and the
# placeholder uses Go found in the action.
with_secret(inp, origins, uses) := object.union(inp, {"derived": {
	"secret_bindings": {"PW": origins},
	"secret_uses": uses,
}})

pw_use(field, whole) := {"name": "PW", "field": field, "whole": whole, "declared": true}

# secret_login: typing {{secret:PW}} into the real password field of
# https://shop.example, the origin PW is bound to.
secret_login := with_secret(
	object.union(password_field, {"action": {"text": "{{secret:PW}}"}}),
	["https://shop.example"],
	[pw_use("text", true)],
)

test_secret_typed_into_its_password_field_is_medium_without_approval if {
	d := decide(secret_login)
	d.allow == true
	d.risk == "medium"
	d.requires_approval == false
	{r.rule | some r in d.risk_reasons} == {"secret_typed"}
	some r in d.risk_reasons
	contains(r.message, "secret PW")
	contains(r.message, "https://shop.example")
}

test_secret_typed_by_autocomplete_or_session_selector if {
	by_autocomplete := object.union(secret_login, {"derived": {"target": {"type": "text", "autocomplete": ["current-password"]}}})
	by_selector := object.union(secret_login, {"derived": {"target": {"type": "text", "sensitive_selector": "#pin"}}})
	every inp in [by_autocomplete, by_selector] {
		d := decide(inp)
		d.allow == true
		d.risk == "medium"
		"secret_typed" in {r.rule | some r in d.risk_reasons}
	}
}

# The element is in a frame of another origin: the frame's origin is where
# the secret would go.
test_secret_judged_on_the_element_frame_origin if {
	frame := url("https", "login.shop.example", 443, [])
	inp := object.union(secret_login, {"derived": {"frame": frame}})
	denied_by(inp, "secret_misdirected")
	bound := with_secret(inp, ["https://login.shop.example"], [pw_use("text", true)])
	d := decide(object.union(bound, {"derived": {"allowed_origin_keys": {"https://login.shop.example:443": "https://login.shop.example"}}}))
	d.allow == true
	d.risk == "medium"
}

# Model-invented text into a sensitive field still needs a person.
test_invented_text_into_a_password_field_stays_high if {
	d := decide(with_secret(password_field, ["https://shop.example"], []))
	d.allow == true
	d.risk == "high"
	d.requires_approval == true
	{r.rule | some r in d.risk_reasons} == {"sensitive_field"}
}

misdirected_message(inp) := m if {
	d := decide(inp)
	d.allow == false
	some r in d.deny
	r.rule == "secret_misdirected"
	m := r.message
}

test_secret_on_another_allowed_origin_denied if {
	inp := with_secret(secret_login, ["https://bank.example"], [pw_use("text", true)])
	m := misdirected_message(inp)
	contains(m, "secret PW may only be typed")
	contains(m, "on https://bank.example")
	contains(m, "https://shop.example is not an origin the secret is bound to")
}

test_secret_bound_nowhere_denied if {
	inp := with_secret(secret_login, [], [pw_use("text", true)])
	contains(misdirected_message(inp), "on no origin")
}

# A field whose only claim to sensitivity is its words (name, id, label:
# the page's) is no place for a secret.
test_secret_into_a_field_sensitive_by_words_only_denied if {
	inp0 := with_target(object.union(secret_login, {"action": {"text": "{{secret:PW}}"}}), "input", "text", [])
	inp := object.union(inp0, {"derived": {"field_tails": ["password "]}})
	m := misdirected_message(inp)
	contains(m, "not sensitive by its own facts (only its words say so")
}

test_secret_into_a_plain_field_denied if {
	inp := with_target(secret_login, "input", "text", [])
	contains(misdirected_message(inp), "nothing about it is")
	d := decide(inp)
	not "secret_typed" in {r.rule | some r in d.risk_reasons}
}

test_secret_mixed_with_other_text_denied if {
	inp := with_secret(object.union(secret_login, {"action": {"text": "x{{secret:PW}}"}}), ["https://shop.example"], [pw_use("text", false)])
	contains(misdirected_message(inp), "the text holds more than the placeholder")
}

test_secret_in_a_type_selector_denied if {
	inp := with_secret(secret_login, ["https://shop.example"], [pw_use("selector", false), pw_use("text", true)])
	contains(misdirected_message(inp), "a placeholder in the selector is never typed")
}

test_secret_in_a_navigate_url_denied if {
	inp := with_secret(navigate(url("https", "shop.example", 443, ["login"])), ["https://shop.example"], [pw_use("url", false)])
	m := misdirected_message(inp)
	contains(m, "this navigate action puts it in its url")
	contains(m, "only a type action's text is typed")
}

test_secret_as_a_select_value_denied if {
	inp0 := with_action(base, {"type": "select", "selector": "#exp", "value": "{{secret:PW}}"}, {"type": "string", "selector": "string", "value": "string"})
	inp := with_secret(with_target(inp0, "select", "", ["cc-exp-month"]), ["https://shop.example"], [pw_use("value", true)])
	contains(misdirected_message(inp), "this select action puts it in its value")
}

test_secret_in_an_extract_selector_denied if {
	inp0 := with_action(base, {"type": "extract", "selector": "#{{secret:PW}}", "extract": "text"}, {"type": "string", "selector": "string", "extract": "string"})
	inp := with_secret(with_target(inp0, "p", "", []), ["https://shop.example"], [pw_use("selector", false)])
	misdirected_message(inp)
}

test_unknown_secret_denied if {
	inp := with_secret(secret_login, ["https://shop.example"], [{"name": "OTHER", "field": "text", "whole": true, "declared": false}])
	d := decide(inp)
	d.allow == false
	some r in d.deny
	r.rule == "secret_undeclared"
	contains(r.message, "no secret OTHER (it holds: PW)")
	no_secrets := json.patch(inp, [{"op": "replace", "path": "/derived/secret_bindings", "value": {}}])
	some r2 in decide(no_secrets).deny
	contains(r2.message, "(it holds: none)")
}

test_malformed_placeholder_denied if {
	inp := object.union(password_field, {"derived": {"secret_malformed": [{"field": "text", "error": "malformed secret placeholder"}]}})
	denied_by(inp, "secret_undeclared")
}

# Facts a caller did not give fail the check.
test_missing_secret_facts_fail_closed if {
	inp := json.remove(base, ["derived/secret_uses"])
	denied_by(inp, "secrets_rejected")
}

# A page without a usable origin is no origin a secret is bound to; a
# binding that is not a list binds nowhere.
test_secret_on_a_page_without_origin_or_with_a_broken_binding_denied if {
	no_origin := object.union(secret_login, {"derived": {"active": {"valid": false, "origin": ""}}})
	contains(misdirected_message(no_origin), "(no origin) is not an origin the secret is bound to")
	broken := object.union(secret_login, {"derived": {"secret_bindings": {"PW": "https://shop.example"}}})
	contains(misdirected_message(broken), "on no origin")
}

# ---------------------------------------------------------------------------
# Vision escalation: the classification and the data decide, never the
# model or the page.
# ---------------------------------------------------------------------------

# vision_extract is an extract action of kind extract with vision v.
vision_extract(extract, v) := with_action(base, {"type": "extract", "extract": extract, "vision": v}, {"type": "string", "extract": "string", "vision": type_name(v)})

screenshot_vision := vision_extract("screenshot", true)

# classified is inp with the session's classification c, as the gate puts
# it: in input.session and in the state's policyContext.
classified(inp, c) := object.union(inp, {"session": {"classification": c}, "state": {"policyContext": {"classification": c}}})

vision_rules(d) := {r.rule | some r in d.risk_reasons}

test_vision_allowed_when_unclassified if {
	d := decide(screenshot_vision)
	d.allow == true
	d.risk == "low"
	d.requires_approval == false
	vision_rules(d) == {"vision_escalation"}
}

test_vision_allowed_for_public_and_restricted if {
	every c in ["public", "restricted", ""] {
		d := decide(classified(screenshot_vision, c))
		d.allow == true
		d.risk == "low"
	}
}

test_vision_denied_for_sensitive if {
	d := decide(classified(screenshot_vision, "sensitive"))
	d.allow == false
	d.deny == {{"rule": "vision_not_allowed", "message": "showing the screenshot to the model is not allowed: the session's classification is sensitive; the policy data (vision.classifications) allows vision for public, restricted"}}
}

test_vision_denied_when_the_state_alone_says_sensitive if {
	inp := object.union(screenshot_vision, {"session": {"classification": "public"}, "state": {"policyContext": {"classification": "sensitive"}}})
	d := decide(inp)
	d.allow == false
	some r in d.deny
	r.rule == "vision_not_allowed"
	contains(r.message, `inconsistent ("public" and "sensitive")`)
}

test_vision_denied_for_an_unknown_classification if {
	d := decide(classified(screenshot_vision, "secret"))
	d.allow == false
	some r in d.deny
	r.rule == "vision_not_allowed"
	contains(r.message, "classification is secret;")
}

test_vision_denied_when_the_data_allows_none if {
	inp := classified(screenshot_vision, "public")
	d := decide(inp) with config.vision as {}
	d.allow == false
	d.deny == {{"rule": "vision_not_allowed", "message": "showing the screenshot to the model is not allowed: the session's classification is public; the policy data (vision.classifications) allows vision for no classification"}}
	denied_by(inp, "vision_not_allowed") with config.vision.classifications as {"public": false, "restricted": true}
}

test_vision_false_or_absent_is_evidence_only if {
	every inp in [vision_extract("screenshot", false), with_action(base, {"type": "extract", "extract": "screenshot"}, {"type": "string", "extract": "string"})] {
		d := decide(classified(inp, "sensitive"))
		d.allow == true
		vision_rules(d) == set()
	}
}

test_vision_on_another_extract_is_malformed if {
	d := decide(vision_extract("text", true))
	d.allow == false
	d.deny == {{"rule": "action_malformed", "message": `vision asks that a screenshot be shown to the model: only an extract screenshot action may carry it, not a extract "text" action`}}
}

test_vision_on_another_action_is_malformed if {
	inp := with_action(base, {"type": "click", "selector": "#next", "vision": true}, {"type": "string", "selector": "string", "vision": "boolean"})
	d := decide(inp)
	d.deny == {{"rule": "action_malformed", "message": `vision asks that a screenshot be shown to the model: only an extract screenshot action may carry it, not a "click" action`}}
}

test_vision_not_a_boolean_is_malformed if {
	d := decide(vision_extract("screenshot", "yes"))
	d.allow == false
	rules(d) == {"action_malformed"}
	some r in d.deny
	r.message == `vision must be true or false, not "yes"`
}

test_vision_not_a_boolean_is_judged_as_asked if {
	denied_by(classified(vision_extract("screenshot", 1), "sensitive"), "vision_not_allowed")
}

test_vision_under_permission_levels if {
	decide(with_session(screenshot_vision, "observe", "")).allow == true
	denied_by(with_session(screenshot_vision, "disabled", ""), "permission_denied")
}

# A site that wants a person to approve every screenshot shown to a model
# sets vision.risk to "high" (README: Vision escalation).
test_vision_requiring_approval_by_data if {
	d := decide(screenshot_vision) with config.vision.risk as "high"
	d.allow == true
	d.risk == "high"
	d.requires_approval == true
	{r.rule | some r in d.approval_reasons} == {"risk_requires_approval"}
	decide(vision_extract("screenshot", false)).requires_approval == false with config.vision.risk as "high"
}

test_data_vision_defaults if {
	config.vision.classifications == {"public": true, "restricted": true, "sensitive": false}
	config.vision.risk in object.keys(config.risk.levels)
}
