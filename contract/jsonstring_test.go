package contract

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestAppendJSONString(t *testing.T) {
	tests := []string{
		"", "abc", `"`, `\`, "\b\f\n\r\t", "\x00\x1f\x7f", "<a href='x'>&amp;</a>", "é日本😀",
		"\u2028\u2029", "\xff", "\xc3", "\xed\xa0\x80", "a\xf4\x90\x80\x80b", "\xef\xbf\xbd",
		`","affordances":[{"selector":"#evil"}]}`, "</script><!--", "\\\"\\u0022",
		"plain", "\"\\", "<a href='x'>&</a>", "\b\f\n\r\t\x00\x01\x1f\x7f", "\xff\xfe",
	}
	for _, s := range tests {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
	for _, s := range randomStrings(21, 22, 5000) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
}

// FuzzAppendJSONString holds AppendJSONString to encoding/json on any string:
// the same bytes, so one JSON string that decodes to the text (invalid
// UTF-8 replaced) and nothing else, of JSONStringLen's length.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<b>&</b>", "\"\\\n\x00", "é\u2028\xff", "\xed\xa0\x80😀", `"}]`, "a\"b", "<&>", "\u2028", "\x00\x1f", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendJSONString(nil, s)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendJSONString(%q) = %s, encoding/json writes %s", s, got, want)
		}
		if len(got) != JSONStringLen(s)+2 {
			t.Fatalf("AppendJSONString(%q) is %d bytes, JSONStringLen says %d", s, len(got), JSONStringLen(s)+2)
		}
	})
}

// marshaledLen is what JSONStringLen must equal: the length of encoding/json's
// encoding of s, without the quotes.
func marshaledLen(t testing.TB, s string) int {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) - 2
}

func TestJSONStringLen(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{`"`, 2},
		{`\`, 2},
		{"\b\f\n\r\t", 10},
		{"\x00", 6},
		{"\x1f", 6},
		{"\x7f", 1},
		{"<a href='x'>&amp;</a>", 21 + 5*5}, // < > & < >
		{"é", 2},
		{"日本", 6},
		{"😀", 4},
		{"\u2028\u2029", 12},
		{"\xff", 6},                // invalid UTF-8: \ufffd
		{"\xc3", 6},                // a truncated sequence
		{"\xed\xa0\x80", 18},       // an encoded surrogate: three invalid bytes
		{"a\xf4\x90\x80\x80b", 26}, // beyond U+10FFFF: four invalid bytes
		{"\xef\xbf\xbd", 3},        // U+FFFD itself is valid
		{"x\u2027y\u202a", 1 + 3 + 1 + 3},
	}
	for _, tt := range tests {
		if got := JSONStringLen(tt.s); got != tt.want {
			t.Errorf("JSONStringLen(%q) = %d, want %d", tt.s, got, tt.want)
		}
		if got, want := JSONStringLen(tt.s), marshaledLen(t, tt.s); got != want {
			t.Errorf("JSONStringLen(%q) = %d, encoding/json writes %d", tt.s, got, want)
		}
	}
	for _, s := range randomStrings(11, 12, 5000) {
		if got, want := JSONStringLen(s), marshaledLen(t, s); got != want {
			t.Fatalf("JSONStringLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
	}
}

// FuzzJSONStringLen holds JSONStringLen to encoding/json on any string.
func FuzzJSONStringLen(f *testing.F) {
	for _, s := range []string{"", "plain", "<b>&</b>", "\"\\\n\x00", "é\u2028\xff", "\xed\xa0\x80😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := JSONStringLen(s), marshaledLen(t, s); got != want {
			t.Fatalf("JSONStringLen(%q) = %d, encoding/json writes %d", s, got, want)
		}
	})
}

// randomStrings returns n strings of up to 40 pieces drawn from an
// alphabet of every class of byte encoding/json treats apart.
func randomStrings(seed1, seed2 uint64, n int) []string {
	alphabet := []string{"a", " ", `"`, `\`, "\n", "\x01", "<", ">", "&", "\x7f", "é", "日", "\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "😀"}
	r := rand.New(rand.NewPCG(seed1, seed2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}
