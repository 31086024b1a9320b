package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Redisson's RLock, as its data layout and documented behaviour define it:
// an acquire takes a lock whose key does not exist or re-enters one whose
// hash has the owner's field (nil), and answers the PTTL otherwise; an
// unlock of a lock the owner does not hold answers nil, and the last one
// deletes the key and publishes "0".
var (
	redissonAcquire = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 1 and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return redis.call('pttl', KEYS[1])
end
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return nil`)
	redissonUnlock = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`)
)

// The acquire record lives in the lock's hash, next to the holder's count:
// Redisson's own scripts and warden's still exclude each other in both
// directions, and the record never stays in a hash without its holder,
// where Redisson's "the key does not exist" test for a free lock would
// see a lock held by nobody.
func TestAcquireRecordKeepsRedissonInterop(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, ff func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		const java = "6f0c8a52-9b1e-4c7e-8f43-2d1f8e6b7a10:57"
		javaLock := func() bool {
			err := redissonAcquire.Run(ctx, rdb, []string{"shared"}, "60000", java).Err()
			if err == redis.Nil {
				return true
			}
			require.NoError(t, err)
			return false
		}
		javaUnlock := func() {
			require.NoError(t, redissonUnlock.Run(ctx, rdb, []string{"shared", LockChannel("shared")}, "60000", java).Err())
		}
		onlyHolderFields := func(what, owner string) {
			t.Helper()
			fields := rdb.HKeys(ctx, "shared").Val()
			if len(fields) == 0 {
				return
			}
			assert.Contains(t, fields, owner, "%s: a hash with fields has its holder's", what)
		}

		r, err := s.lockAcquire(ctx, rdb, "shared", "w:1", "a1", time.Minute)
		require.NoError(t, err)
		require.True(t, r.Acquired)
		assert.False(t, javaLock(), "Redisson is refused while warden holds")
		r, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, 2, r.HoldCount, "warden re-enters")
		r, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a2", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, 2, r.HoldCount, "a replayed reentry answers its first result")
		assert.Equal(t, "2", rdb.HGet(ctx, "shared", "w:1").Val(), "and adds no hold")
		undone, err := s.UndoAcquire(ctx, rdb, "shared", "w:1", "a2")
		require.NoError(t, err)
		assert.True(t, undone)
		onlyHolderFields("undo of a reentry", "w:1")
		for _, id := range []string{"u1", "u1"} {
			_, held, err := s.Unlock(ctx, rdb, "shared", "w:1", id, time.Minute)
			require.NoError(t, err)
			assert.True(t, held)
		}
		assert.Zero(t, rdb.Exists(ctx, "shared").Val(), "the last release takes the record with the key")

		assert.True(t, javaLock(), "Redisson takes the lock warden released")
		r, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a3", time.Minute)
		require.NoError(t, err)
		assert.False(t, r.Acquired, "warden is refused while Redisson holds")
		assert.Equal(t, []string{java}, rdb.HKeys(ctx, "shared").Val(), "a refused acquire writes no record")
		_, held, err := s.Unlock(ctx, rdb, "shared", "w:1", "u2", time.Minute)
		require.NoError(t, err)
		assert.False(t, held, "warden cannot release Redisson's hold")
		javaUnlock()
		assert.Zero(t, rdb.Exists(ctx, "shared").Val())

		// An undone first acquire, a forced unlock and an expired lease
		// each leave no key behind: Redisson can take the lock at once.
		_, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a4", time.Minute)
		require.NoError(t, err)
		undone, err = s.UndoAcquire(ctx, rdb, "shared", "w:1", "a4")
		require.NoError(t, err)
		assert.True(t, undone)
		assert.True(t, javaLock(), "after an undone acquire")
		javaUnlock()
		_, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a5", time.Minute)
		require.NoError(t, err)
		forced, err := s.ForceUnlock(ctx, rdb, "shared")
		require.NoError(t, err)
		assert.True(t, forced)
		assert.True(t, javaLock(), "after a forced unlock")
		javaUnlock()
		_, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a6", 30*time.Millisecond)
		require.NoError(t, err)
		ff(60 * time.Millisecond)
		assert.True(t, javaLock(), "after the lease ran out")
		javaUnlock()

		// A record goes with its hold: a late copy of an earlier hold's
		// acquire meets a free lock and acquires afresh, as a new one would.
		r, err = s.lockAcquire(ctx, rdb, "shared", "w:1", "a5", time.Minute)
		require.NoError(t, err)
		assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, r, "an old request ID on a free lock acquires afresh")
	})
}
