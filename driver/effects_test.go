package driver

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
)

func TestBodyFields(t *testing.T) {
	many := make([]string, 0, 100)
	for i := range 100 {
		many = append(many, fmt.Sprintf("f%03d=v", i))
	}
	first64 := make([]string, 0, 64)
	for i := range 64 {
		first64 = append(first64, fmt.Sprintf("f%03d", i))
	}
	multipart := "--XyZ\r\n" +
		"Content-Disposition: form-data; name=\"card\"\r\n\r\n4111 1111 1111 1111\r\n" +
		"--XyZ\r\n" +
		"Content-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nsecret contents\r\n" +
		"--XyZ\r\n" +
		"Content-Disposition: form-data; name=\"amount\"\r\n\r\n100\r\n" +
		"--XyZ--\r\n"
	tests := []struct {
		name        string
		contentType string
		body        string
		want        []string
	}{
		{"urlencoded", "application/x-www-form-urlencoded", "card=4111&amount=100&to=bob", []string{"amount", "card", "to"}},
		{"urlencoded with charset", "Application/X-WWW-Form-Urlencoded; charset=UTF-8", "b=1&a=2", []string{"a", "b"}},
		{"urlencoded repeated and empty", "application/x-www-form-urlencoded", "a=1&a=2&&=3&b", []string{"a", "b"}},
		{"urlencoded escaped names", "application/x-www-form-urlencoded", "user%5Bname%5D=x&pass+word=y", []string{"pass word", "user[name]"}},
		{"urlencoded bad escape kept raw", "application/x-www-form-urlencoded", "a%zz=1", []string{"a%zz"}},
		{"urlencoded bounded count", "application/x-www-form-urlencoded", strings.Join(many, "&"), first64},
		{"urlencoded long name cut", "application/x-www-form-urlencoded", strings.Repeat("n", 300) + "=1", []string{strings.Repeat("n", contract.MaxEffectField)}},
		{"urlencoded invalid utf8", "application/x-www-form-urlencoded", "a%ff=1", []string{"a\uFFFD"}},
		{"multipart", "multipart/form-data; boundary=XyZ", multipart, []string{"amount", "card", "file"}},
		{"multipart no boundary", "multipart/form-data", multipart, nil},
		{"multipart truncated", "multipart/form-data; boundary=XyZ", multipart[:60], []string{"card"}},
		{"json", "application/json", `{"card":"4111","amount":100,"nested":{"inner":1},"list":[{"x":1}]}`, []string{"amount", "card", "list", "nested"}},
		{"json as text/plain", "text/plain;charset=UTF-8", ` {"password":"hunter2"}`, []string{"password"}},
		{"json no content type", "", `{"b":1,"a":2,"b":3}`, []string{"a", "b"}},
		{"json array", "application/json", `[{"a":1}]`, nil},
		{"json scalar", "application/json", `"a"`, nil},
		{"json broken after a key", "application/json", `{"a":1,"b":`, []string{"a", "b"}},
		{"json broken value", "application/json", `{"a":[1,2}`, []string{"a"}},
		{"plain text", "text/plain", "a=1&b=2", nil},
		{"empty", "application/x-www-form-urlencoded", "", nil},
		{"bad content type", "application/x-www-form-urlencoded; ===", "a=1", []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bodyFields(tt.contentType, []byte(tt.body))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("bodyFields(%q, %q) = %q, want %q", tt.contentType, tt.body, got, tt.want)
			}
		})
	}
}

// FuzzBodyFields feeds bodyFields what a hostile page could send: it must
// never panic and must keep every bound of contract.Effect.Fields.
func FuzzBodyFields(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", []byte("card=4111&amount=100"))
	f.Add("multipart/form-data; boundary=b", []byte("--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n"))
	f.Add("application/json", []byte(`{"a":{"b":[1,2,{"c":null}]},"d":true}`))
	f.Add("text/plain", []byte(`{"a"`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		got := bodyFields(contentType, body)
		if len(got) > contract.MaxEffectFields {
			t.Fatalf("%d fields, more than %d", len(got), contract.MaxEffectFields)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("fields not sorted and unique: %q", got)
		}
		for _, n := range got {
			if n == "" || !utf8.ValidString(n) || utf8.RuneCountInString(n) > contract.MaxEffectField {
				t.Fatalf("field name %q is empty, invalid UTF-8 or longer than %d runes", n, contract.MaxEffectField)
			}
		}
	})
}

