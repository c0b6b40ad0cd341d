package contract

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The data classification of a session (PolicyContext.Classification)
// decides, with the policy data, whether a screenshot may be shown to the
// model (vision escalation, rule vision_not_allowed). The task may name it
// in hints.classification; the operator's aegis run --classification may
// name it too, and the session runs under the stricter of the two
// (Stricter), restricted when neither does.

// HintClassification is the hint member that holds a task's data
// classification.
const HintClassification = "classification"

// Classifications lists the classifications from the least to the most
// strict.
var Classifications = []Classification{ClassPublic, ClassRestricted, ClassSensitive}

// DefaultClassification is the classification of a session that names
// none.
const DefaultClassification = ClassRestricted

// rank orders the classifications by strictness; an unknown one ranks
// above every known one.
func (c Classification) rank() int {
	for i, k := range Classifications {
		if c == k {
			return i
		}
	}
	return len(Classifications)
}

// Valid reports whether c is public, restricted or sensitive.
func (c Classification) Valid() bool { return c.rank() < len(Classifications) }

// ClassificationNames is the classifications' names, comma-separated, for
// messages.
func ClassificationNames() string {
	names := make([]string, len(Classifications))
	for i, c := range Classifications {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// ParseClassification returns the classification named s, an error naming
// the allowed values for any other s ("" included).
func ParseClassification(s string) (Classification, error) {
	if c := Classification(s); c.Valid() {
		return c, nil
	}
	return "", fmt.Errorf("contract: classification %q: want one of %s", s, ClassificationNames())
}

// Stricter returns the stricter of the classifications (sensitive >
// restricted > public), ignoring "" (none named); "" when both are "". An
// unknown value counts as stricter than any known one, so that it is
// never lost.
func Stricter(a, b Classification) Classification {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case b.rank() > a.rank():
		return b
	}
	return a
}

// Classification returns the task's data classification,
// hints.classification: "" when the hints do not name one, else public,
// restricted or sensitive (an error for any other value, or for hints
// that are not a JSON object).
func (in Input) Classification() (Classification, error) {
	raw, ok, err := in.hint(HintClassification)
	if err != nil || !ok {
		return "", err
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || !Classification(s).Valid() {
		return "", fmt.Errorf("contract: hints.%s is %s: want one of %s", HintClassification, clip(raw), ClassificationNames())
	}
	return Classification(s), nil
}

// WithClassification returns the task with hints.classification set to c
// (removed when c is ""), the other hints kept. c must be "" or valid.
func (in Input) WithClassification(c Classification) (Input, error) {
	if c != "" && !c.Valid() {
		return in, fmt.Errorf("contract: classification %q: want one of %s", c, ClassificationNames())
	}
	var raw json.RawMessage
	if c != "" {
		raw, _ = json.Marshal(string(c)) // a string always encodes
	}
	return in.withHint(HintClassification, raw)
}
