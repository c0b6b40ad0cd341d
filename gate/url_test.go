package gate

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestNormalizeURL(t *testing.T) {
	for _, tc := range []struct {
		raw                  string
		wantValid            bool
		wantScheme, wantHost string
		wantPort             int
		wantOrigin           string
		wantUserinfo         bool
		wantIP               string
	}{
		{"https://example.com", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"HTTPS://EXAMPLE.COM/A", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"https://example.com./", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"https://example.com:443/", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"https://example.com:/", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"http://example.com:8080/x?y#z", true, "http", "example.com", 8080, "http://example.com:8080", false, ""},
		{"https://ok.example@evil.example/", true, "https", "evil.example", 443, "https://evil.example", true, ""},
		{"https://user:pw@evil.example/", true, "https", "evil.example", 443, "https://evil.example", true, ""},
		{"https://a@b@evil.example/", true, "https", "evil.example", 443, "https://evil.example", true, ""},
		{"https://@evil.example/", true, "https", "evil.example", 443, "https://evil.example", true, ""},
		{"https://evil.example/@ok.example", true, "https", "evil.example", 443, "https://evil.example", false, ""},
		{"https://evil.example?@ok.example", true, "https", "evil.example", 443, "https://evil.example", false, ""},
		{"https://evil.example#@ok.example", true, "https", "evil.example", 443, "https://evil.example", false, ""},
		{"http://127.0.0.1/", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://2130706433/", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://0x7f000001/", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://0x7F.1/", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://0177.0.0.01/", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://127.1/", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://127.0.0.1./", true, "http", "127.0.0.1", 80, "http://127.0.0.1", false, "ipv4"},
		{"http://192.168.257/", true, "http", "192.168.1.1", 80, "http://192.168.1.1", false, "ipv4"},
		{"http://0x/", true, "http", "0.0.0.0", 80, "http://0.0.0.0", false, "ipv4"},
		{"http://256.0.0.1/", false, "http", "", 0, "", false, ""},
		{"http://1.2.3.4.5/", false, "http", "", 0, "", false, ""},
		{"http://08.0.0.1/", false, "http", "", 0, "", false, ""},
		{"http://4294967296/", false, "http", "", 0, "", false, ""},
		{"http://example.1/", false, "http", "", 0, "", false, ""},
		{"http://1.example/", true, "http", "1.example", 80, "http://1.example", false, ""},
		{"https://[::1]/", true, "https", "[::1]", 443, "https://[::1]", false, "ipv6"},
		{"https://[0:0:0:0:0:0:0:1]:8443/", true, "https", "[::1]", 8443, "https://[::1]:8443", false, "ipv6"},
		{"https://[::FFFF:127.0.0.1]/", true, "https", "[::ffff:127.0.0.1]", 443, "https://[::ffff:127.0.0.1]", false, "ipv6"},
		{"https://[fe80::1%25eth0]/", false, "https", "", 0, "", false, ""},
		{"https://[::1/", false, "https", "", 0, "", false, ""},
		{"https://[::1]x/", false, "https", "", 0, "", false, ""},
		{"https://bücher.example/", true, "https", "xn--bcher-kva.example", 443, "https://xn--bcher-kva.example", false, ""},
		{"https://XN--BCHER-KVA.example/", true, "https", "xn--bcher-kva.example", 443, "https://xn--bcher-kva.example", false, ""},
		{"https://faß.example/", true, "https", "xn--fa-hia.example", 443, "https://xn--fa-hia.example", false, ""},
		{"https://ｅｘａｍｐｌｅ.com/", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"https://example。com/", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"https://sh\u043ep.example/", true, "https", "xn--shp-ted.example", 443, "https://xn--shp-ted.example", false, ""},
		{"https://ex%61mple.com/", true, "https", "example.com", 443, "https://example.com", false, ""},
		{"https://my_host.example/", true, "https", "my_host.example", 443, "https://my_host.example", false, ""},
		{"https://example.com:65536/", false, "https", "", 0, "", false, ""},
		{"https://example.com:0/", false, "https", "", 0, "", false, ""},
		{"https://example.com:-1/", false, "https", "", 0, "", false, ""},
		{"https://example.com:8o/", false, "https", "", 0, "", false, ""},
		{"https://exa mple.com/", false, "", "", 0, "", false, ""},
		{" https://example.com/", false, "", "", 0, "", false, ""},
		{"https://example.com/\t", false, "", "", 0, "", false, ""},
		{"https://example.com/\u007f", false, "", "", 0, "", false, ""},
		{"java\tscript:alert(1)", false, "", "", 0, "", false, ""},
		{`https://example.com\@evil.example/`, false, "", "", 0, "", false, ""},
		{"//evil.example/", false, "", "", 0, "", false, ""},
		{"/relative", false, "", "", 0, "", false, ""},
		{"example.com", false, "", "", 0, "", false, ""},
		{"", false, "", "", 0, "", false, ""},
		{"https:example.com", false, "https", "", 0, "", false, ""},
		{"https:/example.com", false, "https", "", 0, "", false, ""},
		{"https:///example.com", false, "https", "", 0, "", false, ""},
		{"https://", false, "https", "", 0, "", false, ""},
		{"https://example..com/", false, "https", "", 0, "", false, ""},
		{"https://exa*mple.com/", false, "https", "", 0, "", false, ""},
		{"https://%zz/", false, "https", "", 0, "", false, ""},
		{"javascript:alert(1)", true, "javascript", "", 0, "", false, ""},
		{"JavaScript:alert(1)", true, "javascript", "", 0, "", false, ""},
		{"data:text/html,<b>x</b>", true, "data", "", 0, "", false, ""},
		{"file:///etc/passwd", true, "file", "", 0, "", false, ""},
		{"chrome://settings", true, "chrome", "", 0, "", false, ""},
		{"blob:https://example.com/1", true, "blob", "", 0, "", false, ""},
		{"about:blank", true, "about", "", 0, "", false, ""},
		{"\xff://x", false, "", "", 0, "", false, ""},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), false, "", "", 0, "", false, ""},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			f := NormalizeURL(tc.raw)
			if got, want := f.Valid, tc.wantValid; got != want {
				t.Fatalf("valid = %v (%s), want %v", got, f.Error, want)
			}
			if !f.Valid {
				if f.Error == "" || f.Host != "" {
					t.Errorf("invalid URL with error %q host %q", f.Error, f.Host)
				}
				if tc.wantScheme != "" && f.Scheme != tc.wantScheme {
					t.Errorf("scheme = %q, want %q", f.Scheme, tc.wantScheme)
				}
				return
			}
			got := []any{f.Scheme, f.Host, f.Port, f.Origin, f.Userinfo, f.IP}
			want := []any{tc.wantScheme, tc.wantHost, tc.wantPort, tc.wantOrigin, tc.wantUserinfo, tc.wantIP}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestURLPathWords(t *testing.T) {
	for raw, want := range map[string]string{
		"https://shop.example/account/deleteAccount?confirm=1#top": " account delete account confirm 1 ",
		"https://shop.example/%63heckout":                          " checkout ",
		"https://shop.example":                                     " ",
	} {
		if got := NormalizeURL(raw).PathWords; got != want {
			t.Errorf("%s: path words %q, want %q", raw, got, want)
		}
	}
}

func TestParseAllowedOrigin(t *testing.T) {
	for _, tc := range []struct {
		raw, wantOrigin, wantKey string
		wantErr                  bool
	}{
		{"https://example.com/some/path", "https://example.com", "https://example.com:443", false},
		{"https://Example.COM.", "https://example.com", "https://example.com:443", false},
		{"example.com", "https://example.com", "https://example.com:443", false},
		{"example.com:8443", "https://example.com:8443", "https://example.com:8443", false},
		{"http://localhost:3000", "http://localhost:3000", "http://localhost:3000", false},
		{"*.example.com", "https://*.example.com", "https://*.example.com:443", false},
		{"https://*.example.com", "https://*.example.com", "https://*.example.com:443", false},
		{"http://127.0.0.1", "http://127.0.0.1", "http://127.0.0.1:80", false},
		{"https://bücher.example", "https://xn--bcher-kva.example", "https://xn--bcher-kva.example:443", false},
		{"ftp://files.example", "", "", true},
		{"javascript:alert(1)", "", "", true},
		{"https://u@example.com", "", "", true},
		{"*.127.0.0.1", "", "", true},
		{"https://exa mple.com", "", "", true},
		{"", "", "", true},
	} {
		o, err := ParseAllowedOrigin(tc.raw)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err = %v, want error %v", tc.raw, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if o.Origin != tc.wantOrigin || originKey(o) != tc.wantKey {
			t.Errorf("%q: origin %q key %q, want %q %q", tc.raw, o.Origin, originKey(o), tc.wantOrigin, tc.wantKey)
		}
	}
}

