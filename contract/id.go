package contract

// IsID reports whether s is an identifier of the contract
// (browser-state.schema.json#/$defs/id): 1 to 128 characters from letters,
// digits, '.', '_' and '-', starting with a letter or digit. Session ids,
// action ids and decision log ids are such identifiers.
func IsID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}
