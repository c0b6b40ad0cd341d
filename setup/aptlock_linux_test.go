//go:build linux

package setup

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

const holdLockEnv = "AEGIS_SETUP_TEST_HOLD_LOCK"

// TestSetupHelperHoldLock is not a test: run as a child process by
// TestSetupLockHolderSeesRealLock, it holds an fcntl lock like apt does
// until its stdin closes.
func TestSetupHelperHoldLock(t *testing.T) {
	p := os.Getenv(holdLockEnv)
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// TestSetupLockHolderSeesRealLock: the probe sees a lock another process
// holds (the way apt-get and dpkg hold theirs), names it, and sees it go.
func TestSetupLockHolderSeesRealLock(t *testing.T) {
	dir := t.TempDir()
	lockFile := filepath.Join(dir, "lock-frontend")
	files := []string{filepath.Join(dir, "absent"), lockFile}

	if pid, name, held := lockHolder(files); held {
		t.Fatalf("lock held by %d %s before anyone took it", pid, name)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSetupHelperHoldLock$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+lockFile)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	pid, name, held := lockHolder(files)
	if !held || pid != cmd.Process.Pid || name == "" {
		t.Errorf("lockHolder = %d, %q, %v; want %d, its name, true", pid, name, held, cmd.Process.Pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if pid, name, held := lockHolder(files); held {
		t.Errorf("lock still held by %d %s after the holder exited", pid, name)
	}
}
