//go:build linux

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// descendants lists the processes under pid (children, their children...)
// as "PID STATE COMMAND", read from /proc.
func descendants(t *testing.T, pid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	what := map[int]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// PID (COMMAND) STATE PPID ...: COMMAND may hold spaces and ")".
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
		what[p] = fmt.Sprintf("%d %s %s", p, fields[0], s[open+1:end])
	}
	var out []string
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, what[queue[0]])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// TestLingerInProcessTree: "aegis demo --listen", a real process whose
// stderr is a pipe (no terminal, as in CI). Without --linger it exits when
// the run ends: it does not keep the console, Chromium and the Playwright
// driver for minutes. With --linger given it is honoured, but the
// browser and the driver are gone while it lingers: no process is left
// under aegis; Ctrl-C then ends it with the run's status.
func TestLingerInProcessTree(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	bin := buildAegis(t, t.TempDir())
	tests := []struct {
		name    string
		args    []string
		lingers bool
	}{
		{"no terminal, no --linger", nil, false},
		{"--linger given", []string{"--linger", "10m"}, true},
	}
	lingering := regexp.MustCompile(`^aegis: the run ended; the console stays open at http://127\.0\.0\.1:\d+/\?session=s-[^\s#]+ \(bearer token in \S+\) until Ctrl-C \(or 10 min\)$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"demo", "--approve", "auto", "--listen", "127.0.0.1:0", "--evidence", filepath.Join(dir, "evidence"),
				"--listen-token-file", filepath.Join(dir, "token")}, tt.args...)
			cmd, stdout, stderr := startAegis(t, bin, args...)
			if tt.lingers {
				stderr.wait(t, lingering)
				if left := descendants(t, cmd.Process.Pid); len(left) > 0 {
					t.Errorf("while lingering, processes are left under aegis:\n%s", strings.Join(left, "\n"))
				}
				if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
				stderr.wait(t, regexp.MustCompile(`^aegis: stopping\.\.\. \(Ctrl-C`))
			}
			<-stderr.done
			err := cmd.Wait()
			var ee *exec.ExitError
			if got, want := exitStatus(err, &ee), ExitOK; got != want {
				t.Fatalf("exit %d (%v), want %d\nstderr:\n%s", got, err, want, strings.Join(stderr.all(), "\n"))
			}
			if !tt.lingers && stderr.index(regexp.MustCompile(`stays open`)) >= 0 {
				t.Errorf("the run lingered without a terminal and without --linger:\n%s", strings.Join(stderr.all(), "\n"))
			}
			if !strings.Contains(stdout.String(), "verify:    valid: sealed") {
				t.Errorf("stdout:\n%s", stdout.String())
			}
		})
	}
}
