package secrets_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/aegis-run/aegis/secrets"
)

// TestRedactEncodings: a value written in one of its common encodings, the
// way a page or a JSON document may carry it, is redacted and refused by
// the guard like the raw value.
func TestRedactEncodings(t *testing.T) {
	const value = `s3cr3t "pw"/&<x> ü+1`
	s, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(value)
	js2, _ := json.Marshal(string(js))
	rev := []rune(value)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	tests := []struct {
		name, in string
	}{
		{"raw", "you typed " + value},
		{"JSON-escaped", `{"t":` + string(js) + `}`},
		{"JSON-escaped twice", `{"snapshot":` + string(js2) + `}`},
		{"query-encoded", "/login?pw=" + url.QueryEscape(value)},
		{"path-encoded", "/u/" + url.PathEscape(value) + "/x"},
		{"percent, lower-case hex", "/u/" + strings.ToLower(url.PathEscape(value))},
		{"HTML-escaped", "<p>" + html.EscapeString(value) + "</p>"},
		{"base64", "token " + base64.StdEncoding.EncodeToString([]byte(value))},
		{"base64 URL alphabet", "t=" + base64.URLEncoding.EncodeToString([]byte(value))},
		{"base64 after one byte", base64.StdEncoding.EncodeToString([]byte("a" + value + "z"))},
		{"base64 after two bytes", base64.StdEncoding.EncodeToString([]byte("ab" + value + "yz"))},
		{"base64 after many bytes, URL alphabet", base64.RawURLEncoding.EncodeToString([]byte(`{"user":"al","pw":"` + value + `"}`))},
		{"hex", "0x" + hex.EncodeToString([]byte(value))},
		{"hex upper-case", strings.ToUpper(hex.EncodeToString([]byte(value)))},
		{"reversed", "mirror: " + string(rev)},
		{"query-encoded twice", "/r?next=" + url.QueryEscape("/login?pw="+url.QueryEscape(value))},
		{"path-encoded twice, lower-case hex", "/u/" + strings.ToLower(url.PathEscape(url.PathEscape(value)))},
		{"JSON-escaped three deep (Go)", jsonDeep(value, 3)},
		{"JSON-escaped four deep (Go)", jsonDeep(value, 4)},
		{"HTML decimal references", "<p>" + numericRefs(value, "&#%d;", true) + "</p>"},
		{"HTML hex references, lower case", numericRefs(value, "&#x%x;", true)},
		{"HTML hex references, upper case", numericRefs(value, "&#x%X;", true)},
		{"HTML decimal references for specials", numericRefs(value, "&#%d;", false)},
		{"HTML hex references for specials", numericRefs(value, "&#x%X;", false)},
	}
	guard := s.Guard()
	for _, tc := range tests {
		got := s.Redact(tc.in)
		if !strings.Contains(got, "{{secret:PW}}") {
			t.Errorf("%s: Redact(%q) = %q, want the placeholder in it", tc.name, tc.in, got)
		}
		body, _ := json.Marshal(map[string]string{"content": tc.in})
		var le *secrets.LeakError
		if err := guard(body); !errors.As(err, &le) || le.Name != "PW" {
			t.Errorf("%s: guard = %v, want a leak of PW", tc.name, err)
		}
	}
}

// TestShortValuesOnlyEscaped: a value shorter than MinDerivedLen is
// looked for raw and escaped only; its reversal, hex or base64 would match
// ordinary text by chance.
func TestShortValuesOnlyEscaped(t *testing.T) {
	s, err := secrets.NewSet(map[string]string{"PIN": "1234"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"pin 1234", "pin {{secret:PIN}}"},
		{"count down 4321", "count down 4321"},
		{"hex 31323334", "hex 31323334"},
	} {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestBase64EveryAlignment: whatever precedes and follows the value, the
// base64 of the whole holds the value's redactable form.
func TestBase64EveryAlignment(t *testing.T) {
	const value = "correct horse battery"
	s, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	for pre := 0; pre < 7; pre++ {
		for post := 0; post < 4; post++ {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
				in := enc.EncodeToString([]byte(strings.Repeat("p", pre) + value + strings.Repeat("q", post)))
				if got := s.Redact(in); got == in {
					t.Errorf("prefix %d, suffix %d: %q not redacted", pre, post, in)
				}
			}
		}
	}
}

// jsonDeep is value JSON-encoded depth times, each a string inside the
// next, as Go writes it (<, > and & as \u003c...).
func jsonDeep(value string, depth int) string {
	for range depth {
		b, _ := json.Marshal(value)
		value = string(b)
	}
	return value
}

// numericRefs writes value's runes as HTML numeric references: all of
// them, or only those that are not ASCII letters or digits.
func numericRefs(value, format string, all bool) string {
	var b strings.Builder
	for _, r := range value {
		if !all && r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

// TestNormalizedDecodes: the normalized check decodes escapes (JSON
// \uXXXX at any depth, HTML references, percent escapes once or twice)
// and folds compatibility forms (fullwidth) before it compares, so that
// the escaping's own letters and digits do not hide a value it does not
// list among its forms; the span masked is the escaped text.
func TestNormalizedDecodes(t *testing.T) {
	const value = `Tr0ub4dor&<x> 9z`
	s, err := secrets.NewSet(map[string]string{"PW": value})
	if err != nil {
		t.Fatal(err)
	}
	ph := secrets.Placeholder("PW")
	fullwidth := func(v string) string {
		var b strings.Builder
		for _, r := range v {
			if r > ' ' && r < 0x7f {
				r += 0xFF01 - '!'
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	deep := jsonDeep(value, 6)
	from, to := strings.Index(deep, "Tr0ub"), strings.LastIndex(deep, "9z")+2
	tests := []struct {
		name, in, want string
	}{
		{"JSON six deep", "a " + deep + " b", "a " + deep[:from] + ph + deep[to:] + " b"},
		{"fullwidth", "you typed " + fullwidth(value) + ".", "you typed " + ph + "."},
		{"fullwidth, spaced", "ｔ ｒ ０ ｕ ｂ ４ ｄ ｏ ｒ ｘ ９ ｚ", ph},
		{"HTML named references escaped twice", "x " + html.EscapeString(html.EscapeString(value)), "x " + ph},
		{"mixed references", "&#84;r&#x30;ub&#X34;dor&amp;&lt;x&gt; 9z", ph},
		{"percent, spaced", "%54 %72 %30 ub4dor x 9z", ph},
		{"percent three times", url.QueryEscape(url.QueryEscape(url.QueryEscape(value))), ph},
		{"percent-encoded UTF-8 letters", "%C3%BC", "%C3%BC"},
		{"an entity that is not one", "&nosuch; tr0ub", "&nosuch; tr0ub"},
	}
	guard := s.Guard()
	for _, tc := range tests {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		body, _ := json.Marshal(map[string]string{"content": tc.in})
		if err := guard(body); (err != nil) != (tc.want != tc.in) {
			t.Errorf("%s: guard = %v, want a refusal %v", tc.name, err, tc.want != tc.in)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"ＡＢＣ①ﬁ", secrets.Normalize("abc1fi")},
		{`\u0041\\u0062%43%2564&#69;&#x46;&amp;`, secrets.Normalize("AbCdEF")},
		{"%C3%BC", secrets.Normalize("ü")},
	} {
		if got := secrets.Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
