package client_test

import (
	"context"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/redisio"
)

// The scripts below are what a Java service running Redisson sends for
// the synchronizer methods warden mirrors (RSemaphore, RPermitExpirable-
// Semaphore, RCountDownLatch): the same keys, arguments, commands and
// messages, in Redisson's KEYS and ARGV order, so that the tests drive the
// Redisson side of one Redis against warden.

// redissonNeverExpires is Redisson's score of a permit without a lease.
const redissonNeverExpires = 922337203685477

var (
	// RSemaphore.trySetPermits(permits, timeToLive): KEYS name, channel;
	// ARGV permits, publish command, ttl ms.
	redissonTrySetPermitsTTL = redis.NewScript(`
local value = redis.call('get', KEYS[1])
if value == false then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0`)

	// RSemaphore.tryAcquire(permits): KEYS name; ARGV permits.
	redissonSemTryAcquire = redis.NewScript(`
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0`)

	// RSemaphore.releaseIfExists(permits): KEYS name, channel; ARGV
	// permits, publish command.
	redissonReleaseIfExists = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], value)
return 1`)

	// RPermitExpirableSemaphore.tryAcquire(permits, ...): KEYS name,
	// {name}:timeout, channel; ARGV count, lease end ms, now ms,
	// never-expires score, publish command, permit IDs (raw bytes).
	redissonPermitTryAcquire = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1])
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[5], KEYS[3], value)
  end
end
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  for i = 6, #ARGV, 1 do
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return 'OK'
end
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if v[1] ~= nil and v[2] ~= ARGV[4] then
  return ':' .. tostring(v[2])
end
return nil`)

	// RPermitExpirableSemaphore.getLeaseTime(permitId): KEYS name,
	// {name}:timeout, channel; ARGV permit ID, never-expires score, now
	// ms, publish command. 0 = not held.
	redissonPermitLeaseTime = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[4], KEYS[3], value)
  end
end
local value = redis.call('zscore', KEYS[2], ARGV[1])
if value ~= false then
  return tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - tonumber(ARGV[3])
end
return 0`)

	// RPermitExpirableSemaphore.tryRelease(List): KEYS name, channel,
	// {name}:timeout; ARGV count, now ms, publish command, permit IDs.
	// It publishes how many it released.
	redissonPermitTryReleaseList = redis.NewScript(`
for i = 4, #ARGV, 1 do
  local expire = redis.call('zscore', KEYS[3], ARGV[i])
  if expire == false or tonumber(expire) <= tonumber(ARGV[2]) then
    return 0
  end
end
local expiredIds = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[3], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[3], KEYS[2], value)
  end
end
local keys = {}
for i = 4, #ARGV, 1 do
  table.insert(keys, ARGV[i])
end
local removed = redis.call('zrem', KEYS[3], unpack(keys))
redis.call('incrby', KEYS[1], removed)
redis.call(ARGV[3], KEYS[2], removed)
return removed`)

	// RPermitExpirableSemaphore.setPermits(permits): KEYS name, channel,
	// {name}:timeout; ARGV permits, publish command. It publishes the
	// total.
	redissonPermitSetPermits = redis.NewScript(`
local available = redis.call('get', KEYS[1])
if available == false then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return
end
local acquired = redis.call('zcount', KEYS[3], 0, '+inf')
local maximum = (acquired == false and 0 or acquired) + tonumber(available)
if maximum == tonumber(ARGV[1]) then
  return
