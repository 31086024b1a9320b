package client_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(childHoldEnv); spec != "" {
		// A child process of TestCrashedProcessLockFreesWithinItsLease.
		os.Exit(holdUntilKilled(spec))
	}
	goleak.VerifyTestMain(m)
}
