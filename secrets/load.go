package secrets

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvPrefix prefixes the environment variables secrets are read from:
// AEGIS_SECRET_DEMO_PASSWORD holds the secret DEMO_PASSWORD.
const EnvPrefix = "AEGIS_SECRET_"

// MaxFileBytes bounds a secrets file.
const MaxFileBytes = 1 << 20

// MinValueLen is the shortest value Load accepts: the evidence writer masks
// secret values wherever they appear, and refuses shorter ones
// (evidence.MinSecretLen), since they could not be masked safely.
const MinValueLen = 4

// Load builds a session's secret set from a secrets file (when file is not
// "") and the environment (environ, as os.Environ gives it), the
// environment's value winning for a name given twice (the origins the file
// declared for it still bind it).
//
// The file holds one secret per line, NAME=value or
// NAME@ORIGIN[,ORIGIN...]=value; blank lines and lines starting with # are
// skipped. The left side of the first '=' is the name, and after an '@'
// the origins the secret is bound to (http(s)://host[:port], see
// ParseOrigin), comma-separated:
//
//	SHOP_PASSWORD@https://shop.example,http://127.0.0.1:8080=s3cr3t
//
// The value is the rest of the line after that '=', verbatim (a trailing
// carriage return is dropped). A secret declared without origins, and an
// environment secret (AEGIS_SECRET_NAME), is bound by the session to the
// task's first origin. Like an SSH key, the file must be a regular file
// that neither group nor others may read or write (mode 0600 or
// stricter): Load refuses it otherwise, saying how to fix it. Names are
// [A-Z][A-Z0-9_]{0,63}; values must be at least MinValueLen bytes, so that
// they can be masked wherever they might appear. Errors name secrets,
// origins and lines, never values.
func Load(environ []string, file string) (*Set, error) {
	values := map[string]Secret{}
	if file != "" {
		if err := readFile(file, values); err != nil {
			return nil, err
		}
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvPrefix)
		if !ValidName(name) {
			return nil, fmt.Errorf("secrets: environment variable %s: %q is not a secret name (want [A-Z][A-Z0-9_]{0,63})", k, name)
		}
		sec := values[name]
		sec.Value = v
		values[name] = sec
	}
	for name, v := range values {
		if len(v.Value) < MinValueLen {
			return nil, fmt.Errorf("secrets: secret %s is shorter than %d bytes: it could not be masked safely", name, MinValueLen)
		}
	}
	return NewBoundSet(values)
}

func readFile(file string, values map[string]Secret) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("secrets: secrets file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("secrets: secrets file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("secrets: secrets file %s is not a regular file", file)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("secrets: secrets file %s is accessible by group or others (mode %04o); it must be mode 0600: run chmod 600 %s", file, perm, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return fmt.Errorf("secrets: secrets file %s: read failed", file)
	}
	if len(data) > MaxFileBytes {
		return fmt.Errorf("secrets: secrets file %s is larger than %d bytes", file, MaxFileBytes)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		left, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("secrets: secrets file %s line %d: want NAME=value or NAME@ORIGIN[,ORIGIN...]=value", file, n)
		}
		name, list, bound := strings.Cut(left, "@")
		if !ValidName(name) {
			return fmt.Errorf("secrets: secrets file %s line %d: %q is not a secret name (want [A-Z][A-Z0-9_]{0,63})", file, n, cut(name, MaxNameLen))
		}
		if _, dup := values[name]; dup {
			return fmt.Errorf("secrets: secrets file %s line %d: secret %s given twice", file, n, name)
		}
		sec := Secret{Value: v}
		if bound {
			sec.Origins = strings.Split(list, ",")
			if _, err := parseOrigins(sec.Origins); err != nil {
				return fmt.Errorf("secrets: secrets file %s line %d: secret %s: %w", file, n, name, err)
			}
		}
		values[name] = sec
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("secrets: secrets file %s: %w", file, err)
	}
	return nil
}

// cut bounds s to n bytes on a rune boundary, for error messages (which
// quote it with %q, so control characters are escaped).
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Values returns the set's values by name (nil for an empty set), for the
// evidence writer's masking (evidence.Options.Secrets). Nothing else should
// need the values: Resolve hands them to the driver.
func (s *Set) Values() map[string]string {
	if s.Len() == 0 {
		return nil
	}
	out := make(map[string]string, len(s.values))
	for n, v := range s.values {
		out[n] = v
	}
	return out
}
