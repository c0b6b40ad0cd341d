package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
)

// MinSecretLen is the shortest secret value Options.Secrets accepts:
// masking every occurrence of a shorter one would mangle unrelated text
// (times, ids, hashes) and still not hide it.
const MinSecretLen = 4

var reSecretName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// masker replaces known sensitive values with placeholders: the secrets
// of Options.Secrets by {{secret:NAME}}, and the text of redacted type
// actions by {{redacted}}. Longer values are replaced first, in one pass,
// so a placeholder is never rescanned.
type masker struct {
	pairs []maskPair
	r     *strings.Replacer
}

type maskPair struct{ value, placeholder string }

func newMasker(secrets map[string]string) (*masker, error) {
	m := &masker{}
	for name, v := range secrets {
		if !reSecretName.MatchString(name) {
			return nil, fmt.Errorf("evidence: secret name %q: want 1 to 64 letters, digits, '.', '_' or '-'", name)
		}
		if len(v) < MinSecretLen {
			return nil, fmt.Errorf("evidence: secret %s: value shorter than %d bytes cannot be masked safely", name, MinSecretLen)
		}
		m.pairs = append(m.pairs, maskPair{v, secretPlaceholder(name)})
	}
	for _, p := range m.pairs {
		for _, q := range m.pairs {
			if strings.Contains(q.placeholder, p.value) || strings.Contains(RedactedText, p.value) {
				return nil, fmt.Errorf("evidence: a secret value occurs in the placeholder %s: it could not be masked", q.placeholder)
			}
		}
	}
	m.build()
	return m, nil
}

// addRedacted adds a value to mask as {{redacted}} from now on.
func (m *masker) addRedacted(v string) {
	if len(v) < MinSecretLen {
		return
	}
	for _, p := range m.pairs {
		if p.value == v {
			return
		}
	}
	m.pairs = append(m.pairs, maskPair{v, RedactedText})
	m.build()
}

func (m *masker) build() {
	sort.SliceStable(m.pairs, func(i, j int) bool {
		if len(m.pairs[i].value) != len(m.pairs[j].value) {
			return len(m.pairs[i].value) > len(m.pairs[j].value)
		}
		return m.pairs[i].value < m.pairs[j].value
	})
	if len(m.pairs) == 0 {
		m.r = nil
		return
	}
	args := make([]string, 0, 2*len(m.pairs))
	for _, p := range m.pairs {
		args = append(args, p.value, p.placeholder)
	}
	m.r = strings.NewReplacer(args...)
}

// maskString returns s with every known value replaced, and whether any was.
func (m *masker) maskString(s string) (string, bool) {
	if m.r == nil {
		return s, false
	}
	out := m.r.Replace(s)
	return out, out != s
}

// maskTree replaces known values in every string and object key of a
// parsed JSON value, in place where it can.
func (m *masker) maskTree(v any) (any, bool) {
	if m.r == nil {
		return v, false
	}
	switch t := v.(type) {
	case string:
		return m.maskString(t)
	case []any:
		any := false
		for i, x := range t {
			var c bool
			t[i], c = m.maskTree(x)
			any = any || c
		}
		return t, any
	case map[string]any:
		any := false
		var renamed map[string]string
		for k, x := range t {
			nv, c := m.maskTree(x)
			t[k] = nv
			if nk, ck := m.maskString(k); ck {
				if renamed == nil {
					renamed = map[string]string{}
				}
				renamed[k] = nk
			}
			any = any || c
		}
		for k, nk := range renamed {
			t[nk] = t[k]
			delete(t, k)
			any = true
		}
		return t, any
	}
	return v, false
}

// findIn returns the placeholder of the first known value found in b.
func (m *masker) findIn(b []byte) (string, bool) {
	for _, p := range m.pairs {
		if bytes.Contains(b, []byte(p.value)) {
			return p.placeholder, true
		}
	}
	return "", false
}

// canonicalize marshals v, masks it, and returns its canonical bytes and
// the parsed (masked) value that the bytes encode.
func canonicalize(v any, m *masker) (canon []byte, tree any, masked bool, err error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, false, err
	}
	tree, err = schemas.Parse(b)
	if err != nil {
		return nil, nil, false, err
	}
	tree, masked = m.maskTree(tree)
	canon, err = canonjson.EncodeValue(tree)
	return canon, tree, masked, err
}
