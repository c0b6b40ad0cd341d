package secrets_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html"
	"net/url"
	"strings"
	"testing"

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
