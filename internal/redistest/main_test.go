package redistest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (for example a go-redis pool
// worker or a process reaper) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
