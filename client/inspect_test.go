package client_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// dirty is redistest.Dirty: the server's writes since its last save.
func dirty(t *testing.T, rdb redis.Cmdable) int64 {
	t.Helper()
	return redistest.Dirty(t, rdb)
}

// inspect is client.Inspect on name, failing t on its error, and checking
// that it wrote nothing. Its holders' registry entries are left out (a
// Client's registry entry is its engine's business;
// TestInspectReadsTheRegistry reads entries). Waiters write at moments of
// their own (a fair waiter refreshes its place), so a call during which
// the server counted a write is made again, up to five times: an Inspect
// that writes is seen writing every time.
func inspect(t *testing.T, rdb *redis.Client, name string) client.Object {
	t.Helper()
	var o client.Object
	for attempt := 1; ; attempt++ {
		before := dirty(t, rdb)
		var err error
		o, err = client.Inspect(context.Background(), rdb, name)
		require.NoError(t, err, name)
		after := dirty(t, rdb)
		if after == before {
			break
		}
		require.Less(t, attempt, 5, "Inspect(%q) wrote (%d writes counted, in each of %d calls)", name, after-before, attempt)
	}
	require.Equal(t, name, o.Name)
	for i := range o.Holders {
		o.Holders[i].Client = nil
	}
	return o
}

// holder is a Holder without its registry entry, for comparisons.
func holder(owner string, count int, mode string) client.Holder {
	return client.Holder{Owner: owner, ClientID: client.ClientIDOf(owner), Count: count, Mode: mode}
}

// ttlWithin checks a TTL is in (0, lease].
func ttlWithin(t *testing.T, o client.Object, lease time.Duration) {
	t.Helper()
	assert.Greater(t, o.TTL, time.Duration(0), o.Name)
	assert.LessOrEqual(t, o.TTL, lease, o.Name)
}

