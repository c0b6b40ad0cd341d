package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/schemas"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		doc     string
		wantErr string // "" = canonical
	}{
		{`{}`, ""},
		{`[]`, ""},
		{`{"a":1,"b":[true,false,null],"c":"x"}`, ""},
		{`{"b":1,"a":2}`, "not sorted"},
		{`{"a":1,"a":2}`, "duplicate object key"},
		{`{"a": 1}`, "unexpected byte"},
		{`{"a":1} `, "data after"},
		{"{\"a\":\"\\u000b\"}", ""},
		{"{\"a\":\"\\u000B\"}", "non-canonical"},
		{`{"a":"\u0041"}`, "non-canonical"},
		{`{"a":"\/"}`, "non-canonical escape"},
		{`{"a":"\n"}`, ""},
		{`{"a":"\u000a"}`, "non-canonical"},
		{"{\"a\":\"\x01\"}", "control character"},
		{"{\"a\":\"\xff\"}", "invalid UTF-8"},
		{`{"a":"é€😀"}`, ""},
		{`1.0`, "not in canonical form"},
		{`1e2`, "not in canonical form"},
		{`100`, ""},
		{`-0`, "not in canonical form"},
		{`0.1`, ""},
		{`1e+21`, ""},
		{`1e21`, "not in canonical form"},
		{`01`, "invalid number"},
		{`1.`, "invalid number"},
		{`-`, "invalid number"},
		{`9007199254740993`, "not in canonical form"},
		{`tru`, "invalid literal"},
		{`"abc`, "unterminated string"},
		{`{"a":1,}`, "want an object key"},
		{`[1,]`, "unexpected byte"},
		{`{"\ud800":1}`, "non-canonical"},
		// UTF-16 order: U+1F600 (a surrogate pair, D83D...) sorts before U+FB01.
		{`{"😀":1,"ﬁ":2}`, ""},
		{`{"ﬁ":1,"😀":2}`, "not sorted"},
		// Keys with escapes are ordered decoded: U+0001 before U+000A.
		{`{"a\u0001":1,"a\n":2}`, ""},
		{`{"a\n":1,"a\u0001":2}`, "not sorted"},
		{`{"a\n":1,"a\n":2}`, "duplicate object key"},
		{`{"a":1,"a\n":2}`, ""},
		{`{"a\"":1,"a\\":2}`, ""},
		{`{"a\\":1,"a\"":2}`, "not sorted"},
		{`{"ab":1,"a":2}`, "not sorted"},
		{`{"é":1,"e":2}`, "not sorted"},
		{`{"e":1,"é":2}`, ""},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "nesting deeper"},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), ""},
	}
	for _, tt := range tests {
		checkCanonAgreement(t, []byte(tt.doc))
		_, err := ParseCanonical([]byte(tt.doc))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v, want canonical", tt.doc, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: %v, want an error containing %q", tt.doc, err, tt.wantErr)
		}
		// Whatever ParseCanonical accepts, Transform leaves unchanged.
		if err == nil {
			if c, cerr := Transform([]byte(tt.doc)); cerr != nil || !bytes.Equal(c, []byte(tt.doc)) {
				t.Errorf("%s: accepted, but its canonical form is %s (%v)", tt.doc, c, cerr)
			}
		}
	}
}

// checkCanonAgreement: ParseCanonical accepts doc exactly when it is its
// own canonical form, and then parses it as schemas.Parse does.
func checkCanonAgreement(t testing.TB, doc []byte) {
	v, err := ParseCanonical(doc)
	c, cerr := Transform(doc)
	isCanon := cerr == nil && bytes.Equal(c, doc)
	if (err == nil) != isCanon {
		t.Fatalf("%q: ParseCanonical error %v, but Transform gives %q (%v)", doc, err, c, cerr)
	}
	// Check, which builds nothing, gives the same verdict and the same
	// first deviation.
	if cerr := Check(doc, schemas.MaxDepth); fmt.Sprint(cerr) != fmt.Sprint(err) {
		t.Fatalf("%q: Check says %v, ParseCanonical %v", doc, cerr, err)
	}
	// ParseTape too, and its tape holds the same value.
	var tape schemas.Tape
	if terr := ParseTape(doc, &tape); fmt.Sprint(terr) != fmt.Sprint(err) {
		t.Fatalf("%q: ParseTape says %v, ParseCanonical %v", doc, terr, err)
	}
	if err == nil {
		want, _ := schemas.Parse(doc)
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: parsed %#v, schemas.Parse %#v", doc, v, want)
		}
		if got := tape.Value(0); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: tape value %#v, schemas.Parse %#v", doc, got, want)
		}
		if start, end := tape.Span(0); tape.Kind(0) != schemas.TapeString && (start != 0 || end != len(doc)) {
			t.Fatalf("%q: the document spans %d to %d", doc, start, end)
		}
	}
	if cerr == nil {
		if _, err := ParseCanonical(c); err != nil {
			t.Fatalf("%q: its canonical form %q is refused: %v", doc, c, err)
		}
	}
}

func FuzzParseCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-3e-7,"x\n\u0001"],"b":{"c":null}}`, `"😀ﬁ"`, `1e+21`, `[true,false]`} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("../schemas/testdata/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		var vf struct {
			Valid []struct{ Doc json.RawMessage }
		}
		json.Unmarshal(b, &vf)
		for _, v := range vf.Valid {
			if c, err := Transform(v.Doc); err == nil {
				f.Add(c)
			}
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCanonAgreement(t, doc)
	})
}

// TestUTF8Seq cross-checks the inline UTF-8 sequence check of the
// canonical parser with the standard library on every 1 to 4 byte
// sequence class.
func TestUTF8Seq(t *testing.T) {
	check := func(b []byte) {
		want := 0
		if r, n := utf8.DecodeRune(b); !(r == utf8.RuneError && n <= 1) {
			want = n
		}
		if got := utf8Seq(b, 0); got != want {
			t.Fatalf("% x: got %d, want %d", b, got, want)
		}
	}
	for a := 0x80; a < 0x100; a++ {
		check([]byte{byte(a)})
		for b := 0; b < 0x100; b++ {
			check([]byte{byte(a), byte(b)})
			for _, c := range []byte{0x00, 0x7f, 0x80, 0xbf, 0xc0} {
				check([]byte{byte(a), byte(b), c})
				for _, d := range []byte{0x00, 0x80, 0xbf, 0xc0} {
					check([]byte{byte(a), byte(b), c, d})
				}
			}
		}
	}
}

func FuzzUTF8Seq(f *testing.F) {
	f.Add([]byte("\xe2\x82\xac"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] < 0x80 {
			return
		}
		want := 0
		if r, n := utf8.DecodeRune(b); !(r == utf8.RuneError && n <= 1) {
			want = n
		}
		if got := utf8Seq(b, 0); got != want {
			t.Fatalf("% x: got %d, want %d", b, got, want)
		}
	})
}

// TestValidUTF8 cross-checks the DFA with the standard library on every
// sequence of up to three bytes (behind prefixes that put it on and off
// the ASCII fast path) and on a sample of longer ones.
func TestValidUTF8(t *testing.T) {
	for _, pre := range []string{"", "abcdefghijklmnopq", "é", "日本"} {
		for a := 0; a < 256; a++ {
			for b := 0; b < 256; b++ {
				for c := 0; c < 256; c += 5 {
					s := append([]byte(pre), byte(a), byte(b), byte(c))
					checkUTF8(t, s)
					checkUTF8(t, s[:len(s)-1])
				}
			}
		}
	}
	for _, s := range []string{"\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf0\x8f\xbf\xbf", strings.Repeat("日本語", 20) + "\xe6"} {
		if ValidUTF8([]byte(s)) != utf8.Valid([]byte(s)) {
			t.Errorf("%q", s)
		}
	}
}

// checkUTF8 compares ValidUTF8 and validUTF8Go with utf8.Valid on b.
func checkUTF8(t testing.TB, b []byte) {
	t.Helper()
	want := utf8.Valid(b)
	if got := ValidUTF8(b); got != want {
		t.Fatalf("ValidUTF8(% x) = %v, want %v", b, got, want)
	}
	if got := validUTF8Go(b); got != want {
		t.Fatalf("validUTF8Go(% x) = %v, want %v", b, got, want)
	}
}

// TestValidUTF8Words puts every pair of bytes, and a third from a sample
// (a different one for each pair),
// at places that cross what ValidUTF8 reads at once: the eight-byte words
// of validUTF8Go, the 32-byte blocks of validUTF8Blocks, the end of the
// blocks and the start of the bytes after them; after an ASCII run, a
// complete character or the start of one, and before more text.
func TestValidUTF8Words(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	thirds := []byte{0x00, 0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xe0, 0xe6, 0xed, 0xf0, 0xf4, 0xff}
	tail := []byte{'y', 0xe6, 0x97, 0xa5, 'z', 'z', 'z', 'z', 'z', 'z', 'z', 'z'}
	type place struct{ off, total int } // the first byte tried at off, in total bytes (0: as short as it comes)
	places := []place{{0, 0}, {3, 0}, {6, 0}, {7, 0}, {29, 96}, {30, 96}, {31, 96}, {32, 96}, {62, 70}, {63, 70}, {64, 70}, {65, 70}}
	for _, pre := range []string{"", "é", "\xe6", "\xe6\x97", "\xf0\x9f\x98"} {
		for _, pl := range places {
			head := []byte(strings.Repeat("x", max(0, pl.off-len(pre))) + pre)
			for a := 0; a < 256; a++ {
				for b := 0; b < 256; b++ {
					c := thirds[(a*7+b)%len(thirds)]
					s := append(append([]byte(nil), head...), byte(a), byte(b), c)
					s = append(s, tail...)
					for len(s) < pl.total {
						s = append(s, 'w')
					}
					checkUTF8(t, s)
				}
			}
		}
	}
}

func BenchmarkValidUTF8(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, pct := range []int{0, 1, 35} {
		text := []byte(markup(r, 256<<10, pct))
		b.Run(fmt.Sprintf("%d%%", pct), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for range b.N {
				if !ValidUTF8(text) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(fmt.Sprintf("%d%%/stdlib", pct), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for range b.N {
				if !utf8.Valid(text) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// TestValidUTF8Large cross-checks the four-way DFA of large inputs with
// the standard library: texts of every mix, each broken at random places
// and around the cuts between the four parts.
func TestValidUTF8Large(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	breaks := []string{"\xff", "\x80", "\xe6", "\xe6\x97", "\xed\xa0\x80", "\xc0\x80", "\xf4\x90\x80\x80", "\xf0\x9f\x98"}
	for _, pct := range []int{0, 1, 35, 90} {
		for _, n := range []int{1024, 1031, 4099, 70000} {
			base := []byte(markup(r, n, pct))
			checkUTF8(t, base)
			for k := range 200 {
				m := append([]byte(nil), base...)
				at := r.IntN(len(m))
				if k%2 == 0 { // near a cut
					at = min(len(m)-1, max(0, (1+r.IntN(3))*len(m)/4+r.IntN(9)-4))
				}
				brk := breaks[r.IntN(len(breaks))]
				if k%3 == 0 {
					m = append(m[:at], append([]byte(brk), m[at:]...)...)
				} else {
					m = append(m[:at], append([]byte(brk), m[min(len(m), at+len(brk)):]...)...)
				}
				checkUTF8(t, m)
			}
		}
	}
}

func FuzzValidUTF8(f *testing.F) {
	f.Add([]byte("héllo wörld, 日本語, a longer ASCII run follows.................\xff"))
	f.Add([]byte(strings.Repeat("日本語のテキスト and some ASCII ", 40) + "\xe6"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkUTF8(t, b)
	})
}

// markup returns n bytes of HTML-like text in which about pct percent of
// the bytes belong to non-ASCII characters (cut at a character start).
func markup(r *rand.Rand, n, pct int) string {
	ascii := []string{"<div class=\"row\">", "</div>", "price", "plan", "\n  ", "<li>", "</li>"}
	other := []string{"€20", "naïve", "日本語の", "価格表", "😀"}
	var b strings.Builder
	nonASCII := 0
	for b.Len() < n {
		w := ascii[r.IntN(len(ascii))]
		if nonASCII*100 < b.Len()*pct {
			w = other[r.IntN(len(other))]
			nonASCII += len(w)
		}
		b.WriteString(w)
	}
	return strings.ToValidUTF8(b.String()[:n], "")
}
