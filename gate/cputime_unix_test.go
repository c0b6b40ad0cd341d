//go:build unix

package gate

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has used:
// unlike wall time, it does not grow while other processes hold the cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
