package redisio

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwFixture bundles what every read/write lock test uses.
type rwFixture struct {
	t   *testing.T
	ctx context.Context
	rdb *redis.Client
	s   *Scripts
	seq int
}

func newRWFixture(t *testing.T, rdb *redis.Client) *rwFixture {
	return &rwFixture{t: t, ctx: context.Background(), rdb: rdb, s: newScripts(t)}
}

func (f *rwFixture) req() string {
	f.seq++
	return "req-" + strconv.Itoa(f.seq)
}

func (f *rwFixture) read(name, owner string, lease time.Duration) AcquireResult {
	f.t.Helper()
	res, acks, err := f.s.ReadAcquire(f.ctx, f.rdb, ReplicaSync{}, name, owner, f.req(), lease)
	require.NoError(f.t, err)
	assert.Zero(f.t, acks)
	return res
}

func (f *rwFixture) write(name, owner string, lease time.Duration) AcquireResult {
	f.t.Helper()
	res, acks, err := f.s.WriteAcquire(f.ctx, f.rdb, ReplicaSync{}, name, owner, f.req(), lease)
	require.NoError(f.t, err)
	assert.Zero(f.t, acks)
	return res
}

func (f *rwFixture) readUnlock(name, owner string) (int, bool) {
	f.t.Helper()
	n, held, _, err := f.s.ReadUnlock(f.ctx, f.rdb, ReplicaSync{}, name, owner, f.req(), time.Minute)
	require.NoError(f.t, err)
	return n, held
}

func (f *rwFixture) writeUnlock(name, owner string, lease time.Duration) (int, bool) {
	f.t.Helper()
	n, held, _, err := f.s.WriteUnlock(f.ctx, f.rdb, ReplicaSync{}, name, owner, f.req(), lease)
	require.NoError(f.t, err)
	return n, held
}

func (f *rwFixture) pttl(key string) time.Duration {
	f.t.Helper()
	d, err := f.rdb.PTTL(f.ctx, key).Result()
	require.NoError(f.t, err)
	return d
}

// assertPTTL checks key's TTL is in (want-slack, want].
func (f *rwFixture) assertPTTL(key string, want time.Duration, msg string) {
	f.t.Helper()
	d := f.pttl(key)
	assert.LessOrEqual(f.t, d, want, msg)
	assert.Greater(f.t, d, want-250*time.Millisecond, msg)
}

func (f *rwFixture) rwReadHolds(name, owner string) int {
	f.t.Helper()
	n, err := ReadHoldCount(f.ctx, f.rdb, name, owner)
	require.NoError(f.t, err)
	return n
}

func (f *rwFixture) mode(name string) string {
	return f.rdb.HGet(f.ctx, name, "mode").Val()
}

func (f *rwFixture) readLocked(name string) bool {
	f.t.Helper()
	ok, err := ReadIsLocked(f.ctx, f.rdb, name)
	require.NoError(f.t, err)
	return ok
}

func (f *rwFixture) writeLocked(name string) bool {
	f.t.Helper()
	ok, err := WriteIsLocked(f.ctx, f.rdb, name)
	require.NoError(f.t, err)
	return ok
}

// subscribe returns the messages published on name's rwlock channel.
func (f *rwFixture) subscribe(name string) <-chan *redis.Message {
	f.t.Helper()
	sub := f.rdb.Subscribe(f.ctx, RWChannel(name))
	_, err := sub.ReceiveTimeout(f.ctx, 5*time.Second)
	require.NoError(f.t, err, "the subscription confirmed")
	f.t.Cleanup(func() { _ = sub.Close() })
	return sub.Channel()
}

func rwExpectMessage(t *testing.T, ch <-chan *redis.Message, channel, payload string) {
	t.Helper()
	select {
	case m := <-ch:
		assert.Equal(t, channel, m.Channel)
		assert.Equal(t, payload, m.Payload)
	case <-time.After(2 * time.Second):
		t.Fatalf("no message %q on %s", payload, channel)
	}
}

func rwExpectNoMessage(t *testing.T, ch <-chan *redis.Message) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("unexpected message %q on %s", m.Payload, m.Channel)
	case <-time.After(100 * time.Millisecond):
	}
}

var rwAcquired1 = AcquireResult{Acquired: true, HoldCount: 1}

func TestRWKeyNames(t *testing.T) {
	tests := []struct {
		name, owner, channel, prefix string
	}{
		{"plain", "u:1", "redisson_rwlock:{plain}", "{plain}:u:1:rwlock_timeout"},
		{"{test}:abc:key", "u:1", "redisson_rwlock:{test}:abc:key", "{test}:abc:key:u:1:rwlock_timeout"},
		{"order:42", "8f3e:7", "redisson_rwlock:{order:42}", "{order:42}:8f3e:7:rwlock_timeout"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.channel, RWChannel(tt.name))
		assert.Equal(t, tt.prefix, ReadTimeoutPrefix(tt.name, tt.owner))
	}
	assert.Equal(t, "u:1:write", WriteField("u:1"))
	assert.Equal(t, "0", RWUnlockMessage)
	assert.Equal(t, "1", RWReadUnlockMessage)
}