end
redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - maximum)
redis.call(ARGV[2], KEYS[2], ARGV[1])`)

	// RPermitExpirableSemaphore.getPermits(): KEYS name, {name}:timeout,
	// channel; ARGV now ms, publish command.
	redissonPermitGetPermits = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[2], KEYS[3], value)
  end
end
local available = redis.call('get', KEYS[1])
if available == false then
  return 0
end
local acquired = redis.call('zcount', KEYS[2], 0, '+inf')
if acquired == false then
  return tonumber(available)
end
return tonumber(available) + acquired`)

	// RPermitExpirableSemaphore.acquiredPermits(): as getPermits.
	redissonPermitAcquired = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1)
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds))
  local value = redis.call('incrby', KEYS[1], #expiredIds)
  if tonumber(value) > 0 then
    redis.call(ARGV[2], KEYS[3], value)
  end
end
local acquired = redis.call('zcount', KEYS[2], 0, '+inf')
return acquired == false and 0 or acquired`)

	// RCountDownLatch.delete(): KEYS name, channel; ARGV new-count message
	// (1), publish command.
	redissonLatchDelete = redis.NewScript(`
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
else
  return 0
end`)
)

// rawIDs are permit IDs as Redisson sends them: their raw bytes.
func rawIDs(t *testing.T, ids ...string) []any {
	t.Helper()
	out := make([]any, len(ids))
	for i, id := range ids {
		b, err := hex.DecodeString(id)
		require.NoError(t, err)
		out[i] = b
	}
	return out
}

// A semaphore Redisson set with a TTL is one warden sees set, with that
// TTL, and takes from; one warden set with a TTL Redisson takes from; and
// Redisson's releaseIfExists wakes a warden waiter by its message.
func TestSemaphoreTTLAndReleaseIfExistsWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := messageWaiterClient(t, e)

	const java = "sem-java-ttl"
	keys := []string{java, redisio.SemaphoreChannel(java)}
	require.Equal(t, int64(1), redissonTrySetPermitsTTL.Run(ctx, e.rdb, keys, 3, "publish", 60000).Val())
	s := c.Semaphore(java)
	ok, err := s.TrySetPermits(ctx, 9)
	require.NoError(t, err)
	assert.False(t, ok, "Redisson's semaphore exists")
	ttl := get(t, s.RemainTTL)
	assert.Greater(t, ttl, 59*time.Second, "Redisson's TTL")
	require.NoError(t, s.Acquire(ctx, 2))
	assert.Equal(t, int64(1), get(t, s.AvailablePermits))

	const ours = "sem-warden-ttl"
	ok, err = c.Semaphore(ours).TrySetPermitsTTL(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(0), redissonTrySetPermitsTTL.Run(ctx, e.rdb, []string{ours, redisio.SemaphoreChannel(ours)},
		5, "publish", 1000).Val(), "Redisson sees warden's semaphore set")
	assert.Equal(t, int64(1), redissonSemTryAcquire.Run(ctx, e.rdb, []string{ours}, 2).Val(), "Redisson takes warden's permits")
	assert.Equal(t, int64(0), redissonSemTryAcquire.Run(ctx, e.rdb, []string{ours}, 1).Val())
	assert.Greater(t, e.rdb.PTTL(ctx, ours).Val(), 59*time.Second, "the TTL warden set")

	const missing = "sem-java-missing"
	assert.Equal(t, int64(0), redissonReleaseIfExists.Run(ctx, e.rdb,
		[]string{missing, redisio.SemaphoreChannel(missing)}, 1, "publish").Val())
	ok, err = c.Semaphore(missing).ReleaseIfExists(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, e.rdb.Exists(ctx, missing).Val(), "neither side brings it to life")

	done := inBackground(t, func(ctx context.Context) error { return s.Acquire(ctx, 3) })
	awaitCountSubscribers(t, e, redisio.SemaphoreChannel(java), 1)
	assert.Equal(t, int64(1), redissonReleaseIfExists.Run(ctx, e.rdb, keys, 2, "publish").Val())
	r := wokenByMessage(t, done, "warden's Acquire(3) after Redisson's releaseIfExists(2)")
	require.NoError(t, r.err)
	assert.Zero(t, get(t, s.AvailablePermits))
}

// Permits Redisson acquires are ones warden reads the lease of and
// releases several at once; permits warden acquires are ones Redisson
// reads the lease of, releases several at once (waking a warden waiter),
// and counts with setPermits, getPermits and acquiredPermits as warden
// does.
func TestPermitMethodsWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "permit-java"
	p := messageWaiterClient(t, e).PermitExpirableSemaphore(name)
	timeout := redisio.PermitTimeoutKey(name)
	channel := redisio.SemaphoreChannel(name)
	now := func() int64 { return time.Now().UnixMilli() }

	require.NoError(t, p.SetPermits(ctx, 4))
	javaIDs := []string{redisio.NewPermitID(), redisio.NewPermitID()}
	args := append([]any{2, now() + time.Hour.Milliseconds(), now(), redissonNeverExpires, "publish"}, rawIDs(t, javaIDs...)...)
	require.Equal(t, "OK", redissonPermitTryAcquire.Run(ctx, e.rdb, []string{name, timeout, channel}, args...).Val())
	left, err := p.RemainLease(ctx, javaIDs[0])
	require.NoError(t, err)
	assert.Greater(t, left, 59*time.Minute, "the lease Redisson gave")
	assert.Equal(t, int64(2), get(t, p.AcquiredPermits))
	assert.Equal(t, int64(4), get(t, p.Permits))

	ours := make([]string, 2)
	ours[0], err = p.Acquire(ctx, time.Hour)
	require.NoError(t, err)
	ours[1], err = p.Acquire(ctx, 0)
	require.NoError(t, err)
	leaseArgs := func(id string) []any {
		return append(rawIDs(t, id), redissonNeverExpires, now(), "publish")
	}
	ms := redissonPermitLeaseTime.Run(ctx, e.rdb, []string{name, timeout, channel}, leaseArgs(ours[0])...).Val()
	assert.Greater(t, ms, int64(59*60*1000), "Redisson reads warden's lease")
	assert.Equal(t, int64(-1), redissonPermitLeaseTime.Run(ctx, e.rdb, []string{name, timeout, channel}, leaseArgs(ours[1])...).Val(),
		"and its never-expires")
	countArgs := []any{now(), "publish"}
	assert.Equal(t, int64(4), redissonPermitGetPermits.Run(ctx, e.rdb, []string{name, timeout, channel}, countArgs...).Val())
	assert.Equal(t, int64(4), redissonPermitAcquired.Run(ctx, e.rdb, []string{name, timeout, channel}, countArgs...).Val())

	n, err := p.TryReleasePermits(ctx, javaIDs...)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "warden releases Redisson's permits")
	assert.Equal(t, int64(2), get(t, p.AvailablePermits))

	// Every permit held: a warden waiter, woken by Redisson's release of
	// warden's two permits (its message is the number released).
	extra := []string{redisio.NewPermitID(), redisio.NewPermitID()}
	args = append([]any{2, now() + time.Hour.Milliseconds(), now(), redissonNeverExpires, "publish"}, rawIDs(t, extra...)...)
	require.Equal(t, "OK", redissonPermitTryAcquire.Run(ctx, e.rdb, []string{name, timeout, channel}, args...).Val())
	var got string
	done := inBackground(t, func(ctx context.Context) error {
		var err error
		got, err = p.Acquire(ctx, 0)
		return err
	})
	awaitCountSubscribers(t, e, channel, 1)
	rel := append([]any{2, now(), "publish"}, rawIDs(t, ours...)...)
	assert.Equal(t, int64(2), redissonPermitTryReleaseList.Run(ctx, e.rdb, []string{name, channel, timeout}, rel...).Val())
	r := wokenByMessage(t, done, "warden's Acquire after Redisson's tryRelease(List)")
	require.NoError(t, r.err)
	_, err = p.RemainLease(ctx, ours[0])
	require.ErrorIs(t, err, client.ErrNotHeld, "released by Redisson")
	assert.Equal(t, int64(3), get(t, p.AcquiredPermits))

	// setPermits on either side, read back on the other.
	if err := redissonPermitSetPermits.Run(ctx, e.rdb, []string{name, channel, timeout}, 6, "publish").Err(); err != redis.Nil {
		require.NoError(t, err, "setPermits replies nothing")
	}
	assert.Equal(t, int64(6), get(t, p.Permits), "Redisson's setPermits")
	assert.Equal(t, int64(3), get(t, p.AvailablePermits))
	require.NoError(t, p.SetPermits(ctx, 5))
	assert.Equal(t, int64(5), redissonPermitGetPermits.Run(ctx, e.rdb, []string{name, timeout, channel}, now(), "publish").Val(),
		"warden's SetPermits")
	require.NoError(t, p.ReleasePermits(ctx, append(extra, got)...))
	assert.Equal(t, int64(5), get(t, p.AvailablePermits))
}

// Redisson's delete of a latch publishes its new-count message; warden's
// waiters read the count again and go, woken by that message. warden's
// Delete publishes the zero message, which opens a Redisson waiter's
// latch.
func TestLatchDeleteWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "latch-java-delete"
	channel := redisio.LatchChannel(name)
	clients := []*client.Client{messageWaiterClient(t, e), messageWaiterClient(t, e)}
	set(t, clients[0].CountDownLatch(name).TrySetCount, 2)
	waiters := newBackground(t, 3)
	for i := range 3 {
		waiters.run(i, clients[i%2].CountDownLatch(name).Await)
	}
	awaitCountSubscribers(t, e, channel, 2)
	time.Sleep(50 * time.Millisecond) // every waiter queued and refused

	assert.Equal(t, int64(1), redissonLatchDelete.Run(ctx, e.rdb, []string{name, channel},
		redisio.LatchNewCountMessage, "publish").Val())
	for range 3 {
		r := wokenByMessage(t, waiters.C, "each warden waiter, after Redisson's delete")
		require.NoError(t, r.err, "waiter %d", r.i)
	}

	set(t, clients[0].CountDownLatch(name).TrySetCount, 2)
	java := e.rdb.Subscribe(ctx, channel)
	defer java.Close()
	_, err := java.ReceiveTimeout(ctx, 5*time.Second)
	require.NoError(t, err, "subscribed")
	ok, err := clients[1].CountDownLatch(name).Delete(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	m, err := java.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, redisio.LatchZeroMessage, m.Payload, "the message that opens a Redisson waiter's latch")
}

// Permits warden takes several at once are, on Redisson's layout, permits
// like any: Redisson reads their leases and releases them together, which
// wakes a warden waiter for several; several Redisson took at once are
// released by warden's ReleasePermits.
func TestPermitAcquirePermitsWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "permit-java-many"
	p := messageWaiterClient(t, e).PermitExpirableSemaphore(name)
	keys := []string{name, redisio.PermitTimeoutKey(name), redisio.SemaphoreChannel(name)}
	now := func() int64 { return time.Now().UnixMilli() }
	require.NoError(t, p.SetPermits(ctx, 4))

	ours, err := p.AcquirePermits(ctx, 3, time.Hour)
	require.NoError(t, err)
	for _, id := range ours {
		ms := redissonPermitLeaseTime.Run(ctx, e.rdb, keys, append(rawIDs(t, id), redissonNeverExpires, now(), "publish")...).Val()
		assert.Greater(t, ms, int64(59*60*1000), "Redisson reads each lease")
	}
	java := []string{redisio.NewPermitID(), redisio.NewPermitID()}
	args := append([]any{2, now() + time.Hour.Milliseconds(), now(), redissonNeverExpires, "publish"}, rawIDs(t, java...)...)
	nearest := int64(e.rdb.ZRangeWithScores(ctx, keys[1], 0, 0).Val()[0].Score)
	assert.Equal(t, ":"+strconv.FormatInt(nearest, 10), redissonPermitTryAcquire.Run(ctx, e.rdb, keys, args...).Val(),
		"Redisson is refused two with one left, and told the nearest lease end")

	var waited []string
	done := inBackground(t, func(ctx context.Context) error {
		var err error
		waited, err = p.AcquirePermits(ctx, 3, 0)
		return err
	})
	awaitCountSubscribers(t, e, keys[2], 1)
	rel := append([]any{3, now(), "publish"}, rawIDs(t, ours...)...)
	assert.Equal(t, int64(3), redissonPermitTryReleaseList.Run(ctx, e.rdb, []string{name, keys[2], keys[1]}, rel...).Val())
	r := wokenByMessage(t, done, "warden's AcquirePermits(3) after Redisson's tryRelease(List) of three")
	require.NoError(t, r.err)
	require.Len(t, waited, 3)
	require.NoError(t, p.ReleasePermits(ctx, waited...))

	args = append([]any{2, now() + time.Hour.Milliseconds(), now(), redissonNeverExpires, "publish"}, rawIDs(t, java...)...)
	require.Equal(t, "OK", redissonPermitTryAcquire.Run(ctx, e.rdb, keys, args...).Val())
	require.NoError(t, p.ReleasePermits(ctx, java...), "warden releases Redisson's two")
	assert.Equal(t, int64(4), get(t, p.AvailablePermits))
}
