package client_test

import (
	"context"
	"testing"
	"time"
)

// testWaitBound is how long a test's blocking calls may wait at most, in
// case a defect keeps one of them from ever returning.
const testWaitBound = 3 * time.Minute

// testCtx is the context of a test's calls: a Lock or Acquire that should
// return at once but does not fails the test with the context's error
// after testWaitBound (or 30 s before the test binary's own timeout,
// whichever comes first), instead of hanging the package until that
// timeout. It is cancelled when the test and its cleanups registered
// after it are done.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	deadline := time.Now().Add(testWaitBound)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(deadline) {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}
