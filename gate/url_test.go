package gate

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/aegis-run/aegis/contract"
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
	for _, tc := range []struct {
		raw  string
		want []string
	}{
		{"https://shop.example/account/deleteAccount?confirm=1#top", []string{"account", "delete", "account", "confirm", "1"}},
		{"https://shop.example/%63heckout", []string{"checkout"}},
		{"https://shop.example/PAY-now_Later.html", []string{"pay", "now", "later", "html"}},
		{"https://shop.example/display/repayment-faq", []string{"display", "repayment", "faq"}},
		{"https://shop.example", nil},
		{"https://shop.example/#/pay", nil},
		{"javascript:pay()", nil},
	} {
		if got := NormalizeURL(tc.raw).PathWords; !slices.Equal(got, tc.want) {
			t.Errorf("%s: path words %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestURLAddress(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"https://shop.example/checkout", "https://shop.example/checkout"},
		{"HTTPS://Shop.Example.:443/checkout#top", "https://shop.example/checkout"},
		{"https://shop.example/checkout?amount=5#x", "https://shop.example/checkout?amount=5"},
		{"https://shop.example", "https://shop.example/"},
		{"https://shop.example?q=1", "https://shop.example/?q=1"},
		{"http://127.0.0.1:8080/pay-info", "http://127.0.0.1:8080/pay-info"},
		// As written: another spelling of the path is another address.
		{"https://shop.example/%63heckout", "https://shop.example/%63heckout"},
		{"https://shop.example/a/../checkout", "https://shop.example/a/../checkout"},
		{"javascript:location='/checkout'", ""},
		{"https://exa mple.com/", ""},
	} {
		if got := NormalizeURL(tc.raw).Address; got != tc.want {
			t.Errorf("%s: address %q, want %q", tc.raw, got, tc.want)
		}
	}
}

func TestPathTerms(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{nil, []string{}},
		{[]string{"pay"}, []string{"pay"}},
		{[]string{"account", "log", "out"}, []string{"account", "account log", "account log out", "log", "log out", "out"}},
		{[]string{"a", "b", "c", "d"}, []string{"a", "a b", "a b c", "b", "b c", "b c d", "c", "c d", "d"}},
		{[]string{"pay", "pay"}, []string{"pay", "pay pay"}},
	} {
		got := slices.Sorted(maps.Keys(PathTerms(tc.words)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: terms %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestURLRisk: the high-risk URL patterns match whole words of the path and
// query, and the task's own start URLs are not raised by their names
// (issue 15), through the embedded policy.
func TestURLRisk(t *testing.T) {
	paused, allowed, denied := contract.ResultPaused, contract.ResultAllowed, contract.ResultDenied
	start := func(urls ...string) func(*Request) {
		return func(r *Request) { r.Session.AllowedOrigins = append(urls, "https://*.docs.example") }
	}
	both := func(fs ...func(*Request)) func(*Request) {
		return func(r *Request) {
			for _, f := range fs {
				f(r)
			}
		}
	}
	runDecideCases(t, []decideCase{
		{"high: /checkout", navigateTo("https://shop.example/checkout"), paused, nil, contract.RiskHigh},
		{"high: /api/pay", navigateTo("https://shop.example/api/pay"), paused, nil, contract.RiskHigh},
		{"high: /pay-now", navigateTo("https://shop.example/pay-now"), paused, nil, contract.RiskHigh},
		{"high: /PayNow", navigateTo("https://shop.example/PayNow"), paused, nil, contract.RiskHigh},
		{"high: /account/delete", navigateTo("https://shop.example/account/delete"), paused, nil, contract.RiskHigh},
		{"high: /account/log-out", navigateTo("https://shop.example/account/log-out"), paused, nil, contract.RiskHigh},
		{"high: ?action=delete", navigateTo("https://shop.example/api?action=delete"), paused, nil, contract.RiskHigh},
		{"high: /payments (listed)", navigateTo("https://shop.example/payments"), paused, nil, contract.RiskHigh},
		{"medium: /display", navigateTo("https://shop.example/display"), allowed, nil, contract.RiskMedium},
		{"medium: /repayment-faq", navigateTo("https://shop.example/repayment-faq"), allowed, nil, contract.RiskMedium},
		{"medium: /undelete-help", navigateTo("https://shop.example/undelete-help"), allowed, nil, contract.RiskMedium},
		{"medium: /paypal-faq", navigateTo("https://shop.example/paypal-faq"), allowed, nil, contract.RiskMedium},
		{"medium: words in the fragment", navigateTo("https://shop.example/help#pay"), allowed, nil, contract.RiskMedium},
		{"start URL /checkout", both(start("https://shop.example/checkout"), navigateTo("https://shop.example/checkout")), allowed, nil, contract.RiskMedium},
		{"start URL, second of the list", both(start("https://shop.example/", "https://shop.example/help/transfer-guide.html"), navigateTo("https://shop.example/help/transfer-guide.html")), allowed, nil, contract.RiskMedium},
		{"start URL, spelled otherwise", both(start("https://shop.example/checkout"), navigateTo("HTTPS://SHOP.example:443/checkout#top")), allowed, nil, contract.RiskMedium},
		{"start URL with another query", both(start("https://shop.example/checkout"), navigateTo("https://shop.example/checkout?amount=500")), paused, nil, contract.RiskHigh},
		{"start URL, other path", both(start("https://shop.example/checkout"), navigateTo("https://shop.example/pay")), paused, nil, contract.RiskHigh},
		{"start URL, path encoded otherwise", both(start("https://shop.example/checkout"), navigateTo("https://shop.example/%63heckout")), paused, nil, contract.RiskHigh},
		{"start origin only", both(start("https://shop.example"), navigateTo("https://shop.example/checkout")), paused, nil, contract.RiskHigh},
		{"start URL on a blocked domain", both(start("https://payments.example/pay"), navigateTo("https://payments.example/pay")), denied, []string{"blocked_domain"}, ""},
		{"start URL, click Pay on it", both(start("https://shop.example/checkout"), func(r *Request) {
			r.ActiveURL = "https://shop.example/checkout"
			r.Target = &contract.Element{Tag: "button", Text: "Pay now"}
		}), paused, nil, contract.RiskHigh},
	})
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
