package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// ObjectKind is what an inspected name is, as far as Redis tells: the
// layouts of some kinds are the same (see Inspect).
type ObjectKind string

// The kinds Inspect reports.
const (
	// ObjectLock: a lock's hash of holders, without fair-lock waiters
	// or a token counter. The reentrant lock, and the spin and
	// non-reentrant locks, which share its layout; also a fair lock
	// nobody waits for.
	ObjectLock ObjectKind = "lock"
	// ObjectFairLock: a lock with a fair lock's queue of waiters.
	ObjectFairLock ObjectKind = "fair_lock"
	// ObjectReadWriteLock: a read/write lock (its hash has a mode).
	ObjectReadWriteLock ObjectKind = "rw_lock"
	// ObjectFencedLock: a lock with a token counter.
	ObjectFencedLock ObjectKind = "fenced_lock"
	// ObjectGroupLock: a group lock's hash (value -> holder, with each
	// hold's count and end); each Holder names its Value.
	ObjectGroupLock ObjectKind = "group_lock"
	// ObjectSemaphore: an integer at or below zero, which no
	// count-down latch shows (a latch is deleted when it reaches zero).
	ObjectSemaphore ObjectKind = "semaphore"
	// ObjectPermitSemaphore: a permit-expirable semaphore with held
	// permits.
	ObjectPermitSemaphore ObjectKind = "permit_semaphore"
	// ObjectCountDownLatch is never inferred from Redis alone (a
	// latch's count is an integer like a semaphore's permits); it is here
	// for callers that know the kind by other means.
	ObjectCountDownLatch ObjectKind = "count_down_latch"
	// ObjectSemaphoreOrLatch: a positive integer, which a semaphore's
	// available permits and a count-down latch's count both are.
	ObjectSemaphoreOrLatch ObjectKind = "semaphore_or_count_down_latch"
)

// NoTTL is Object.TTL for a name without expiry.
const NoTTL time.Duration = -1

// Object is what Redis holds about one name of the lock family, read by
// Inspect or Scan.
type Object struct {
	Name string
	Kind ObjectKind
	// TTL is the name's time to live, NoTTL when it has none (semaphores
	// and latches) or when the name itself is absent (a fair lock's
	// waiters after its holder left, an unheld fenced lock).
	TTL time.Duration
	// Holders are the lock's holders, sorted by owner (a read/write lock:
	// writer first; a group lock: by value, a Holder per value held).
	// Empty for the counting kinds.
	Holders []Holder
	// Waiters are a fair lock's queued waiters, head first. Other kinds'
	// waiters are not in Redis: they wait on a pub/sub channel.
	Waiters []Waiter
	// Permits is a semaphore's available permits (permit_semaphore: those
	// available once expired permits are reclaimed, which the next call on
	// it does; semaphore_or_count_down_latch: the integer). Zero for the
	// other kinds.
	Permits int64
	// Total is the total a semaphore's permits were set to by warden's
	// TrySetPermits or SetPermits, moved by AddPermits since; HasTotal
	// tells whether it is known. A semaphore set by Redisson, which
	// records no total, has none. A semaphore with a total is
	// ObjectSemaphore even when its permits are positive: a count-down
	// latch has no total.
	Total    int64
	HasTotal bool
	// Leases are a permit semaphore's held permits that have not expired,
	// soonest end first.
	Leases []PermitLease
	// Count is a count-down latch's count (semaphore_or_count_down_latch:
	// the integer, as in Permits). Zero for the other kinds.
	Count int64
	// Token is a fenced lock's last token (its counter's value). Zero for
	// the other kinds.
	Token int64
}

// Holder is one holder of a lock.
type Holder struct {
	// Owner is the holder's identity: "<clientID>:<n>" for warden,
	// "<uuid>:<threadId>" for Redisson.
	Owner string
	// ClientID is the part of Owner before its last colon: the Client
	// (or Redisson instance) that holds it.
	ClientID string
	// Count is the hold count (reentries).
	Count int
	// Mode is "read" or "write" for a read/write lock, "" otherwise.
	Mode string
	// Value is the value a group lock's holder holds ("" for the other
	// kinds): a group lock has a Holder per value held.
	Value string
	// Client is the holder's Client from the client registry; nil when it
	// has no entry (a Redisson client, a Client with the registry off, one
	// gone for longer than its registry retention, or an entry lost in a
	// restart, failover or eviction).
	Client *ClientRecord
}