func TestEffectFor(t *testing.T) {
	tests := []struct {
		kind            contract.EffectKind
		method, raw, rt string
		want            contract.Effect
	}{
		{contract.EffectNavigation, "post", "http://Shop.Example:80/pay/now?card=4111#x", "document",
			contract.Effect{Kind: contract.EffectNavigation, Method: "POST", Origin: "http://shop.example", Path: "/pay/now", ResourceType: "document"}},
		{contract.EffectRequest, "GET", "https://a.example", "fetch",
			contract.Effect{Kind: contract.EffectRequest, Method: "GET", Origin: "https://a.example", Path: "/", ResourceType: "fetch"}},
		{contract.EffectRequest, "GET", "ws://127.0.0.1:9000/chat?token=x", "websocket",
			contract.Effect{Kind: contract.EffectRequest, Method: "GET", Origin: "http://127.0.0.1:9000", Path: "/chat", ResourceType: "websocket"}},
		{contract.EffectRequest, "POST", "http://a.example/%70ay", "",
			contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "http://a.example", Path: "/pay"}},
		{contract.EffectDownload, "", "data:text/plain,hi", "download",
			contract.Effect{Kind: contract.EffectDownload, ResourceType: "download"}},
		{contract.EffectRequest, "VERYLONGMETHODNAMEXX", "http://a.example/" + strings.Repeat("p", 3000), strings.Repeat("r", 40),
			contract.Effect{Kind: contract.EffectRequest, Method: "VERYLONGMETHODNA", Origin: "http://a.example", Path: "/" + strings.Repeat("p", contract.MaxEffectPath-1), ResourceType: strings.Repeat("r", contract.MaxEffectResourceType)}},
	}
	for _, tt := range tests {
		got := effectFor(tt.kind, tt.method, tt.raw, tt.rt)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("effectFor(%s, %s, %.60s) = %+v, want %+v", tt.kind, tt.method, tt.raw, got, tt.want)
		}
	}
}

func TestProxyKindAndTunnelEffect(t *testing.T) {
	kinds := []struct {
		mode, dest string
		want       contract.EffectKind
	}{
		{"navigate", "document", contract.EffectNavigation},
		{"navigate", "iframe", contract.EffectFrame},
		{"no-cors", "empty", contract.EffectRequest},
		{"", "", contract.EffectRequest},
	}
	for _, tt := range kinds {
		h := http.Header{}
		if tt.mode != "" {
			h.Set("Sec-Fetch-Mode", tt.mode)
			h.Set("Sec-Fetch-Dest", tt.dest)
		}
		if got := proxyKind(h); got != tt.want {
			t.Errorf("proxyKind(%s, %s) = %s, want %s", tt.mode, tt.dest, got, tt.want)
		}
	}
	tunnels := []struct {
		hostport string
		want     contract.Effect
	}{
		{"evil.example:443", contract.Effect{Kind: contract.EffectRequest, Method: "CONNECT", Origin: "https://evil.example"}},
		{"evil.example:80", contract.Effect{Kind: contract.EffectRequest, Method: "CONNECT", Origin: "http://evil.example"}},
		{"127.0.0.1:8443", contract.Effect{Kind: contract.EffectRequest, Method: "CONNECT", Origin: "https://127.0.0.1:8443"}},
	}
	for _, tt := range tunnels {
		if got := tunnelEffect(tt.hostport); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("tunnelEffect(%s) = %+v, want %+v", tt.hostport, got, tt.want)
		}
	}
}

// TestEffectPath: both drivers write an effect's path decoded, so that a
// percent-encoded letter does not hide a word from the policy.
func TestEffectPath(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"https://shop.example/%61dmin/delete", "/admin/delete"},
		{"https://shop.example", "/"},
		{"https://shop.example/a%20b?x=1", "/a b"},
		{"https://shop.example/p%D0%B0y", "/pаy"},
	} {
		u, err := url.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := effectPath(u); got != tc.want {
			t.Errorf("effectPath(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
