package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/redisio"
)

// Redisson's RLock on the wire, without Redisson: the lock is a hash named
// after the lock whose one field, "<client id>:<thread id>", counts the
// holder's entries; the hash's TTL is the lease. These two scripts follow
// the semantics of RedissonLock's acquire (tryLockInnerAsync) and its
// unlock without the per-request latch (unlockInnerAsync): nothing of
// warden's engine, exactly-once records or watchdog, so the gap between
// warden and these is what the engine and its guarantees cost.
var (
	// redissonAcquire: KEYS[1] lock; ARGV[1] lease ms, ARGV[2] owner.
	// Returns nil when held (taken or re-entered), else the lock's PTTL.
	redissonAcquire = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
return redis.call('pttl', KEYS[1])`)
	// redissonUnlock: KEYS[1] lock, KEYS[2] its channel; ARGV[1] the
	// unlock message, ARGV[2] lease ms, ARGV[3] owner. Returns nil when
	// the owner does not hold it, 0 when still held (re-entered), 1 when
	// released (and published).
	redissonUnlock = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
	return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
	redis.call('pexpire', KEYS[1], ARGV[2])
	return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)
)

func newRedissonBareContender(addr string, retry time.Duration) (*Contender, error) {
	rdb, cnt := newRedis(addr)
	id := uuid.NewString()
	var threads atomic.Uint64
	return &Contender{
		Name: RedissonBare,
		Waits: fmt.Sprintf("baseline, not a library: Redisson's RLock acquire and unlock scripts (no latch) by "+
			"EVALSHA, fixed lease %v, no watchdog; a refused acquire retried every %v", PeerLease, retry),
		Redis: rdb, Counter: cnt,
		newMutex: func(name string) Mutex {
			return &redissonMutex{rdb: rdb, name: name, channel: redisio.LockChannel(name), retry: retry,
				owner: id + ":" + strconv.FormatUint(threads.Add(1), 10)}
		},
	}, nil
}

// redissonMutex is one "thread" of a Redisson-style client on one name.
type redissonMutex struct {
	rdb           *redis.Client
	name, channel string
	owner         string
	retry         time.Duration
	timer         *time.Timer
}

var errStillHeld = errors.New("bench: unlock: lock still held (re-entered)")

func (m *redissonMutex) Lock(ctx context.Context) error {
	lease := PeerLease.Milliseconds()
	for {
		err := redissonAcquire.Run(ctx, m.rdb, []string{m.name}, lease, m.owner).Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := pause(ctx, &m.timer, m.retry); err != nil {
			return err
		}
	}
}

func (m *redissonMutex) Unlock(ctx context.Context) error {
	n, err := redissonUnlock.Run(ctx, m.rdb, []string{m.name, m.channel},
		redisio.UnlockMessage, PeerLease.Milliseconds(), m.owner).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return errNotHeld
	case err != nil:
		return err
	case n != 1:
		return errStillHeld
	}
	return nil
}
