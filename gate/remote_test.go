package gate

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/policy"
)

const opaModule = "github.com/open-policy-agent/opa"

// opaBinary returns the path of an opa binary of the version this module
// requires, building it once into the user cache (aegis/opa-VERSION): the
// build takes minutes on two cores, later runs reuse it.
func opaBinary(t *testing.T) string {
	t.Helper()
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == opaModule {
				version = d.Version
				if d.Replace != nil {
					version = d.Replace.Version
				}
			}
		}
	}
	if version == "" {
		// Test binaries may carry no dependency list: ask the go tool.
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", opaModule).Output()
		if err != nil {
			t.Skipf("cannot tell the version of %s: %v", opaModule, err)
		}
		version = strings.TrimSpace(string(out))
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache directory: %v", err)
	}
	dir := filepath.Join(cache, "aegis")
	bin := filepath.Join(dir, "opa-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build opa: %v", err)
	}
	t.Logf("building opa %s into %s (once; this takes a few minutes)", version, bin)
	// "go install module@version" builds in module-aware mode outside this
	// module, so it needs no go.sum entries for OPA's command-line
	// dependencies, which aegis itself does not import.
	gobin, err := os.MkdirTemp(dir, "opa-build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(gobin)
	cmd := exec.Command(goTool, "install", opaModule+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod")
	cmd.Dir = gobin
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s@%s: %v\n%s", opaModule, version, err, out)
	}
	if err := os.Rename(filepath.Join(gobin, "opa"), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// writeBundle writes the embedded policy (tests left out) into a directory
// laid out as an OPA bundle.
func writeBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(policy.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isPolicyFile(p) {
			return err
		}
		b, err := fs.ReadFile(policy.FS(), p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// opaServer is a running "opa run --server".
type opaServer struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, once done is closed
}

// kill stops the server and waits for it to exit.
func (s *opaServer) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// startOPA runs "opa run --server" on a free loopback port with the bundle
// and waits for /health. Only 127.0.0.1 is ever used.
func startOPA(t *testing.T, bin, bundle string) *opaServer {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		s, err := tryStartOPA(bin, bundle)
		if err == nil {
			t.Cleanup(s.kill)
			return s
		}
		t.Logf("opa did not start (attempt %d): %v", attempt+1, err)
	}
	t.Fatal("could not start opa")
	return nil
}

func tryStartOPA(bin, bundle string) (*opaServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &opaServer{url: "http://" + addr, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "run", "--server", "--addr", addr, "--bundle",
		"--skip-version-check", "--log-level", "error", bundle)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("opa exited: %v", s.err)
		default:
		}
		if resp, err := http.Get(s.url + "/health?bundles"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.kill()
	return nil, fmt.Errorf("opa on %s did not become healthy", addr)
}

// agreement is the part of a record that must not depend on where the
// policy was evaluated.
func agreement(d Decision) string {
	r := d.DecisionRecord
	return fmt.Sprintf("%v|%s|%v|%v|%s|%v|%v|%v|%s|%v|%v|%s|%s|%v",
		r.Allow, r.Result, r.Reasons, r.Waived, r.Risk, r.RiskReasons, r.RequiresApproval,
		r.ApprovalReasons, r.Permission, r.Exceptions, r.Approval, r.ActionHash, r.ActionName, r.FailClosed)
}

// TestRemoteOPA evaluates random requests both with the embedded engine and
// against a real OPA server (built from the module's own OPA version and
// started on loopback with the embedded bundle): the decisions must agree.
// Then the server is killed and the remote gate must fail closed.
func TestRemoteOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an OPA server")
	}
	bin := opaBinary(t)
	srv := startOPA(t, bin, writeBundle(t))
	url := srv.url
	var events []Event
	rg, err := New(context.Background(), Options{OPAURL: url, Timeout: 5 * time.Second, Audit: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := rg.PolicyVersion(); !isSHA256Hex(got) || got == emptyVersion {
		t.Errorf("remote policy version %q", got)
	}
	local := sharedGate(t)
	r := rand.New(rand.NewPCG(8181, 1))
	results := map[contract.DecisionResult]int{}
	reqs := []Request{baseRequest()}
	for i := 0; i < 400; i++ {
		reqs = append(reqs, randomRequest(r))
	}
	for i, req := range reqs {
		want := local.Decide(context.Background(), req)
		got := rg.Decide(context.Background(), req)
		if got.FailClosed {
			t.Fatalf("request %d: remote failed closed: %v", i, got.Err)
		}
		if got.PolicySource != SourceRemote {
			t.Errorf("policy source %q", got.PolicySource)
		}
		// Each gate keys the hash of a redacted text with its own key
		// (Gate.ActionHash): compare the hash with the gate's own.
		if got.ActionHash != rg.ActionHash(req) || want.ActionHash != local.ActionHash(req) {
			t.Fatalf("request %d: recorded hashes %s, %s are not the gates' ActionHash", i, got.ActionHash, want.ActionHash)
		}
		got.ActionHash, want.ActionHash = "", ""
		if agreement(got) != agreement(want) {
			t.Fatalf("request %d (%+v): remote and embedded disagree\nremote   %s\nembedded %s", i, req.Action, agreement(got), agreement(want))
		}
		results[got.Result]++
	}
	t.Logf("%d requests agree: %v", len(reqs), results)
	if results[contract.ResultAllowed] == 0 || results[contract.ResultDenied] == 0 {
		t.Errorf("sample lacks allows or denies: %v", results)
	}

	srv.kill()
	for i := 0; i < 50; i++ {
		d := rg.Decide(context.Background(), baseRequest())
		if d.Allow || !d.FailClosed || !strings.Contains(d.Error, "remote OPA") {
			t.Fatalf("after the server died: %+v", d.DecisionRecord)
		}
	}
	if n := len(events); n != 50 || !slices.ContainsFunc(events, func(e Event) bool { return e.Kind == EventFailClosed }) {
		t.Errorf("audit events = %d, want 50 fail_closed", n)
	}
}
