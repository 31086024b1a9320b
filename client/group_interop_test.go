package client_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
)

// javaGroupPeer speaks Redisson's faster multi-lock protocol
// (RedissonFasterMultiLock) as a Java service would, written from its
// data layout and script semantics: the group is one hash; for each value
// v (a field; Redisson's are hashes of its values) held by owner o, the
// fields v → o, "v:o:expire_time" (the holder's clock, unix ms) and
// "v:o:lock_count". An acquire gets nowhere while another owner's hold
// of one of the values has not ended, and then answers the ms until the
// last of those ends; otherwise it takes every value, raising each
// expire_time to now + lease, counting a hold, and raising the hash's
// TTL. An unlock counts one hold of each value down, deletes a value's
// fields at zero, and publishes "0" on redisson_lock__channel:{group}
// when it deleted any.
type javaGroupPeer struct {
	rdb   *redis.Client
	owner string
}

var javaGroupAcquire = redis.NewScript(`
local lease, now, owner = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local existed = redis.call('exists', KEYS[1]) > 0
local last = -1
if existed then
  for i = 4, #ARGV do
    local holder = redis.call('hget', KEYS[1], ARGV[i])
    if holder and holder ~= owner then
      local ends = redis.call('hget', KEYS[1], ARGV[i] .. ':' .. holder .. ':expire_time')
      if ends and tonumber(ends) > now and tonumber(ends) > last then last = tonumber(ends) end
    end
  end
end
if last ~= -1 then return last - now end
for i = 4, #ARGV do
  redis.call('hset', KEYS[1], ARGV[i], owner)
  local f = ARGV[i] .. ':' .. owner .. ':expire_time'
  local ends = redis.call('hget', KEYS[1], f)
  if not ends or tonumber(ends) < lease + now then redis.call('hset', KEYS[1], f, lease + now) end
  redis.call('hincrby', KEYS[1], ARGV[i] .. ':' .. owner .. ':lock_count', 1)
end
local left = redis.call('pttl', KEYS[1])
if not existed or (left > 0 and lease > left) then redis.call('pexpire', KEYS[1], lease) end
return nil`)

var javaGroupUnlock = redis.NewScript(`
local owner, lease, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('exists', KEYS[1]) == 0 then return nil end
local deleted = false
for i = 4, #ARGV do
  local base = ARGV[i] .. ':' .. owner
  local ends = redis.call('hget', KEYS[1], base .. ':expire_time')
  if not ends or tonumber(ends) < now then return nil end
  if redis.call('hincrby', KEYS[1], base .. ':lock_count', -1) <= 0 then
    redis.call('hdel', KEYS[1], base .. ':expire_time', base .. ':lock_count', ARGV[i])
    deleted = true
  elseif tonumber(ends) < lease + now then
    redis.call('hset', KEYS[1], base .. ':expire_time', lease + now)
  end
end
if deleted then redis.call('publish', KEYS[2], '0') end
return 1`)

func groupArgs(first []any, values []string) []any {
	for _, v := range values {
		first = append(first, v)
	}
	return first
}

// tryLock makes one attempt; it reports whether it took the values, or
// else the wait Redisson's script answered.
func (j *javaGroupPeer) tryLock(ctx context.Context, group string, lease time.Duration, values ...string) (bool, time.Duration, error) {
	wait, err := javaGroupAcquire.Run(ctx, j.rdb, []string{group},
		groupArgs([]any{lease.Milliseconds(), time.Now().UnixMilli(), j.owner}, values)...).Int64()
	if err == redis.Nil {
		return true, 0, nil
	}
	return false, time.Duration(wait) * time.Millisecond, err
}