// Redisson testMultiRead.
func TestRWMultipleReadersShare(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		assert.Equal(t, rwAcquired1, f.read("rw", "r1", 10*time.Second))
		assert.Equal(t, "read", f.mode("rw"))
		assert.Equal(t, "1", rdb.HGet(f.ctx, "rw", "r1").Val())
		f.assertPTTL("rw", 10*time.Second, "hash ttl = lease")
		f.assertPTTL(ReadTimeoutPrefix("rw", "r1")+":1", 10*time.Second, "hold 1's timeout key")

		w := f.write("rw", "w", time.Second)
		assert.False(t, w.Acquired, "write refused while read-held")
		assert.InDelta(t, float64(10*time.Second), float64(w.PTTL), float64(time.Second))

		assert.Equal(t, rwAcquired1, f.read("rw", "r2", 5*time.Second), "readers share")
		f.assertPTTL("rw", 10*time.Second, "a shorter read never shortens the hash ttl")
		n, held := f.readUnlock("rw", "r1")
		assert.True(t, held)
		assert.Zero(t, n)
		assert.False(t, f.write("rw", "w", time.Second).Acquired, "r2 still reads")
		f.assertPTTL("rw", 5*time.Second, "ttl falls to the surviving reader's")
		n, held = f.readUnlock("rw", "r2")
		assert.True(t, held)
		assert.Zero(t, n)
		assert.Zero(t, rdb.Exists(f.ctx, "rw", ReadTimeoutPrefix("rw", "r1")+":1", ReadTimeoutPrefix("rw", "r2")+":1").Val())
		assert.Equal(t, rwAcquired1, f.write("rw", "w", time.Second))

		deleted, err := f.s.ReadForceUnlock(f.ctx, rdb, "free")
		require.NoError(t, err)
		assert.False(t, deleted, "force unlock of a free lock")
	})
}

// Redisson testWriteLock and testWriteReadReentrancy.
func TestRWWriteExclusiveReentrantDowngrade(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		assert.Equal(t, rwAcquired1, f.write("rw", "w", 10*time.Second))
		assert.Equal(t, "write", f.mode("rw"))
		assert.Equal(t, "1", rdb.HGet(f.ctx, "rw", "w:write").Val())
		f.assertPTTL("rw", 10*time.Second, "write ttl = lease")
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, f.write("rw", "w", 10*time.Second))
		f.assertPTTL("rw", 20*time.Second, "a write reentry adds the lease")

		r := f.read("rw", "o", time.Second)
		assert.False(t, r.Acquired, "another owner cannot read")
		assert.InDelta(t, float64(20*time.Second), float64(r.PTTL), float64(time.Second))
		assert.False(t, f.write("rw", "o", time.Second).Acquired, "another owner cannot write")

		n, held := f.writeUnlock("rw", "w", 7*time.Second)
		assert.True(t, held)
		assert.Equal(t, 1, n)
		f.assertPTTL("rw", 7*time.Second, "a still-held write is refreshed to the lease")

		assert.Equal(t, rwAcquired1, f.read("rw", "w", 3*time.Second), "the writer may read (downgrade)")
		f.assertPTTL("rw", 7*time.Second, "read never shortens")
		assert.False(t, f.read("rw", "o", time.Second).Acquired, "others still cannot read")

		sub := f.subscribe("rw")
		n, held = f.writeUnlock("rw", "w", time.Minute)
		assert.True(t, held)
		assert.Zero(t, n)
		rwExpectMessage(t, sub, RWChannel("rw"), RWReadUnlockMessage) // waiting readers may share it now
		assert.Equal(t, "read", f.mode("rw"), "the owner still reads: read mode")
		assert.False(t, rdb.HExists(f.ctx, "rw", "w:write").Val())
		f.assertPTTL("rw", 7*time.Second, "downgrade keeps the ttl")

		assert.Equal(t, rwAcquired1, f.read("rw", "o", time.Second), "others may read now")
		assert.False(t, f.write("rw", "w", time.Second).Acquired, "a reader never takes the write, not even the former writer")
		f.readUnlock("rw", "o")
		assert.False(t, f.write("rw", "w", time.Second).Acquired, "still not while it reads itself")
		n, held = f.readUnlock("rw", "w")
		assert.True(t, held)
		assert.Zero(t, n)
		rwExpectMessage(t, sub, RWChannel("rw"), RWUnlockMessage)
		assert.Equal(t, rwAcquired1, f.write("rw", "w", time.Second), "after its read unlock")
	})
}

// Redisson testWriteReadReentrancy: a read holder cannot upgrade.
func TestRWReadHolderCannotUpgrade(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		f.read("rw", "o", 5*time.Second)
		res := f.write("rw", "o", 5*time.Second)
		assert.False(t, res.Acquired)
		assert.InDelta(t, float64(5*time.Second), float64(res.PTTL), float64(time.Second))
		assert.False(t, rdb.HExists(f.ctx, "rw", "o:write").Val())
		assert.Equal(t, "read", f.mode("rw"))
	})
}

