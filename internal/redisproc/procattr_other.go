//go:build !linux

package redisproc

import "syscall"

// sysProcAttr returns the default attributes: parent-death signals are a
// Linux feature, so elsewhere only Stop or Kill ends the server.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
