package strictjson

import (
	"errors"
	"strings"
	"testing"
)

// TestParseDepthBound: the bound is clamped to 1..MaxDepthBound, and a
// document at the bound parses while one level deeper does not. Parse's
// other refusals are tested through schemas.Parse (schemas.TestParse).
func TestParseDepthBound(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	tests := []struct {
		name     string
		doc      []byte
		maxDepth int
		wantErr  bool
	}{
		{"scalar at bound 0", []byte(`1`), 0, false},
		{"array at bound 0 (clamped to 1)", deep(1), 0, false},
		{"two levels at bound 0", deep(2), 0, true},
		{"at the bound", deep(10), 10, false},
		{"past the bound", deep(11), 10, true},
		{"at MaxDepthBound", deep(MaxDepthBound), MaxDepthBound + 5, false},
		{"past MaxDepthBound", deep(MaxDepthBound + 1), MaxDepthBound + 5, true},
	}
	for _, tt := range tests {
		_, err := Parse(tt.doc, tt.maxDepth)
		var se *SyntaxError
		if got := err != nil; got != tt.wantErr || (err != nil && !errors.As(err, &se)) {
			t.Errorf("%s: got %v, want error %v (a *SyntaxError)", tt.name, err, tt.wantErr)
		}
	}
}
