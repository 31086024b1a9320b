package client_test

import (
	"context"
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

// nonReentrantKinds are the two non-reentrant locks, by the Client method
// that makes them.
var nonReentrantKinds = []struct {
	kind string
	make func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
}{
	{"nonreentrant", (*client.Client).NonReentrantLock},
	{"nonreentrant-fair", (*client.Client).NonReentrantFairLock},
}

// A second acquire by the owner that holds a non-reentrant lock fails at
// once with ErrAlreadyHeld, through every acquire call, whether the holding
// is in watchdog mode or has a fixed lease: it does not wait (not even a
// Lock without deadline), adds no hold (the count in Redis stays 1, one
// Unlock frees the lock), leaves the lease as it was and takes no place in
// a fair lock's queue. Other owners contend as for Lock and FairLock.
func TestNonReentrantLockRefusesItsHolder(t *testing.T) {
	t.Parallel()
	for _, k := range nonReentrantKinds {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			name := "nr:" + k.kind
			c := e.newClient(t)
			l := k.make(c, name)
			other := k.make(e.newClient(t), name)

			refusedFor := func(h *client.Lock, what string, call func() error) {
				t.Helper()
				start := time.Now()
				err := call()
				assert.ErrorIs(t, err, client.ErrAlreadyHeld, what)
				assert.NotErrorIs(t, err, client.ErrNotObtained, what)
				assert.Less(t, time.Since(start), 2*time.Second, "%s: at once, without waiting", what)
				assert.Equal(t, "1", e.rdb.HGet(ctx, name, h.Owner()).Val(), "%s: the count in Redis stays 1", what)
				assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name)).Val(), "%s: no place in a queue", what)
			}
			refused := func(what string, call func() error) { t.Helper(); refusedFor(l, what, call) }
			tryRefused := func(h *client.Lock, what string, call func() (bool, error)) {
				t.Helper()
				refusedFor(h, what, func() error {
					ok, err := call()
					assert.False(t, ok, what)
					return err
				})
			}

			// Watchdog mode.
			require.NoError(t, l.Lock(ctx))
			blocking, cancel := context.WithCancel(context.Background()) // no deadline: Lock would wait forever
			defer cancel()
			refused("Lock", func() error { return l.Lock(blocking) })
			refused("LockLease", func() error { return l.LockLease(ctx, time.Minute) })
			tryRefused(l, "TryLock", func() (bool, error) { return l.TryLock(ctx) })
			tryRefused(l, "TryLockWait", func() (bool, error) { return l.TryLockWait(ctx, 5*time.Second, time.Minute) })
			refused("Do", func() error {
				return l.Do(ctx, func(context.Context) error { t.Error("Do ran fn while already held"); return nil })
			})
			assert.LessOrEqual(t, e.rdb.PTTL(ctx, name).Val(), watchdog, "the refused LockLease left the watchdog lease")
			n, err := l.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			ok, err := other.TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "another owner is refused while held")

			// The holding is still renewed, and one Unlock frees the lock.
			e.advance(2 * watchdog)
			n, err = l.HoldCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "renewed past its watchdog timeout")
			assert.False(t, isClosed(l.Lost()), "the holding was not lost")
			require.NoError(t, l.Unlock(ctx))
			locked, err := l.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked, "one Unlock freed it")
			assert.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)

			// A fixed lease: the refused watchdog acquire does not turn it
			// into a renewed one.
			require.NoError(t, l.LockLease(ctx, time.Minute))
			refused("Lock on a fixed lease", func() error { return l.Lock(ctx) })
			assert.Greater(t, e.rdb.PTTL(ctx, name).Val(), 50*time.Second, "the lease is as it was")

			// Another owner waits, as for Lock or FairLock, and gets it at
			// the unlock.
			got := inBackground(t, other.Lock)
			eventually(t, 5*time.Second, func() bool {
				return len(e.rdb.PubSubChannels(ctx, redisio.LockChannel(name)+"*").Val()) > 0
			}, "the other owner waits on the lock's channel")
			require.NoError(t, l.Unlock(ctx))
			r := await.Value(t, got, 5*time.Second, "the other owner, after the unlock")
			require.NoError(t, r.err)
			tryRefused(other, "the other owner's TryLock", func() (bool, error) { return other.TryLock(ctx) })
			require.NoError(t, other.Unlock(ctx))
			assert.Zero(t, e.rdb.Exists(ctx, name).Val())
		})
	}
}

