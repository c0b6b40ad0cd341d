package secrets_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/aegis-run/aegis/secrets"
)

// echoSecret has every character JSON escaping and percent-encoding treat
// specially, besides letters and digits.
const echoSecret = `Tr0ub4dor "x\y" &+ 9z`

func echoSet(t *testing.T) *secrets.Set {
	t.Helper()
	s, err := secrets.NewSet(map[string]string{"PASSWORD": echoSecret, "USER": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRedactDerived: a value the page spaced out, split across elements,
// re-cased or reversed is masked in place by the normalized check, the
// text around it kept.
func TestRedactDerived(t *testing.T) {
	s := echoSet(t)
	ph := secrets.Placeholder("PASSWORD")
	norm := secrets.Normalize(echoSecret) // tr0ub4dorxy9z
	spaced := strings.Join(strings.Split(norm, ""), " ")
	tests := []struct {
		name, in, want string
	}{
		{"spaced out", "You typed: " + spaced + ".", "You typed: " + ph + "."},
		{"dashes", "pw=" + strings.Join(strings.Split(norm, ""), "-") + "!", "pw=" + ph + "!"},
		{"split across elements (visible text)", "Mirror: Tr0ub4 dor xy 9z end", "Mirror: " + ph + " end"},
		{"upper-cased", "TR0UB4DOR XY 9Z", ph},
		{"reversed", "z9 yx rod4bu0 rt", ph},
		{"twice", spaced + " and " + spaced, ph + " and " + ph},
		{"a short prefix only", "Tr0ub4d", "Tr0ub4d"},
		{"short secret not normalized", "a l i c e", "a l i c e"},
		{"raw short secret", "alice", secrets.Placeholder("USER")},
		{"JSON as JavaScript writes it (& not escaped)", `{"t":"Tr0ub4dor \"x\\y\" &+ 9z"}`, `{"t":"` + ph + `"}`},
		{"encodeURIComponent", "help for Tr0ub4dor%20%22x%5Cy%22%20%26%2B%209z", "help for " + ph},
		{"percent-encoded", "/login?pw=" + url.QueryEscape(echoSecret), "/login?pw=" + ph},
	}
	for _, tc := range tests {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestMaskFound(t *testing.T) {
	s := echoSet(t)
	tests := []struct {
		in          string
		wantNames   []string
		wantDerived bool
	}{
		{"nothing here", nil, false},
		{echoSecret, []string{"PASSWORD"}, false},
		{"alice: t r 0 u b 4 d o r x y 9 z", []string{"PASSWORD", "USER"}, true},
	}
	for _, tc := range tests {
		_, got := s.Mask(tc.in)
		if strings.Join(got.Names, ",") != strings.Join(tc.wantNames, ",") || got.Derived != tc.wantDerived {
			t.Errorf("Mask(%q) found %+v, want %v derived %v", tc.in, got, tc.wantNames, tc.wantDerived)
		}
	}
}

func TestRefuse(t *testing.T) {
	s := echoSet(t)
	tests := []struct {
		value string
		want  string // the secret named, "" for accepted
	}{
		{"Order #12", ""},
		{"You typed: " + echoSecret, "PASSWORD"},
		{"https://x.test/?pw=" + url.QueryEscape(echoSecret), "PASSWORD"},
		{"T r 0 u b 4 d o r x y 9 z", "PASSWORD"},
		{"hello alice", "USER"},
	}
	for _, tc := range tests {
		err := s.Refuse("the extracted text of #m", tc.value)
		var he *secrets.HeldError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Refuse(%q) = %v, want nil", tc.value, err)
		case tc.want != "" && (!errors.As(err, &he) || he.Name != tc.want || !errors.Is(err, secrets.ErrHeld)):
			t.Errorf("Refuse(%q) = %v, want a HeldError naming %s", tc.value, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "Tr0ub4dor"):
			t.Errorf("the refusal quotes the value: %v", err)
		}
	}
}

// TestWriter: what goes through a Writer is filtered by whole lines, a
// value written in pieces included, and an unfinished line waits for
// Flush.
func TestWriter(t *testing.T) {
	s := echoSet(t)
	var out bytes.Buffer
	w := secrets.NewWriter(&out, s)
	half := len(echoSecret) / 2
	for _, p := range []string{"step 1 typed " + echoSecret[:half], echoSecret[half:] + "\nstep 2 ", "T R 0 U B 4 D O R X Y 9 Z\nprompt: " + echoSecret} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(out.String(), "prompt") {
		t.Errorf("an unfinished line was written before Flush: %q", out.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	ph := secrets.Placeholder("PASSWORD")
	want := "step 1 typed " + ph + "\nstep 2 " + ph + "\nprompt: " + ph
	if got := out.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzNormalizedSpans: every span the normalized check reports is exact
// (its letters and digits, case-folded, are the secret's, forward or
// reversed, or hold it where spans merged), tight (it starts and ends on a
// letter or digit) and on rune boundaries; spans are ordered and disjoint;
// and the masked text holds the secret by the normalized check no more.
func FuzzNormalizedSpans(f *testing.F) {
	for _, seed := range []struct{ text, secret string }{
		{"You typed: s e c r e t 1 2", "secret12"},
		{"<b>Sec</b><i>ret12</i>", "secret12"},
		{"21terces", "secret12"},
		{"ＳＥＣＲＥＴ１２ fullwidth", "secret12"},
		{"ſecret12 long s", "SECRET12"},
		{"secret12secret12secret1", "secret12"},
		{"a secret12 and 21terces", "secret12"},
		{"aaaaaaaaaaaa", "aaaaaaaa"},
		{"\xff\xfes e c r e t 1 2\x80", "secret12"},
	} {
		f.Add(seed.text, seed.secret)
	}
	f.Fuzz(func(t *testing.T, text, secret string) {
		target := secrets.Normalize(secret)
		if secret == "" || utf8.RuneCountInString(target) < secrets.MinNormalizedLen {
			return
		}
		s, err := secrets.NewSet(map[string]string{"S": secret})
		if err != nil {
			return
		}
		rev := []rune(target)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		bound := map[int]bool{len(text): true}
		for i := range text {
			bound[i] = true
		}
		prev := 0
		for _, sp := range s.NormalizedSpans(text) {
			if sp.Start < prev || sp.End <= sp.Start || sp.End > len(text) || sp.Name != "S" {
				t.Fatalf("span %+v out of order or bounds (previous end %d, text %d bytes)", sp, prev, len(text))
			}
			prev = sp.End
			part := text[sp.Start:sp.End]
			if !bound[sp.Start] || !bound[sp.End] {
				t.Fatalf("span %+v not on rune boundaries of %q", sp, text)
			}
			first, _ := utf8.DecodeRuneInString(part)
			last, _ := utf8.DecodeLastRuneInString(part)
			// Tight: it starts on a letter or digit or the start of an
			// escape (\uXXXX, &...;, %XX), and ends on a letter or digit
			// or the end of one.
			if !isAlnum(first) && !strings.ContainsRune(`\&%`, first) && first < utf8.RuneSelf || !isAlnum(last) && last != ';' && last < utf8.RuneSelf {
				t.Fatalf("span %q does not start and end on a letter, digit or escape", part)
			}
			// The span holds the secret or its start cut short: at
			// least its first half, and MinNormalizedLen runes.
			k := max(secrets.MinNormalizedLen, (utf8.RuneCountInString(target)+1)/2)
			head, revHead := string([]rune(target)[:k]), string(rev[:k])
			n := secrets.Normalize(part)
			if !strings.HasPrefix(n, head) && !strings.HasPrefix(n, revHead) {
				t.Fatalf("span %q normalizes to %q, want it to start with %q or %q", part, n, head, revHead)
			}
		}
		masked, _ := s.Mask(text)
		if strings.Contains(masked, secret) {
			t.Fatalf("masked text %q still holds the secret", masked)
		}
		for _, sp := range s.NormalizedSpans(masked) {
			// What is left can only be a match the placeholders' own
			// letters take part in.
			if !strings.Contains(secrets.Normalize(masked[sp.Start:sp.End]), secrets.Normalize("secret")) {
				t.Fatalf("masked text %q still holds %q at %+v", masked, target, sp)
			}
		}
	})
}

// TestMaskCut: a value cut short before a cut marker (every bound that
// cuts page text marks it) is masked once at least half of it (and
// MinNormalizedLen bytes) is there, raw or by the normalized check;
// elsewhere, the end of a text included, once three quarters of it are,
// so that an ordinary word a value starts with stays.
func TestMaskCut(t *testing.T) {
	const long = "correct-horse-battery-staple-42" // 31 bytes: its first 16 are enough
	s, err := secrets.NewSet(map[string]string{"PW": long, "PIN": "12345678x", "WORD": "password-2024!xyz", "ACCENT": "abcdefgé!"})
	if err != nil {
		t.Fatal(err)
	}
	ph, pin := secrets.Placeholder("PW"), secrets.Placeholder("PIN")
	tests := []struct {
		name, in, want string
	}{
		{"cut, marked", "typed: " + long[:20] + "…", "typed: " + ph + "…"},
		{"the end of a text is not a cut", "typed: " + long[:20], "typed: " + long[:20]},
		{"three quarters at the end", "typed: " + long[:24], "typed: " + ph},
		{"cut before a marker", "typed: " + long[:25] + "…", "typed: " + ph + "…"},
		{"cut, text going on", "a " + long[:16] + "...] b", "a " + ph + "...] b"},
		{"cut twice", long[:16] + "… " + long[:30], ph + "… " + ph},
		{"half, text going on", long[:16] + " and more", long[:16] + " and more"},
		{"three quarters, text going on", long[:24] + " but more", ph + " but more"},
		{"a word a value starts with", "Password: (8 characters)", "Password: (8 characters)"},
		{"that word cut short, marked", "typed: password-20…", "typed: " + secrets.Placeholder("WORD") + "…"},
		{"that word as a selector", "#password", "#password"},
		{"that word ending a label", "Forgot password", "Forgot password"},
		{"less than half", "typed: " + long[:14], "typed: " + long[:14]},
		{"letters and digits cut short", "typed: C O R R E C T H O R S E B A T …", "typed: " + ph + " …"},
		{"letters and digits, less than half", "typed: correct horse", "typed: correct horse"},
		{"short value: 8 bytes of 9, cut", "pin 12345678…", "pin " + pin + "…"},
		{"short value: 8 bytes of 9, whole text", "pin 12345678", "pin 12345678"},
		{"a rune of the value cut in its first bytes", "abcdefgè…", "abcdefgè…"},
		{"short value: 7 bytes of 9", "pin 1234567", "pin 1234567"},
		{"whole value", "pin 12345678x.", "pin " + pin + "."},
	}
	for _, tc := range tests {
		got, found := s.Mask(tc.in)
		if got != tc.want {
			t.Errorf("%s: Mask(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		if found.Any() != (got != tc.in) {
			t.Errorf("%s: found %+v, but the text changed: %v", tc.name, found, got != tc.in)
		}
	}
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// recorder records each Write it gets; it fails the first fail of them.
type recorder struct {
	writes []string
	fail   int
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.fail > 0 {
		r.fail--
		return 0, errors.New("disk full")
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

// TestWriterLongLine: a line that reaches MaxLineBuffer is written in
// pieces of that size, one Write of any length included, never held
// whole; each piece is filtered.
func TestWriterLongLine(t *testing.T) {
	s := echoSet(t)
	ph := secrets.Placeholder("PASSWORD")
	tests := []struct {
		name       string
		writes     []string
		wantPieces []int // lengths of the writes that reach the underlying writer before Flush
	}{
		{"one write of three and a half buffers", []string{strings.Repeat("a", 3*secrets.MaxLineBuffer+5)}, []int{secrets.MaxLineBuffer, secrets.MaxLineBuffer, secrets.MaxLineBuffer}},
		{"a line, then a long rest", []string{"x\n" + strings.Repeat("b", secrets.MaxLineBuffer)}, []int{2, secrets.MaxLineBuffer}},
		{"small writes up to the limit", []string{strings.Repeat("c", secrets.MaxLineBuffer-1), "cc"}, []int{secrets.MaxLineBuffer}},
		{"the value at the start of a piece", []string{echoSecret + strings.Repeat("d", secrets.MaxLineBuffer)}, []int{secrets.MaxLineBuffer - len(echoSecret) + len(ph)}},
	}
	for _, tc := range tests {
		var rec recorder
		w := secrets.NewWriter(&rec, s)
		total := 0
		for _, p := range tc.writes {
			n, err := w.Write([]byte(p))
			if err != nil || n != len(p) {
				t.Fatalf("%s: Write = %d, %v, want %d, nil", tc.name, n, err, len(p))
			}
			total += len(p)
		}
		var got []int
		for _, wr := range rec.writes {
			got = append(got, len(wr))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.wantPieces) {
			t.Errorf("%s: pieces %v, want %v", tc.name, got, tc.wantPieces)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out := strings.Join(rec.writes, ""); strings.Contains(out, echoSecret) || len(strings.ReplaceAll(out, ph, echoSecret)) != total {
			t.Errorf("%s: the output is not the input filtered (%d bytes of %d)", tc.name, len(out), total)
		}
	}
}

// TestWriterError: when the underlying writer fails, Write reports it and
// drops what it tried to write: the next line is written alone, not with
// the failed one again.
func TestWriterError(t *testing.T) {
	s := echoSet(t)
	tests := []struct {
		name  string
		fail  int
		lines []string
		want  []string // the writes that reach the underlying writer
	}{
		{"first write fails", 1, []string{"one\n", "two\n"}, []string{"two\n"}},
		{"nothing fails", 0, []string{"one\n", "two\n"}, []string{"one\n", "two\n"}},
		{"a held line fails with the next", 1, []string{"par", "tial\n", "next\n"}, []string{"next\n"}},
	}
	for _, tc := range tests {
		rec := &recorder{fail: tc.fail}
		w := secrets.NewWriter(rec, s)
		failed := 0
		for _, l := range tc.lines {
			n, err := w.Write([]byte(l))
			if err != nil {
				failed++
				if n > len(l) {
					t.Errorf("%s: Write reported %d of %d bytes", tc.name, n, len(l))
				}
			}
		}
		if failed != tc.fail {
			t.Errorf("%s: %d writes failed, want %d", tc.name, failed, tc.fail)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rec.writes) != fmt.Sprint(tc.want) {
			t.Errorf("%s: wrote %q, want %q", tc.name, rec.writes, tc.want)
		}
	}
}
