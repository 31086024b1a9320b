package client

import "github.com/warden-go/warden/messages"

// SpinLock returns a handle on the spin lock name (Redisson's
// RedissonSpinLock): a reentrant lock, renewed by the watchdog as Lock is,
// with Lock's keys and acquire, so that a Redisson spin lock or RLock of
// the same name excludes it. Its waiters never subscribe to a channel:
// they poll Redis with back-off (WithExponentialBackOff, the default, or
// WithConstantBackOff), and its unlock publishes nothing. Use it where
// pub/sub traffic costs more than polling: on a Redis Cluster every
// PUBLISH is broadcast to every node, and many lock channels can swamp
// it. A waiter polls from its engine's timers, on the Client's clock
// (WithClock); the waiters of one name in one Client share one poll: the
// first in line polls, on its own handle's back-off but never pausing
// longer than the longest pause of any waiter's back-off, and a release
// within the process lets the next try at once. A waiter is not woken by
// another process's unlock: it learns of it at its next poll, up to the
// back-off's longest pause later.
//
// Since its unlock publishes nothing, a waiter of another kind on the same
// name (a Lock, FencedLock or NonReentrantLock here, an RLock in Redisson)
// is not woken when a spin lock holder lets go: it gets the lock when its
// own wait for the lease's end comes, up to the watchdog timeout later.
// Give one name one kind.
func (c *Client) SpinLock(name string, opts ...LockOption) *Lock {
	return c.newLock(name, messages.KindSpinLock, opts)
}

// validateBackOff checks a back-off a handle of kind was given: valid,
// and for a spin lock.
func validateBackOff(kind messages.Kind, o lockOptions) error {
	if kind != messages.KindSpinLock {
		return invalid("back-off", "only a spin lock's waiters poll with a back-off, not a %s's", kind)
	}
	return o.backOffErr
}
