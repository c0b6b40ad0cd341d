package secrets_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/secrets"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"PASSWORD", true}, {"A", true}, {"API_KEY_2", true}, {"A" + strings.Repeat("B", 63), true},
		{"", false}, {"password", false}, {"2FA", false}, {"_X", false}, {"A-B", false},
		{"A" + strings.Repeat("B", 64), false}, {"PÄSS", false},
	}
	for _, tc := range tests {
		if got := secrets.ValidName(tc.name); got != tc.want {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFindAndCheck(t *testing.T) {
	tests := []struct {
		in       string
		want     []string
		checkErr string
	}{
		{"plain", nil, ""},
		{"{{secret:PASSWORD}}", []string{"PASSWORD"}, ""},
		{"u={{secret:USER}} p={{secret:PASS}} again {{secret:USER}}", []string{"USER", "PASS"}, ""},
		{"{{secret:password}}", nil, "malformed secret placeholder \"{{secret:password}}\""},
		{"{{secret:PASS", nil, "malformed"},
		{"ok {{secret:A}} then {{secret: B}}", []string{"A"}, "at byte 21"},
		{"{{ secret:A }}", nil, ""}, // not a placeholder at all
	}
	for _, tc := range tests {
		if got := secrets.Find(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Find(%q) = %v, want %v", tc.in, got, tc.want)
		}
		err := secrets.Check(tc.in)
		if (err != nil) != (tc.checkErr != "") || (err != nil && !strings.Contains(err.Error(), tc.checkErr)) {
			t.Errorf("Check(%q) = %v, want %q", tc.in, err, tc.checkErr)
		}
	}
}

func newSet(t *testing.T) *secrets.Set {
	t.Helper()
	s, err := secrets.NewSet(map[string]string{"PASSWORD": `pa"ss<w0rd>`, "USER": "alice", "PIN": "alice-1234"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewSet(t *testing.T) {
	for _, bad := range []map[string]string{{"lower": "x"}, {"OK": ""}} {
		if _, err := secrets.NewSet(bad); err == nil {
			t.Errorf("NewSet(%v) accepted", bad)
		} else if strings.Contains(err.Error(), "x") && bad["lower"] == "x" && strings.Contains(err.Error(), `"x"`) {
			t.Errorf("error shows a value: %v", err)
		}
	}
	s := newSet(t)
	if got, want := s.Names(), []string{"PASSWORD", "PIN", "USER"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	for _, out := range []string{s.String(), fmt.Sprintf("%v %+v", s, s), mustJSON(t, s)} {
		if strings.Contains(out, "alice") || strings.Contains(out, "w0rd") {
			t.Errorf("a value is printed: %s", out)
		}
	}
	var nilSet *secrets.Set
	if nilSet.Len() != 0 || nilSet.Has("X") || nilSet.Redact("x") != "x" || nilSet.Names() != nil {
		t.Error("nil set misbehaves")
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResolve(t *testing.T) {
	s := newSet(t)
	got, err := s.Resolve("{{secret:USER}}:{{secret:PASSWORD}}")
	if err != nil || got != `alice:pa"ss<w0rd>` {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	_, err = s.Resolve("{{secret:NOPE}}")
	var ue *secrets.UnknownError
	if !errors.As(err, &ue) || ue.Name != "NOPE" {
		t.Errorf("err = %v, want UnknownError NOPE", err)
	}
	if _, err := s.Resolve("{{secret:bad}}"); err == nil {
		t.Error("malformed placeholder resolved")
	}
}

func TestRedact(t *testing.T) {
	s := newSet(t)
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"Signed in as alice", "Signed in as {{secret:USER}}"},
		// The longer value wins over the shorter one it contains.
		{"pin alice-1234", "pin {{secret:PIN}}"},
		{`value="pa"ss<w0rd>"`, `value="{{secret:PASSWORD}}"`},
	}
	for _, tc := range tests {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestGuard(t *testing.T) {
	g := newSet(t).Guard()
	tests := []struct {
		name string
		body string
		leak string // secret name, "" for none
	}{
		{"clean", `{"messages":[{"content":"type {{secret:PASSWORD}}"}]}`, ""},
		{"raw", `{"messages":[{"content":"user alice"}]}`, "USER"},
		{"JSON-escaped quote and HTML", `{"c":"pa\"ss\u003cw0rd\u003e"}`, "PASSWORD"},
		{"unicode-escaped letters", `{"c":"\u0061lice"}`, "USER"},
		{"in a key", `{"alice":1}`, "USER"},
		{"not JSON, raw", `user=alice`, "USER"},
		{"empty", ``, ""},
		{"spaced out in a string", `{"c":"you typed p a s s w 0 r d"}`, "PASSWORD"},
		{"fullwidth", `{"c":"ｐａｓｓｗ０ｒｄ"}`, "PASSWORD"},
		{"JSON five strings deep", `{"c":` + nestJSON(`pa"ss<w0rd>`, 5) + `}`, "PASSWORD"},
		{"HTML references in a string", `{"c":"pa&quot;ss&#60;w0rd&#x3E;"}`, "PASSWORD"},
		{"percent twice in a string", `{"c":"/r?u=pa%2522ss%253Cw0rd%253E"}`, "PASSWORD"},
		{"cut short: whole values only", `{"c":"pa\"ss<w0"}`, ""},
	}
	for _, tc := range tests {
		err := g([]byte(tc.body))
		var le *secrets.LeakError
		switch {
		case tc.leak == "" && err != nil:
			t.Errorf("%s: err = %v", tc.name, err)
		case tc.leak != "" && (!errors.As(err, &le) || le.Name != tc.leak || !errors.Is(err, secrets.ErrLeak)):
			t.Errorf("%s: err = %v, want a leak of %s", tc.name, err, tc.leak)
		case err != nil && (strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "w0rd")):
			t.Errorf("%s: error shows the value: %v", tc.name, err)
		}
	}
	var empty *secrets.Set
	if err := empty.Guard()([]byte("anything")); err != nil {
		t.Errorf("empty guard refused: %v", err)
	}
}

// nestJSON is value JSON-encoded depth times, each a string inside the
// next.
func nestJSON(value string, depth int) string {
	for range depth {
		b, _ := json.Marshal(value)
		value = string(b)
	}
	return value
}
