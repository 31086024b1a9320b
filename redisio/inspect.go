package redisio

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Inspection reads what Redis holds about the lock family's names with
// read-only commands only (SCAN, TYPE, PTTL, GET, HGETALL, LRANGE, ZRANGE),
// never a script, so an operator's read-only Redis user can run it and it
// can never change a lock.

// Snapshot is everything Redis holds under one name in the family's
// layouts, warden's and Redisson's, as read by ReadSnapshots. The reads of
// one name are pipelined but not atomic: a name that changes while it is
// read may show parts of two states.
type Snapshot struct {
	Name string
	// Type is the name's TYPE: "hash", "string", "none" (absent), or
	// another type, which is no lock of the family.
	Type string
	// PTTL is the name's time to live in milliseconds, -1 when it has no
	// expiry, -2 when it is absent.
	PTTL int64
	// Fields is the name's hash (a lock): HGETALL, unless the hash has
	// more than MaxLockFields fields (HashLen), which no lock has: it is
	// then not read.
	Fields map[string]string
	// HashLen is the name's hash's number of fields (HLEN).
	HashLen int64
	// Value is the name's string (a semaphore or latch), its first
	// MaxValueRead bytes at most (GETRANGE): an integer is shorter, and a
	// user's long string is not read in full.
	Value string
	// Queue is a fair lock's queue of waiting owners, head first.
	Queue []string
	// Deadlines are the fair lock's waiter deadlines (unix ms) from its
	// ZSET, by owner.
	Deadlines map[string]int64
	// Places are warden's liveness deadlines (unix ms) of its own fair
	// waiters, by owner: when each lapses for warden's scripts. They take
	// precedence over Deadlines (which are Redisson's, for every waiter).
	Places map[string]int64
	// Token is a fenced lock's token counter; HasToken tells whether the
	// counter exists.
	Token    int64
	HasToken bool
	// Permits are a permit-expirable semaphore's held permits, from its
	// ZSET; HasPermits tells whether the ZSET exists.
	Permits    []PermitEntry
	HasPermits bool
	// Total is the total a semaphore's permits were set to by warden
	// (PermitsTotalKey); HasTotal tells whether it was read, which it is
	// only for a name that is a string (a semaphore set by Redisson has
	// none).
	Total    int64
	HasTotal bool
	// Err is the error that kept this name from being read (a permission
	// the Redis user lacks, say); the other fields are then partial.
	Err error
}

// PermitEntry is one held permit of a permit-expirable semaphore.
type PermitEntry struct {
	// ID is the permit ID, as 32 lowercase hex characters (the ZSET holds
	// its 16 raw bytes).
	ID string
	// Expiry is the permit's lease end in unix ms, or PermitNoExpiry.
	Expiry int64
}

// PermitNoExpiry is the lease end Redisson stores for a permit that never
// expires.
const PermitNoExpiry = permitNoExpiry

// auxPrefixes start the family's auxiliary keys: queues, deadlines,
// latches, token counters, places and the registry. None of them is a
// name of the family.
var auxPrefixes = []string{
	"redisson_lock_queue:",
	"redisson_lock_timeout:",
	"redisson_unlock_latch:",
	"warden_unlock:",
	"redisson_lock_token:",
	"warden_acquire_latch:",
	"warden_gaveup:",
	"warden_fair_places:",
	"warden_latch:",
	"warden_permits_total:",
	clientRecordPrefix,
}

// IsAuxiliaryKey reports whether key is one of the family's auxiliary keys
// rather than a name: a fair lock's queue, deadlines or places, a token
// counter, an unlock or operation latch, a read hold's timeout
// ("...:rwlock_timeout:<k>"), a permit semaphore's permits ("...:timeout"),
// a semaphore's total, or a registry entry. It looks at the key's shape only, so a user's own
// name of that shape reads as auxiliary too.
func IsAuxiliaryKey(key string) bool {
	for _, p := range auxPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	if strings.HasSuffix(key, "}:timeout") {
		return true // {name}:timeout
	}
	if i := strings.LastIndex(key, ":rwlock_timeout:"); i >= 0 {
		k := key[i+len(":rwlock_timeout:"):]
		if _, err := strconv.ParseUint(k, 10, 64); err == nil {
			return true
		}
	}
	return false
}

