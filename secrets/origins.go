package secrets

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Secret is one secret of a Set: its value and the origins it is bound to,
// the only places the policy lets it be typed. No origins means none were
// declared: the session then binds the secret to the task's first origin.
type Secret struct {
	// Value is the secret's value.
	Value string
	// Origins are the http(s) origins the secret may be typed on
	// (scheme://host[:port]); see ParseOrigin.
	Origins []string
}

// MaxOrigins bounds the origins one secret may be bound to.
const MaxOrigins = 32

// ParseOrigin checks and normalizes an origin a secret is bound to: an
// absolute http or https URL with a host and an optional port, and nothing
// else (no user info, path, query or fragment; a lone "/" path is
// allowed). It returns scheme://host[:port] with the scheme and host
// lowercased and a default port dropped. It checks the form only: the gate
// normalizes the origin again as it normalizes every URL it judges (IDN
// hosts, IP literals), and refuses one it cannot use.
func ParseOrigin(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("empty origin")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("origin %q is not a URL", cut(raw, 256))
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", fmt.Errorf("origin %q: want an http:// or https:// origin", cut(raw, 256))
	case u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("origin %q has no host (want %s://host[:port])", cut(raw, 256), scheme)
	case u.User != nil:
		return "", fmt.Errorf("origin %q carries a user name or password", cut(raw, 256))
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return "", fmt.Errorf("origin %q has a path, query or fragment (want %s://host[:port])", cut(raw, 256), scheme)
	case strings.Contains(u.Host, "*"):
		return "", fmt.Errorf("origin %q: a secret is bound to exact origins, without wildcards", cut(raw, 256))
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("origin %q has no host", cut(raw, 256))
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("origin %q: port %q is not within 1..65535", cut(raw, 256), p)
		}
		if !(scheme == "http" && n == 80) && !(scheme == "https" && n == 443) {
			host += ":" + strconv.Itoa(n)
		}
	}
	return scheme + "://" + host, nil
}

// parseOrigins normalizes a secret's origins with ParseOrigin, sorted,
// without duplicates; nil for none.
func parseOrigins(raw []string) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > MaxOrigins {
		return nil, fmt.Errorf("%d origins, more than %d", len(raw), MaxOrigins)
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range raw {
		o, err := ParseOrigin(r)
		if err != nil {
			return nil, err
		}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Origins returns the origins the secret name is bound to, normalized
// (ParseOrigin) and sorted; nil when the set does not hold it or none were
// declared for it (the session then binds it to the task's first origin).
func (s *Set) Origins(name string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.origins[name]...)
}