// Waiter is one waiter in a fair lock's queue.
type Waiter struct {
	Owner    string
	ClientID string
	// Deadline is when the waiter's place lapses unless its engine
	// refreshes it (warden) or it takes the lock (Redisson).
	Deadline time.Time
}

// PermitLease is one held permit of a permit-expirable semaphore.
type PermitLease struct {
	// ID is the permit ID (32 lowercase hex characters).
	ID string
	// Expiry is the permit's lease end; the zero Time when it never
	// expires.
	Expiry time.Time
}

// ClientRecord is a Client's entry in the client registry.
type ClientRecord struct {
	ID      string
	Service string
	Host    string
	PID     int
	Version string
	Started time.Time
	// Seen is when the Client last refreshed its entry.
	Seen time.Time
	// Beat is how often the Client refreshes its entry; 0 for an entry
	// an older warden wrote, which expires three periods after its last
	// refresh.
	Beat time.Duration
	// Closed is when the Client closed, leaving locks held in Redis (Close
	// without release): its entry was written one last time and expires
	// by its retention. Zero for a Client that has not closed.
	Closed time.Time
	// Idle is how long before the entry was read it had last been written,
	// on the Redis server's clock alone (the TTL the write gave it less
	// the TTL it has left), so that neither the reader's clock nor the
	// Client's host's need agree with the server's. For an entry that does
	// not record its TTL it is the server's TIME less Seen.
	Idle time.Duration
}

// Alive reports whether the entry's Client was running when the entry was
// read: it has not closed and refreshed the entry within two refresh
// periods (one missed refresh is forgiven), judged by Idle, on the Redis
// server's clock. An entry stays for the Client's registry retention
// (WithRegistryRetention) after its last refresh, so that a process that
// died holding a lock stays named; Alive tells it from a running one, and
// Seen says when it was last heard of. An entry without a Beat is alive
// unless Closed.
func (r ClientRecord) Alive() bool {
	if !r.Closed.IsZero() {
		return false
	}
	if r.Beat <= 0 {
		return true
	}
	return r.Idle <= 2*r.Beat
}

// serverNow returns a function that reads the Redis server's time (TIME)
// the first time it is called and answers that afterwards; the local
// clock when the server does not tell it.
func serverNow(ctx context.Context, rdb redis.UniversalClient) func() time.Time {
	var t time.Time
	return func() time.Time {
		if t.IsZero() {
			var err error
			if t, err = rdb.Time(ctx).Result(); err != nil {
				t = time.Now()
			}
		}
		return t
	}
}

// ClientIDOf returns the client ID of owner: the part before its last
// colon, or owner itself when it has none.
func ClientIDOf(owner string) string {
	if i := strings.LastIndexByte(owner, ':'); i > 0 {
		return owner[:i]
	}
	return owner
}

