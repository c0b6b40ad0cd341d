package text

import (
	"strconv"
	"strings"
)

// USD formats an amount of US dollars for people (model costs and cost
// budgets on progress lines, in errors and reports): "$" and four
// decimals, trailing zeros past the second dropped ("$0.0042", "$0.10",
// "$12.50"); an amount under $0.0001 that is not 0 reads "<$0.0001".
func USD(x float64) string {
	if x > 0 && x < 0.00005 {
		return "<$0.0001"
	}
	s := strconv.FormatFloat(x, 'f', 4, 64)
	for range 2 {
		s = strings.TrimSuffix(s, "0")
	}
	return "$" + s
}