func TestInspectEveryKindWrittenByWarden(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := context.Background()
	// Without registry records: a Client writes its own at any moment,
	// which the checks that Inspect wrote nothing would count.
	c, d := e.newClient(t, client.WithoutRegistry()), e.newClient(t, client.WithoutRegistry())

	// A reentrant lock held twice with a fixed lease.
	l := c.Lock("insp:lock")
	require.NoError(t, l.LockLease(ctx, time.Minute))
	require.NoError(t, l.LockLease(ctx, time.Minute))
	o := inspect(t, e.rdb, "insp:lock")
	assert.Equal(t, client.ObjectLock, o.Kind)
	ttlWithin(t, o, time.Minute)
	assert.Equal(t, []client.Holder{holder(l.Owner(), 2, "")}, o.Holders)
	assert.Equal(t, c.ID(), o.Holders[0].ClientID)
	assert.Empty(t, o.Waiters)

	// A fair lock with two waiters from another client, in their order.
	f := c.FairLock("insp:fair")
	require.NoError(t, f.Lock(ctx))
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var waiters []*client.Lock
	for i := range 2 {
		w := d.FairLock("insp:fair")
		waiters = append(waiters, w)
		wg.Go(func() { _ = w.Lock(wctx) })
		eventually(t, 10*time.Second, func() bool {
			o, err := client.Inspect(ctx, e.rdb, "insp:fair")
			return err == nil && len(o.Waiters) == i+1
		}, "fair waiter queued")
	}
	o = inspect(t, e.rdb, "insp:fair")
	assert.Equal(t, client.ObjectFairLock, o.Kind)
	ttlWithin(t, o, watchdog)
	assert.Equal(t, []client.Holder{holder(f.Owner(), 1, "")}, o.Holders)
	require.Len(t, o.Waiters, 2)
	for i, w := range o.Waiters {
		assert.Equal(t, waiters[i].Owner(), w.Owner)
		assert.Equal(t, d.ID(), w.ClientID)
		assert.True(t, w.Deadline.After(time.Now()), "deadline %v", w.Deadline)
	}
	cancel()
	await.Group(t, &wg, 10*time.Second, "fair waiters gave up")
	require.NoError(t, f.Unlock(ctx))

	// A read/write lock read by two owners, and another written.
	rw1, rw2 := c.ReadWriteLock("insp:rw"), d.ReadWriteLock("insp:rw")
	require.NoError(t, rw1.ReadLock().LockLease(ctx, time.Minute))
	require.NoError(t, rw2.ReadLock().LockLease(ctx, time.Minute))
	o = inspect(t, e.rdb, "insp:rw")
	assert.Equal(t, client.ObjectReadWriteLock, o.Kind)
	ttlWithin(t, o, time.Minute)
	want := []client.Holder{holder(rw1.ReadLock().Owner(), 1, "read"), holder(rw2.ReadLock().Owner(), 1, "read")}
	if want[0].Owner > want[1].Owner {
		want[0], want[1] = want[1], want[0]
	}
	assert.Equal(t, want, o.Holders)
	w := c.ReadWriteLock("insp:rw-w")
	require.NoError(t, w.WriteLock().LockLease(ctx, time.Minute))
	require.NoError(t, w.ReadLock().LockLease(ctx, time.Minute)) // its writer reads too
	o = inspect(t, e.rdb, "insp:rw-w")
	assert.Equal(t, client.ObjectReadWriteLock, o.Kind)
	assert.Equal(t, []client.Holder{holder(w.WriteLock().Owner(), 1, "write"), holder(w.ReadLock().Owner(), 1, "read")}, o.Holders)

	// A fenced lock: its last token.
	fl := c.FencedLock("insp:fenced")
	tok, err := fl.LockToken(ctx)
	require.NoError(t, err)
	require.NoError(t, fl.Unlock(ctx))
	tok2, err := fl.LockToken(ctx)
	require.NoError(t, err)
	require.Greater(t, tok2, tok)
	o = inspect(t, e.rdb, "insp:fenced")
	assert.Equal(t, client.ObjectFencedLock, o.Kind)
	assert.Equal(t, tok2, o.Token)
	assert.Equal(t, []client.Holder{holder(fl.Owner(), 1, "")}, o.Holders)
	require.NoError(t, fl.Unlock(ctx))
	o = inspect(t, e.rdb, "insp:fenced") // unheld: only its counter is left
	assert.Equal(t, client.ObjectFencedLock, o.Kind)
	assert.Equal(t, tok2, o.Token)
	assert.Empty(t, o.Holders)
	assert.Equal(t, client.NoTTL, o.TTL)

	// A semaphore warden set carries its total, which tells it from a
	// latch even with permits left; drained to zero, it keeps the total.
	s := c.Semaphore("insp:sem")
	set(t, s.TrySetPermits, 5)
	require.NoError(t, s.Acquire(ctx, 2))
	o = inspect(t, e.rdb, "insp:sem")
	assert.Equal(t, client.ObjectSemaphore, o.Kind)
	assert.Equal(t, int64(3), o.Permits)
	assert.True(t, o.HasTotal)
	assert.Equal(t, int64(5), o.Total)
	assert.Zero(t, o.Count)
	assert.Equal(t, client.NoTTL, o.TTL)
	_, err = s.DrainPermits(ctx)
	require.NoError(t, err)
	o = inspect(t, e.rdb, "insp:sem")
	assert.Equal(t, client.ObjectSemaphore, o.Kind)
	assert.Zero(t, o.Permits)
	assert.Equal(t, int64(5), o.Total)

	// A latch.
	dl := c.CountDownLatch("insp:latch")
	set(t, dl.TrySetCount, 3)
	require.NoError(t, dl.CountDown(ctx))
	o = inspect(t, e.rdb, "insp:latch")
	assert.Equal(t, client.ObjectSemaphoreOrLatch, o.Kind)
	assert.Equal(t, int64(2), o.Count)

	// A permit semaphore: one permit for a minute, one for ever.
	p := c.PermitExpirableSemaphore("insp:permits")
	set(t, p.TrySetPermits, 3)
	forever, err := p.Acquire(ctx, 0)
	require.NoError(t, err)
	minute, err := p.Acquire(ctx, time.Minute)
	require.NoError(t, err)
	o = inspect(t, e.rdb, "insp:permits")
	assert.Equal(t, client.ObjectPermitSemaphore, o.Kind)
	assert.Equal(t, int64(1), o.Permits)
	require.Len(t, o.Leases, 2)
	assert.Equal(t, minute, o.Leases[0].ID)
	assert.WithinDuration(t, time.Now().Add(time.Minute), o.Leases[0].Expiry, 10*time.Second)
	assert.Equal(t, forever, o.Leases[1].ID)
	assert.True(t, o.Leases[1].Expiry.IsZero())

	// Scan finds each name once, skips the auxiliary keys, and writes
	// nothing.
	before := dirty(t, e.rdb)
	kinds := map[string]client.ObjectKind{}
	for o, err := range client.Scan(ctx, e.rdb, "insp:*") {
		require.NoError(t, err)
		kinds[o.Name] = o.Kind
	}
	assert.Equal(t, before, dirty(t, e.rdb), "Scan wrote")
	assert.Equal(t, map[string]client.ObjectKind{
		"insp:lock":    client.ObjectLock,
		"insp:rw":      client.ObjectReadWriteLock,
		"insp:rw-w":    client.ObjectReadWriteLock,
		"insp:sem":     client.ObjectSemaphore,
		"insp:latch":   client.ObjectSemaphoreOrLatch,
		"insp:permits": client.ObjectPermitSemaphore,
	}, kinds) // the fair lock is free and the fenced lock unheld: no name
}

