package gate

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// Bounds of the record's strings and lists (see the decision schema).
const (
	maxReasons    = 64
	maxMessageLen = 1024
	maxErrorLen   = 2048
	maxExceptions = 32
)

// policyDecision is the policy's decision object, checked field by field.
type policyDecision struct {
	allow            bool
	deny             []contract.Reason
	waived           []contract.Reason
	risk             contract.RiskTag
	riskReasons      []contract.Reason
	requiresApproval bool
	approvalReasons  []contract.Reason
	actionName       string
	permission       string
	exceptions       []contract.ExceptionUse
}

// parseDecision checks that the policy's result is a decision object with
// every required field of the right type, and that allow agrees with the
// deny reasons. Anything else is an error, and the gate fails closed. The
// result is read as OPA's AST: the local engine hands it over without
// converting it, a remote OPA's JSON is converted first.
func parseDecision(v ast.Value) (policyDecision, error) {
	var pd policyDecision
	m, ok := v.(ast.Object)
	if !ok {
		return pd, fmt.Errorf("the decision is a%s, not an object", article(v))
	}
	var err error
	if pd.allow, err = boolField(m, "allow"); err != nil {
		return pd, err
	}
	if pd.requiresApproval, err = boolField(m, "requires_approval"); err != nil {
		return pd, err
	}
	if pd.deny, err = reasonsField(m, "deny", true); err != nil {
		return pd, err
	}
	risk, err := stringField(m, "risk", true)
	if err != nil {
		return pd, err
	}
	switch contract.RiskTag(risk) {
	case contract.RiskLow, contract.RiskMedium, contract.RiskHigh:
		pd.risk = contract.RiskTag(risk)
	default:
		return pd, fmt.Errorf("risk %q is not low, medium or high", text.CutRunes(risk, 64))
	}
	if pd.actionName, err = stringField(m, "action_name", true); err != nil {
		return pd, err
	}
	if !isActionName(pd.actionName) {
		return pd, fmt.Errorf("action_name %q is not browser.<type>", text.CutRunes(pd.actionName, 64))
	}
	if pd.waived, err = reasonsField(m, "waived", false); err != nil {
		return pd, err
	}
	if pd.riskReasons, err = reasonsField(m, "risk_reasons", false); err != nil {
		return pd, err
	}
	if pd.approvalReasons, err = reasonsField(m, "approval_reasons", false); err != nil {
		return pd, err
	}
	if pd.permission, err = stringField(m, "permission", false); err != nil {
		return pd, err
	}
	if pd.exceptions, err = exceptionsField(m); err != nil {
		return pd, err
	}
	if pd.allow != (len(pd.deny) == 0) {
		return pd, fmt.Errorf("allow is %v with %d deny reasons", pd.allow, len(pd.deny))
	}
	return pd, nil
}

// article names an AST value's JSON type with its article.
func article(v ast.Value) string {
	switch v.(type) {
	case ast.Null:
		return " null"
	case ast.Boolean:
		return " boolean"
	case ast.String:
		return " string"
	case ast.Number:
		return " number"
	case *ast.Array:
		return "n array"
	case ast.Set:
		return " set"
	case ast.Object:
		return "n object"
	}
	return " " + ast.ValueName(v)
}

func field(m ast.Object, k string) (ast.Value, bool) {
	t := m.Get(ast.StringTerm(k))
	if t == nil {
		return nil, false
	}
	return t.Value, true
}

func boolField(m ast.Object, k string) (bool, error) {
	v, ok := field(m, k)
	if !ok {
		return false, fmt.Errorf("the decision has no %q", k)
	}
	b, ok := v.(ast.Boolean)
	if !ok {
		return false, fmt.Errorf("%q is a%s, not a boolean", k, article(v))
	}
	return bool(b), nil
}

func stringField(m ast.Object, k string, required bool) (string, error) {
	v, ok := field(m, k)
	if !ok {
		if required {
			return "", fmt.Errorf("the decision has no %q", k)
		}
		return "", nil
	}
	s, ok := v.(ast.String)
	if !ok {
		return "", fmt.Errorf("%q is a%s, not a string", k, article(v))
	}
	return string(s), nil
}