// Redisson testWR and testReadLockIsLocked (#4400).
func TestRWIsLockedAndHoldCount(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		assert.False(t, f.readLocked("rw"))
		assert.False(t, f.writeLocked("rw"))

		f.write("rw", "w", time.Minute)
		f.write("rw", "w", time.Minute)
		assert.False(t, f.readLocked("rw"), "write-held without reads: read side not locked")
		assert.True(t, f.writeLocked("rw"))
		f.read("rw", "w", time.Minute)
		assert.True(t, f.readLocked("rw"), "the write holder also reads")
		assert.True(t, f.writeLocked("rw"))

		n, err := WriteHoldCount(f.ctx, rdb, "rw", "w")
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		n, err = ReadHoldCount(f.ctx, rdb, "rw", "w")
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		n, err = ReadHoldCount(f.ctx, rdb, "rw", "other")
		require.NoError(t, err)
		assert.Zero(t, n)
		n, err = WriteHoldCount(f.ctx, rdb, "missing", "w")
		require.NoError(t, err)
		assert.Zero(t, n)

		f.readUnlock("rw", "w")
		assert.True(t, f.writeLocked("rw"), "read unlock leaves the write")
		assert.False(t, f.readLocked("rw"))
		f.writeUnlock("rw", "w", time.Minute)
		f.writeUnlock("rw", "w", time.Minute)
		assert.False(t, f.writeLocked("rw"))
		assert.Zero(t, rdb.Exists(f.ctx, "rw").Val())

		f.read("rw", "a", time.Minute)
		f.read("rw", "a", time.Minute)
		assert.True(t, f.readLocked("rw"))
		assert.False(t, f.writeLocked("rw"))
		n, err = ReadHoldCount(f.ctx, rdb, "rw", "a")
		require.NoError(t, err)
		assert.Equal(t, 2, n)
	})
}

// Redisson testReadLockLeaseTimeout: the hash TTL falls back to the
// surviving hold's lease when a longer reentrant hold is released.
func TestRWReadLeaseBookkeeping(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, ff func(time.Duration)) {
		f := newRWFixture(t, rdb)
		f.read("rw", "o", 300*time.Millisecond)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, f.read("rw", "o", 1200*time.Millisecond))
		f.assertPTTL("rw", 1200*time.Millisecond, "the longer hold extends the lock")
		f.assertPTTL(ReadTimeoutPrefix("rw", "o")+":1", 300*time.Millisecond, "hold 1 keeps its own lease")
		f.assertPTTL(ReadTimeoutPrefix("rw", "o")+":2", 1200*time.Millisecond, "hold 2 has its own lease")

		n, held := f.readUnlock("rw", "o")
		assert.True(t, held)
		assert.Equal(t, 1, n)
		assert.Zero(t, rdb.Exists(f.ctx, ReadTimeoutPrefix("rw", "o")+":2").Val(), "the released hold's key goes")
		d := f.pttl("rw")
		assert.LessOrEqual(t, d, 300*time.Millisecond, "the ttl falls back to the surviving hold's")
		assert.Positive(t, d)

		ff(350 * time.Millisecond)
		assert.Equal(t, rwAcquired1, f.write("rw", "w", time.Second), "the write gets in once the short hold lapsed")
	})
}

// Redisson testReadLockExpiration / testReadLockLeaseTimeoutDiffThreadsRRW:
// a short hold of another reader never extends the lock's TTL.
func TestRWOtherReadersLeases(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, ff func(time.Duration)) {
		f := newRWFixture(t, rdb)
		f.read("rw", "r1", 1000*time.Millisecond)
		f.read("rw", "r2", 300*time.Millisecond)
		f.read("rw", "r3", 100*time.Millisecond)
		f.assertPTTL("rw", 1000*time.Millisecond, "longest lease")

		f.readUnlock("rw", "r3")
		f.assertPTTL("rw", 1000*time.Millisecond, "releasing a short hold neither extends nor cuts")
		f.readUnlock("rw", "r1")
		d := f.pttl("rw")
		assert.LessOrEqual(t, d, 300*time.Millisecond, "r2's lease is what is left")
		assert.Greater(t, d, 50*time.Millisecond)
		res := f.write("rw", "w", time.Second)
		assert.False(t, res.Acquired)
		assert.LessOrEqual(t, res.PTTL, 300*time.Millisecond)

		ff(350 * time.Millisecond)
		assert.Equal(t, rwAcquired1, f.write("rw", "w", time.Second))
	})
}

