//go:build !linux

package cli

import "os"

// isTTY reports whether the character device f is a terminal; without
// a portable terminal query, any character device but the null device.
func isTTY(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}
