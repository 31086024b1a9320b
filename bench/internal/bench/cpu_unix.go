//go:build unix

package bench

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user + system) this process has used,
// from getrusage(RUSAGE_SELF).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
