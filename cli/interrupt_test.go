//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildAegis builds cmd/aegis into dir: the interrupt tests run the real
// process, signals and all.
func buildAegis(t *testing.T, dir string) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	bin := filepath.Join(dir, "aegis")
	cmd := exec.Command(goTool, "build", "-o", bin, "../cmd/aegis")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build aegis: %v\n%s", err, out)
	}
	return bin
}

// lineWatch collects a process's stderr line by line; tests wait for a
// line, never for time.
type lineWatch struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
	done  chan struct{}
}

func newLineWatch(r *bufio.Scanner) *lineWatch {
	w := &lineWatch{more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for r.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, r.Text())
			close(w.more)
			w.more = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	return w
}

// startAegis starts bin with args in a process group of its own (so that
// a signal reaches the browser and its driver too, as a terminal's does,
// and the test's end kills them all), and returns it with its stdout and
// a watch over its stderr lines.
func startAegis(t *testing.T, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, *lineWatch) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout := new(bytes.Buffer)
	cmd.Stdout = stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, stdout, newLineWatch(bufio.NewScanner(pipe))
}

// wait returns the index of the first line matching re, failing the test
// if the stream ends (or the guard of minutes passes) before one does.
func (w *lineWatch) wait(t *testing.T, re *regexp.Regexp) int {
	t.Helper()
	guard := time.After(3 * time.Minute)
	for {
		w.mu.Lock()
		more := w.more
		w.mu.Unlock()
		if i := w.index(re); i >= 0 {
			return i
		}
		select {
		case <-more:
		case <-w.done:
			if i := w.index(re); i >= 0 {
				return i
			}
			t.Fatalf("stderr ended without a line matching %s:\n%s", re, strings.Join(w.all(), "\n"))
		case <-guard:
			t.Fatalf("no line matching %s:\n%s", re, strings.Join(w.all(), "\n"))
		}
	}
}

// index returns the index of the first line matching re, or -1.
func (w *lineWatch) index(re *regexp.Regexp) int {
	for i, l := range w.all() {
		if re.MatchString(l) {
			return i
		}
	}
	return -1
}

func (w *lineWatch) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}

// TestInterruptSealsAndVerifies is Ctrl-C in a terminal: aegis demo and
// aegis run, each a real process in a process group of its own (a
// terminal's foreground job), are interrupted while their progress shows
// steps and an approval waits on the live channel; the interrupt goes to
// the whole group, browser and driver included, as a terminal sends it.
// Each prints "stopping..." at once, ends aborted (exit 3) with its bundle
// sealed; the demo reports it valid, and aegis verify agrees.
func TestInterruptSealsAndVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	tmp := t.TempDir()
	bin := buildAegis(t, tmp)
	site := demoSite(t)
	task := writeFile(t, "task.json", `{"goal":"Order","urls":["`+site+`/form"],"hints":{"steps":[
		"type \"Ada Lovelace\" into \"Full name\"",
		"click \"Place order\""]}}`, 0o644)
	tests := []struct {
		name string
		args []string
		out  []string // in stdout, once interrupted
	}{
		{"demo", []string{"demo"}, []string{"aegis demo: aborted", "summary:   aborted after", "interrupted (Ctrl-C)", "verify:    valid: sealed"}},
		{"run", []string{"run", task}, []string{`"status": "aborted"`, `"sealed": true`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evidenceRoot := filepath.Join(t.TempDir(), "evidence")
			args := append(tt.args, "--evidence", evidenceRoot, "--listen", "127.0.0.1:0",
				"--listen-token-file", filepath.Join(t.TempDir(), "token"), "--approval-timeout", "30m")
			cmd, stdout, stderr := startAegis(t, bin, args...)
			step := stderr.wait(t, regexp.MustCompile(`^step \d+/\d+  `))
			waiting := stderr.wait(t, regexp.MustCompile(`^aegis: approval waiting \(high risk\): click #submit "Place order": approve or deny it in the live console http://127\.0\.0\.1:\d+/\?session=s-[^\s#]+ \(bearer token in \S+; refused if unanswered in 30m0s\)$`))
			if waiting < step {
				t.Errorf("the approval was announced before any step")
			}
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			stopping := stderr.wait(t, regexp.MustCompile(`^aegis: stopping\.\.\. \(Ctrl-C`))
			ended := stderr.wait(t, regexp.MustCompile(`^aegis: aborted in .*; evidence \S+ \(sealed, head `))
			if stopping > ended {
				t.Errorf("stopping... came after the end")
			}
			<-stderr.done
			err := cmd.Wait()
			var ee *exec.ExitError
			if got, want := exitStatus(err, &ee), ExitAborted; got != want {
				t.Fatalf("exit %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", got, err, want, stdout.String(), strings.Join(stderr.all(), "\n"))
			}
			for _, want := range tt.out {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			bundles, _ := os.ReadDir(evidenceRoot)
			if len(bundles) != 1 {
				t.Fatalf("%d bundles in %s", len(bundles), evidenceRoot)
			}
			bundle := filepath.Join(evidenceRoot, bundles[0].Name())
			out, err := exec.Command(bin, "verify", bundle).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "valid: session "+bundles[0].Name()+" aborted, sealed") {
				t.Errorf("aegis verify %s: %v\n%s", bundle, err, out)
			}
		})
	}
}

// exitStatus is the exit code of a process that ended with err.
func exitStatus(err error, ee **exec.ExitError) int {
	if err == nil {
		return 0
	}
	if errors.As(err, ee) {
		return (*ee).ExitCode()
	}
	return -1
}

// TestInterruptContext: the first SIGINT or SIGTERM says "stopping..."
// at once and cancels the context with a cause that says which; stop
// without a signal says nothing.
func TestInterruptContext(t *testing.T) {
	var b bytes.Buffer
	ctx, stop := InterruptContext(t.Context(), &b)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	cause := context.Cause(ctx)
	if !errors.Is(cause, ErrInterrupted) || cause.Error() != "interrupted (terminated)" {
		t.Errorf("cause %v, want ErrInterrupted (terminated)", cause)
	}
	if got, want := b.String(), "aegis: stopping... (terminated: what is under way ends cleanly; interrupt again to quit at once)\n"; got != want {
		t.Errorf("said %q, want %q", got, want)
	}

	var quiet bytes.Buffer
	ctx, stop = InterruptContext(t.Context(), &quiet)
	stop()
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) || errors.Is(cause, ErrInterrupted) || quiet.Len() != 0 {
		t.Errorf("stop without a signal: cause %v, said %q", cause, quiet.String())
	}
}