// ReadSnapshots reads every name's snapshot in two pipelined round trips
// (TYPE, PTTL and HLEN first, then what the type calls for, a hash's
// fields when HLEN said it is small enough to be a lock's). A Redis error
// that concerns one name (a permission, say) is put in that snapshot's
// Err; an error of the whole call (Redis unreachable) is returned.
func ReadSnapshots(ctx context.Context, r redis.Cmdable, names []string) ([]Snapshot, error) {
	snaps := make([]Snapshot, len(names))
	if len(names) == 0 {
		return snaps, nil
	}
	types := make([]*redis.StatusCmd, len(names))
	pttls := make([]*redis.Cmd, len(names))
	hlens := make([]*redis.IntCmd, len(names))
	_, err := r.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			types[i] = p.Type(ctx, n)
			pttls[i] = p.Do(ctx, "pttl", n)
			// Asked of every name, so that a hash's fields come in the
			// next round trip; a name of another type answers an error
			// that is not looked at.
			hlens[i] = p.HLen(ctx, n)
		}
		return nil
	})
	if err != nil && !anyNameErr(err) {
		return nil, err
	}
	for i, n := range names {
		s := &snaps[i]
		s.Name = n
		if s.Type, err = types[i].Result(); err != nil {
			s.Err = err
			continue
		}
		if s.PTTL, err = pttls[i].Int64(); err != nil {
			s.Err = err
			continue
		}
		if s.Type == "hash" {
			s.HashLen, s.Err = hlens[i].Result()
		}
	}

	var reads []func() error
	_, err = r.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range snaps {
			if s := &snaps[i]; s.Err == nil {
				reads = append(reads, queueReads(ctx, p, s)...)
			}
		}
		return nil
	})
	if err != nil && !anyNameErr(err) {
		return nil, err
	}
	for _, read := range reads {
		_ = read()
	}
	return snaps, nil
}

// MaxLockFields is the most fields a hash may have for ReadSnapshots to
// read it: a lock has a field or two per holder, so a hash with more is a
// user's own, which an inspection should not copy out of Redis.
const MaxLockFields = 65536

// MaxValueRead is the most bytes of a string ReadSnapshots reads: an
// integer (a semaphore's permits, a latch's count) is at most 20 bytes.
const MaxValueRead = 64

// anyNameErr reports whether err, the first error of a pipeline, is a
// reply about one command (which the snapshot of its name keeps) rather
// than a failure of the connection.
func anyNameErr(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// queueReads adds to p the reads s's type calls for and returns what
// fills s from their replies once p ran. A reply's error goes to s.Err.
func queueReads(ctx context.Context, p redis.Pipeliner, s *Snapshot) []func() error {
	set := func(err error) error {
		if err != nil && !errors.Is(err, redis.Nil) && s.Err == nil {
			s.Err = err
		}
		return err
	}
	var reads []func() error
	fairReads := func() {
		q := p.LRange(ctx, FairQueueKey(s.Name), 0, -1)
		d := p.ZRangeWithScores(ctx, FairTimeoutKey(s.Name), 0, -1)
		pl := p.HGetAll(ctx, FairPlacesKey(s.Name))
		reads = append(reads, func() error {
			var err error
			if s.Queue, err = q.Result(); err != nil {
				return set(err)
			}
			zs, err := d.Result()
			if err != nil {
				return set(err)
			}
			if len(zs) > 0 {
				s.Deadlines = make(map[string]int64, len(zs))
				for _, z := range zs {
					m, _ := z.Member.(string)
					s.Deadlines[m] = int64(z.Score)
				}
			}
			places, err := pl.Result()
			if err != nil {
				return set(err)
			}
			if len(places) > 0 {
				s.Places = make(map[string]int64, len(places))
				for o, v := range places {
					if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
						s.Places[o] = ms
					}
				}
			}
			return nil
		})
	}
	tokenRead := func() {
		t := p.Get(ctx, TokenKey(s.Name))
		reads = append(reads, func() error {
			v, err := t.Result()
			if err != nil {
				return set(err)
			}
			s.Token, err = strconv.ParseInt(v, 10, 64)
			s.HasToken = err == nil
			return nil
		})
	}
	permitRead := func() {
		z := p.ZRangeWithScores(ctx, PermitTimeoutKey(s.Name), 0, -1)
		reads = append(reads, func() error {
			zs, err := z.Result()
			if err != nil {
				return set(err)
			}
			s.HasPermits = len(zs) > 0
			for _, e := range zs {
				m, _ := e.Member.(string)
				s.Permits = append(s.Permits, PermitEntry{ID: hex.EncodeToString([]byte(m)), Expiry: int64(e.Score)})
			}
			return nil
		})
	}
	switch s.Type {
	case "hash":
		// Its fields, when it is no larger than a lock's (HashLen).
		if s.HashLen <= MaxLockFields {
			h := p.HGetAll(ctx, s.Name)
			reads = append(reads, func() error {
				var err error
				s.Fields, err = h.Result()
				return set(err)
			})
		}
		fairReads()
		tokenRead()
	case "string":
		v := p.GetRange(ctx, s.Name, 0, MaxValueRead-1)
		reads = append(reads, func() error {
			var err error
			s.Value, err = v.Result()
			return set(err)
		})
		t := p.Get(ctx, PermitsTotalKey(s.Name))
		reads = append(reads, func() error {
			v, err := t.Result()
			if err != nil {
				return set(err)
			}
			s.Total, err = strconv.ParseInt(v, 10, 64)
			s.HasTotal = err == nil
			return nil
		})
		permitRead()
	case "none":
		fairReads()
		tokenRead()
		permitRead()
	}
	return reads
}