// A read unlock in write mode never cuts the write holder's lease (Redisson
// would shrink the hash to the longest read hold).
func TestRWReadUnlockKeepsWriteLease(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		f.write("rw", "w", 10*time.Second)
		f.read("rw", "w", time.Second)
		f.read("rw", "w", time.Second)
		n, held := f.readUnlock("rw", "w")
		assert.True(t, held)
		assert.Equal(t, 1, n)
		f.assertPTTL("rw", 10*time.Second, "write lease kept")
		n, held = f.readUnlock("rw", "w")
		assert.True(t, held)
		assert.Zero(t, n)
		f.assertPTTL("rw", 10*time.Second, "write lease kept")
		assert.Equal(t, "write", f.mode("rw"))
		assert.True(t, f.writeLocked("rw"))

		// After the downgrade the lock lives as long as its longest read hold.
		f.read("rw", "w", 30*time.Second)
		f.read("rw", "w", time.Second)
		n, held = f.writeUnlock("rw", "w", 10*time.Second)
		assert.True(t, held)
		assert.Zero(t, n)
		assert.Equal(t, "read", f.mode("rw"))
		f.assertPTTL("rw", 30*time.Second, "downgrade keeps the ttl")
		n, held = f.readUnlock("rw", "w")
		assert.True(t, held)
		assert.Equal(t, 1, n)
		f.assertPTTL("rw", 30*time.Second, "the 30s hold survives")
	})
}

// A write unlock that leaves write holds sets the TTL to the lease, but
// never below the longest read hold: the write holder's own reads
// (downgrade) each have a lease, which the unlock must not cut.
func TestRWWriteUnlockKeepsLongerReadHolds(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		readKey := func(k int) string { return ReadTimeoutPrefix("rw", "w") + ":" + strconv.Itoa(k) }
		f.write("rw", "w", 10*time.Second)
		f.write("rw", "w", 10*time.Second)
		f.write("rw", "w", 10*time.Second)
		f.read("rw", "w", 2*time.Second)
		f.read("rw", "w", 40*time.Second)
		f.assertPTTL("rw", 40*time.Second, "the long read hold raised the lock")

		n, held := f.writeUnlock("rw", "w", time.Second)
		assert.True(t, held)
		assert.Equal(t, 2, n)
		lock := f.pttl("rw")
		assert.GreaterOrEqual(t, lock, f.pttl(readKey(2)), "the longest read hold survives the unlock")
		assert.Greater(t, lock, 39*time.Second)
		f.assertPTTL(readKey(1), 2*time.Second, "the unlock leaves the read holds' own leases")
		f.assertPTTL(readKey(2), 40*time.Second, "the unlock leaves the read holds' own leases")

		f.readUnlock("rw", "w")
		f.assertPTTL("rw", 40*time.Second, "a read unlock in write mode never cuts the lock")
		n, held = f.writeUnlock("rw", "w", 5*time.Second)
		assert.True(t, held)
		assert.Equal(t, 1, n)
		f.assertPTTL("rw", 5*time.Second, "the lease, longer than the surviving read hold")
		assert.Equal(t, 1, f.rwReadHolds("rw", "w"))

		n, held = f.writeUnlock("rw", "w", time.Minute)
		assert.True(t, held)
		assert.Zero(t, n)
		assert.Equal(t, "read", f.mode("rw"))
		f.assertPTTL("rw", 5*time.Second, "downgrade keeps the ttl")

		// Without reads the unlock sets the lease, shorter or longer.
		f.write("plain-rw", "w", 10*time.Second)
		f.write("plain-rw", "w", 10*time.Second)
		f.writeUnlock("plain-rw", "w", 3*time.Second)
		f.assertPTTL("plain-rw", 3*time.Second, "a write hold alone gets the lease")
		f.write("plain-rw", "w", 10*time.Second)
		f.writeUnlock("plain-rw", "w", 30*time.Second)
		f.assertPTTL("plain-rw", 30*time.Second, "a write hold alone gets the lease")
	})
}

func TestRWNotHeld(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		_, held := f.readUnlock("rw", "o")
		assert.False(t, held, "read unlock of a missing lock (Redisson: success)")
		_, held = f.writeUnlock("rw", "o", time.Second)
		assert.False(t, held, "write unlock of a missing lock (Redisson: success)")
		f.read("rw", "r", time.Minute)
		_, held = f.readUnlock("rw", "o")
		assert.False(t, held, "another owner's read")
		_, held = f.writeUnlock("rw", "r", time.Second)
		assert.False(t, held, "read mode: no write to release")
		f.readUnlock("rw", "r")
		f.write("rw", "w", time.Minute)
		_, held = f.readUnlock("rw", "w")
		assert.False(t, held, "the writer holds no read")
		_, held = f.writeUnlock("rw", "o", time.Second)
		assert.False(t, held, "another owner's write")
		assert.Equal(t, "1", rdb.HGet(f.ctx, "rw", "w:write").Val(), "nothing changed")
	})
}

func TestRWRefusesKeyWithoutMode(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		require.NoError(t, rdb.HSet(f.ctx, "plainlock", "other:1", 1).Err())
		require.NoError(t, rdb.PExpire(f.ctx, "plainlock", 5*time.Second).Err())
		r := f.read("plainlock", "o", time.Second)
		assert.False(t, r.Acquired, "a plain lock of the same name is not joined")
		assert.InDelta(t, float64(5*time.Second), float64(r.PTTL), float64(time.Second))
		assert.False(t, f.write("plainlock", "o", time.Second).Acquired)
		assert.Equal(t, map[string]string{"other:1": "1"}, rdb.HGetAll(f.ctx, "plainlock").Val())
	})
}

