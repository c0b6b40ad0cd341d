package secrets_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/secrets"
)

func TestParseOrigin(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{"https://shop.example", "https://shop.example", ""},
		{"https://Shop.Example/", "https://shop.example", ""},
		{"HTTP://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"http://127.0.0.1:80", "http://127.0.0.1", ""},
		{"https://shop.example:443", "https://shop.example", ""},
		{"http://[::1]:9000", "http://[::1]:9000", ""},
		{"", "", "empty origin"},
		{"shop.example", "", "want an http:// or https:// origin"},
		{"ftp://shop.example", "", "want an http:// or https:// origin"},
		{"https://", "", "has no host"},
		{"https:shop.example", "", "has no host"},
		{"https://user:pw@shop.example", "", "user name or password"},
		{"https://shop.example/login", "", "path, query or fragment"},
		{"https://shop.example?x=1", "", "path, query or fragment"},
		{"https://shop.example?", "", "path, query or fragment"},
		{"https://shop.example#top", "", "path, query or fragment"},
		{"https://*.shop.example", "", "without wildcards"},
		{"https://shop.example:0", "", "not within 1..65535"},
		{"https://shop.example:70000", "", "not within 1..65535"},
	}
	for _, tt := range tests {
		got, err := secrets.ParseOrigin(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseOrigin(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNewBoundSet(t *testing.T) {
	set, err := secrets.NewBoundSet(map[string]secrets.Secret{
		"PW":  {Value: "pa55word", Origins: []string{"https://b.example/", "https://A.example", "https://b.example"}},
		"API": {Value: "key-1234"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := set.Origins("PW"), []string{"https://a.example", "https://b.example"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Origins(PW) = %v, want %v", got, want)
	}
	if got := set.Origins("API"); got != nil {
		t.Errorf("Origins(API) = %v, want nil (none declared)", got)
	}
	if got := set.Origins("NONE"); got != nil {
		t.Errorf("Origins(NONE) = %v, want nil", got)
	}
	var empty *secrets.Set
	if got := empty.Origins("PW"); got != nil {
		t.Errorf("nil set: Origins = %v", got)
	}
	_, err = secrets.NewBoundSet(map[string]secrets.Secret{"PW": {Value: "pa55word", Origins: []string{"https://a.example/login"}}})
	if err == nil || !strings.Contains(err.Error(), "secret PW") || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("bad origin: err %v", err)
	}
}

func TestLoadOrigins(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "SHOP@https://shop.example,http://127.0.0.1:8080=v@lue=with=signs\nPLAIN=plain-value\nBOTH@https://both.example=file-value\n")
	tests := []struct {
		name    string
		env     []string
		file    string
		want    map[string][]string // name → Origins
		values  string              // Resolve of {{secret:SHOP}}
		wantErr string
	}{
		{name: "declared and not", file: good, values: "v@lue=with=signs",
			want: map[string][]string{"SHOP": {"http://127.0.0.1:8080", "https://shop.example"}, "PLAIN": nil, "BOTH": {"https://both.example"}}},
		{name: "the environment gives the value, the file still binds", env: []string{"AEGIS_SECRET_BOTH=env-value", "AEGIS_SECRET_ENV=env-only"}, file: good, values: "v@lue=with=signs",
			want: map[string][]string{"SHOP": {"http://127.0.0.1:8080", "https://shop.example"}, "PLAIN": nil, "BOTH": {"https://both.example"}, "ENV": nil}},
		{name: "path", file: write("path", "PW@https://shop.example/login=secret-value\n"), wantErr: `line 1: secret PW: origin "https://shop.example/login" has a path`},
		{name: "empty list", file: write("empty", "PW@=secret-value\n"), wantErr: "line 1: secret PW: empty origin"},
		{name: "empty entry", file: write("entry", "PW@https://a.example,=secret-value\n"), wantErr: "line 1: secret PW: empty origin"},
		{name: "scheme", file: write("scheme", "\nPW@shop.example=secret-value\n"), wantErr: "line 2: secret PW: origin \"shop.example\": want an http:// or https:// origin"},
		{name: "bad name", file: write("name", "pw@https://a.example=secret-value\n"), wantErr: `line 1: "pw" is not a secret name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := secrets.Load(tt.env, tt.file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret-value") {
					t.Errorf("the error shows a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, n := range set.Names() {
				got[n] = set.Origins(n)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("origins %v, want %v", got, tt.want)
			}
			if v, _ := set.Resolve("{{secret:SHOP}}"); v != tt.values {
				t.Errorf("SHOP = %q, want %q", v, tt.values)
			}
			if v, _ := set.Resolve("{{secret:BOTH}}"); len(tt.env) > 0 && v != "env-value" {
				t.Errorf("BOTH = %q, want the environment's", v)
			}
		})
	}
}
