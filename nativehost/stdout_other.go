//go:build !unix

package nativehost

import "os"

// ProtectStdout returns stdout for the frames and points os.Stdout at
// stderr, so that Go code that prints to os.Stdout writes to the log. (On
// Unix the file descriptor itself is moved; see stdout_unix.go.)
func ProtectStdout() (*os.File, error) {
	f := os.Stdout
	os.Stdout = os.Stderr
	return f, nil
}
