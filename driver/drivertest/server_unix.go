//go:build unix

package drivertest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-run/aegis/setup"
)

// Server is a Playwright server ("playwright-core run-server") a test
// started on loopback.
type Server struct {
	// Endpoint is its ws:// address.
	Endpoint string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	done     chan struct{}
}

// RunServer starts "playwright-core run-server" from the aegis driver
// directory on loopback, and stops it when the test ends. The server
// launches Chromium itself from its own browser registry; the test points
// that registry (PLAYWRIGHT_BROWSERS_PATH) at the system Chromium, as a
// fleet machine would have Playwright's browsers installed. It skips the
// test where that layout is not Linux's.
func RunServer(t *testing.T) *Server {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the test's browser registry layout is Linux's")
	}
	res, err := setup.Locate(context.Background(), setup.Options{})
	if err != nil || res.Driver.Dir == "" || res.Browser.Path == "" {
		t.Fatalf("setup.Locate (run \"go run ./cmd/aegis setup\"): %v", err)
	}
	pkg := filepath.Join(res.Driver.Dir, "package")
	reg := t.TempDir()
	var browsers struct {
		Browsers []struct{ Name, Revision string } `json:"browsers"`
	}
	b, err := os.ReadFile(filepath.Join(pkg, "browsers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &browsers); err != nil {
		t.Fatal(err)
	}
	for _, br := range browsers.Browsers {
		var exe string
		switch br.Name {
		case "chromium":
			exe = "chrome"
		case "chromium-headless-shell":
			exe = "headless_shell"
		default:
			continue
		}
		dir := filepath.Join(reg, strings.ReplaceAll(br.Name, "-", "_")+"-"+br.Revision, "chrome-linux")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(res.Browser.Path, filepath.Join(dir, exe)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(res.Driver.Dir, "node"), filepath.Join(pkg, "cli.js"), "run-server", "--port", "0", "--host", "127.0.0.1")
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_BROWSERS_PATH="+reg)
	// A group of its own: Kill ends the server (node and anything it runs
	// in its group), and nothing else of the test's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "Listening on ") {
				select {
				case lines <- strings.TrimPrefix(l, "Listening on "):
				default: // the first is the endpoint; another must not block the reader
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.stop)
	select {
	case s.Endpoint = <-lines:
		return s
	case <-s.done:
		t.Fatalf("run-server exited before it printed its endpoint: %v", cmd.ProcessState)
	case <-time.After(30 * time.Second):
		t.Fatal("run-server printed no endpoint")
	}
	return nil
}

// stop asks the server to exit (it exits when its stdin closes), and
// kills it if it has not after 10s.
func (s *Server) stop() {
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.Kill()
	}
}

// Kill kills the server at once (SIGKILL to its process group), as a
// machine of a fleet that goes away, and returns when the server has
// exited: its port refuses connections from then on. The browsers it
// launched are not in that group (Playwright starts each in a process
// group of its own): each exits by itself when its pipe to the server
// closes, which the server's death does; Kill does not wait for that.
func (s *Server) Kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}