func TestNormalizeDomain(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		wantErr   bool
	}{
		{"Payments.Example.", "payments.example", false},
		{"*.payments.example", "payments.example", false},
		{"https://pay.example/x", "pay.example", false},
		{"bücher.example", "xn--bcher-kva.example", false},
		{"127.0.0.1", "127.0.0.1", false},
		{"[::1]", "[::1]", false},
		{"bad host!", "", true},
		{"", "", true},
		{"https://", "", true},
	} {
		got, err := NormalizeDomain(tc.raw)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q (error %v)", tc.raw, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestOriginKeysAndSuffixes(t *testing.T) {
	f := NormalizeURL("https://a.b.example/")
	if got, want := originKeys(f), []any{"https://a.b.example:443", "https://*.a.b.example:443", "https://*.b.example:443", "https://*.example:443"}; !slices.Equal(got, want) {
		t.Errorf("origin keys %v, want %v", got, want)
	}
	if got, want := hostSuffixes(f), []any{"a.b.example", "b.example", "example"}; !slices.Equal(got, want) {
		t.Errorf("host suffixes %v, want %v", got, want)
	}
	ip := NormalizeURL("http://10.0.0.1:8080/")
	if got, want := originKeys(ip), []any{"http://10.0.0.1:8080"}; !slices.Equal(got, want) {
		t.Errorf("IP origin keys %v, want %v", got, want)
	}
	if got := hostSuffixes(ip); !slices.Equal(got, []any{"10.0.0.1"}) {
		t.Errorf("IP suffixes %v", got)
	}
	bad := NormalizeURL("javascript:x")
	if len(originKeys(bad)) != 0 || len(hostSuffixes(bad)) != 0 {
		t.Error("keys for a URL without host")
	}
}