// lock waits the Redisson way: subscribe, retry, sleep until the unlock
// message or the wait the refusal answered.
func (j *javaGroupPeer) lock(ctx context.Context, group string, lease time.Duration, values ...string) error {
	sub := j.rdb.Subscribe(ctx, "redisson_lock__channel:{"+group+"}")
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		return err
	}
	for {
		ok, wait, err := j.tryLock(ctx, group, lease, values...)
		if ok || err != nil {
			return err
		}
		select {
		case <-sub.Channel():
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (j *javaGroupPeer) unlock(ctx context.Context, group string, lease time.Duration, values ...string) (bool, error) {
	err := javaGroupUnlock.Run(ctx, j.rdb, []string{group, "redisson_lock__channel:{" + group + "}"},
		groupArgs([]any{j.owner, lease.Milliseconds(), time.Now().UnixMilli()}, values)...).Err()
	if err == redis.Nil {
		return false, nil
	}
	return err == nil, err
}

// A Redisson faster multi-lock and a warden group lock on one group
// exclude each other on a shared value, wake each other's waiters, and
// hold disjoint values at once; each reads the other's fields.
func TestGroupLockSharesAGroupWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	java := &javaGroupPeer{rdb: e.rdb, owner: "6f1c2b6e-0000-4000-8000-00000000cafe:7"}
	const group = "class:200"

	ok, _, err := java.tryLock(ctx, group, time.Minute, "jack", "mary")
	require.NoError(t, err)
	require.True(t, ok)
	g := c.GroupLock(group, "mary", "zoe")
	ok, err = g.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "mary is held by the Java service")
	assert.False(t, e.rdb.HExists(ctx, group, "zoe").Val(), "nothing taken")
	free := c.GroupLock(group, "zoe", "tom")
	ok, err = free.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "values the Java service does not hold")
	require.NoError(t, free.Unlock(ctx))

	woke := wokenBy(t, g.Lock, func() bool {
		return e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{"+group+"}").Val()["redisson_lock__channel:{"+group+"}"] == 1
	}, func(ctx context.Context) error {
		released, err := java.unlock(ctx, group, time.Minute, "jack", "mary")
		require.True(t, released, "the Java unlock")
		return err
	})
	assert.Less(t, woke, 2*time.Second, "woken by Redisson's unlock message, not the minute-long lease")

	ok, wait, err := java.tryLock(ctx, group, time.Minute, "zoe")
	require.NoError(t, err)
	assert.False(t, ok, "zoe is held by warden")
	assert.InDelta(t, watchdog.Milliseconds(), wait.Milliseconds(), 500, "Redisson reads warden's expire_time: the wait is the watchdog lease")
	ok, _, err = java.tryLock(ctx, group, time.Minute, "jack")
	require.NoError(t, err)
	assert.True(t, ok, "jack is free")
	released, err := java.unlock(ctx, group, time.Minute, "jack")
	require.NoError(t, err)
	require.True(t, released)

	javaGot := make(chan time.Time, 1)
	go func() {
		if err := java.lock(ctx, group, time.Minute, "zoe", "mary"); err == nil {
			javaGot <- time.Now()
		}
	}()
	eventually(t, 2*time.Second, func() bool {
		return e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{"+group+"}").Val()["redisson_lock__channel:{"+group+"}"] == 1
	}, "the Java waiter listens")
	time.Sleep(2 * watchdog) // warden's watchdog keeps zoe and mary past their first lease
	select {
	case <-javaGot:
		t.Fatal("the Java waiter got the values while warden held them")
	default:
	}
	released2 := time.Now()
	require.NoError(t, g.Unlock(ctx))
	at := await.Value(t, javaGot, 5*time.Second, "the Java waiter")
	assert.Less(t, at.Sub(released2), 2*time.Second, "woken by warden's unlock message")
	ends, err := strconv.ParseInt(e.rdb.HGet(ctx, group, "zoe:"+java.owner+":expire_time").Val(), 10, 64)
	require.NoError(t, err)
	assert.Greater(t, ends, time.Now().Add(50*time.Second).UnixMilli(), "the Java hold, with its minute lease")
	released, err = java.unlock(ctx, group, time.Minute, "zoe", "mary")
	require.NoError(t, err)
	assert.True(t, released)
	assert.Zero(t, e.rdb.Exists(ctx, group).Val(), "nothing left")
}

// Warden and "Java" contenders with overlapping values never hold one
// value together.
func TestGroupLockMutualExclusionWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	var holders [3]atomic.Int32
	var violations atomic.Int32
	enter := func(values []string) {
		for _, v := range values {
			if holders[v[0]-'a'].Add(1) != 1 {
				violations.Add(1)
			}
		}
		time.Sleep(100 * time.Microsecond)
		for _, v := range values {
			holders[v[0]-'a'].Add(-1)
		}
	}
	const rounds = 30
	sets := [][]string{{"a", "b"}, {"b", "c"}, {"c", "a"}}
	var wg sync.WaitGroup
	for i, values := range sets {
		g := e.newClient(t).GroupLock("mixed-group", values...)
		java := &javaGroupPeer{rdb: e.rdb, owner: "uuid-java:" + strconv.Itoa(i)}
		wg.Go(func() {
			for range rounds {
				if !assert.NoError(t, g.Lock(ctx)) {
					return
				}
				enter(values)
				if !assert.NoError(t, g.Unlock(ctx)) {
					return
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				if !assert.NoError(t, java.lock(ctx, "mixed-group", 10*time.Second, values...)) {
					return
				}
				enter(values)
				if _, err := java.unlock(ctx, "mixed-group", 10*time.Second, values...); !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	await.Group(t, &wg, 2*time.Minute, "the contenders")
	assert.Zero(t, violations.Load(), "a value held twice at once")
}
