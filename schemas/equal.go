package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// Equal reports whether two parsed JSON values (as Parse returns them) are
// equal as JSON values: numbers by their exact value (1, 1.0 and 1e0 are
// equal), objects whatever the order of their members. It is the equality
// of the JSON Schema keywords const, enum and uniqueItems.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	}
	xs, ok1 := numText(a)
	ys, ok2 := numText(b)
	return ok1 && ok2 && equalNumbers(xs, ys)
}

// numText returns the text of a number: a json.Number as it is, another Go
// number as fmt prints it.
func numText(v any) (string, bool) {
	switch t := v.(type) {
	case json.Number:
		return string(t), true
	case float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(t), true
	}
	return "", false
}

// equalNumbers reports whether two numbers, by their JSON text, are equal
// as values.
func equalNumbers(xs, ys string) bool {
	if xs == ys {
		return true
	}
	rx, ok1 := new(big.Rat).SetString(xs)
	ry, ok2 := new(big.Rat).SetString(ys)
	return ok1 && ok2 && rx.Cmp(ry) == 0
}