// Redisson 4.4's non-reentrant locks, as their scripts behave: the
// acquire of RedissonNonReentrantLock takes a free lock (count 1), answers
// the error NON_REENTRANT_REACQUIRE to the owner that holds it, and the
// PTTL to anyone else; that of RedissonNonReentrantFairLock (its
// waiting form) first drops the queue's stale heads, takes a free lock
// when the queue is empty or the owner is its head (leaving the queue and
// moving the deadlines behind it forward by its wait), answers the error
// to the holder, the PTTL to an owner already queued, and otherwise
// queues the owner behind the tail's deadline (or the lock's PTTL) plus
// its wait. Their unlocks are RedissonLock's and RedissonFairLock's: the
// fair one wakes only the head waiter, on its own channel. These test
// doubles keep Redisson's keys, arguments and replies.
var (
	redissonNRAcquire = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then return redis.error_reply(ARGV[3]) end
return redis.call('pttl', KEYS[1])`)

	redissonNRFairAcquire = redis.NewScript(`
local now, wait = tonumber(ARGV[4]), tonumber(ARGV[3])
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if not first then break end
  local deadline = redis.call('zscore', KEYS[3], first)
  if deadline and tonumber(deadline) <= now then
    redis.call('zrem', KEYS[3], first)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  for _, waiter in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -wait, waiter)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then return redis.error_reply(ARGV[5]) end
