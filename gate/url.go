package gate

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/internal/text"
	"golang.org/x/net/idna"
)

// MaxURLLength bounds a URL the gate will parse, as the action schema does.
const MaxURLLength = 2048

// URLFacts is a URL as the gate parsed and normalized it. The policy
// matches on these fields, never on the raw string.
//
// A URL is Valid when it parsed; Valid says nothing about whether it is
// allowed: a valid javascript: URL is denied by the policy's scheme rule.
// Only http and https URLs get a Host, Port and Origin.
type URLFacts struct {
	// Raw is the URL as given.
	Raw string `json:"raw"`
	// Valid is true when the URL parsed; Error says why not.
	Valid bool `json:"valid"`
	// Error says why the URL did not parse; "" when Valid.
	Error string `json:"error"`
	// Scheme is the lowercased scheme ("https", "javascript", ...).
	Scheme string `json:"scheme"`
	// Host is the normalized host of an http(s) URL: lowercase ASCII, IDN
	// labels in punycode (UTS 46, non-transitional), no trailing dot, IPv4
	// in dotted-quad form whatever form it was written in (decimal, hex,
	// octal, fewer than four parts), IPv6 in brackets in RFC 5952 form.
	// It never contains '@', an uppercase letter, or a trailing dot.
	Host string `json:"host"`
	// Port is the port, the scheme's default when none was written.
	Port int `json:"port"`
	// Origin is scheme://host, with :port when not the default.
	Origin string `json:"origin"`
	// Userinfo is true when the URL has a user name or password before its
	// host (https://ok.example@evil.example/).
	Userinfo bool `json:"userinfo"`
	// IP is "ipv4" or "ipv6" when the host is an IP literal, else "".
	IP string `json:"ip"`
	// Address is the URL without its fragment, as a start URL is compared:
	// the Origin, then the path and query as written ("/" when the path is
	// empty). Only http(s) URLs have one.
	Address string `json:"address"`
	// PathWords is the path and query split into lowercase words (see
	// Words: split on every character that is not a letter or digit, and
	// between a lower- and an uppercase letter), for the high-risk URL
	// patterns: "/account/deleteAccount?confirm=1" is account, delete,
	// account, confirm, 1. The fragment is not in it: it never reaches the
	// server.
	PathWords []string `json:"path_words"`
}

// MaxURLPatternWords is the most words a high-risk URL pattern may have:
// PathTerms lists the runs of consecutive path words up to this length.
const MaxURLPatternWords = 3

var defaultPorts = map[string]int{"http": 80, "https": 443}

// idnaProfile converts hosts as browsers do (WHATWG URL "domain to ASCII":
// UTS 46 mapping, non-transitional, Bidi and joiner checks), without the
// STD3 rules that would refuse an underscore; the ASCII result is checked
// separately.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// NormalizeURL parses raw the way the gate judges it. It never panics.
//
// It is stricter than a browser where browsers and Go's net/url disagree,
// so that the URL the policy judged is the URL the browser loads: it
// refuses whitespace and control characters anywhere (browsers strip some),
// backslashes (browsers read them as '/'), relative and scheme-relative
// URLs, and http(s) URLs whose scheme is not followed by exactly "//".
func NormalizeURL(raw string) URLFacts {
	f := URLFacts{Raw: raw}
	if err := f.parse(raw); err != nil {
		return URLFacts{Raw: raw, Error: err.Error(), Scheme: f.Scheme}
	}
	f.Valid = true
	return f
}