// redissonOwner is an owner as a Redisson client writes it.
func redissonOwner(uuid string, thread int) string {
	return fmt.Sprintf("%s:%d", uuid, thread)
}

func TestInspectRedissonLayout(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	const java = "6f1c1a3e-7a6b-4c1e-9f1e-0a2b3c4d5e6f"
	now := time.Now().UnixMilli()
	o1, o2, o3 := redissonOwner(java, 1), redissonOwner(java, 57), redissonOwner(java, 88)

	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		// RLock: owner -> count, with its lease.
		p.HSet(ctx, "j:lock", o1, 3)
		p.PExpire(ctx, "j:lock", 30*time.Second)
		// RFairLock with a hash tag of its own: its queue and deadlines.
		p.HSet(ctx, "{j}fair", o1, 1)
		p.PExpire(ctx, "{j}fair", 30*time.Second)
		p.RPush(ctx, "redisson_lock_queue:{j}fair", o2, o3)
		p.ZAdd(ctx, "redisson_lock_timeout:{j}fair",
			redis.Z{Score: float64(now + 335000), Member: o2}, redis.Z{Score: float64(now + 640000), Member: o3})
		// RReadWriteLock read by two threads, and one in write mode.
		p.HSet(ctx, "j:rw", "mode", "read", o1, 2, o2, 1)
		p.Set(ctx, "{j:rw}:"+o1+":rwlock_timeout:1", 1, 30*time.Second)
		p.Set(ctx, "{j:rw}:"+o1+":rwlock_timeout:2", 1, 30*time.Second)
		p.Set(ctx, "{j:rw}:"+o2+":rwlock_timeout:1", 1, 30*time.Second)
		p.PExpire(ctx, "j:rw", 30*time.Second)
		p.HSet(ctx, "j:rw-w", "mode", "write", o3+":write", 1)
		p.PExpire(ctx, "j:rw-w", 30*time.Second)
		// RFencedLock.
		p.HSet(ctx, "j:fenced", o1, 1)
		p.PExpire(ctx, "j:fenced", 30*time.Second)
		p.Set(ctx, "redisson_lock_token:{j:fenced}", 42, 0)
		// RSemaphore, RCountDownLatch.
		p.Set(ctx, "j:sem", -2, 0)
		p.Set(ctx, "j:latch", 4, 0)
		// RPermitExpirableSemaphore: one permit expired (not yet
		// reclaimed), one held for a minute, one for ever.
		p.Set(ctx, "j:permits", 1, 0)
		p.ZAdd(ctx, "{j:permits}:timeout",
			redis.Z{Score: float64(now - 1000), Member: string(make([]byte, 16))},
			redis.Z{Score: float64(now + 60000), Member: "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"},
			redis.Z{Score: 922337203685477, Member: "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0"})
		// RedissonFasterMultiLock (a group lock): v1 held twice, v2's hold
		// ended.
		p.HSet(ctx, "j:group", "v1", o1, "v1:"+o1+":lock_count", 2, "v1:"+o1+":expire_time", now+30000,
			"v2", o2, "v2:"+o2+":lock_count", 1, "v2:"+o2+":expire_time", now-1000)
		p.PExpire(ctx, "j:group", 30*time.Second)
		// A fair lock whose holder left while two wait: only its queue.
		p.RPush(ctx, "redisson_lock_queue:{j:queued}", o2)
		p.ZAdd(ctx, "redisson_lock_timeout:{j:queued}", redis.Z{Score: float64(now + 5000), Member: o2})
		return nil
	})
	require.NoError(t, err)

	o := inspect(t, rdb, "j:lock")
	assert.Equal(t, client.ObjectLock, o.Kind)
	ttlWithin(t, o, 30*time.Second)
	assert.Equal(t, []client.Holder{holder(o1, 3, "")}, o.Holders)
	assert.Equal(t, java, o.Holders[0].ClientID)

	o = inspect(t, rdb, "{j}fair")
	assert.Equal(t, client.ObjectFairLock, o.Kind)
	assert.Equal(t, []client.Waiter{
		{Owner: o2, ClientID: java, Deadline: time.UnixMilli(now + 335000)},
		{Owner: o3, ClientID: java, Deadline: time.UnixMilli(now + 640000)},
	}, o.Waiters)

	o = inspect(t, rdb, "j:rw")
	assert.Equal(t, client.ObjectReadWriteLock, o.Kind)
	assert.Equal(t, []client.Holder{holder(o1, 2, "read"), holder(o2, 1, "read")}, o.Holders)
	o = inspect(t, rdb, "j:rw-w")
	assert.Equal(t, []client.Holder{holder(o3, 1, "write")}, o.Holders)

	o = inspect(t, rdb, "j:fenced")
	assert.Equal(t, client.ObjectFencedLock, o.Kind)
	assert.Equal(t, int64(42), o.Token)

	o = inspect(t, rdb, "j:sem")
	assert.Equal(t, client.ObjectSemaphore, o.Kind)
	assert.Equal(t, int64(-2), o.Permits)
	o = inspect(t, rdb, "j:latch")
	assert.Equal(t, client.ObjectSemaphoreOrLatch, o.Kind)
	assert.Equal(t, int64(4), o.Count)

	o = inspect(t, rdb, "j:permits")
	assert.Equal(t, client.ObjectPermitSemaphore, o.Kind)
	assert.Equal(t, int64(2), o.Permits, "stored 1 + 1 expired")
	assert.Equal(t, []client.PermitLease{
		{ID: "0102030405060708090a0b0c0d0e0f10", Expiry: time.UnixMilli(now + 60000)},
		{ID: hex.EncodeToString([]byte("\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0"))},
	}, o.Leases)

	o = inspect(t, rdb, "j:group")
	assert.Equal(t, client.ObjectGroupLock, o.Kind)
	ttlWithin(t, o, 30*time.Second)
	assert.Equal(t, []client.Holder{{Owner: o1, ClientID: java, Count: 2, Value: "v1"}}, o.Holders)

	o = inspect(t, rdb, "j:queued")
	assert.Equal(t, client.ObjectFairLock, o.Kind)
	assert.Empty(t, o.Holders)
	assert.Equal(t, client.NoTTL, o.TTL)
	assert.Equal(t, []client.Waiter{{Owner: o2, ClientID: java, Deadline: time.UnixMilli(now + 5000)}}, o.Waiters)

	// Scan skips the queues, counters and read-hold timeouts.
	var names []string
	for o, err := range client.Scan(ctx, rdb, "*") {
		require.NoError(t, err)
		names = append(names, o.Name)
	}
	assert.ElementsMatch(t, []string{"j:lock", "{j}fair", "j:rw", "j:rw-w", "j:fenced", "j:sem", "j:latch", "j:permits", "j:group"}, names)
}

