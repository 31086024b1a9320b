//go:build linux

package redisproc

import "syscall"

// sysProcAttr asks the kernel to SIGKILL redis-server if its parent dies
// without stopping it (for example a test binary on a timeout panic), so no
// server outlives its parent. (Linux delivers the signal when the OS thread
// that started the child exits; the Go runtime only retires threads locked
// with runtime.LockOSThread, which nothing here does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