func TestWordsAndTails(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"btnPayNow"}, " btn pay now "},
		{[]string{"#delete-account", "Submit Order"}, " delete account submit order "},
		{[]string{"P\u200day", "ＰＡＹ", "pày"}, " pay pay pay "},
		{[]string{"", "  "}, " "},
		{[]string{"HTMLParser2"}, " htmlparser2 "},
		{[]string{"Ünïcödé"}, " unicode "},
	} {
		if got := Words(tc.in...); got != tc.want {
			t.Errorf("Words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got, want := Tails(" btn pay now "), []any{"btn pay now ", "pay now ", "now "}; !slices.Equal(got, want) {
		t.Errorf("Tails = %q, want %q", got, want)
	}
	long := Words(strings.Repeat("é", 100))
	for _, tl := range Tails(long) {
		if s := tl.(string); len(s) > MaxPatternLen || !strings.HasPrefix(s, "e") {
			t.Errorf("tail %q breaks the bound", s)
		}
	}
}

// checkNormalized asserts the invariants of a normalized URL.
func checkNormalized(t *testing.T, raw string, f URLFacts) {
	t.Helper()
	if f.Raw != raw {
		t.Fatalf("raw %q, want %q", f.Raw, raw)
	}
	if !f.Valid {
		if f.Error == "" || f.Host != "" || f.Origin != "" {
			t.Fatalf("invalid %q: %+v", raw, f)
		}
		return
	}
	if f.Scheme != strings.ToLower(f.Scheme) {
		t.Fatalf("%q: scheme %q not lowercase", raw, f.Scheme)
	}
	if f.Scheme != "http" && f.Scheme != "https" {
		if f.Host != "" {
			t.Fatalf("%q: host %q for scheme %s", raw, f.Host, f.Scheme)
		}
		return
	}
	h := f.Host
	if h == "" || strings.ContainsRune(h, '@') || strings.HasSuffix(h, ".") || h != strings.ToLower(h) {
		t.Fatalf("%q: host %q breaks the invariants", raw, h)
	}
	for _, r := range h {
		if r > unicode.MaxASCII || unicode.IsSpace(r) {
			t.Fatalf("%q: host %q is not ASCII without spaces", raw, h)
		}
	}
	if f.Port < 1 || f.Port > 65535 || !strings.HasPrefix(f.Origin, f.Scheme+"://"+h) {
		t.Fatalf("%q: port %d origin %q", raw, f.Port, f.Origin)
	}
	// Normalizing is idempotent on the origin.
	if g := NormalizeURL(f.Origin + "/"); !g.Valid || g.Host != h || g.Port != f.Port || g.Userinfo {
		t.Fatalf("%q: origin %q normalizes to %+v", raw, f.Origin, g)
	}
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range randURLs {
		f.Add(s)
	}
	for _, s := range []string{"http://0x7f.1/", "https://[::ffff:1.2.3.4]:80/", "https://xn--/", "https://xn--a/", "http://١٢٧.0.0.1/", "https://a.b.c.d.e.f/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		checkNormalized(t, raw, NormalizeURL(raw))
		if o, err := ParseAllowedOrigin(raw); err == nil {
			if o.Host == "" || strings.HasSuffix(o.Host, ".") || o.Host != strings.ToLower(o.Host) || strings.Contains(o.Host, "@") {
				t.Fatalf("allowed origin %q: %+v", raw, o)
			}
		}
		if d, err := NormalizeDomain(raw); err == nil && (d == "" || strings.HasSuffix(d, ".") || d != strings.ToLower(d) || strings.Contains(d, "@")) {
			t.Fatalf("domain %q: %q", raw, d)
		}
	})
}
