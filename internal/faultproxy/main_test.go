package faultproxy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (a proxy pipe, a go-redis
// pool worker, a redis-server reaper) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
