package gate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aegis-run/aegis/policy"
)

// writeTarball writes entries (name -> body; a body of "->target" makes a
// symlink) as a .tar.gz.
func writeTarball(t *testing.T, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range entries {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			h = &tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink}
			body = ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func embeddedFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(policy.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policy.FS(), p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPolicySources(t *testing.T) {
	ctx := context.Background()
	files := embeddedFiles(t)
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A README and a hidden directory do not change the version.
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("notes"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "x.rego"), []byte("package broken {"), 0o644)

	want := sharedGate(t).PolicyVersion()
	for name, opts := range map[string]Options{
		"dir":     {PolicyPath: dir},
		"tarball": {PolicyPath: writeTarball(t, files)},
		"fs":      {PolicyFS: policy.FS()},
	} {
		g, err := New(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := g.PolicyVersion(); got != want {
			t.Errorf("%s: version %s, want the embedded %s", name, got, want)
		}
		if d := g.Decide(ctx, baseRequest()); !d.Allow {
			t.Errorf("%s: base request denied: %v", name, d.Reasons)
		}
	}
	// Changing the data changes the version.
	changed := map[string]string{}
	for k, v := range files {
		changed[k] = v
	}
	changed["data.json"] = strings.Replace(files["data.json"], `"max_step_budget": 10000`, `"max_step_budget": 10`, 1)
	g, err := New(ctx, Options{PolicyPath: writeTarball(t, changed)})
	if err != nil {
		t.Fatal(err)
	}
	if g.PolicyVersion() == want {
		t.Error("changed data, same version")
	}
	req := baseRequest()
	req.StepIndex = 11
	if d := g.Decide(ctx, req); d.Allow || !hasRule(d.Reasons, "step_budget_exceeded") {
		t.Errorf("data override not applied: %s %v", d.Result, d.Reasons)
	}
}

func TestPolicyLoadErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		opts  Options
		stage string
	}{
		{"missing path", Options{PolicyPath: "/nonexistent/aegis"}, "read"},
		{"absolute tar entry", Options{PolicyPath: writeTarball(t, map[string]string{"/etc/p.rego": "package x"})}, "read"},
		{"dot-dot tar entry", Options{PolicyPath: writeTarball(t, map[string]string{"../p.rego": "package x"})}, "read"},
		{"symlink tar entry", Options{PolicyPath: writeTarball(t, map[string]string{"p.rego": "->/etc/passwd"})}, "read"},
		{"tarball without rego", Options{PolicyPath: writeTarball(t, map[string]string{"data.json": "{}"})}, "read"},
		{"parse error", Options{PolicyFS: fstest.MapFS{"p.rego": {Data: []byte("package")}}}, "parse"},
		{"compile error", Options{PolicyFS: fstest.MapFS{"p.rego": {Data: []byte("package aegis.browser\n\ndecision := y\n")}}}, "compile"},
		{"too large", Options{PolicyFS: fstest.MapFS{"p.rego": {Data: make([]byte, MaxPolicyBytes+1)}}}, "read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(ctx, tc.opts)
			var le *PolicyLoadError
			if !errors.As(err, &le) || le.Stage != tc.stage || le.Path == "" || le.Unwrap() == nil {
				t.Fatalf("got %#v, want a *PolicyLoadError at stage %s", err, tc.stage)
			}
			if !strings.Contains(err.Error(), tc.stage) || g.Err() != err {
				t.Errorf("error %q, gate error %v", err, g.Err())
			}
			if d := g.Decide(ctx, baseRequest()); d.Allow || !d.FailClosed || !strings.Contains(d.Error, tc.stage) {
				t.Errorf("decision %+v", d.DecisionRecord)
			}
		})
	}
	many := fstest.MapFS{}
	for i := 0; i <= MaxPolicyFiles; i++ {
		many[filepath.Join("d", strings.Repeat("x", i%7+1), string(rune('a'+i%26))+strings.Repeat("y", i/26)+".rego")] = &fstest.MapFile{Data: []byte("package x")}
	}
	if _, err := New(ctx, Options{PolicyFS: many}); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("too many files: %v", err)
	}
}

func TestCheckOPAURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:8181":      true,
		"http://localhost:8181/":     true,
		"http://[::1]:8181":          true,
		"https://opa.example":        true,
		"https://opa.example/prefix": true,
		"http://opa.example:8181":    false,
		"http://10.0.0.1:8181":       false,
		"ftp://127.0.0.1":            false,
		"https://u:p@opa.example":    false,
		"https://opa.example/?x=1":   false,
		"https://":                   false,
		"::":                         false,
	} {
		if _, err := checkOPAURL(raw); (err == nil) != ok {
			t.Errorf("%q: err %v, want ok %v", raw, err, ok)
		}
	}
}

// TestActionHashInvalidUTF8: an action whose text is not valid UTF-8 (which
// canonical JSON cannot encode) still hashes, to something else than the
// valid action's hash, and so does a nil gate.
func TestActionHashInvalidUTF8(t *testing.T) {
	bad := baseRequest()
	bad.Action.Text = "\xff"
	var g *Gate
	if h := g.ActionHash(bad); !isSHA256Hex(h) || h == g.ActionHash(baseRequest()) {
		t.Errorf("hash of invalid UTF-8: %s", h)
	}
}

func TestActionHashBinds(t *testing.T) {
	g := sharedGate(t)
	base := g.ActionHash(baseRequest())
	for name, mutate := range map[string]func(*Request){
		"text":      func(r *Request) { r.Target.Text = "Next!" },
		"selector":  func(r *Request) { r.Action.Selector = "#next2" },
		"no target": func(r *Request) { r.Target = nil },
		"page":      func(r *Request) { r.ActiveURL = "https://shop.example/other" },
		"session":   func(r *Request) { r.SessionID = "s-2" },
		"id":        func(r *Request) { r.Action.ID = "a2" },
	} {
		req := baseRequest()
		mutate(&req)
		if g.ActionHash(req) == base {
			t.Errorf("%s: same hash", name)
		}
	}
	for name, mutate := range map[string]func(*Request){
		"step":     func(r *Request) { r.StepIndex = 9 },
		"time":     func(r *Request) { r.Now = r.Now.Add(1) },
		"approval": func(r *Request) { r.ApprovalID = "apr-x" },
	} {
		req := baseRequest()
		mutate(&req)
		if g.ActionHash(req) != base {
			t.Errorf("%s: hash changed", name)
		}
	}
}
