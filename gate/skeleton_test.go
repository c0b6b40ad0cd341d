package gate

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// readSkeletonVectors reads testdata/skeleton.txt: lines of two Go-quoted
// strings, the input and its skeleton.
func readSkeletonVectors(t *testing.T) [][2]string {
	t.Helper()
	f, err := os.Open("testdata/skeleton.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		in, rest, err := cutQuoted(line)
		if err != nil {
			t.Fatalf("skeleton.txt:%d: input: %v", n, err)
		}
		want, rest, err := cutQuoted(strings.TrimSpace(rest))
		if err != nil || strings.TrimSpace(rest) != "" {
			t.Fatalf("skeleton.txt:%d: expected skeleton: %v %q", n, err, rest)
		}
		out = append(out, [2]string{in, want})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// cutQuoted unquotes the Go string literal s starts with and returns the
// rest.
func cutQuoted(s string) (string, string, error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", err
	}
	v, err := strconv.Unquote(q)
	return v, s[len(q):], err
}

func TestSkeletonVectors(t *testing.T) {
	vectors := readSkeletonVectors(t)
	if len(vectors) < 50 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	for _, v := range vectors {
		if got, want := Skeleton(v[0]), v[1]; got != want {
			t.Errorf("Skeleton(%+q) = %+q, want %+q", v[0], got, want)
		}
	}
}

// TestWordsOfConfusables: the words the policy matches, for captions a
// hostile page writes.
func TestWordsOfConfusables(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"P\u0430y now"}, " pay now "},
		{[]string{"btn\u0420ay\u041dow"}, " btn pay how "},
		{[]string{"ＰＡＹ　ＮＯＷ"}, " pay now "},
		{[]string{"𝐏𝐚𝐲𝐍𝐨𝐰"}, " pay now "},
		{[]string{"Pa\u200by", "De\u00adlete"}, " pay delete "},
		{[]string{"card\u2009number"}, " card number "},
		{[]string{"ꓑꓮꓬ ꓠꓳꓪ"}, " pay now "},
		{[]string{"Straße"}, " strasse "},
		{[]string{"Continue"}, " continue "},
		{[]string{"Displ\u0430y"}, " display "},
		{[]string{"HTMLParser2"}, " htmlparser2 "},
		{[]string{"taxIdInput"}, " tax id input "},
		{[]string{"付款 now"}, " 付款 now "},
	} {
		if got := Words(tc.in...); got != tc.want {
			t.Errorf("Words(%+q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestConfusableTables: every entry can be reached and maps to lowercase
// Latin letters.
func TestConfusableTables(t *testing.T) {
	check := func(table string, r rune, out string) {
		t.Helper()
		if r < 0x80 {
			t.Errorf("%s: %q is ASCII", table, r)
		}
		if s := string(r); norm.NFKD.String(s) != s {
			t.Errorf("%s: %+q is not NFKD-stable: NFKD folds it before the table is read", table, r)
		}
		if out == "" || strings.Trim(out, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("%s: %+q maps to %q, not lowercase Latin", table, r, out)
		}
	}
	for r, out := range confusableCapitals {
		check("capitals", r, out)
		if !unicode.IsUpper(r) {
			t.Errorf("capitals: %+q is not a capital", r)
		}
	}
	for r, out := range confusableSmall {
		check("small", r, out)
		if unicode.IsUpper(r) || fold(r) != r {
			t.Errorf("small: %+q is not its own case fold", r)
		}
	}
}

// TestPolicyPatternsAreSkeletons: every word pattern of the embedded
// policy's data reads as itself, so that the normalized words can match
// it.
func TestPolicyPatternsAreSkeletons(t *testing.T) {
	files, err := readPolicy(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := files.bundle(false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := b.Data["aegis"].(map[string]any)["config"].(map[string]any)
	risk := cfg["risk"].(map[string]any)
	sensitive := cfg["sensitive"].(map[string]any)
	n := 0
	for _, list := range []any{risk["high_risk_patterns"], risk["high_risk_url_patterns"], risk["high_risk_effect_path_patterns"], risk["high_risk_effect_field_patterns"], sensitive["name_patterns"]} {
		for _, p := range list.([]any) {
			s := p.(string)
			n++
			if got := Words(s); got != " "+s+" " {
				t.Errorf("pattern %q reads %q", s, got)
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d patterns checked", n)
	}
}

// FuzzSkeleton: the normalizer parses what the page writes. Whatever it
// is given, Skeleton is idempotent and yields valid UTF-8 without
// ignorable characters or capitals; Words yields single-space-separated
// words of letters and digits; Tails stay within MaxPatternLen.
func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{"Pay now", "P\u0430y now", "ＰＡＹ", "pa\u200by", "\U0001d40f", "Straße", "ꓑꓮꓬ", "\xff\xfe", "İ", "ǅ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sk := Skeleton(s)
		if !utf8.ValidString(sk) && utf8.ValidString(s) {
			t.Fatalf("Skeleton(%+q) = %+q is not valid UTF-8", s, sk)
		}
		if again := Skeleton(sk); again != sk {
			t.Fatalf("Skeleton is not idempotent on %+q: %+q then %+q", s, sk, again)
		}
		for _, r := range sk {
			if r != utf8.RuneError && (unicode.IsUpper(r) || ignorable(r)) {
				t.Fatalf("Skeleton(%+q) = %+q holds %+q", s, sk, r)
			}
		}
		w := Words(s)
		if !strings.HasPrefix(w, " ") || !strings.HasSuffix(w, " ") || strings.Contains(w, "  ") && w != " " {
			t.Fatalf("Words(%+q) = %q is not space-separated words", s, w)
		}
		for _, word := range strings.Fields(w) {
			for _, r := range word {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != utf8.RuneError {
					t.Fatalf("Words(%+q) = %q holds %+q", s, w, r)
				}
			}
		}
		for _, tail := range Tails(w) {
			if len(tail.(string)) > MaxPatternLen {
				t.Fatalf("tail %q is longer than %d bytes", tail, MaxPatternLen)
			}
		}
	})
}