// Redisson testWriteRead: the freeing write unlock publishes "1" (wake
// all); the freeing read unlock publishes "0" (wake one).
func TestRWPublishes(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		for _, name := range []string{"rw", "{tag}:rw"} {
			ch := f.subscribe(name)
			f.read(name, "r1", time.Minute)
			f.read(name, "r2", time.Minute)
			f.readUnlock(name, "r1")
			rwExpectNoMessage(t, ch)
			f.readUnlock(name, "r2")
			rwExpectMessage(t, ch, RWChannel(name), RWUnlockMessage)

			f.write(name, "w", time.Minute)
			f.write(name, "w", time.Minute)
			f.writeUnlock(name, "w", time.Minute)
			rwExpectNoMessage(t, ch)
			f.writeUnlock(name, "w", time.Minute)
			rwExpectMessage(t, ch, RWChannel(name), RWReadUnlockMessage)
			assert.Zero(t, rdb.Exists(f.ctx, name).Val())
		}
	})
}

// Redisson testForceUnlock.
func TestRWForceUnlockByMode(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		ch := f.subscribe("rw")
		f.read("rw", "r", time.Minute)
		deleted, err := f.s.WriteForceUnlock(f.ctx, rdb, "rw")
		require.NoError(t, err)
		assert.False(t, deleted, "write side does not clear a read-held lock")
		assert.True(t, f.readLocked("rw"))
		rwExpectNoMessage(t, ch)
		deleted, err = f.s.ReadForceUnlock(f.ctx, rdb, "rw")
		require.NoError(t, err)
		assert.True(t, deleted)
		assert.Zero(t, rdb.Exists(f.ctx, "rw").Val())
		rwExpectMessage(t, ch, RWChannel("rw"), RWUnlockMessage)

		f.write("rw", "w", time.Minute)
		f.read("rw", "w", time.Minute)
		deleted, err = f.s.ReadForceUnlock(f.ctx, rdb, "rw")
		require.NoError(t, err)
		assert.False(t, deleted, "read side does not clear a write-held lock")
		assert.True(t, f.writeLocked("rw"))
		deleted, err = f.s.WriteForceUnlock(f.ctx, rdb, "rw")
		require.NoError(t, err)
		assert.True(t, deleted)
		assert.Zero(t, rdb.Exists(f.ctx, "rw").Val())
		rwExpectMessage(t, ch, RWChannel("rw"), RWReadUnlockMessage)
		deleted, err = f.s.WriteForceUnlock(f.ctx, rdb, "rw")
		require.NoError(t, err)
		assert.False(t, deleted)
	})
}

func TestRWAcquireAndUnlockExactlyOnce(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		ctx := f.ctx
		for range 2 {
			res, _, err := f.s.ReadAcquire(ctx, rdb, ReplicaSync{}, "rd", "o", "a1", time.Minute)
			require.NoError(t, err)
			assert.Equal(t, rwAcquired1, res, "a repeat returns the first result")
		}
		assert.Equal(t, "1", rdb.HGet(ctx, "rd", "o").Val())
		assert.Zero(t, rdb.Exists(ctx, ReadTimeoutPrefix("rd", "o")+":2").Val(), "no second hold key")
		assert.Equal(t, "a1", rdb.Get(ctx, AcquireLatchKey("rd", "o")).Val())
		f.assertPTTL(AcquireLatchKey("rd", "o"), LatchTTL, "latch ttl")
		res, _, err := f.s.ReadAcquire(ctx, rdb, ReplicaSync{}, "rd", "o", "a2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, 2, res.HoldCount, "a new request re-enters")

		for range 2 {
			n, held, _, err := f.s.ReadUnlock(ctx, rdb, ReplicaSync{}, "rd", "o", "u1", time.Minute)
			require.NoError(t, err)
			assert.True(t, held)
			assert.Equal(t, 1, n, "a retried unlock returns the first result")
		}
		assert.Equal(t, "1", rdb.HGet(ctx, "rd", "o").Val())
		f.assertPTTL(UnlockRecordKey("rd", f.s.token+readRecord), LatchTTL, "unlock record")
		for range 2 {
			n, held, _, err := f.s.ReadUnlock(ctx, rdb, ReplicaSync{}, "rd", "o", "u2", time.Minute)
			require.NoError(t, err)
			assert.True(t, held, "a retried last unlock is not 'not held'")
			assert.Zero(t, n)
		}
		assert.Zero(t, rdb.Exists(ctx, "rd", AcquireLatchKey("rd", "o")).Val(), "lock and acquire latch gone")

		for range 2 {
			res, _, err := f.s.WriteAcquire(ctx, rdb, ReplicaSync{}, "wr", "o", "a1", 10*time.Second)
			require.NoError(t, err)
			assert.Equal(t, rwAcquired1, res)
		}
		f.assertPTTL("wr", 10*time.Second, "the lease was not added twice")
		assert.Equal(t, "a1", rdb.Get(ctx, AcquireLatchKey("wr", WriteField("o"))).Val())
		for range 2 {
			res, _, err := f.s.WriteAcquire(ctx, rdb, ReplicaSync{}, "wr", "o", "a2", 10*time.Second)
			require.NoError(t, err)
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 2}, res)
		}
		f.assertPTTL("wr", 20*time.Second, "one reentry: one lease added")
		for range 2 {
			n, held, _, err := f.s.WriteUnlock(ctx, rdb, ReplicaSync{}, "wr", "o", "u1", 10*time.Second)
			require.NoError(t, err)
			assert.True(t, held)
			assert.Equal(t, 1, n)
		}
		assert.Equal(t, "1", rdb.HGet(ctx, "wr", "o:write").Val())
		assert.Regexp(t, `^\d+ 1 7 o:writeu1$`, rdb.Get(ctx, UnlockRecordKey("wr", f.s.token+writeRecord)).Val(),
			"the record: sequence number, result, owner field, request ID")
		for range 2 {
			n, held, _, err := f.s.WriteUnlock(ctx, rdb, ReplicaSync{}, "wr", "o", "u2", 10*time.Second)
			require.NoError(t, err)
			assert.True(t, held)
			assert.Zero(t, n)
		}
		assert.Zero(t, rdb.Exists(ctx, "wr", AcquireLatchKey("wr", WriteField("o"))).Val())
		_, held, _, err := f.s.WriteUnlock(ctx, rdb, ReplicaSync{}, "wr", "o", "u3", 10*time.Second)
		require.NoError(t, err)
		assert.False(t, held)
	})
}

