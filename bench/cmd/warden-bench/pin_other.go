//go:build !linux

package main

import (
	"errors"
	"runtime"
)

// pinSupported tells validate that -pin does not work here.
const pinSupported = false

// pinning is what pin did (see pin.go); -pin works on Linux only.
type pinning struct{ undo func() }

func (pinning) String() string { return "" }

func pin(int) (pinning, error) {
	return pinning{}, errors.New("-pin: CPU affinity is set on Linux only, not on " + runtime.GOOS)
}