func TestInspectReadsTheRegistry(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	const id = "3b0c5a3e-0000-4000-8000-000000000001"
	started := time.UnixMilli(time.Now().Add(-time.Hour).UnixMilli())
	seen := time.UnixMilli(time.Now().UnixMilli())
	require.NoError(t, rdb.HSet(ctx, "warden_client:{"+id+"}", "service", "billing", "host", "db-7", "pid", 4242,
		"version", "v1.2.3", "started", started.UnixMilli(), "seen", seen.UnixMilli()).Err())
	require.NoError(t, rdb.HSet(ctx, "reg:lock", id+":1", 1, "ghost-0000:9", 1).Err())
	require.NoError(t, rdb.PExpire(ctx, "reg:lock", time.Minute).Err())

	o, err := client.Inspect(ctx, rdb, "reg:lock")
	require.NoError(t, err)
	require.Len(t, o.Holders, 2)
	want := &client.ClientRecord{ID: id, Service: "billing", Host: "db-7", PID: 4242, Version: "v1.2.3", Started: started, Seen: seen}
	// An entry without a ttl field: Idle is the server's TIME less seen.
	idle := func(r *client.ClientRecord) {
		t.Helper()
		assert.GreaterOrEqual(t, r.Idle, time.Duration(0))
		assert.Less(t, r.Idle, 10*time.Second)
		r.Idle = 0
	}
	require.NotNil(t, o.Holders[0].Client)
	idle(o.Holders[0].Client)
	assert.Equal(t, want, o.Holders[0].Client)
	assert.Equal(t, "ghost-0000", o.Holders[1].ClientID)
	assert.Nil(t, o.Holders[1].Client, "an unregistered holder")

	var recs []client.ClientRecord
	for r, err := range client.Clients(ctx, rdb) {
		require.NoError(t, err)
		idle(&r)
		recs = append(recs, r)
	}
	assert.Equal(t, []client.ClientRecord{*want}, recs)
}

func TestInspectBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Nothing listens here: a bad argument must fail before any call.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	_, err := client.Inspect(ctx, dead, "")
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "name")
	_, err = client.Inspect(ctx, nil, "x")
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	for _, glob := range []string{"", "a[bc", "ab\\", "[", strings.Repeat("x", 64<<10+1)} {
		for _, err := range client.Scan(ctx, dead, glob) {
			require.ErrorIs(t, err, client.ErrInvalidArgument, "%q", glob)
			assert.Contains(t, err.Error(), "glob")
		}
	}
	for _, glob := range []string{"*", "a?c", "[a-z]*", "[]]", "\\[x", "[^a]", "lock:{x}*"} {
		assert.NoError(t, client.ValidateGlob(glob), glob)
	}
	// An unreachable Redis: its error, promptly.
	_, err = client.Inspect(ctx, dead, "x")
	require.Error(t, err)
	n := 0
	for _, err := range client.Scan(ctx, dead, "*") {
		require.Error(t, err)
		n++
	}
	assert.Equal(t, 1, n)

	rdb := redistest.Start(t).Client(t)
	require.NoError(t, rdb.RPush(ctx, "user:list", "a", "b").Err())
	require.NoError(t, rdb.Set(ctx, "user:text", "hello", 0).Err())
	require.NoError(t, rdb.HSet(ctx, "user:hash", "colour", "blue").Err())
	require.NoError(t, rdb.HSet(ctx, "user:counts", "a:1", 0).Err())
	before := dirty(t, rdb)
	for _, name := range []string{"user:list", "user:text", "user:hash", "user:counts"} {
		_, err := client.Inspect(ctx, rdb, name)
		require.ErrorIs(t, err, client.ErrNotLockFamily, name)
		assert.Contains(t, err.Error(), name)
	}
	_, err = client.Inspect(ctx, rdb, "absent")
	require.ErrorIs(t, err, client.ErrNoObject)
	for o, err := range client.Scan(ctx, rdb, "*") {
		t.Errorf("Scan yielded %v, %v", o, err)
	}
	assert.Equal(t, before, dirty(t, rdb))
	assert.False(t, errors.Is(client.ErrNoObject, client.ErrNotLockFamily))
}

func TestScanOnEveryMasterOfACluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	c, err := client.New(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close(context.Background())) })

	const n = 60 // names on every master
	want := map[string]client.ObjectKind{}
	for i := range n {
		name := fmt.Sprintf("cl:%d", i)
		switch i % 3 {
		case 0:
			require.NoError(t, c.Lock(name).LockLease(ctx, time.Minute))
			want[name] = client.ObjectLock
		case 1:
			require.NoError(t, c.ReadWriteLock(name).ReadLock().LockLease(ctx, time.Minute))
			want[name] = client.ObjectReadWriteLock
		case 2:
			set(t, c.Semaphore(name).TrySetPermits, 0)
			want[name] = client.ObjectSemaphore
		}
	}
	got := map[string]client.ObjectKind{}
	for o, err := range client.Scan(ctx, rdb, "cl:*") {
		require.NoError(t, err)
		got[o.Name] = o.Kind
		if o.Kind != client.ObjectSemaphore {
			require.Len(t, o.Holders, 1)
			assert.Equal(t, c.ID(), o.Holders[0].ClientID)
		}
	}
	assert.Equal(t, want, got)
	o, err := client.Inspect(ctx, rdb, "cl:1")
	require.NoError(t, err)
	assert.Equal(t, client.ObjectReadWriteLock, o.Kind)
}

func TestScanStreamsAHundredThousandNames(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 100,000 names")
	}
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	const n = 100_000
	for start := 0; start < n; start += 10_000 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+10_000; i++ {
				name := "big:" + strconv.Itoa(i)
				p.HSet(ctx, name, fmt.Sprintf("c%d:1", i%50), 1)
				p.PExpire(ctx, name, 10*time.Minute)
			}
			return nil
		})
		require.NoError(t, err)
	}
	begin := time.Now()
	var first time.Duration
	seen := 0
	for o, err := range client.Scan(ctx, rdb, "big:*") {
		require.NoError(t, err)
		if seen == 0 {
			first = time.Since(begin)
		}
		seen++
		require.Len(t, o.Holders, 1)
	}
	total := time.Since(begin)
	t.Logf("Scan of %d names: first after %v, all after %v", n, first, total)
	assert.GreaterOrEqual(t, seen, n)
	assert.Less(t, first, total/10, "the first object comes long before the last (it streams)")
	assert.Less(t, total, time.Minute, "generous bound under -race on a loaded machine")
}
