//go:build linux

package setup

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// aptLockFiles are the fcntl locks apt-get and dpkg take.
var aptLockFiles = []string{
	"/var/lib/dpkg/lock-frontend",
	"/var/lib/dpkg/lock",
	"/var/lib/apt/lists/lock",
	"/var/cache/apt/archives/lock",
}

func defaultAptLockHolder() (pid int, name string, held bool) {
	return lockHolder(aptLockFiles)
}

// lockHolder probes the files with F_GETLK, which neither takes nor
// disturbs a lock, and reports the first holder found.
func lockHolder(files []string) (pid int, name string, held bool) {
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		err = syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk)
		f.Close()
		if err != nil || lk.Type == syscall.F_UNLCK {
			continue
		}
		pid = int(lk.Pid)
		if pid > 0 {
			if comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
				name = strings.TrimSpace(string(comm))
			}
		}
		return pid, name, true
	}
	return 0, "", false
}
