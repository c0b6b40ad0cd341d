package text

import "testing"

// TestUSD: amounts read with four decimals, trailing zeros past the
// second dropped.
func TestUSD(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "$0.00"},
		{0.0042, "$0.0042"},
		{0.1, "$0.10"},
		{0.01, "$0.01"},
		{0.0123, "$0.0123"},
		{12.5, "$12.50"},
		{1000000, "$1000000.00"},
		{0.00001, "<$0.0001"},
		{0.00005, "$0.0001"},
	}
	for _, tc := range tests {
		if got := USD(tc.in); got != tc.want {
			t.Errorf("USD(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
