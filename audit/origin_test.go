package audit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseOriginPair(t *testing.T) {
	for _, tc := range []struct {
		in       string
		from, to string
		err      string
	}{
		{"http://127.0.0.1:8080=http://127.0.0.1:9090", "http://127.0.0.1:8080", "http://127.0.0.1:9090", ""},
		{"HTTP://Shop.Example:80/=https://staging.example:443", "http://shop.example", "https://staging.example", ""},
		{"http://[::1]:8080=http://localhost:1", "http://[::1]:8080", "http://localhost:1", ""},
		{"http://a.example", "", "", "FROM=TO"},
		{"http://a.example/x=http://b.example", "", "", "path"},
		{"http://a.example=ftp://b.example", "", "", "not an http"},
		{"=http://b.example", "", "", "FROM"},
		{"http://u:p@a.example=http://b.example", "", "", "user info"},
		{strings.Repeat("a", 5000), "", "", "longer"},
	} {
		p, err := ParseOriginPair(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseOriginPair(%q) = %+v, %v; want an error with %q", tc.in, p, err, tc.err)
			}
			continue
		}
		if err != nil || p.From != tc.from || p.To != tc.to {
			t.Errorf("ParseOriginPair(%q) = %+v, %v; want %s=%s", tc.in, p, err, tc.from, tc.to)
		}
	}
	var m OriginMap
	if err := m.Set("http://a.example=http://b.example"); err != nil {
		t.Fatal(err)
	}
	if err := m.Set("http://a.example:80=http://c.example"); err == nil {
		t.Error("the same origin mapped twice")
	}
}

func TestOriginMapURL(t *testing.T) {
	m := OriginMap{{From: "http://127.0.0.1:8080", To: "http://127.0.0.1:9090"}}
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8080/login?x=1#f", "http://127.0.0.1:9090/login?x=1#f"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:9090"},
		{"HTTP://127.0.0.1:8080/A%2F", "http://127.0.0.1:9090/A%2F"},
		{"http://127.0.0.1:80801/", "http://127.0.0.1:80801/"},
		{"http://evil.example/http://127.0.0.1:8080/", "http://evil.example/http://127.0.0.1:8080/"},
		{"about:blank", "about:blank"},
		{"", ""},
	} {
		if got := m.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := m.Reverse().URL("http://127.0.0.1:9090/x"); got != "http://127.0.0.1:8080/x" {
		t.Errorf("Reverse().URL = %q", got)
	}
	txt := `{"url":"http://127.0.0.1:8080/a","other":"http://127.0.0.1:80801/","x":"http://127.0.0.1:8080"}`
	want := `{"url":"http://127.0.0.1:9090/a","other":"http://127.0.0.1:80801/","x":"http://127.0.0.1:9090"}`
	if got := m.Text(txt); got != want {
		t.Errorf("Text = %s, want %s", got, want)
	}
}

// FuzzParseOriginPair: the --map-origin parser never panics, and what it
// accepts maps its own FROM to its TO and back.
func FuzzParseOriginPair(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:8080=http://127.0.0.1:9090", "https://a.example=http://b.example:81/",
		"http://[::1]:1=http://x", "=", "a=b=c", "http://%zz=http://x", "http://a.example/p=http://b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseOriginPair(s)
		if err != nil {
			return
		}
		if !utf8.ValidString(p.From) || strings.ContainsAny(p.From+p.To, "?#@ ") {
			t.Fatalf("ParseOriginPair(%q) = %+v", s, p)
		}
		m := OriginMap{p}
		if got := m.URL(p.From + "/x?y"); got != p.To+"/x?y" {
			t.Fatalf("URL(%q) = %q, want %q", p.From+"/x?y", got, p.To+"/x?y")
		}
		if got := m.Reverse().URL(m.URL(p.From + "/z")); got != p.From+"/z" {
			t.Fatalf("round trip of %q gave %q", p.From+"/z", got)
		}
	})
}
