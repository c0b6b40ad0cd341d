package session

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/secrets"
)

// EnvSecretPrefix prefixes the environment variables secrets are read
// from: AEGIS_SECRET_DEMO_PASSWORD holds the secret DEMO_PASSWORD.
const EnvSecretPrefix = "AEGIS_SECRET_"

// MaxSecretsFileBytes bounds a secrets file.
const MaxSecretsFileBytes = 1 << 20

// LoadSecrets builds a session's secret set from a secrets file (when file
// is not "") and the environment (environ, as os.Environ gives it), the
// environment winning for a name given twice.
//
// The file holds one NAME=value per line; blank lines and lines starting
// with # are skipped; the value is the rest of the line after the first
// '=', verbatim (a trailing carriage return is dropped). Like an SSH key,
// the file must be a regular file that neither group nor others may read
// or write (mode 0600 or stricter): LoadSecrets refuses it otherwise,
// saying how to fix it. Names are [A-Z][A-Z0-9_]{0,63}; values must be at
// least evidence.MinSecretLen bytes, so that they can be masked wherever
// they might appear. Errors name secrets and lines, never values.
func LoadSecrets(environ []string, file string) (*secrets.Set, error) {
	values := map[string]string{}
	if file != "" {
		if err := readSecretsFile(file, values); err != nil {
			return nil, err
		}
	}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvSecretPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvSecretPrefix)
		if !secrets.ValidName(name) {
			return nil, fmt.Errorf("session: environment variable %s: %q is not a secret name (want [A-Z][A-Z0-9_]{0,63})", k, name)
		}
		values[name] = v
	}
	for name, v := range values {
		if len(v) < evidence.MinSecretLen {
			return nil, fmt.Errorf("session: secret %s is shorter than %d bytes: it could not be masked safely", name, evidence.MinSecretLen)
		}
	}
	set, err := secrets.NewSet(values)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return set, nil
}

func readSecretsFile(file string, values map[string]string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("session: secrets file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("session: secrets file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("session: secrets file %s is not a regular file", file)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("session: secrets file %s is accessible by group or others (mode %04o); it must be mode 0600: run chmod 600 %s", file, perm, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSecretsFileBytes+1))
	if err != nil {
		return fmt.Errorf("session: secrets file %s: read failed", file)
	}
	if len(data) > MaxSecretsFileBytes {
		return fmt.Errorf("session: secrets file %s is larger than %d bytes", file, MaxSecretsFileBytes)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxSecretsFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("session: secrets file %s line %d: want NAME=value", file, n)
		}
		if !secrets.ValidName(name) {
			return fmt.Errorf("session: secrets file %s line %d: %q is not a secret name (want [A-Z][A-Z0-9_]{0,63})", file, n, Sanitize(name, 64))
		}
		if _, dup := values[name]; dup {
			return fmt.Errorf("session: secrets file %s line %d: secret %s given twice", file, n, name)
		}
		values[name] = v
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("session: secrets file %s: %w", file, err)
	}
	return nil
}

// secretValues returns the set's values by name, for the evidence writer's
// masking (evidence.Options.Secrets).
func secretValues(set *secrets.Set) map[string]string {
	if set.Len() == 0 {
		return nil
	}
	out := make(map[string]string, set.Len())
	for _, n := range set.Names() {
		if v, err := set.Resolve(secrets.Placeholder(n)); err == nil {
			out[n] = v
		}
	}
	return out
}
