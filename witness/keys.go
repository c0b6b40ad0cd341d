package witness

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/evidence"
)

// DefaultMaxOrigins is the most origins (sessions) `aegis witness serve`
// keeps unless told otherwise (--max-origins).
const DefaultMaxOrigins = 10000

// ParseKeys reads the keys a witness takes checkpoints of
// (Admission.Keys): Ed25519 public keys as PEM "PUBLIC KEY" blocks (the
// .pub files of aegis keygen), or key ids ("ed25519:" and 64 hex digits)
// one a line; empty lines and lines starting with # are skipped. It
// returns their key ids, and refuses a file that names none.
func ParseKeys(data []byte) (map[string]bool, error) {
	keys := map[string]bool{}
	rest := data
	for n := 1; len(rest) > 0; n++ {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		s := strings.TrimSpace(string(line))
		switch {
		case s == "" || strings.HasPrefix(s, "#"):
			rest = after
			continue
		case strings.HasPrefix(s, "-----BEGIN"):
			b, more := pem.Decode(rest)
			if b == nil {
				return nil, fmt.Errorf("line %d: a PEM block that does not end", n)
			}
			pub, err := evidence.ParsePublicKey(pem.EncodeToMemory(b))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			keys[evidence.KeyID(pub)] = true
			n += bytes.Count(rest[:len(rest)-len(more)], []byte("\n")) - 1
			rest = more
			continue
		}
		pub, err := evidence.ParsePublicKey([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		keys[evidence.KeyID(pub)] = true
		rest = after
	}
	if len(keys) == 0 {
		return nil, errors.New("no key: want PEM PUBLIC KEY blocks or ed25519: key ids, one a line")
	}
	return keys, nil
}
