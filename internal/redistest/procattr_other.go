//go:build !linux

package redistest

import "syscall"

// sysProcAttr returns the default attributes: parent-death signals are a
// Linux feature, so elsewhere cleanups alone stop the server.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
