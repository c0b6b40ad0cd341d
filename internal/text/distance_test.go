package text

import (
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "", 1},
		{"gaol", "goal", 1},
		{"kitten", "sitting", 3},
		{"abc", "abc", 0},
		{"ab", "ba", 1},
		{"Naïve", "Naive", 1},
		{"Sign in", "Sign up", 2},
		{strings.Repeat("a", 300), strings.Repeat("a", 200) + strings.Repeat("b", 100), 0}, // cut at 200 runes
	}
	for _, tt := range tests {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