func TestRWUndoAcquire(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		ctx, s := f.ctx, f.s
		ch := f.subscribe("rd")

		undone, err := s.ReadUndoAcquire(ctx, rdb, "rd", "o", "never-ran")
		require.NoError(t, err)
		assert.False(t, undone)
		_, _, err = s.ReadAcquire(ctx, rdb, ReplicaSync{}, "rd", "o", "a1", time.Second)
		require.NoError(t, err)
		_, _, err = s.ReadAcquire(ctx, rdb, ReplicaSync{}, "rd", "o", "a2", 5*time.Second)
		require.NoError(t, err)
		undone, err = s.ReadUndoAcquire(ctx, rdb, "rd", "o", "a1")
		require.NoError(t, err)
		assert.False(t, undone, "only the last applied request can be undone")
		undone, err = s.ReadUndoAcquire(ctx, rdb, "rd", "o", "a2")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "1", rdb.HGet(ctx, "rd", "o").Val())
		assert.Zero(t, rdb.Exists(ctx, ReadTimeoutPrefix("rd", "o")+":2").Val(), "the undone hold's key goes")
		assert.LessOrEqual(t, f.pttl("rd"), time.Second, "ttl recomputed to the surviving hold")
		undone, err = s.ReadUndoAcquire(ctx, rdb, "rd", "o", "a2")
		require.NoError(t, err)
		assert.False(t, undone, "undo is itself applied once")
		rwExpectNoMessage(t, ch)

		_, _, err = s.ReadAcquire(ctx, rdb, ReplicaSync{}, "solo", "o", "b1", time.Minute)
		require.NoError(t, err)
		chSolo := f.subscribe("solo")
		undone, err = s.ReadUndoAcquire(ctx, rdb, "solo", "o", "b1")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Zero(t, rdb.Exists(ctx, "solo", ReadTimeoutPrefix("solo", "o")+":1", AcquireLatchKey("solo", "o")).Val())
		rwExpectMessage(t, chSolo, RWChannel("solo"), RWUnlockMessage)

		chW := f.subscribe("wr")
		_, _, err = s.WriteAcquire(ctx, rdb, ReplicaSync{}, "wr", "o", "w1", 10*time.Second)
		require.NoError(t, err)
		_, _, err = s.WriteAcquire(ctx, rdb, ReplicaSync{}, "wr", "o", "w2", 10*time.Second)
		require.NoError(t, err)
		undone, err = s.WriteUndoAcquire(ctx, rdb, "wr", "o", "w1")
		require.NoError(t, err)
		assert.False(t, undone)
		undone, err = s.WriteUndoAcquire(ctx, rdb, "wr", "o", "w2")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "1", rdb.HGet(ctx, "wr", "o:write").Val())
		rwExpectNoMessage(t, chW)
		_, _, err = s.WriteAcquire(ctx, rdb, ReplicaSync{}, "wr", "o", "w3", 10*time.Second)
		require.NoError(t, err)
		_, held := f.writeUnlock("wr", "o", time.Second)
		require.True(t, held)
		f.writeUnlock("wr", "o", time.Second)
		rwExpectMessage(t, chW, RWChannel("wr"), RWReadUnlockMessage)

		_, _, err = s.WriteAcquire(ctx, rdb, ReplicaSync{}, "wr", "o", "w4", 10*time.Second)
		require.NoError(t, err)
		undone, err = s.WriteUndoAcquire(ctx, rdb, "wr", "o", "w4")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Zero(t, rdb.Exists(ctx, "wr").Val(), "undoing the only write frees the lock")
		rwExpectMessage(t, chW, RWChannel("wr"), RWReadUnlockMessage)

		// Undo of a downgrade read keeps the write; undo of the write with the
		// owner still reading downgrades.
		_, _, err = s.WriteAcquire(ctx, rdb, ReplicaSync{}, "dg", "o", "w5", 10*time.Second)
		require.NoError(t, err)
		_, _, err = s.ReadAcquire(ctx, rdb, ReplicaSync{}, "dg", "o", "r5", 10*time.Second)
		require.NoError(t, err)
		_, _, err = s.ReadAcquire(ctx, rdb, ReplicaSync{}, "dg", "o", "r6", 10*time.Second)
		require.NoError(t, err)
		undone, err = s.ReadUndoAcquire(ctx, rdb, "dg", "o", "r6")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, "write", f.mode("dg"))
		assert.Equal(t, "1", rdb.HGet(ctx, "dg", "o").Val())
		undone, err = s.WriteUndoAcquire(ctx, rdb, "dg", "o", "w5")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.Equal(t, map[string]string{"mode": "read", "o": "1"}, rdb.HGetAll(ctx, "dg").Val())
	})
}

