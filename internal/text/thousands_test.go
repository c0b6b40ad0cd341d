package text_test

import (
	"testing"

	"github.com/aegis-run/aegis/internal/text"
)

func TestThousands(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"},
		{123456, "123,456"}, {1234567, "1,234,567"}, {1000000000, "1,000,000,000"},
		{-1, "-1"}, {-1234, "-1,234"}, {-123456, "-123,456"},
	}
	for _, tc := range tests {
		if got := text.Thousands(tc.n); got != tc.want {
			t.Errorf("Thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