func (f *URLFacts) parse(raw string) error {
	if raw == "" {
		return errors.New("empty URL")
	}
	if len(raw) > MaxURLLength {
		return fmt.Errorf("longer than %d bytes", MaxURLLength)
	}
	if !utf8.ValidString(raw) {
		return errors.New("not valid UTF-8")
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c <= 0x20 || c == 0x7f:
			return fmt.Errorf("contains whitespace or a control character at byte %d", i)
		case c == '\\':
			return fmt.Errorf("contains a backslash at byte %d", i)
		}
	}
	scheme, rest, ok := cutScheme(raw)
	if !ok {
		return errors.New("not an absolute URL (no scheme)")
	}
	f.Scheme = scheme
	if _, special := defaultPorts[scheme]; !special {
		// Opaque or non-web schemes (javascript:, data:, file:, blob:,
		// about:, chrome:): parsed no further; the policy refuses them by
		// scheme.
		return nil
	}
	if !strings.HasPrefix(rest, "//") || strings.HasPrefix(rest, "///") {
		return fmt.Errorf("%s URL must be written %s://host/...", scheme, scheme)
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?#")
	authority, tail := rest, ""
	if end >= 0 {
		authority, tail = rest[:end], rest[end:]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		f.Userinfo = true
		authority = authority[at+1:]
	}
	hostport := authority
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return err
	}
	f.Port = defaultPorts[scheme]
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || len(port) > 5 {
			return fmt.Errorf("invalid port %q", port)
		}
		f.Port = n
	}
	h, ipKind, err := NormalizeHost(host)
	if err != nil {
		return err
	}
	f.Host, f.IP = h, ipKind
	f.Origin = scheme + "://" + h
	if f.Port != defaultPorts[scheme] {
		f.Origin += ":" + strconv.Itoa(f.Port)
	}
	// The path and query as written, and as words for the high-risk URL
	// patterns. The fragment never reaches the server and is ignored.
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail = tail[:i]
	}
	f.Address = f.Origin + tail
	if tail == "" || tail[0] == '?' {
		f.Address = f.Origin + "/" + tail
	}
	f.PathWords = pathWords(tail)
	return nil
}

// pathWords is the path and query, percent-decoded when it decodes,
// split into words (see URLFacts.PathWords).
func pathWords(tail string) []string {
	if dec, err := url.PathUnescape(tail); err == nil {
		tail = dec
	}
	return strings.Fields(Words(tail))
}

// PathTerms is the set the high-risk URL patterns are looked up in: every
// run of 1 to MaxURLPatternWords consecutive path words, joined by single
// spaces. "/account/log-out" gives account, log, out, "account log", "log
// out" and "account log out": the pattern "log out" matches it, "pay"
// matches "/pay-now" and "/api/pay" but not "/display" or "/repayment".
func PathTerms(words []string) map[string]any {
	terms := make(map[string]any, len(words)*MaxURLPatternWords)
	for i := range words {
		for n := 1; n <= MaxURLPatternWords && i+n <= len(words); n++ {
			terms[strings.Join(words[i:i+n], " ")] = true
		}
	}
	return terms
}

// cutScheme splits "scheme:rest" when raw starts with a valid scheme (RFC
// 3986: a letter, then letters, digits, '+', '-', '.'), lowercasing it.
func cutScheme(raw string) (scheme, rest string, ok bool) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(raw[:i]), raw[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// splitHostPort splits an authority without userinfo into host and port
// ("" when absent or empty, as in "example.com:").
func splitHostPort(hp string) (host, port string, err error) {
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", "", errors.New("unterminated IPv6 literal")
		}
		host, rest := hp[:end+1], hp[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' {
			return "", "", fmt.Errorf("unexpected %q after IPv6 literal", rest)
		}
		return host, rest[1:], nil
	}
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		return hp[:i], hp[i+1:], nil
	}
	return hp, "", nil
}

// forbiddenHost are the characters WHATWG forbids in a domain, plus '%'
// (hosts are percent-decoded first).
const forbiddenHost = "\x00\t\n\r #/:<>?@[\\]^|%*\"'`{}"

