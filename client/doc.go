// Package client is warden's Go API: Redisson-grade distributed locks on
// Redis.
//
// A Client wraps the caller's redis.UniversalClient (single node, Sentinel
// or Cluster) and runs a small actor engine: one key actor per lock name,
// one pub/sub connection shared by every waiter of the Client, and one
// watchdog that renews every held lock with batched scripts (up to 1000
// locks a call; one call per hash slot on a cluster; a group lock's
// holding, one call each) every timeout/3.
// Lock handles are cheap; each has its own owner identity
// ("<clientID>:<n>", Redisson's "<uuid>:<threadId>"), so a Go service
// running warden and a Java service running Redisson exclude each other on
// the same lock.
//
// Every call takes a context. Blocking calls (Lock, LockLease, LockToken,
// Acquire, Await, ...) wait until the lock (the permits, the latch's zero)
// is obtained or the context ends; Try* calls wait at most their wait
// time and report false, with a nil error, when it runs out.
//
// One rule for every call that waits, blocking or Try*, of every type
// (Lock and its kinds, FencedLock, Semaphore, PermitExpirableSemaphore,
// CountDownLatch, MultiLock, RedLock): when its context ends before it
// obtained what it waited for (or had already ended when it was called),
// it returns an error that matches both ErrNotObtained and the context's
// error (context.Canceled or context.DeadlineExceeded, and the context's
// cause when the canceller gave one), with errors.Is, in one line that
// names what was waited for:
//
//	warden: lock order:42 not obtained: context deadline exceeded
//	warden: 2 permits of semaphore jobs not obtained: context canceled
//	warden: multilock a, b not obtained: context canceled (cause: shutting down)
//
// Nothing is held afterwards: a wait withdrawn as its lock was granted
// gives it back.
package client
