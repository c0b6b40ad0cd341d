package setup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Cmd is one process for a Runner to run.
type Cmd struct {
	// Path is the program, an absolute path as found by Options.LookPath.
	Path string
	// Args are the arguments, without the program name.
	Args []string
	// Env holds KEY=VALUE pairs added to the current environment.
	Env []string
	// Stdout receives the standard output; nil captures it into Run's result.
	Stdout io.Writer
	// Stderr receives the standard error; nil captures it for the error
	// message when the process fails.
	Stderr io.Writer
}

// String renders the command line for messages.
func (c Cmd) String() string {
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// Runner runs external processes. Tests inject fakes; ExecRunner is the real one.
type Runner interface {
	// Run runs c to completion and returns its captured standard output
	// (when c.Stdout is nil). A non-zero exit is an error.
	Run(ctx context.Context, c Cmd) ([]byte, error)
}

// ExecRunner runs processes with os/exec. When ctx ends the process gets
// an interrupt (so apt-get and npm can clean up) and is killed 10 seconds
// later.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, c Cmd) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = 10 * time.Second
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout = c.Stdout
	if cmd.Stdout == nil {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = c.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s: %w: %s", c, err, lastLines(msg, 3))
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w", c, err)
	}
	return stdout.Bytes(), nil
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// writers (stdout and stderr of one process).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLines returns the last n lines of s, joined with " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " | ")
}