// elements returns the elements of an array or a set (a Rego set
// serializes as an array).
func elements(v ast.Value) ([]*ast.Term, bool) {
	switch c := v.(type) {
	case *ast.Array:
		out := make([]*ast.Term, 0, c.Len())
		for i := 0; i < c.Len(); i++ {
			out = append(out, c.Elem(i))
		}
		return out, true
	case ast.Set:
		return c.Slice(), true
	}
	return nil, false
}

// reasonsField reads an array or set of {rule, message[, exception]}
// objects, sorted and bounded.
func reasonsField(m ast.Object, k string, required bool) ([]contract.Reason, error) {
	v, ok := field(m, k)
	if !ok {
		if required {
			return nil, fmt.Errorf("the decision has no %q", k)
		}
		return nil, nil
	}
	elems, ok := elements(v)
	if !ok {
		return nil, fmt.Errorf("%q is a%s, not an array", k, article(v))
	}
	if len(elems) == 0 {
		return nil, nil
	}
	out := make([]contract.Reason, 0, len(elems))
	for i, e := range elems {
		o, ok := e.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is a%s, not an object", k, i, article(e.Value))
		}
		rule, err := stringField(o, "rule", true)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		if !isRuleName(rule) {
			return nil, fmt.Errorf("%s[%d]: rule %q is not a rule name", k, i, text.CutRunes(rule, 64))
		}
		msg, err := stringField(o, "message", true)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		exc, err := stringField(o, "exception", false)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		out = append(out, contract.Reason{Rule: rule, Message: cleanMessage(msg, rule), ExceptionID: text.CutRunes(exc, 256)})
	}
	sortReasons(out)
	if len(out) > maxReasons {
		out = out[:maxReasons]
	}
	return out, nil
}

func cleanMessage(msg, rule string) string {
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "\uFFFD")
	}
	if strings.TrimSpace(msg) == "" {
		msg = rule
	}
	return text.CutRunes(msg, maxMessageLen)
}

func sortReasons(rs []contract.Reason) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Rule != rs[j].Rule {
			return rs[i].Rule < rs[j].Rule
		}
		if rs[i].Message != rs[j].Message {
			return rs[i].Message < rs[j].Message
		}
		return rs[i].ExceptionID < rs[j].ExceptionID
	})
}

func exceptionsField(m ast.Object) ([]contract.ExceptionUse, error) {
	v, ok := field(m, "exceptions")
	if !ok {
		return nil, nil
	}
	elems, ok := elements(v)
	if !ok {
		return nil, fmt.Errorf(`"exceptions" is a%s, not an array`, article(v))
	}
	var out []contract.ExceptionUse
	for i, e := range elems {
		o, ok := e.Value.(ast.Object)
		if !ok {
			return nil, fmt.Errorf("exceptions[%d] is a%s, not an object", i, article(e.Value))
		}
		var u contract.ExceptionUse
		var err error
		get := func(k string, n int) string {
			if err != nil {
				return ""
			}
			var s string
			s, err = stringField(o, k, false)
			return text.CutRunes(s, n)
		}
		u.ID = get("id", 256)
		u.Rule = get("rule", 64)
		u.Reason = get("reason", 1024)
		u.ExpiresAt = get("expires_at", 64)
		u.DecisionLogID = get("decision_log_id", 256)
		status := get("status", 64)
		why := get("why", maxMessageLen)
		if err != nil {
			return nil, fmt.Errorf("exceptions[%d]: %w", i, err)
		}
		switch contract.ExceptionStatus(status) {
		case contract.ExceptionApplied, contract.ExceptionExpired, contract.ExceptionMalformed, contract.ExceptionOutOfScope:
			u.Status = contract.ExceptionStatus(status)
		default:
			return nil, fmt.Errorf("exceptions[%d]: status %q is not applied, expired, malformed or out_of_scope", i, text.CutRunes(status, 64))
		}
		u.Why = cleanMessage(why, status)
		out = append(out, u)
		if len(out) == maxExceptions {
			break
		}
	}
	return out, nil
}