// Inspect reads everything Redis holds about name in the lock family's
// layouts, warden's and Redisson's: its kind, TTL, holders with their
// registry entries, a fair lock's waiters, and a semaphore's permits, a
// permit semaphore's leases, a latch's count or a fenced lock's token. It
// only reads (no script, no write), so it needs only a read-only Redis
// user, and it needs no Client: rdb is any single-node, Sentinel or
// Cluster client.
//
// Redis alone cannot tell every kind apart, and Kind reports what it can:
//
//   - A semaphore, a permit semaphore with no permit held, and a count-down
//     latch are all an integer under the name: a positive one is
//     ObjectSemaphoreOrLatch (Permits and Count both hold it); zero or
//     below is ObjectSemaphore, since a latch is deleted when it
//     reaches zero. A permit semaphore with held permits is known by their
//     ZSET.
//   - A group lock is known by its fields ("<value>:<owner>:lock_count"),
//     and has a Holder per value held.
//   - A fair lock without waiters is a plain lock's hash (ObjectLock);
//     with waiters it is ObjectFairLock. The spin and non-reentrant
//     locks share the plain lock's layout and are ObjectLock.
//   - A lock whose name has a token counter is ObjectFencedLock (the
//     counter outlives the holdings, so a plain lock on a name once used by
//     a fenced lock reads as fenced).
//   - A user's own hash whose every field is "<something>:<something>" with
//     a positive integer value reads as a lock, and a user's own integer as
//     a semaphore or latch: the layouts carry no type mark.
//
// A name with nothing under it, in any layout, is ErrNoObject; a key of
// another type, or a hash or string that no kind of the family writes (a
// user's own list, say), is ErrNotLockFamily. Inspect and Scan do not copy
// a user's large values out of Redis: they read a string's first 64 bytes
// (an integer has at most 20) and a hash's fields only when it has at most
// 65,536 (a larger one is ErrNotLockFamily). A bad name is
// ErrInvalidArgument, before any Redis call.
func Inspect(ctx context.Context, rdb redis.UniversalClient, name string) (Object, error) {
	if err := checkCtx(ctx); err != nil {
		return Object{}, err
	}
	if rdb == nil {
		return Object{}, invalid("redis client", "nil")
	}
	if err := messages.ValidateName(name); err != nil {
		return Object{}, err
	}
	r := newReader(ctx, rdb)
	objs, err := r.read(ctx, []string{name}, true)
	if err != nil {
		return Object{}, err
	}
	o := objs[0]
	return o.obj, o.err
}

// Scan yields every object of the lock family whose name matches glob
// (Redis's SCAN MATCH syntax: *, ?, [...], \ to escape), read as Inspect
// reads one, on every master of a Cluster, with SCAN (never KEYS). It
// streams: objects come as each page of names is read, a thousand names at
// a time, in no particular order. The family's auxiliary keys (queues,
// counters, latches, registry entries) and keys that are no object of the
// family are skipped, as are names deleted while the scan runs. A name
// that Redis refuses to read (a permission the Redis user lacks) is
// yielded as an error that names it, and the scan goes on; any other error
// is yielded last and ends it. A bad glob is ErrInvalidArgument, yielded
// before any Redis call.
//
// Only names that exist are found: a fair lock's queue without its lock,
// or a fenced lock's counter without its lock, is seen by Inspect, not by
// Scan. A name may be yielded twice (SCAN returns each key at least once),
// and a name written during the scan may be missed.
func Scan(ctx context.Context, rdb redis.UniversalClient, glob string) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) {
		if err := checkCtx(ctx); err != nil {
			yield(Object{}, err)
			return
		}
		if rdb == nil {
			yield(Object{}, invalid("redis client", "nil"))
			return
		}
		if err := ValidateGlob(glob); err != nil {
			yield(Object{}, err)
			return
		}
		r := newReader(ctx, rdb)
		stop := errors.New("stopped")
		err := redisio.ScanKeys(ctx, rdb, glob, func(keys []string) error {
			names := keys[:0:0]
			for _, k := range keys {
				if !redisio.IsAuxiliaryKey(k) {
					names = append(names, k)
				}
			}
			objs, err := r.read(ctx, names, false)
			if err != nil {
				return err
			}
			for _, o := range objs {
				if errors.Is(o.err, ErrNoObject) || errors.Is(o.err, ErrNotLockFamily) {
					continue
				}
				if !yield(o.obj, o.err) {
					return stop
				}
			}
			return nil
		})
		if err != nil && err != stop {
			yield(Object{}, err)
		}
	}
}

// Clients yields every entry of the client registry (warden_client:*), on
// every master of a Cluster, with SCAN. An error is yielded last and ends
// it.
func Clients(ctx context.Context, rdb redis.UniversalClient) iter.Seq2[ClientRecord, error] {
	return func(yield func(ClientRecord, error) bool) {
		if err := checkCtx(ctx); err != nil {
			yield(ClientRecord{}, err)
			return
		}
		if rdb == nil {
			yield(ClientRecord{}, invalid("redis client", "nil"))
			return
		}
		stop := errors.New("stopped")
		now := serverNow(ctx, rdb)
		err := redisio.ScanKeys(ctx, rdb, redisio.ClientRegistryKey("*"), func(keys []string) error {
			ids := make([]string, 0, len(keys))
			for _, k := range keys {
				if id, ok := redisio.ClientRecordID(k); ok {
					ids = append(ids, id)
				}
			}
			recs, err := redisio.ReadClientRecords(ctx, rdb, ids)
			if err != nil {
				return err
			}
			for _, id := range ids {
				f, ok := recs[id]
				if !ok {
					continue // gone since the SCAN
				}
				if !yield(clientRecord(id, f, now), nil) {
					return stop
				}
			}
			return nil
		})
		if err != nil && err != stop {
			yield(ClientRecord{}, err)
		}
	}
}

