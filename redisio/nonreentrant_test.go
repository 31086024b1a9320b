package redisio

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// A non-reentrant acquire is exactly once and refuses its holder: a replay
// of the request that acquired (its reply lost, go-redis sent it again)
// answers its first result, acquired with count 1; any other request of
// the holder is answered AlreadyHeld and changes nothing, neither the
// count nor the lease; another owner is refused with the PTTL. The fair
// kind also leaves the queue as it was.
func TestNonReentrantAcquireIsOnceAndRefusesTheHolder(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s := newScripts(t)
		now := time.Now()
		for _, fair := range []bool{false, true} {
			name := map[bool]string{false: "nr", true: "nr-fair"}[fair]
			acquire := func(owner, reqID string, lease time.Duration) AcquireResult {
				t.Helper()
				var res AcquireResult
				var err error
				if fair {
					res, _, err = s.NonReentrantFairAcquire(ctx, rdb, ReplicaSync{}, name, owner, reqID, lease, time.Minute,
						time.Minute, now, true)
				} else {
					res, _, err = s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs(name), owner, reqID, lease, false, true)
				}
				require.NoError(t, err)
				return res
			}
			res := acquire("w:1", "a1", time.Minute)
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, res, "%s: first", name)
			res = acquire("w:1", "a1", time.Minute)
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, res, "%s: the replay answers the first result", name)
			res = acquire("w:1", "a2", 2*time.Minute)
			assert.Equal(t, AcquireResult{AlreadyHeld: true, HoldCount: 1}, res, "%s: the holder again", name)
			assert.Equal(t, "1", rdb.HGet(ctx, name, "w:1").Val(), "%s: count 1", name)
			assert.LessOrEqual(t, rdb.PTTL(ctx, name).Val(), time.Minute, "%s: the lease as it was", name)
			res = acquire("w:2", "b1", time.Minute)
			assert.False(t, res.Acquired, name)
			assert.False(t, res.AlreadyHeld, name)
			assert.Positive(t, res.PTTL, name)
			if fair {
				assert.Equal(t, []string{"w:2"}, rdb.LRange(ctx, FairQueueKey(name), 0, -1).Val(),
					"the other owner queued; the holder's refused reentry did not")
			}

			// The plain lock keeps its reentrant acquire: the flag is all
			// that differs.
			if !fair {
				r, err := s.lockAcquire(ctx, rdb, name, "w:1", "a3", time.Minute)
				require.NoError(t, err)
				assert.Equal(t, 2, r.HoldCount, "the reentrant script still reenters")
			}
		}
	})
}

// The acquire scripts refuse a malformed non-reentrant flag before any
// write.
func TestNonReentrantFlagIsChecked(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	err := acquireScript.Run(ctx, rdb, []string{"flag"}, "w:1", "60000", "a1", AcquireRecordField("w:1"), "yes").Err()
	require.ErrorContains(t, err, "invalid non-reentrant flag")
	err = fairAcquireScript.Run(ctx, rdb, []string{"flag", FairQueueKey("flag"), FairTimeoutKey("flag"),
		AcquireLatchKey("flag", "w:1"), GaveUpKey("flag", "w:1"), FairPlacesKey("flag")},
		"w:1", "60000", "a1", "15000", "60000", "1700000000000", "1", "0", "2").Err()
	require.ErrorContains(t, err, "invalid non-reentrant flag")
	assert.Zero(t, rdb.DBSize(ctx).Val(), "nothing written")
}
