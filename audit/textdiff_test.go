package audit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTextDiff(t *testing.T) {
	for _, tc := range []struct {
		name, want, got, diff string
	}{
		{"equal", "a\nb", "a\nb", ""},
		{"changed line", "head\nShipped\ntail", "head\nLost\ntail", "+ Lost\n- Shipped"},
		{"added", "a\nc", "a\nb\nc", "+ b"},
		{"removed", "a\nb\nc", "a\nc", "- b"},
		{"long line", strings.Repeat("x", 300), "", "+ \n- " + strings.Repeat("x", MaxDiffLineChars-1) + "…"},
	} {
		if got := TextDiff(tc.want, tc.got); got != tc.diff {
			t.Errorf("%s: TextDiff = %q, want %q", tc.name, got, tc.diff)
		}
	}
	var a, b []string
	for i := 0; i < 500; i++ {
		a = append(a, "old line")
		b = append(b, "new line")
	}
	d := TextDiff(strings.Join(a, "\n"), strings.Join(b, "\n"))
	if n := strings.Count(d, "\n") + 1; n != MaxDiffLines+1 || !strings.HasSuffix(d, "(diff cut)") {
		t.Errorf("a long diff has %d lines, want %d and a cut mark", n, MaxDiffLines+1)
	}
}

// FuzzTextDiff: page text is hostile; the diff stays bounded and names
// only lines of its inputs.
func FuzzTextDiff(f *testing.F) {
	f.Add("a\nb\nc", "a\nB\nc")
	f.Add("", "\n\n\n")
	f.Add("\xff\xfe", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := TextDiff(a, b)
		if (d == "") != (a == b) {
			t.Fatalf("TextDiff(%q, %q) = %q", a, b, d)
		}
		lines := strings.Split(d, "\n")
		if len(lines) > MaxDiffLines+1 {
			t.Fatalf("%d lines", len(lines))
		}
		for _, l := range lines {
			if utf8.RuneCountInString(l) > MaxDiffLineChars+2 {
				t.Fatalf("line of %d characters", utf8.RuneCountInString(l))
			}
		}
	})
}
