package client

import (
	"context"
	"time"
)

// Mutex is the core every lock type has: a *Lock of any kind (reentrant,
// fair, read, write, non-reentrant, non-reentrant fair, spin, group; a
// StripedLock's stripe), a *FencedLock, a *MultiLock (a StripedLock's
// ForKeys too) and a *RedLock. Code that only takes, holds and gives back
// a lock can accept a Mutex and work with any of them.
//
// Each method keeps its type's error contract: the blocking Lock and
// LockLease fail with ErrNotObtained (with the context's error) when ctx
// ends first; TryLock and TryLockWait return false with a nil error when
// the wait runs out; Unlock releases one hold (ErrNotHeld when there was
// none). Lost is closed when the current holding is lost, which includes
// the Close of the Client it is held through (for a MultiLock, of any
// member's Client; for a RedLock, of a majority's). Do acquires, runs fn
// with a context cancelled on loss (cause ErrLockLost; ErrClosed too when
// a Close caused it), and releases whatever fn does, even when it panics.
type Mutex interface {
	// Lock acquires in watchdog mode, waiting until it is obtained or
	// ctx ends.
	Lock(ctx context.Context) error
	// LockLease acquires with a fixed lease and no renewal, waiting until
	// it is obtained or ctx ends.
	LockLease(ctx context.Context, lease time.Duration) error
	// TryLock makes one attempt in watchdog mode.
	TryLock(ctx context.Context) (bool, error)
	// TryLockWait waits up to wait and holds for lease (0: watchdog
	// mode).
	TryLockWait(ctx context.Context, wait, lease time.Duration) (bool, error)
	// Unlock releases one hold.
	Unlock(ctx context.Context) error
	// Lost returns a channel closed when the current holding is lost.
	Lost() <-chan struct{}
	// Do acquires in watchdog mode, runs fn and releases.
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}

var (
	_ Mutex = (*Lock)(nil)
	_ Mutex = (*FencedLock)(nil)
	_ Mutex = (*MultiLock)(nil)
	_ Mutex = (*RedLock)(nil)
)