// Redisson testName: a name with a hash tag and colons; every key of one
// lock shares the name's cluster slot.
func TestRWKeysShareOneSlot(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		f := newRWFixture(t, rdb)
		for _, name := range []string{"{test}:abc:key", "plain:name"} {
			require.NoError(t, rdb.FlushAll(f.ctx).Err())
			for i := range 10 {
				owner := "c:" + strconv.Itoa(i)
				assert.True(t, f.read(name, owner, time.Minute).Acquired)
				assert.True(t, f.read(name, owner, time.Minute).Acquired)
				_, held := f.readUnlock(name, owner)
				assert.True(t, held)
			}
			keys := rdb.Keys(f.ctx, "*").Val()
			assert.Len(t, keys, 1+10*(1+1)+1, "hash, per owner one timeout key and acquire latch, and one unlock record")
			for _, k := range keys {
				assert.Equal(t, Slot(name), Slot(k), "key %q of %q", k, name)
			}
			assert.Equal(t, Slot(name), Slot(RWChannel(name)))
			for i := range 10 {
				_, held := f.readUnlock(name, "c:"+strconv.Itoa(i))
				assert.True(t, held)
			}
			assert.Zero(t, rdb.Exists(f.ctx, name).Val())

			f.write(name, "w", time.Minute)
			f.read(name, "w", time.Minute)
			f.writeUnlock(name, "w", time.Minute)
			for _, k := range rdb.Keys(f.ctx, "*").Val() {
				assert.Equal(t, Slot(name), Slot(k), "key %q of %q", k, name)
			}
		}
	})
}

