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
// Every call takes a context. Blocking calls (Lock, LockLease) wait until
// the lock is obtained or the context ends; Try* calls wait at most their
// wait time and report false, with a nil error, when it runs out.
package client
