package secrets_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/secrets"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "# comment\n\nDB_PASSWORD=s3cr3t = with spaces\r\nAPI_KEY=abcd1234\n", 0o600)
	tests := []struct {
		name    string
		env     []string
		file    string
		names   string
		wantErr string
	}{
		{"env only", []string{"PATH=/bin", "AEGIS_SECRET_DEMO_PASSWORD=pa55word"}, "", "DEMO_PASSWORD", ""},
		{"file", nil, good, "API_KEY,DB_PASSWORD", ""},
		{"env wins", []string{"AEGIS_SECRET_API_KEY=zzzzzzzz"}, good, "API_KEY,DB_PASSWORD", ""},
		{"group readable", nil, write("open", "A=abcdef\n", 0o640), "", "mode 0600: run chmod 600"},
		{"world readable", nil, write("world", "A=abcdef\n", 0o604), "", "accessible by group or others (mode 0604)"},
		{"bad line", nil, write("bad", "just a value\n", 0o600), "", "line 1: want NAME=value or NAME@ORIGIN"},
		{"bad name", nil, write("name", "lower=abcdef\n", 0o600), "", `line 1: "lower" is not a secret name`},
		{"twice", nil, write("twice", "A=abcdef\nA=ghijkl\n", 0o600), "", "line 2: secret A given twice"},
		{"too short", []string{"AEGIS_SECRET_PIN=123"}, "", "", "shorter than 4 bytes"},
		{"bad env name", []string{"AEGIS_SECRET_lower=abcdef"}, "", "", "not a secret name"},
		{"missing file", nil, filepath.Join(dir, "none"), "", "no such file"},
		{"directory", nil, dir, "", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := secrets.Load(tt.env, tt.file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "abcdef") {
					t.Errorf("the error shows a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(set.Names(), ","); got != tt.names {
				t.Errorf("names %s, want %s", got, tt.names)
			}
		})
	}
	set, _ := secrets.Load([]string{"AEGIS_SECRET_API_KEY=zzzzzzzz"}, good)
	if v, _ := set.Resolve("{{secret:API_KEY}}/{{secret:DB_PASSWORD}}"); v != "zzzzzzzz/s3cr3t = with spaces" {
		t.Errorf("values: %q", v)
	}
}

// TestMinValueLen: every value Load accepts, the evidence writer can mask.
func TestMinValueLen(t *testing.T) {
	if secrets.MinValueLen < evidence.MinSecretLen {
		t.Errorf("MinValueLen %d < evidence.MinSecretLen %d", secrets.MinValueLen, evidence.MinSecretLen)
	}
}

func TestValues(t *testing.T) {
	set, err := secrets.NewSet(map[string]string{"A": "alpha-1", "B": "beta-22"})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Values(); len(got) != 2 || got["A"] != "alpha-1" || got["B"] != "beta-22" {
		t.Errorf("Values() = %v", got)
	}
	var empty *secrets.Set
	if got := empty.Values(); got != nil {
		t.Errorf("nil set: Values() = %v, want nil", got)
	}
}
