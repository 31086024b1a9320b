// Package fence is the other half of a fencing token: a guard at the
// resource that refuses a write carrying a token lower than one it has
// already seen.
//
// A lock alone cannot protect a resource. A holder that pauses past its
// lease (a GC pause, a SIGSTOP, a slow disk) wakes up still believing it
// holds the lock and writes over the next holder's work. With fencing,
// every holding carries a token that increases strictly from one holder
// to the next (warden's FencedLock.Token, Lock's fenced variants,
// election terms), and every write carries the token: the resource keeps
// the highest token it has seen and refuses a lower one with
// ErrStaleToken. A holder writes as often as it likes with its own token:
// equal tokens are accepted.
//
// Two guards are provided:
//
//   - Redis, for a resource kept in Redis (any go-redis UniversalClient,
//     a Cluster too): Set, Del, HSet, IncrBy and Incr, and Eval for a
//     script of the caller's. The guard keeps the highest token per key in
//     a key of the same slot (GuardKey names it) and checks it in the same
//     Lua script as the write, atomically.
//   - SQL, for a database reached through database/sql (PostgreSQL,
//     SQLite, MySQL): Do runs the caller's function in a transaction that
//     first raises the resource's row in a fence table to the token, and
//     rolls back with ErrStaleToken when a higher token was seen. Migrate
//     creates the table; nothing creates it implicitly.
//
// The package takes a plain int64 token, so it works with any token
// source, and imports no database driver: the caller's program brings
// its own.
//
// The guard refuses a stale write; it cannot make a stale holder's
// earlier reads fresh. Read what a write depends on through the guard
// too (inside Do, or in an Eval script) so that the read raises the
// guard and a later stale write is refused.
package fence
