// Package await bounds the waits of tests: a test that waits on a channel
// or a WaitGroup fails after a deadline instead of hanging until the test
// binary's timeout.
package await

import (
	"sync"
	"testing"
	"time"
)

// Value returns what arrives on ch within d, and fails the test otherwise.
func Value[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}

// Group waits for wg up to d, and fails the test otherwise.
func Group(t testing.TB, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	Value(t, done, d, what)
}