if redis.call('zscore', KEYS[3], ARGV[2]) then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local tail = redis.call('lindex', KEYS[2], -1)
local ttl
if tail and tail ~= ARGV[2] and redis.call('zscore', KEYS[3], tail) then
  ttl = tonumber(redis.call('zscore', KEYS[3], tail)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`)

	redissonFairUnlock = redis.NewScript(`
local now = tonumber(ARGV[4])
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if not first then break end
  local deadline = redis.call('zscore', KEYS[3], first)
  if deadline and tonumber(deadline) <= now then
    redis.call('zrem', KEYS[3], first)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
local function wakeHead()
  local head = redis.call('lindex', KEYS[2], 0)
  if head then redis.call('publish', KEYS[4] .. ':' .. head, ARGV[1]) end
end
if redis.call('exists', KEYS[1]) == 0 then
  wakeHead()
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
wakeHead()
return 1`)
)

// redissonReacquire is the error text Redisson's non-reentrant scripts
// answer their holder's second acquire with.
const redissonReacquire = "NON_REENTRANT_REACQUIRE"

// javaNR is a Redisson client's thread on a non-reentrant lock (fair or
// not), driving the scripts above.
type javaNR struct {
	rdb   *redis.Client
	owner string
	fair  bool
}

// try makes one attempt: acquired, or refused with the wait it answered
// (a fair attempt queues the owner); an error is the script's.
func (j *javaNR) try(ctx context.Context, name string) (bool, error) {
	var err error
	if j.fair {
		err = redissonNRFairAcquire.Run(ctx, j.rdb,
			[]string{name, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name)},
			time.Minute.Milliseconds(), j.owner, (5 * time.Minute).Milliseconds(), time.Now().UnixMilli(), redissonReacquire).Err()
	} else {
		err = redissonNRAcquire.Run(ctx, j.rdb, []string{name}, time.Minute.Milliseconds(), j.owner, redissonReacquire).Err()
	}
	if err == redis.Nil {
		return true, nil
	}
	return false, err
}

// channel is the channel the thread is woken on.
func (j *javaNR) channel(name string) string {
	if j.fair {
		return redisio.FairChannel(name, j.owner)
	}
	return redisio.LockChannel(name)
}

// lock waits for the lock as Redisson does: subscribe, attempt, sleep until
// a message or the answered wait (bounded here by 100 ms), again.
func (j *javaNR) lock(ctx context.Context, name string) error {
	sub := j.rdb.Subscribe(ctx, j.channel(name))
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		return err
	}
	for {
		ok, err := j.try(ctx, name)
		if ok || err != nil {
			return err
		}
		select {
		case <-sub.Channel():
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (j *javaNR) unlock(ctx context.Context, name string) error {
	if j.fair {
		return redissonFairUnlock.Run(ctx, j.rdb,
			[]string{name, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name), redisio.LockChannel(name)},
			"0", time.Minute.Milliseconds(), j.owner, time.Now().UnixMilli()).Err()
	}
	return javaUnlock.Run(ctx, j.rdb, []string{name, redisio.LockChannel(name)}, time.Minute.Milliseconds(), j.owner).Err()
}

// Redisson's non-reentrant locks and warden's exclude each other on one
// Redis, in both directions, and wake each other's waiters: each refuses
// its own holder's second acquire (Redisson with NON_REENTRANT_REACQUIRE,
// warden with ErrAlreadyHeld) without touching the other's hold or queue.
func TestNonReentrantLocksShareWithRedisson(t *testing.T) {
	t.Parallel()
	for _, k := range nonReentrantKinds {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			name := "nr-interop:" + k.kind
			fair := k.kind == "nonreentrant-fair"
			java := &javaNR{rdb: e.rdb, owner: "6f1c2b6e-0000-4000-8000-00000000cafe:7", fair: fair}
			l := k.make(e.newClient(t), name)

			// Redisson holds: it refuses its own second acquire, and warden's.
			ok, err := java.try(ctx, name)
			require.NoError(t, err)
			require.True(t, ok)
			_, err = java.try(ctx, name)
			require.ErrorContains(t, err, redissonReacquire, "Redisson's own second acquire")
			assert.Equal(t, "1", e.rdb.HGet(ctx, name, java.owner).Val())
			ok, err = l.TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "warden is refused while Redisson holds")

			// warden's waiter wakes on Redisson's unlock message.
			got := inBackground(t, l.Lock)
			eventually(t, 5*time.Second, func() bool {
				ch := redisio.LockChannel(name)
				if fair {
					ch = redisio.FairChannel(name, l.Owner())
				}
				return e.rdb.PubSubNumSub(ctx, ch).Val()[ch] == 1
			}, "warden's waiter listens on Redisson's channel")
			if fair {
				eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, l.Owner()) == 0 }, "warden heads the queue")
			}
			time.Sleep(50 * time.Millisecond) // its attempt after subscribing comes back refused
			released := time.Now()
			require.NoError(t, java.unlock(ctx, name))
			r := await.Value(t, got, 5*time.Second, "warden's waiter, after Redisson's unlock")
			require.NoError(t, r.err)
			assert.Less(t, r.at.Sub(released), 2*time.Second, "woken by the message, not a lease")

			// warden holds: it refuses its own second acquire, and Redisson's.
			assert.ErrorIs(t, l.Lock(ctx), client.ErrAlreadyHeld)
			assert.Equal(t, "1", e.rdb.HGet(ctx, name, l.Owner()).Val(), "warden's count stays 1")
			ok, err = java.try(ctx, name)
			require.NoError(t, err, "Redisson's attempt is refused with a wait, not the reacquire error")
			assert.False(t, ok)
			if fair {
				assert.Equal(t, []string{java.owner}, e.rdb.LRange(ctx, redisio.FairQueueKey(name), 0, -1).Val(),
					"Redisson queued behind warden's holding, warden's refused reentry queued nobody")
			}

			// Redisson's waiter wakes on warden's unlock message.
			javaGot := make(chan error, 1)
			go func() { javaGot <- java.lock(ctx, name) }()
			eventually(t, 5*time.Second, func() bool {
				return e.rdb.PubSubNumSub(ctx, java.channel(name)).Val()[java.channel(name)] == 1
			}, "Redisson's waiter listens")
			released = time.Now()
			require.NoError(t, l.Unlock(ctx))
			require.NoError(t, await.Value(t, javaGot, 5*time.Second, "Redisson's waiter, after warden's unlock"))
			assert.Less(t, time.Since(released), 2*time.Second)
			ok, err = l.TryLock(ctx)
			require.NoError(t, err)
			assert.False(t, ok, "warden is refused again")
			require.NoError(t, java.unlock(ctx, name))
			assert.Zero(t, e.rdb.Exists(ctx, name).Val())
		})
	}
}

// Go and Redisson contenders on one non-reentrant lock never hold it
// together.
func TestNonReentrantMutualExclusionWithRedisson(t *testing.T) {
	t.Parallel()
	for _, k := range nonReentrantKinds {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			name := "nr-mixed:" + k.kind
			var holders, violations, entries atomic.Int32
			critical := func() {
				if holders.Add(1) != 1 {
					violations.Add(1)
				}
				entries.Add(1)
				time.Sleep(200 * time.Microsecond)
				holders.Add(-1)
			}
			const rounds = 25
			var wg sync.WaitGroup
			for i := range 2 {
				l := k.make(e.newClient(t), name)
				java := &javaNR{rdb: e.rdb, owner: fmt.Sprintf("uuid-java:%d", i), fair: k.kind == "nonreentrant-fair"}
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
						if err := java.lock(ctx, name); err != nil {
							t.Error(err)
							return
						}
						critical()
						if err := java.unlock(ctx, name); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			await.Group(t, &wg, 2*time.Minute, "the contenders")
			assert.Zero(t, violations.Load(), "two holders at once")
			assert.Equal(t, int32(4*rounds), entries.Load())
		})
	}
}

// Many contenders on one non-reentrant lock, several on each client, never
// hold it together, and each of its acquires counts once: a shared
// counter ends exact.
func TestNonReentrantContention(t *testing.T) {
	t.Parallel()
	for _, k := range nonReentrantKinds {
		t.Run(k.kind, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			name := "nr-contention:" + k.kind
			clients := []*client.Client{e.newClient(t), e.newClient(t), e.newClient(t)}
			var holders, violations atomic.Int32
			counter := 0
			const contenders, rounds = 9, 15
			var wg sync.WaitGroup
			for i := range contenders {
				l := k.make(clients[i%len(clients)], name)
				wg.Go(func() {
					for range rounds {
						if err := l.Lock(ctx); err != nil {
							t.Error(err)
							return
						}
						if holders.Add(1) != 1 {
							violations.Add(1)
						}
						counter++
						holders.Add(-1)
						if err := l.Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			await.Group(t, &wg, 2*time.Minute, "the contenders")
			assert.Zero(t, violations.Load(), "two holders at once")
			assert.Equal(t, contenders*rounds, counter)
			assert.Zero(t, e.rdb.Exists(ctx, name, redisio.FairQueueKey(name)).Val(), "nothing left behind")
		})
	}
}