// ClientEntry is one client's registry record as read: its fields and its
// remaining TTL (negative when it has none).
type ClientEntry struct {
	Fields map[string]string
	PTTL   time.Duration
}

// ReadClientRecords reads the registry entries of ids (HGETALL and PTTL of
// each ClientRegistryKey, pipelined): by ID, the entry; an ID without an
// entry is left out.
func ReadClientRecords(ctx context.Context, r redis.Cmdable, ids []string) (map[string]ClientEntry, error) {
	out := make(map[string]ClientEntry, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	ttls := make([]*redis.DurationCmd, len(ids))
	_, err := r.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, ClientRegistryKey(id))
			ttls[i] = p.PTTL(ctx, ClientRegistryKey(id))
		}
		return nil
	})
	if err != nil && !allWrongType(cmds) {
		return nil, fmt.Errorf("warden: read the client registry: %w", err)
	}
	for i, id := range ids {
		if f := cmds[i].Val(); cmds[i].Err() == nil && len(f) > 0 {
			out[id] = ClientEntry{Fields: f, PTTL: ttls[i].Val()}
		}
	}
	return out, nil
}

// allWrongType tells that every failed one of cmds failed with WRONGTYPE:
// a key of another type under a registry record's name (written by
// something else) is no record, not a failed read.
func allWrongType(cmds []*redis.MapStringStringCmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !redis.HasErrorPrefix(err, "WRONGTYPE") {
			return false
		}
	}
	return true
}

// ScanPage is how many keys each SCAN call asks for (its COUNT).
const ScanPage = 1000

// ScanKeys calls fn with each page of the keys matching the glob match,
// on the one node of a single-node or Sentinel client and on every master
// of a Cluster (one master after another), with SCAN, never KEYS. A key
// may come twice (SCAN's guarantee is at least once) and a key written
// during the scan may be missed. An error of fn or of a SCAN ends the scan
// and is returned.
func ScanKeys(ctx context.Context, rdb redis.UniversalClient, match string, fn func(keys []string) error) error {
	nodes, err := masters(ctx, rdb)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, match, ScanPage).Result()
			if err != nil {
				return fmt.Errorf("warden: scan: %w", err)
			}
			if len(keys) > 0 {
				if err := fn(keys); err != nil {
					return err
				}
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	return nil
}

// masters returns the clients to SCAN: every master of a Cluster, every
// shard of a Ring, or rdb itself.
func masters(ctx context.Context, rdb redis.UniversalClient) ([]redis.Cmdable, error) {
	var (
		mu  sync.Mutex
		out []redis.Cmdable
	)
	add := func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		out = append(out, c)
		mu.Unlock()
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, add); err != nil {
			return nil, fmt.Errorf("warden: list the cluster's masters: %w", err)
		}
	case *redis.Ring:
		if err := c.ForEachShard(ctx, add); err != nil {
			return nil, fmt.Errorf("warden: list the ring's shards: %w", err)
		}
	default:
		out = append(out, rdb)
	}
	return out, nil
}
