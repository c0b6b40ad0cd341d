package text_test

import (
	"testing"

	"github.com/aegis-run/aegis/internal/text"
)

func TestCut(t *testing.T) {
	tests := []struct {
		s                        string
		n                        int
		bytes, runes, ellipsized string
	}{
		{"hello", 10, "hello", "hello", "hello"},
		{"hello", 5, "hello", "hello", "hello"},
		{"hello", 3, "hel", "hel", "hel…"},
		{"hello", 0, "", "", "…"},
		{"hello", -1, "", "", "…"},
		{"", 0, "", "", ""},
		{"héllo", 2, "h", "hé", "h…"}, // é is 2 bytes: a byte cut inside it backs off
		{"héllo", 3, "hé", "hél", "hé…"},
		{"日本語", 4, "日", "日本語", "日…"},
		{"日本語", 2, "", "日本", "…"},
	}
	for _, tt := range tests {
		if got := text.CutBytes(tt.s, tt.n); got != tt.bytes {
			t.Errorf("CutBytes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.bytes)
		}
		if got := text.CutRunes(tt.s, tt.n); got != tt.runes {
			t.Errorf("CutRunes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.runes)
		}
		if got := text.Ellipsize(tt.s, tt.n); got != tt.ellipsized {
			t.Errorf("Ellipsize(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.ellipsized)
		}
	}
}
