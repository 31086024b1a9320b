// Command warden shows who holds what in warden's (and Redisson's) locks
// on a Redis, and can take a lock away from its holder.
//
// Install it with
//
//	go install github.com/warden-go/warden/cmd/warden@latest
//
// Usage:
//
//	warden [connection flags] ls [GLOB] [--json]
//	warden [connection flags] inspect NAME [--json]
//	warden [connection flags] unlock --force [--yes] NAME
//	warden [connection flags] watch [GLOB] [--interval 1s] [--count N]
//	warden [connection flags] clients [GLOB] [--json]
//	warden [connection flags] permits release [--yes] [--semaphore] [--over] NAME N
//	warden [connection flags] doctor [GLOB] [--acl-user NAME] [--read-only] [--json]
//	warden acl [--user NAME [--password P]] [--read-only] [NAMES]
//
// ls lists every object of the lock family whose name matches GLOB
// (default "*"), one line each (name, kind, TTL, holders, waiters, and a
// semaphore's permits, a latch's count or a fenced lock's token); it
// streams as it scans, with SCAN on every master of a Cluster. With --json
// it prints one JSON array of the objects inspect --json prints.
//
// inspect prints one object in full. Its JSON fields: name, kind (lock,
// fair_lock, rw_lock, fenced_lock, group_lock, semaphore,
// permit_semaphore, count_down_latch, or semaphore_or_count_down_latch
// for what the layout cannot tell apart: see client.Inspect), ttl_ms (-1:
// no expiry), holders [{owner, client_id, count, mode ("read", "write" or
// ""), value (a group lock's: the value held; one holder per value),
// registered, service, host, pid}], waiters [{owner, client_id,
// deadline_ms}], and where they apply permits, count, token, leases
// [{id, expires_ms (-1: never)}] and total (a permit-expirable semaphore's
// permits, available and held). A registered holder has alive: false once
// its process is gone or its Client closed.
//
// unlock --force deletes the lock NAME whoever holds it and publishes the
// unlock message, as client's ForceUnlock does for the name's kind: its
// waiters wake, and its holder's engine reports the holding lost at its
// next renewal (a watchdog-mode holding), or when its lease would have
// ended (a fixed-lease holding: the holder works on until then unless it
// calls Unlock, which returns ErrNotHeld). It asks for confirmation when
// its input is a terminal, unless --yes; with no terminal (a pipe,
// /dev/null) it refuses without --yes.
//
// watch refreshes a view of the held locks, their holders, waiters and
// how long each holding has been seen, every --interval, until interrupted
// (or --count refreshes). A holding already there at the first refresh
// shows its age as ">" the time since the watch began.
//
// clients lists the client registry (warden_client:*): each Client's
// service, host, pid, version, how long it ran and when it last refreshed
// its entry, or "gone since" its last refresh for one whose refreshes
// stopped (a process killed: its entry stays for the registry retention,
// 24 hours by default, so that its locks' holder stays named), or "closed
// since" for one closed while its handles held locks (Close releases
// nothing; --json gives "alive" and, for a closed one, "closed_ms"). Alive
// or gone is judged on the Redis server's clock (the entry's TTL left
// against the TTL it was written with), whatever this host's clock says.
// Then come the holders, of the names matching GLOB (default "*"), whose
// client has no entry (a Redisson client, a Client with the registry off,
// one gone for longer than its retention, or an entry a restart, failover
// or eviction lost). ls, inspect and watch mark a gone holder "(gone)" and
// a closed one "(closed)".
//
// permits release gives N permits back to the semaphore NAME (those a
// process took and died holding), with the confirmation rules of unlock
// --force, and prints how many are available after the release. A positive
// integer is a semaphore's permits or a count-down latch's count, which
// Redis cannot tell apart: it refuses one (exit 4) unless --semaphore says
// it is a semaphore. Where warden recorded the semaphore's total
// (TrySetPermits, SetPermits, moved by AddPermits), inspect and ls show
// it, and a release that would leave more available than the total is
// refused (exit 5) unless --over; a semaphore Redisson set has no total,
// and nothing bounds N. A permit-expirable semaphore's permits come
// back by themselves as their leases end: it refuses one (exit 4).
//
// doctor checks the server against what the lock family needs, one line
// per finding ("ok", "warn", "unknown" or "problem", the check, the node,
// what it found): maxmemory-policy, the Redis version, keyspace events,
// persistence, replication, the clock offset to this host, on every master
// of a Cluster, and the ACL user's commands, keys and channels on GLOB (the
// connecting user's, or --acl-user's; ACL DRYRUN needs an admin; with
// --read-only, against the read-only rules of acl --read-only). What the
// user may not read is "unknown", no failure; a problem exits 6.
//
// ls, watch and clients read every name SCAN finds; the names Redis
// refuses to let the user read (a user whose ACL covers other names only)
// are reported in one line at the end, with their number and the first
// refusal, and the command exits 5. A user whose ACL covers "orders:*"
// gives that glob.
//
// acl prints the Redis ACL rules a warden Client needs for the names
// matching NAMES (default "*"), or with --read-only those of ls, inspect,
// watch, clients and doctor (client.ACLRules, client.ReadOnlyACLRules).
// With --user NAME it prints a whole line for redis-cli, "ACL SETUSER NAME
// on resetpass >PASSWORD rules...", the password from --password (never
// REDIS_PASSWORD's) or a placeholder it says on stderr to replace. The
// line is a Redis command, not shell arguments: pipe it into redis-cli
// (warden acl --user NAME GLOB | redis-cli ...) or paste it at its prompt.
// resetpass makes a second run with a new password replace the old one.
//
// # Connection
//
// --addr host:port (default localhost:6379), or --cluster host:port,...
// for a Redis Cluster, or --sentinel host:port,... with --master-name for
// Sentinel; --addr beside --cluster or --sentinel is a usage error (exit
// 2). REDIS_URL (redis://user:password@host:port/db) gives the
// address and credentials when --addr is not set; --user and --password
// (or REDIS_PASSWORD) override its credentials. --timeout bounds each
// Redis call (default 5s).
//
// ls, inspect, watch, clients and doctor only read (SCAN, TYPE, PTTL,
// GET, GETRANGE, HLEN, HGETALL, LRANGE, ZRANGE; doctor INFO, TIME, CONFIG
// GET, ACL DRYRUN): they never write. unlock --force and permits release
// are the only commands that write. They do not copy a user's large
// values out of Redis: a string's first 64 bytes and the fields of a hash
// of at most 65,536 are all they read (see client.Inspect).
//
// Tables show a name, owner or value that holds a control character (or
// is not UTF-8) Go-quoted; --json gives it as a JSON string (control
// characters escaped, bytes that are not UTF-8 replaced by U+FFFD).
//
// # Exit codes
//
// Every failure prints one line on standard error, "warden: ...", and
// exits with:
//
//	0  success
//	1  Redis cannot be reached, or a Redis error
//	2  usage: an unknown command or flag, an invalid NAME or GLOB
//	3  nothing of the lock family under NAME (inspect, unlock), or
//	   nobody holds the lock NAME (unlock)
//	4  the key under NAME is no lock-family object (a user's own list, say),
//	   or unlock of a kind that has no holder (a semaphore), or permits
//	   release of a kind that is no semaphore (or may be a latch, without
//	   --semaphore)
//	5  refused: unlock or permits release not confirmed, a release past a
//	   semaphore's recorded total without --over, or Redis refused
//	   the user (a wrong password, or an ACL without the permission, as a
//	   read-only user's for unlock)
//	6  doctor found a problem
//	130  interrupted (SIGINT, SIGTERM) before it was done; watch, which
//	   runs until interrupted, exits 0
package main
