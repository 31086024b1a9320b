//go:build linux

package redistest

import "syscall"

// sysProcAttr asks the kernel to SIGKILL redis-server if the test binary dies
// without running its cleanups (for example on a test timeout panic), so no
// server outlives the test process. (Linux delivers the signal when the OS
// thread that started the child exits; the Go runtime only retires threads
// locked with runtime.LockOSThread, which nothing here does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
