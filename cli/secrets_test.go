package cli

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/internal/browsertest"
)

// testShop is a demo shop on loopback that remembers every request it got.
type testShop struct {
	URL string
	rec *browsertest.Recorder
}

func newShop(t *testing.T) *testShop {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	s := &testShop{rec: browsertest.Record(demosite.Handler())}
	srv := httptest.NewServer(s.rec)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// got returns the requests whose line starts with prefix.
func (s *testShop) got(prefix string) []string { return s.rec.Requests(prefix) }

// holds reports whether any request the shop got carries value.
func (s *testShop) holds(value string) bool { return strings.Contains(s.rec.All(), value) }

// ciRun is "aegis run" as CI runs it: no terminal, --approve deny, the
// default preset and the embedded policy, the playwright driver, a
// secrets file.
func ciRun(t *testing.T, secretsLine string, urls []string, steps ...string) (int, contract.Output, string) {
	t.Helper()
	secretsFile := writeFile(t, "secrets", "# CI\n"+secretsLine+"\n", 0o600)
	quoted := make([]string, len(steps))
	for i, s := range steps {
		quoted[i] = `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
	}
	taskFile := writeFile(t, "task.json", `{"goal":"Sign in","urls":["`+strings.Join(urls, `","`)+`"],"hints":{"steps":[`+strings.Join(quoted, ",")+`]}}`, 0o644)
	code, o, stderr := runOutput(t, "run", "--driver", "playwright", "--approve", "deny", "--evidence", t.TempDir(), "--secrets-file", secretsFile, taskFile)
	dir := verifyOutput(t, o)
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(ciPassword)) {
				t.Errorf("the secret is in %s", p)
			}
		}
		return nil
	})
	out, _ := json.Marshal(o)
	if strings.Contains(stderr, ciPassword) || bytes.Contains(out, []byte(ciPassword)) {
		t.Errorf("the secret was printed")
	}
	return code, o, stderr
}

const ciPassword = "ci-sign-in-Pa55-4e1b"

// TestCISignIn (issue 16): a CI run, with no terminal and --approve deny
// under the default policy, signs in to the demo shop with a secret bound
// to it: typing it into the shop's password field is what the secret was
// declared for (secret_typed, medium risk), so nobody needs to approve it.
func TestCISignIn(t *testing.T) {
	s := newShop(t)
	code, o, stderr := ciRun(t, "SHOP_PASSWORD@"+s.URL+"="+ciPassword, []string{s.URL + "/login"},
		`type "ci-bot" into "Username"`,
		`type "{{secret:SHOP_PASSWORD}}" into "Password"`,
		`click "Sign in"`,
		`expect "Signed in as ci-bot"`)
	if code != ExitOK || o.Status != contract.SessionCompleted {
		t.Fatalf("exit %d, status %s\n%s", code, o.Status, stderr)
	}
	if !strings.Contains(stderr, `type #password "Password" (redacted text)  allowed (medium)`) {
		t.Errorf("the password was not typed without approval:\n%s", stderr)
	}
	if posts := s.got("POST /login"); len(posts) != 1 || !strings.Contains(posts[0], "password="+ciPassword) {
		t.Errorf("POST /login = %q, want the secret once", posts)
	}
}

// TestCISecretRefused (issue 16): the same secret, in the same CI run, is
// refused by the policy (secret_misdirected) on another allowed origin it
// is not bound to, and in a plain field of its own origin; nothing is
// typed, and no server ever gets it. Text the agent wrote itself into the
// password field stays high risk (and the steps agent, which types it
// unredacted, is refused outright).
func TestCISecretRefused(t *testing.T) {
	home, other := newShop(t), newShop(t)
	bound := "SHOP_PASSWORD@" + home.URL + "=" + ciPassword
	tests := []struct {
		name    string
		secrets string
		urls    []string
		steps   []string
		want    string // in stderr
	}{
		{"another allowed origin", bound, []string{home.URL + "/login", other.URL + "/login"}, []string{
			`navigate ` + other.URL + `/login`,
			`type "ci-bot" into "Username"`,
			`type "{{secret:SHOP_PASSWORD}}" into "Password"`,
			`click "Sign in"`,
		}, `type #password "Password" (redacted text)  DENIED (high): secret_misdirected`},
		{"a plain field", bound, []string{home.URL + "/login"}, []string{
			`type "{{secret:SHOP_PASSWORD}}" into "Username"`,
			`click "Sign in"`,
		}, `type #username "Username" (redacted text)  DENIED (medium): secret_misdirected`},
		{"bound to the task's first origin only", "SHOP_PASSWORD=" + ciPassword, []string{home.URL + "/login", other.URL + "/login"}, []string{
			`navigate ` + other.URL + `/login`,
			`type "{{secret:SHOP_PASSWORD}}" into "Password"`,
		}, `type #password "Password" (redacted text)  DENIED (high): secret_misdirected`},
		{"invented text into the password field", bound, []string{home.URL + "/login"}, []string{
			`type "ci-bot" into "Username"`,
			`type "hunter2-invented-by-the-model" into "Password"`,
		}, `type #password "Password" (29 characters)  DENIED (high): sensitive_unredacted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, o, stderr := ciRun(t, tt.secrets, tt.urls, tt.steps...)
			if code != ExitSessionFailed || o.Status != contract.SessionAborted {
				t.Fatalf("exit %d, status %s, want %d (a denied step fails the steps agent)\n%s", code, o.Status, ExitSessionFailed, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
		})
	}
	for _, s := range []*testShop{home, other} {
		if s.holds(ciPassword) {
			t.Errorf("%s got the secret", s.URL)
		}
		if got := s.got("POST /login"); len(got) != 0 {
			t.Errorf("%s got %q", s.URL, got)
		}
	}
}
