package client_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
)

// javaPeer speaks Redisson's RLock protocol as a Java service would: the
// lock is a hash of "<uuid>:<threadId>" → hold count, a refused acquire
// answers the PTTL, and the last unlock deletes the hash and publishes "0"
// on redisson_lock__channel:{name}. It is a test double written from
// Redisson's documented data layout, to show that warden and Redisson
// exclude each other and wake each other's waiters.
type javaPeer struct {
	rdb   *redis.Client
	owner string
}

var javaAcquire = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`)

var javaUnlock = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`)

// tryLock makes one attempt; it reports whether it got the lock.
func (j *javaPeer) tryLock(ctx context.Context, name string, lease time.Duration) (bool, error) {
	err := javaAcquire.Run(ctx, j.rdb, []string{name}, lease.Milliseconds(), j.owner).Err()
	if err == redis.Nil {
		return true, nil
	}
	return false, err
}

// lock waits for the lock the Redisson way: subscribe, retry, sleep until
// the unlock message or the holder's TTL.
func (j *javaPeer) lock(ctx context.Context, name string, lease time.Duration) error {
	sub := j.rdb.Subscribe(ctx, "redisson_lock__channel:{"+name+"}")
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		return err
	}
	for {
		ttl, err := javaAcquire.Run(ctx, j.rdb, []string{name}, lease.Milliseconds(), j.owner).Int64()
		if err == redis.Nil {
			return nil
		}
		if err != nil {
			return err
		}
		wait := time.Duration(ttl) * time.Millisecond
		select {
		case <-sub.Channel():
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (j *javaPeer) unlock(ctx context.Context, name string, lease time.Duration) error {
	return javaUnlock.Run(ctx, j.rdb, []string{name, "redisson_lock__channel:{" + name + "}"}, lease.Milliseconds(), j.owner).Err()
}

func TestSharesALockWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	java := &javaPeer{rdb: e.rdb, owner: "6f1c2b6e-0000-4000-8000-00000000cafe:42"}
	l := c.Lock("shared:order")

	// The Java holder excludes the Go client, and the Go waiter wakes on the
	// Java unlock message.
	ok, err := java.tryLock(ctx, "shared:order", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = l.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "held by the Java service")
	acquired := make(chan time.Time, 1)
	go func() {
		if err := l.Lock(ctx); err == nil {
			acquired <- time.Now()
		}
	}()
	eventually(t, 2*time.Second, func() bool {
		return len(e.rdb.PubSubChannels(ctx, "redisson_lock__channel:*").Val()) == 1
	}, "the Go waiter listens on Redisson's channel")
	time.Sleep(20 * time.Millisecond)
	released := time.Now()
	require.NoError(t, java.unlock(ctx, "shared:order", time.Minute))
	at := await.Value(t, acquired, 3*time.Second, "the Go waiter, after the Java unlock")
	assert.Less(t, at.Sub(released), 2*time.Second, "woken by Redisson's unlock message, not the minute-long lease")
	assert.Equal(t, "1", e.rdb.HGet(ctx, "shared:order", l.Owner()).Val(), "the Go owner in Redisson's hash format")

	// The Go holder excludes the Java service, and the Java waiter wakes on
	// the Go unlock message.
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.LockLease(ctx, time.Minute))
	ok, err = java.tryLock(ctx, "shared:order", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "held by the Go service")
	javaGot := make(chan time.Time, 1)
	go func() {
		if err := java.lock(ctx, "shared:order", time.Minute); err == nil {
			javaGot <- time.Now()
		}
	}()
	eventually(t, 2*time.Second, func() bool {
		return e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{shared:order}").Val()["redisson_lock__channel:{shared:order}"] == 1
	}, "the Java waiter listens")
	released = time.Now()
	require.NoError(t, l.Unlock(ctx))
	at = await.Value(t, javaGot, 5*time.Second, "the Java waiter")
	assert.Less(t, at.Sub(released), 2*time.Second, "woken by warden's unlock message, not the minute-long lease")
	require.NoError(t, java.unlock(ctx, "shared:order", time.Minute))
}

// Go and "Java" contenders on one name never hold it together.
func TestMutualExclusionWithARedissonPeer(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
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
	const rounds = 60
	var wg sync.WaitGroup
	for i := range 3 {
		l := e.newClient(t).Lock("mixed")
		java := &javaPeer{rdb: e.rdb, owner: "uuid-java:" + string(rune('0'+i))}
		wg.Add(2)
		go func() {
			defer wg.Done()
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
		}()
		go func() {
			defer wg.Done()
			for range rounds {
				if err := java.lock(ctx, "mixed", 10*time.Second); err != nil {
					t.Error(err)
					return
				}
				critical()
				if err := java.unlock(ctx, "mixed", 10*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	await.Group(t, &wg, 2*time.Minute, "the contenders")
	assert.Zero(t, violations.Load(), "two holders at once")
	assert.Equal(t, 6*rounds, counter)
}
