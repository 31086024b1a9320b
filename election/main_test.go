package election_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(childLeaderEnv); spec != "" {
		// A child process of the kill -9 and SIGSTOP tests: a candidate
		// that leads until it is killed.
		os.Exit(leadUntilKilled(spec))
	}
	goleak.VerifyTestMain(m)
}
