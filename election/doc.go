// Package election elects one leader among candidates on warden, in the
// shape of etcd's concurrency.Election: Campaign blocks until the candidate
// leads, Resign gives the leadership up, Leader reads who leads and the
// value it campaigned with, Observe follows the leaders as they change.
//
// Leadership is a warden fenced lock (client.FencedLock) named after the
// election: the leader holds it in watchdog mode, so a leader whose process
// dies or stalls loses it within the Client's watchdog timeout, and the
// other candidates, waiting on the lock, are woken by its unlock message or
// at its expiry, not by polling. Lost closes as soon as the term ends, the
// way the lock's Lost does, including when Redis cannot be reached for a
// whole lease: a leader never goes on acting past its lease unknowingly.
//
// Every term carries the lock's fencing token (Token), strictly increasing
// across terms: a resource the leader writes to can refuse a deposed
// leader's late writes by remembering the highest token it accepted.
//
// The leader's value is kept in warden_election:{name} (a hash: id, token,
// value) with the lock's remaining lease as its TTL, refreshed by the
// leader, and read only while its writer still holds the lock; each new
// term is announced on the channel warden_election__channel:{name}, which
// Observe subscribes to.
//
//	e, err := election.New(c, "scheduler")
//	...
//	if err := e.Campaign(ctx, "host-a:8080"); err != nil { ... }
//	defer e.Resign(context.Background())
//	token := e.Token() // send it with every write the leader makes
//	select {
//	case <-e.Lost(): // stop acting as the leader
//	case <-work:
//	}
package election