// NormalizeHost normalizes a host as NormalizeURL does, and reports "ipv4"
// or "ipv6" for IP literals. It accepts a bracketed IPv6 literal, an IPv4
// address in any form a browser accepts (3232235777, 0xC0.0250.1.1,
// 192.168.257), or a domain name in Unicode or punycode.
func NormalizeHost(host string) (normalized, ip string, err error) {
	if host == "" {
		return "", "", errors.New("empty host")
	}
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", "", errors.New("unterminated IPv6 literal")
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", fmt.Errorf("invalid IPv6 literal %q", host)
		}
		return "[" + a.String() + "]", "ipv6", nil
	}
	dec, err := url.PathUnescape(host)
	if err != nil {
		return "", "", fmt.Errorf("invalid percent-encoding in host %q", host)
	}
	ascii, err := idnaProfile.ToASCII(dec)
	if err != nil {
		return "", "", fmt.Errorf("host %q is not a valid domain name: %v", host, err)
	}
	ascii = strings.ToLower(ascii)
	if strings.ContainsAny(ascii, forbiddenHost) {
		return "", "", fmt.Errorf("host %q contains a forbidden character", host)
	}
	if v4, isV4, err := parseIPv4(ascii); err != nil {
		return "", "", fmt.Errorf("host %q: %v", host, err)
	} else if isV4 {
		return v4, "ipv4", nil
	}
	ascii = strings.TrimSuffix(ascii, ".")
	if ascii == "" {
		return "", "", errors.New("empty host")
	}
	for label := range strings.SplitSeq(ascii, ".") {
		if label == "" {
			return "", "", fmt.Errorf("host %q has an empty label", host)
		}
		if len(label) > 63 {
			return "", "", fmt.Errorf("host %q has a label longer than 63 bytes", host)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", "", fmt.Errorf("host %q contains %q", host, c)
			}
		}
	}
	if len(ascii) > 253 {
		return "", "", fmt.Errorf("host %q is longer than 253 bytes", host)
	}
	return ascii, "", nil
}

