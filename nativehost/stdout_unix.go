//go:build unix

package nativehost

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ProtectStdout moves the frame stream off file descriptor 1: it returns a
// duplicate of stdout for the frames, then points descriptor 1 and
// os.Stdout at stderr. A stray print anywhere in the process (a library,
// a panic handler) then lands in the log instead of being read by Chrome
// as a frame length. Call it once, before anything else runs.
func ProtectStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("nativehost: protect stdout: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nativehost: protect stdout: %w", err)
	}
	os.Stdout = os.Stderr
	return os.NewFile(uintptr(fd), "frames"), nil
}
