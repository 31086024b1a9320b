package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// javaSpinPeer speaks Redisson's RedissonSpinLock protocol as a Java
// service would: its scripts have the statements of
// RedissonSpinLock.tryLockInnerAsync and unlockInnerAsync (KEYS and ARGV as
// Redisson passes them), and it waits by polling with Redisson's default
// exponential back-off, never subscribing.
type javaSpinPeer struct {
	rdb   *redis.Client
	owner string // "<uuid>:<threadId>"
	// maxPause is the back-off's maxDelay; zero selects Redisson's 128ms.
	maxPause time.Duration
	reqs     atomic.Int64
}

// javaSpinAcquire: KEYS[1] the lock; ARGV[1] lease ms, ARGV[2] owner.
// nil when acquired, else the PTTL.
var javaSpinAcquire = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`)

// javaSpinUnlock: KEYS[1] the lock, KEYS[2] the unlock latch
// redisson_unlock_latch:{name}:<requestId>; ARGV[1] lease ms, ARGV[2]
// owner, ARGV[3] latch ms. nil when not held, 0 still held, 1 released.
// It publishes nothing.
var javaSpinUnlock = redis.NewScript(`
local val = redis.call('get', KEYS[2]);
if val ~= false then
  return tonumber(val);
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  redis.call('set', KEYS[2], 0, 'px', ARGV[3]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call('set', KEYS[2], 1, 'px', ARGV[3]);
  return 1;
end;`)

func (j *javaSpinPeer) tryLock(ctx context.Context, name string, lease time.Duration) (bool, error) {
	err := javaSpinAcquire.Run(ctx, j.rdb, []string{name}, lease.Milliseconds(), j.owner).Err()
	if errors.Is(err, redis.Nil) {
		return true, nil
	}
	return false, err
}

// lock polls as RedissonSpinLock.lock does with an exponential back-off:
// 1ms, doubling up to maxPause (without Redisson's jitter).
func (j *javaSpinPeer) lock(ctx context.Context, name string, lease time.Duration) error {
	pause, maxPause := time.Millisecond, j.maxPause
	if maxPause == 0 {
		maxPause = 128 * time.Millisecond
	}
	for {
		ok, err := j.tryLock(ctx, name, lease)
		if ok || err != nil {
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(2*pause, maxPause)
	}
}

func (j *javaSpinPeer) unlock(ctx context.Context, name string, lease time.Duration) error {
	latch := redisio.UnlockLatchKey(name, fmt.Sprintf("%s-%d", j.owner, j.reqs.Add(1))) // unique, as Redisson's request IDs
	err := javaSpinUnlock.Run(ctx, j.rdb, []string{name, latch}, lease.Milliseconds(), j.owner, 15000).Err()
	if errors.Is(err, redis.Nil) {
		return client.ErrNotHeld
	}
	return err
}

// A Redisson spin lock and warden's exclude each other on one Redis, and
// each one's waiter gets the lock, polling, once the other unlocks.
func TestSpinLockSharedWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "shared:spin"
	java := &javaSpinPeer{rdb: e.rdb, owner: "6f1c2b6e-0000-4000-8000-00000000beef:7"}
	l := e.newClient(t).SpinLock(name)

	ok, err := java.tryLock(ctx, name, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = java.tryLock(ctx, name, time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "Redisson re-enters")
	assert.False(t, tryLock(t, l), "held by the Java service")
	waited := inBackground(t, l.Lock)
	require.NoError(t, java.unlock(ctx, name, time.Minute))
	assert.False(t, tryLock(t, e.newClient(t).SpinLock(name)), "still held once by the Java service")
	released := time.Now()
	require.NoError(t, java.unlock(ctx, name, time.Minute))
	r := await.Value(t, waited, 5*time.Second, "the Go waiter, after the Java unlock")
	require.NoError(t, r.err)
	assert.Less(t, r.at.Sub(released), 2*time.Second, "found free by a poll, not at the end of the minute-long lease")
	assert.Equal(t, "1", e.rdb.HGet(ctx, name, l.Owner()).Val(), "the Go owner in Redisson's hash format")

	ok, err = java.tryLock(ctx, name, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "held by the Go service")
	javaGot := inBackground(t, func(ctx context.Context) error { return java.lock(ctx, name, time.Minute) })
	require.True(t, tryLock(t, l), "the Go owner re-enters")
	require.NoError(t, l.Unlock(ctx))
	ok, err = java.tryLock(ctx, name, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "still held once by the Go service")
	released = time.Now()
	require.NoError(t, l.Unlock(ctx))
	r = await.Value(t, javaGot, 5*time.Second, "the Java waiter, after the Go unlock")
	require.NoError(t, r.err)
	assert.Less(t, r.at.Sub(released), 2*time.Second, "found free by a poll")
	require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld, "the Go owner holds nothing")
	require.NoError(t, java.unlock(ctx, name, time.Minute))
	assert.Zero(t, e.rdb.Exists(ctx, name).Val())
}

// Go and "Java" spin lock contenders on one name never hold it together.
func TestSpinLockMutualExclusionWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "mixed:spin"
	var holders, violations atomic.Int32
	counter := 0
	critical := func() {
		if holders.Add(1) != 1 {
			violations.Add(1)
		}
		counter++
		time.Sleep(100 * time.Microsecond)
		holders.Add(-1)
	}
	const rounds = 20
	var wg sync.WaitGroup
	for i := range 3 {
		l := e.newClient(t).SpinLock(name, client.WithExponentialBackOff(time.Millisecond, 16*time.Millisecond, 2))
		java := &javaSpinPeer{rdb: e.rdb, owner: fmt.Sprintf("uuid-java:%d", i), maxPause: 16 * time.Millisecond}
		wg.Go(func() {
			for range rounds {
				if err := l.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				critical()
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				if err := java.lock(ctx, name, 10*time.Second); err != nil {
					t.Error(err)
					return
				}
				critical()
				if err := java.unlock(ctx, name, 10*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	await.Group(t, &wg, 2*time.Minute, "the contenders")
	assert.Zero(t, violations.Load(), "two holders at once")
	assert.Equal(t, 6*rounds, counter)
}
