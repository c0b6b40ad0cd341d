//go:build !linux

package setup

// defaultAptLockHolder: apt-get is only used on Linux.
func defaultAptLockHolder() (pid int, name string, held bool) { return 0, "", false }
