package audit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/driver"
)

// OriginMap maps the origins a bundle was recorded against to those a
// replay runs against: the demo site recorded on one port and served on
// another, a staging host for a production one. Each pair's From and To
// are normalized origins ("http://127.0.0.1:8080": scheme and host lower
// case, no default port, no path).
type OriginMap []OriginPair

// OriginPair maps one origin.
type OriginPair struct {
	// From is the origin in the bundle.
	From string
	// To is the origin the replay uses instead.
	To string
}

// maxOriginMapping bounds a FROM=TO argument.
const maxOriginMapping = 4096

// ParseOriginPair parses "FROM=TO", two http(s) origins (a trailing slash
// is allowed; a path, query, fragment or user info is not).
func ParseOriginPair(s string) (OriginPair, error) {
	if len(s) > maxOriginMapping {
		return OriginPair{}, fmt.Errorf("audit: origin mapping longer than %d bytes", maxOriginMapping)
	}
	from, to, ok := strings.Cut(s, "=")
	if !ok {
		return OriginPair{}, errors.New("audit: origin mapping: want FROM=TO")
	}
	f, err := driver.NormalizeOrigin(from)
	if err != nil {
		return OriginPair{}, fmt.Errorf("audit: origin mapping: FROM: %w", err)
	}
	t, err := driver.NormalizeOrigin(to)
	if err != nil {
		return OriginPair{}, fmt.Errorf("audit: origin mapping: TO: %w", err)
	}
	return OriginPair{From: f, To: t}, nil
}

// Add parses and appends a FROM=TO pair, refusing a FROM mapped twice.
func (m *OriginMap) Add(s string) error {
	p, err := ParseOriginPair(s)
	if err != nil {
		return err
	}
	for _, q := range *m {
		if q.From == p.From {
			return fmt.Errorf("audit: origin %s is mapped twice", p.From)
		}
	}
	*m = append(*m, p)
	return nil
}

// String writes the pairs as FROM=TO,FROM=TO.
func (m OriginMap) String() string {
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = p.From + "=" + p.To
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value: each --map-origin adds a pair.
func (m *OriginMap) Set(s string) error { return m.Add(s) }

// Reverse returns the map from To back to From.
func (m OriginMap) Reverse() OriginMap {
	out := make(OriginMap, len(m))
	for i, p := range m {
		out[i] = OriginPair{From: p.To, To: p.From}
	}
	return out
}

// URL maps an absolute URL whose origin is a From to the same URL on its
// To; any other string is returned unchanged. Only the scheme and
// authority change: the path, query and fragment are kept byte for byte.
func (m OriginMap) URL(u string) string {
	if len(m) == 0 {
		return u
	}
	i := strings.Index(u, "://")
	if i <= 0 {
		return u
	}
	end := len(u)
	if j := strings.IndexAny(u[i+3:], "/?#"); j >= 0 {
		end = i + 3 + j
	}
	o, err := driver.NormalizeOrigin(u[:end])
	if err != nil {
		return u
	}
	for _, p := range m {
		if p.From == o {
			return p.To + u[end:]
		}
	}
	return u
}

// Text replaces every From origin in s by its To: what a page shows of its
// own address (links in a snapshot, the document URL) is compared after
// the replay's origins are mapped back to the recorded ones.
//
// An origin is replaced only where it ends: not where a longer host or
// port goes on (http://127.0.0.1:80 is not replaced in
// http://127.0.0.1:8080).
func (m OriginMap) Text(s string) string {
	for _, p := range m {
		s = replaceOrigin(s, p.From, p.To)
	}
	return s
}

func replaceOrigin(s, from, to string) string {
	if from == "" || !strings.Contains(s, from) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, from)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(from)
		b.WriteString(s[:i])
		if end < len(s) && isHostChar(s[end]) {
			b.WriteString(from)
		} else {
			b.WriteString(to)
		}
		s = s[end:]
	}
}

// isHostChar reports whether c can continue a host name or a port.
func isHostChar(c byte) bool {
	return c == '.' || c == '-' || c == ':' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}
