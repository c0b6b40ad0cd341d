package gate

// This file holds small checks and helpers on the strings of the contract:
// identifiers, rule and action names, hashes, and truncation.

// isRuleName reports whether s is a rule name: a lowercase letter, then up
// to 63 lowercase letters, digits and underscores.
func isRuleName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isActionName reports whether s is a policy action name: "browser." and a
// lowercase letter, then up to 31 lowercase letters and underscores.
func isActionName(s string) bool {
	const p = "browser."
	if len(s) <= len(p) || len(s) > len(p)+32 || s[:len(p)] != p {
		return false
	}
	n := s[len(p):]
	if n[0] < 'a' || n[0] > 'z' {
		return false
	}
	for i := 1; i < len(n); i++ {
		if c := n[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// isSHA256Hex reports whether s is 64 lowercase hex digits.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
