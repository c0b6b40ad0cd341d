package schemas

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{json.Number("1"), json.Number("1.0"), true},
		{json.Number("1"), json.Number("1e0"), true},
		{json.Number("1"), float64(1), true},
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false},
		{json.Number("-0"), json.Number("0"), true},
		{json.Number("0"), json.Number("-0.0"), true},
		{json.Number("-5"), json.Number("5"), false},
		{json.Number("10"), json.Number("1e1"), true},
		{json.Number("10"), json.Number("100"), false},
		{json.Number("-10"), json.Number("-1e1"), true},
		{json.Number("0.1"), json.Number("0.10000000000000001"), false},
		{"1", json.Number("1"), false},
		{nil, nil, true},
		{nil, false, false},
		{true, true, true},
		{map[string]any{"a": json.Number("1"), "b": []any{"x"}}, map[string]any{"b": []any{"x"}, "a": json.Number("1.00")}, true},
		{map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{[]any{"x"}, []any{"x", "x"}, false},
		{[]any{}, map[string]any{}, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestValidateValueFailClosed: a value no parser produces, on which the
// validator panics, is reported invalid, never accepted; an unknown kind
// is an error.
func TestValidateValueFailClosed(t *testing.T) {
	type odd struct{}
	if err := ValidateValue(KindAction, odd{}); err == nil {
		t.Error("ValidateValue of a Go struct: got nil, want an error")
	}
	if err := ValidateValue("nope", map[string]any{}); err == nil {
		t.Error("ValidateValue of an unknown kind: got nil, want an error")
	}
	if err := Validate("nope", []byte(`{}`)); err == nil {
		t.Error("Validate of an unknown kind: got nil, want an error")
	}
}

func TestValidateRef(t *testing.T) {
	const ref = "browser-observation.schema.json#/$defs/artifact"
	v, err := Parse([]byte(`{"id":"a1"}`))
	if err != nil {
		t.Fatal(err)
	}
	err = ValidateRef(ref, v)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Kind != "artifact" {
		t.Errorf("ValidateRef of an incomplete artifact: got %v, want a *ValidationError of kind artifact", err)
	}
	if err := ValidateRef("no-such.schema.json", v); err == nil {
		t.Error("ValidateRef of a missing schema: got nil, want an error")
	}
	if err := ValidateRef("browser-observation.schema.json#/$defs/nothing", v); err == nil {
		t.Error("ValidateRef of a pointer that does not resolve: got nil, want an error")
	}
}