// parseIPv4 implements the WHATWG "ends in a number" check and IPv4 parser:
// a host whose last label is numeric is an IPv4 address or invalid; each
// part may be decimal, octal (leading 0) or hex (0x), and the last part
// fills the remaining bytes (so 2130706433 and 127.1 are 127.0.0.1).
func parseIPv4(host string) (string, bool, error) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if !endsInNumber(parts[len(parts)-1]) {
		return "", false, nil
	}
	if len(parts) > 4 {
		return "", true, errors.New("IPv4 address with more than four parts")
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, err := parseIPv4Number(p)
		if err != nil {
			return "", true, err
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", true, errors.New("IPv4 part out of range")
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", true, errors.New("IPv4 address out of range")
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return a.String(), true, nil
}

func endsInNumber(label string) bool {
	if label == "" {
		return false
	}
	if allDigits(label, 10) {
		return true
	}
	if l := strings.ToLower(label); strings.HasPrefix(l, "0x") && allDigits(l[2:], 16) {
		return true
	}
	return false
}

func allDigits(s string, base int) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' && (base > 8 || c <= '7'):
		case base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

func parseIPv4Number(p string) (uint64, error) {
	if p == "" {
		return 0, errors.New("empty IPv4 part")
	}
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			return 0, nil
		}
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if !allDigits(p, base) || len(p) > 32 {
		return 0, fmt.Errorf("invalid IPv4 part %q", p)
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > 1<<32 {
		return 0, fmt.Errorf("IPv4 part %q out of range", p)
	}
	return n, nil
}

// AllowedOrigin is one entry of a session's allowlist, normalized.
type AllowedOrigin struct {
	// Raw is the entry as given.
	Raw string `json:"raw"`
	// Origin is the normalized origin, with "*." before the host when
	// subdomains are included.
	Origin string `json:"origin"`
	// Scheme is "http" or "https".
	Scheme string `json:"scheme"`
	// Host is the normalized host.
	Host string `json:"host"`
	// Port is the port, the scheme's default when none was written.
	Port int `json:"port"`
	// Subdomains is true when the entry also allows every subdomain of
	// Host (written with "*." before the host).
	Subdomains bool `json:"subdomains"`
}

// ParseAllowedOrigin normalizes one allowlist entry. An entry is a URL (the
// task's urls, seed 003: only its origin counts, the path is ignored) or a
// bare host, which means https://host. A host written "*.example.com" also
// allows every subdomain of example.com and example.com itself. Entries with
// userinfo, another scheme, or an invalid host are refused.
func ParseAllowedOrigin(raw string) (AllowedOrigin, error) {
	s := raw
	if _, _, ok := cutScheme(s); !ok || !strings.Contains(s, "://") {
		s = "https://" + s
	}
	sub := false
	if scheme, rest, ok := cutScheme(s); ok && strings.HasPrefix(rest, "//*.") {
		sub = true
		s = scheme + "://" + rest[len("//*."):]
	}
	f := NormalizeURL(s)
	switch {
	case !f.Valid:
		return AllowedOrigin{}, fmt.Errorf("allowed origin %q: %s", raw, f.Error)
	case f.Scheme != "http" && f.Scheme != "https":
		return AllowedOrigin{}, fmt.Errorf("allowed origin %q: scheme %s is not http or https", raw, f.Scheme)
	case f.Userinfo:
		return AllowedOrigin{}, fmt.Errorf("allowed origin %q: carries a user name or password", raw)
	}
	o := AllowedOrigin{Raw: raw, Origin: f.Origin, Scheme: f.Scheme, Host: f.Host, Port: f.Port, Subdomains: sub}
	if sub {
		if f.IP != "" {
			return AllowedOrigin{}, fmt.Errorf("allowed origin %q: an IP address has no subdomains", raw)
		}
		o.Origin = f.Scheme + "://*." + strings.TrimPrefix(f.Origin, f.Scheme+"://")
	}
	return o, nil
}

// NormalizeDomain normalizes one blocked-domain entry: a bare host, a host
// written "*.example.com" (the same as example.com: a blocked domain always
// covers its subdomains), or a URL, whose host counts.
func NormalizeDomain(raw string) (string, error) {
	s := strings.TrimPrefix(raw, "*.")
	if _, rest, ok := cutScheme(s); ok && strings.HasPrefix(rest, "//") {
		f := NormalizeURL(s)
		if !f.Valid || f.Host == "" {
			return "", fmt.Errorf("blocked domain %q: not a usable host", raw)
		}
		return f.Host, nil
	}
	h, _, err := NormalizeHost(s)
	if err != nil {
		return "", fmt.Errorf("blocked domain %q: %v", raw, err)
	}
	return h, nil
}

// urlFactsMap is the facts of a URL as the policy sees them
// (input.derived.active and target_url).
func urlFactsMap(f URLFacts) map[string]any {
	return map[string]any{
		"raw": text.CutRunes(f.Raw, MaxURLLength), "valid": f.Valid, "error": f.Error,
		"scheme": text.CutRunes(f.Scheme, 64), "host": f.Host, "port": f.Port, "origin": f.Origin,
		"userinfo": f.Userinfo, "ip": f.IP, "address": f.Address, "path_terms": PathTerms(f.PathWords),
		"origin_keys": originKeys(f), "host_suffixes": hostSuffixes(f),
	}
}

// originKeys lists the allowlist keys a URL matches: its exact origin
// "scheme://host:port", and the wildcard key "scheme://*.d:port" of its host
// and of each parent domain d (an allowlist entry *.example.com allows
// example.com and all its subdomains). IP literals match exactly only.
func originKeys(f URLFacts) []any {
	if !f.Valid || f.Host == "" {
		return []any{}
	}
	port := ":" + strconv.Itoa(f.Port)
	keys := []any{f.Scheme + "://" + f.Host + port}
	if f.IP == "" {
		for _, d := range hostSuffixList(f.Host) {
			keys = append(keys, f.Scheme+"://*."+d+port)
		}
	}
	return keys
}

// hostSuffixes lists the host and its parent domains, longest first
// (a.b.example, b.example, example); an IP literal only itself.
func hostSuffixes(f URLFacts) []any {
	if !f.Valid || f.Host == "" {
		return []any{}
	}
	if f.IP != "" {
		return []any{f.Host}
	}
	var out []any
	for _, d := range hostSuffixList(f.Host) {
		out = append(out, d)
	}
	return out
}

func hostSuffixList(h string) []string {
	out := []string{h}
	for i := 0; i < len(h); i++ {
		if h[i] == '.' && i+1 < len(h) {
			out = append(out, h[i+1:])
		}
	}
	return out
}

// originKey is the allowlist key of an allowed origin.
func originKey(o AllowedOrigin) string {
	host := o.Host
	if o.Subdomains {
		host = "*." + host
	}
	return o.Scheme + "://" + host + ":" + strconv.Itoa(o.Port)
}
