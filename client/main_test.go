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
	if spec := os.Getenv(childFairWaitEnv); spec != "" {
		// A child process of TestCrashedFairWaiterGivesUpItsPlaceWithinOneWatchdog.
		os.Exit(waitFairUntilKilled(spec))
	}
	goleak.VerifyTestMain(m)
}