func TestRWScriptsRejectBadArgumentsBeforeWriting(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		name := "rw"
		readAcq := []string{name, AcquireLatchKey(name, "o"), ReadTimeoutPrefix(name, "o")}
		writeAcq := []string{name, AcquireLatchKey(name, "o:write")}
		readUnl := []string{name, RWChannel(name), UnlockRecordKey(name, "t"+readRecord), AcquireLatchKey(name, "o"),
			ReadTimeoutPrefix(name, "o"), rwKeyPrefix(name)}
		writeUnl := []string{name, RWChannel(name), UnlockRecordKey(name, "t"+writeRecord), AcquireLatchKey(name, "o:write"), rwKeyPrefix(name)}
		readUndo := []string{name, AcquireLatchKey(name, "o"), RWChannel(name), ReadTimeoutPrefix(name, "o"), rwKeyPrefix(name)}
		writeUndo := []string{name, AcquireLatchKey(name, "o:write"), RWChannel(name)}
		force := []string{name, RWChannel(name)}

		for _, ms := range []string{"0", "-1", "1.5", "1e3", "", " 5", "9007199254740993", "abc"} {
			require.Error(t, rwReadAcquireScript.Run(ctx, rdb, readAcq, "o", ms, "r", "1000").Err(), "read lease %q", ms)
			require.Error(t, rwReadAcquireScript.Run(ctx, rdb, readAcq, "o", "1000", "r", ms).Err(), "read latch ttl %q", ms)
			require.Error(t, rwWriteAcquireScript.Run(ctx, rdb, writeAcq, "o:write", ms, "r", "1000").Err(), "write lease %q", ms)
			require.Error(t, rwWriteAcquireScript.Run(ctx, rdb, writeAcq, "o:write", "1000", "r", ms).Err(), "write latch ttl %q", ms)
			require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl, "0", "o", "publish", ms, "1", "u").Err(), "read unlock latch ttl %q", ms)
			require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "1", ms, "o:write", "publish", "1000", "1", "u").Err(), "write unlock lease %q", ms)
			require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "1", "1000", "o:write", "publish", ms, "1", "u").Err(), "write unlock latch ttl %q", ms)
		}
		for _, owner := range []string{"", "mode"} {
			require.Error(t, rwReadAcquireScript.Run(ctx, rdb, readAcq, owner, "1000", "r", "1000").Err(), "owner %q", owner)
			require.Error(t, rwWriteAcquireScript.Run(ctx, rdb, writeAcq, owner, "1000", "r", "1000").Err(), "write field %q", owner)
			require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl, "0", owner, "publish", "1000", "1", "u").Err(), "owner %q", owner)
			require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "1", "1000", owner, "publish", "1000", "1", "u").Err(), "owner %q", owner)
			require.Error(t, rwReadUndoScript.Run(ctx, rdb, readUndo, owner, "r", "publish", "0").Err(), "owner %q", owner)
			require.Error(t, rwWriteUndoScript.Run(ctx, rdb, writeUndo, owner, "r", "publish", "1").Err(), "owner %q", owner)
		}
		for _, seq := range []string{"0", "-1", "1.5", "", "abc", "9007199254740993"} {
			require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl, "0", "o", "publish", "1000", seq, "u").Err(), "read unlock sequence number %q", seq)
			require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "1", "1000", "o:write", "publish", "1000", seq, "u").Err(), "write unlock sequence number %q", seq)
		}
		require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl, "0", "o", "publish", "1000", "1", "").Err(), "empty request id")
		require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "1", "1000", "o:write", "publish", "1000", "1", "").Err(), "empty request id")
		require.Error(t, rwReadAcquireScript.Run(ctx, rdb, readAcq, "o", "1000", "", "1000").Err(), "empty request id")
		require.Error(t, rwWriteAcquireScript.Run(ctx, rdb, writeAcq, "o:write", "1000", "", "1000").Err(), "empty request id")
		require.Error(t, rwReadUndoScript.Run(ctx, rdb, readUndo, "o", "", "publish", "0").Err(), "empty request id")
		require.Error(t, rwWriteUndoScript.Run(ctx, rdb, writeUndo, "o:write", "", "publish", "1").Err(), "empty request id")
		for _, pub := range []string{"", "del", "flushall", "PUBLISH"} {
			require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl, "0", "o", pub, "1000", "1", "u").Err(), "publish %q", pub)
			require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "1", "1000", "o:write", pub, "1000", "1", "u").Err(), "publish %q", pub)
			require.Error(t, rwReadUndoScript.Run(ctx, rdb, readUndo, "o", "r", pub, "0").Err(), "publish %q", pub)
			require.Error(t, rwWriteUndoScript.Run(ctx, rdb, writeUndo, "o:write", "r", pub, "1").Err(), "publish %q", pub)
			require.Error(t, rwForceUnlockScript.Run(ctx, rdb, force, "read", "0", pub).Err(), "publish %q", pub)
		}
		require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl, "", "o", "publish", "1000", "1", "u").Err(), "empty message")
		require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl, "", "1000", "o:write", "publish", "1000", "1", "u").Err(), "empty message")
		require.Error(t, rwReadUndoScript.Run(ctx, rdb, readUndo, "o", "r", "publish", "").Err(), "empty message")
		require.Error(t, rwWriteUndoScript.Run(ctx, rdb, writeUndo, "o:write", "r", "publish", "").Err(), "empty message")
		require.Error(t, rwForceUnlockScript.Run(ctx, rdb, force, "read", "", "publish").Err(), "empty message")
		require.Error(t, rwForceUnlockScript.Run(ctx, rdb, force, "", "0", "publish").Err(), "empty mode")
		require.Error(t, rwForceUnlockScript.Run(ctx, rdb, force, "all", "0", "publish").Err(), "unknown mode")
		require.Error(t, rwReadUnlockScript.Run(ctx, rdb, readUnl[:5], "0", "o", "publish", "1000", "1", "u").Err(), "a key missing")
		require.Error(t, rwWriteUnlockScript.Run(ctx, rdb, writeUnl[:4], "1", "1000", "o:write", "publish", "1000", "1", "u").Err(), "a key missing")
		assert.Zero(t, rdb.DBSize(ctx).Val(), "no bad call left a key behind")

		ok, err := rwWriteAcquireScript.Run(ctx, rdb, writeAcq, "o:write", "9007199254740992", "r", "1000").Int64Slice()
		require.NoError(t, err, "2^53 ms is the longest lease")
		assert.Equal(t, []int64{1, 1}, ok)
		ok, err = rwWriteAcquireScript.Run(ctx, rdb, writeAcq, "o:write", "9007199254740992", "r2", "1000").Int64Slice()
		require.NoError(t, err, "a reentry past 2^53 ms still sets a whole-number TTL")
		assert.Equal(t, []int64{1, 2}, ok)
		ok, err = rwReadAcquireScript.Run(ctx, rdb, []string{"rr", AcquireLatchKey("rr", "o"), ReadTimeoutPrefix("rr", "o")},
			"o", "9007199254740992", "r", "1000").Int64Slice()
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 1}, ok)
	})
}