// ValidateGlob checks a glob for Scan: 1 byte to 64 KiB, every "[" closed
// by a "]" and no "\" at its end (Redis would take those literally, which
// is seldom what was meant). Its error matches ErrInvalidArgument.
func ValidateGlob(glob string) error {
	return validateGlob("glob", glob)
}

// validateGlob is ValidateGlob for the argument field.
func validateGlob(field, glob string) error {
	switch {
	case glob == "":
		return invalid(field, "empty")
	case len(glob) > messages.MaxNameLen:
		return invalid(field, "%d bytes, more than %d", len(glob), messages.MaxNameLen)
	}
	for i := 0; i < len(glob); i++ {
		switch glob[i] {
		case '\\':
			if i == len(glob)-1 {
				return invalid(field, "%q ends in an escape (\\)", glob)
			}
			i++
		case '[':
			j := i + 1
			if j < len(glob) && glob[j] == '^' {
				j++
			}
			if j < len(glob) && glob[j] == ']' {
				j++ // "[]...]": a "]" right after "[" is a member
			}
			for j < len(glob) && glob[j] != ']' {
				if glob[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(glob) {
				return invalid(field, "%q has a [ without its ]", glob)
			}
			i = j
		}
	}
	return nil
}

// reader reads objects, remembering the registry entries it read, so a
// scan reads each client's entry once.
type reader struct {
	rdb     redis.UniversalClient
	now     time.Time
	clients map[string]*ClientRecord // nil value: no entry
	// serverNow is the server's time, for entries without a TTL field.
	serverNow func() time.Time
}

func newReader(ctx context.Context, rdb redis.UniversalClient) *reader {
	return &reader{rdb: rdb, now: time.Now(), clients: map[string]*ClientRecord{}, serverNow: serverNow(ctx, rdb)}
}

// readObject is one name's object or the error that stood for it.
type readObject struct {
	obj Object
	err error
}

// read reads names' objects and their holders' registry entries. With
// aux, a name that is absent is looked for in its auxiliary keys (a fair
// queue, a token counter, held permits), as Inspect does; without, it is
// ErrNoObject at once.
func (r *reader) read(ctx context.Context, names []string, aux bool) ([]readObject, error) {
	snaps, err := redisio.ReadSnapshots(ctx, r.rdb, names)
	if err != nil {
		return nil, fmt.Errorf("warden: inspect: %w", err)
	}
	out := make([]readObject, len(snaps))
	var missing []string // client IDs whose entries are still to read
	asked := map[string]bool{}
	for i := range snaps {
		s := &snaps[i]
		if s.Err != nil {
			out[i].err = fmt.Errorf("warden: inspect %q: %w", s.Name, s.Err)
			continue
		}
		if s.Type == "none" && !aux {
			out[i].err = ErrNoObject
			continue
		}
		out[i].obj, out[i].err = interpret(s, r.now)
		for _, h := range out[i].obj.Holders {
			if _, ok := r.clients[h.ClientID]; !ok && !asked[h.ClientID] {
				asked[h.ClientID] = true
				missing = append(missing, h.ClientID)
			}
		}
	}
	if len(missing) > 0 {
		recs, err := redisio.ReadClientRecords(ctx, r.rdb, missing)
		if err != nil {
			return nil, err
		}
		for _, id := range missing {
			var rec *ClientRecord
			if f, ok := recs[id]; ok {
				c := clientRecord(id, f, r.serverNow)
				rec = &c
			}
			r.clients[id] = rec
		}
	}
	for i := range out {
		hs := out[i].obj.Holders
		for j := range hs {
			hs[j].Client = r.clients[hs[j].ClientID]
		}
	}
	return out, nil
}

// clientRecord builds a registry entry from its hash's fields and TTL; a
// field that does not parse is left zero. now, the server's time, is asked
// only for an entry that does not record its TTL (one an older warden
// wrote).
func clientRecord(id string, e redisio.ClientEntry, now func() time.Time) ClientRecord {
	f := e.Fields
	rec := ClientRecord{ID: id, Service: f[redisio.RegistryService], Host: f[redisio.RegistryHost],
		Version: f[redisio.RegistryVersion]}
	rec.PID, _ = strconv.Atoi(f[redisio.RegistryPID])
	rec.Started = unixMillis(f[redisio.RegistryStarted])
	rec.Seen = unixMillis(f[redisio.RegistrySeen])
	rec.Closed = unixMillis(f[redisio.RegistryClosed])
	if ms, err := strconv.ParseInt(f[redisio.RegistryBeat], 10, 64); err == nil && ms > 0 {
		rec.Beat = time.Duration(ms) * time.Millisecond
	}
	if ms, err := strconv.ParseInt(f[redisio.RegistryTTL], 10, 64); err == nil && ms > 0 && e.PTTL >= 0 {
		rec.Idle = max(time.Duration(ms)*time.Millisecond-e.PTTL, 0)
	} else if !rec.Seen.IsZero() {
		rec.Idle = max(now().Sub(rec.Seen), 0)
	}
	return rec
}

// unixMillis parses a registry time; the zero Time when s is none.
func unixMillis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// interpret tells what s is (see Inspect for what it cannot tell).
func interpret(s *redisio.Snapshot, now time.Time) (Object, error) {
	o := Object{Name: s.Name, TTL: NoTTL}
	if s.PTTL >= 0 {
		o.TTL = time.Duration(s.PTTL) * time.Millisecond
	}
	switch s.Type {
	case "hash":
		if s.HashLen > redisio.MaxLockFields {
			return Object{}, fmt.Errorf("%w: %q is a hash of %d fields, more than a lock has (%d at most are read)",
				ErrNotLockFamily, s.Name, s.HashLen, redisio.MaxLockFields)
		}
		if isGroup(s.Fields) {
			if err := groupHolders(&o, s.Fields, now); err != nil {
				return Object{}, fmt.Errorf("%w: %q is a hash with %v", ErrNotLockFamily, s.Name, err)
			}
			break
		}
		if err := holders(&o, s.Fields); err != nil {
			return Object{}, fmt.Errorf("%w: %q is a hash with %v", ErrNotLockFamily, s.Name, err)
		}
		lockKind(&o, s)
	case "string":
		n, err := strconv.ParseInt(s.Value, 10, 64)
		if err != nil {
			return Object{}, fmt.Errorf("%w: %q is a string that is no integer", ErrNotLockFamily, s.Name)
		}
		switch {
		case s.HasPermits:
			permits(&o, s, n, now)
		case s.HasTotal:
			o.Kind, o.Permits, o.Total, o.HasTotal = ObjectSemaphore, n, s.Total, true
		case n <= 0:
			o.Kind, o.Permits = ObjectSemaphore, n
		default:
			o.Kind, o.Permits, o.Count = ObjectSemaphoreOrLatch, n, n
		}
	case "none":
		switch {
		case len(s.Queue) > 0:
			lockKind(&o, s)
		case s.HasPermits:
			permits(&o, s, 0, now)
		case s.HasToken:
			lockKind(&o, s)
		default:
			return Object{}, fmt.Errorf("%w: %q", ErrNoObject, s.Name)
		}
	default:
		return Object{}, fmt.Errorf("%w: %q is a %s", ErrNotLockFamily, s.Name, s.Type)
	}
	return o, nil
}

// lockKind sets a lock's kind from its auxiliary keys, and its waiters.
func lockKind(o *Object, s *redisio.Snapshot) {
	switch {
	case o.Kind == ObjectReadWriteLock:
	case len(s.Queue) > 0:
		o.Kind = ObjectFairLock
		for _, w := range s.Queue {
			d, ok := s.Places[w]
			if !ok {
				d = s.Deadlines[w]
			}
			o.Waiters = append(o.Waiters, Waiter{Owner: w, ClientID: ClientIDOf(w), Deadline: time.UnixMilli(d)})
		}
	case s.HasToken:
		o.Kind, o.Token = ObjectFencedLock, s.Token
	default:
		o.Kind = ObjectLock
	}
}

// holders reads a lock's hash: owner -> hold count, and for a read/write
// lock "mode" and the writer's "<owner>:write". It refuses a hash no lock
// writes: a field that is no owner or a count that is no positive integer.
func holders(o *Object, fields map[string]string) error {
	mode, rw := fields["mode"]
	if rw {
		if mode != "read" && mode != "write" {
			return fmt.Errorf("mode %q", mode)
		}
		o.Kind = ObjectReadWriteLock
	}
	for f, v := range fields {
		if f == "mode" && rw || strings.HasSuffix(f, ":warden_acq") {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("field %q = %q, not a hold count", f, v)
		}
		h := Holder{Owner: f, Count: n}
		if rw {
			h.Mode = "read"
			if owner, ok := strings.CutSuffix(f, ":write"); ok {
				h.Owner, h.Mode = owner, "write"
			}
		}
		if !strings.Contains(h.Owner, ":") {
			return fmt.Errorf("field %q, not an owner", f)
		}
		h.ClientID = ClientIDOf(h.Owner)
		o.Holders = append(o.Holders, h)
	}
	if len(o.Holders) == 0 {
		return errors.New("no holder")
	}
	slices.SortFunc(o.Holders, func(a, b Holder) int {
		if a.Mode != b.Mode {
			return -strings.Compare(a.Mode, b.Mode) // write before read
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	return nil
}

// permits sets a permit semaphore's available permits (stored, plus the
// expired permits the next call reclaims) and its unexpired leases.
func permits(o *Object, s *redisio.Snapshot, stored int64, now time.Time) {
	o.Kind, o.Permits = ObjectPermitSemaphore, stored
	for _, p := range s.Permits {
		l := PermitLease{ID: p.ID}
		if p.Expiry != redisio.PermitNoExpiry {
			if p.Expiry <= now.UnixMilli() {
				o.Permits++
				continue
			}
			l.Expiry = time.UnixMilli(p.Expiry)
		}
		o.Leases = append(o.Leases, l)
	}
	slices.SortStableFunc(o.Leases, func(a, b PermitLease) int {
		switch {
		case a.Expiry.Equal(b.Expiry):
			return 0
		case a.Expiry.IsZero():
			return 1
		case b.Expiry.IsZero():
			return -1
		}
		return a.Expiry.Compare(b.Expiry)
	})
}

// isGroup reports whether a lock's hash is a group lock's: it has a
// "<value>:<owner>:lock_count" or ":expire_time" field.
func isGroup(fields map[string]string) bool {
	for f := range fields {
		if strings.HasSuffix(f, ":lock_count") || strings.HasSuffix(f, ":expire_time") {
			return true
		}
	}
	return false
}

// groupHolders reads a group lock's hash: for each value v held by owner
// o, the fields v -> o, "v:o:lock_count" -> o's hold count and
// "v:o:expire_time" -> when the hold ends (unix ms). A hold that ended
// (its value is free, though still in the hash) is left out.
func groupHolders(o *Object, fields map[string]string, now time.Time) error {
	o.Kind = ObjectGroupLock
	for v, owner := range fields {
		if strings.Contains(v, ":") {
			continue // a count or an end, read with its value
		}
		prefix := v + ":" + owner + ":"
		ends, err := strconv.ParseInt(fields[prefix+"expire_time"], 10, 64)
		if err != nil {
			return fmt.Errorf("value %q without its hold's end", v)
		}
		n, err := strconv.Atoi(fields[prefix+"lock_count"])
		if err != nil || n < 1 {
			return fmt.Errorf("value %q without its hold count", v)
		}
		if ends < now.UnixMilli() {
			continue
		}
		o.Holders = append(o.Holders, Holder{Owner: owner, ClientID: ClientIDOf(owner), Count: n, Value: v})
	}
	slices.SortFunc(o.Holders, func(a, b Holder) int { return strings.Compare(a.Value, b.Value) })
	return nil
}
