package redisio

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// runUnlockCall sends c as it is, as go-redis resends a command whose
// reply was lost, and reads its reply.
func runUnlockCall(ctx context.Context, t *testing.T, rdb *redis.Client, name string, c scriptCall) (int, bool, error) {
	t.Helper()
	cmd := unlockScript.Script.Run(ctx, rdb, c.keys(), c.argv()...)
	return unlockReply("unlock", name, cmd)
}

func TestUnlockRecordAnswersARetryAndRefusesALateCopy(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	for _, req := range []string{"a1", "a2", "a3"} {
		_, err := s.lockAcquire(ctx, rdb, "rec", "o1", req, time.Minute)
		require.NoError(t, err)
	}
	first := s.unlockCall(s.LockArgs("rec"), "o1", "u1", time.Minute, s.publishArg)
	second := s.unlockCall(s.LockArgs("rec"), "o1", "u2", time.Minute, s.publishArg)

	n, held, err := runUnlockCall(ctx, t, rdb, "rec", first)
	require.NoError(t, err)
	assert.Equal(t, []any{2, true}, []any{n, held})
	n, held, err = runUnlockCall(ctx, t, rdb, "rec", first)
	require.NoError(t, err)
	assert.Equal(t, []any{2, true}, []any{n, held}, "a retry (same sequence number) returns the first result")
	assert.Equal(t, "2", rdb.HGet(ctx, "rec", "o1").Val(), "and releases nothing")

	n, held, err = runUnlockCall(ctx, t, rdb, "rec", second)
	require.NoError(t, err)
	assert.Equal(t, []any{1, true}, []any{n, held})
	_, _, err = runUnlockCall(ctx, t, rdb, "rec", first)
	require.ErrorIs(t, err, ErrSuperseded, "a copy of u1 that arrives after u2 was applied")
	assert.Equal(t, "1", rdb.HGet(ctx, "rec", "o1").Val(), "the late copy released nothing")
	n, held, err = runUnlockCall(ctx, t, rdb, "rec", second)
	require.NoError(t, err)
	assert.Equal(t, []any{1, true}, []any{n, held}, "u2's retry still returns its first result")

	// The last hold: the key goes, and a late copy of the unlock before it
	// finds the lock held again by the same owner and leaves it alone.
	n, held, err = s.Unlock(ctx, rdb, "rec", "o1", "u3", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []any{0, true}, []any{n, held})
	_, err = s.lockAcquire(ctx, rdb, "rec", "o1", "a4", time.Minute)
	require.NoError(t, err)
	_, _, err = runUnlockCall(ctx, t, rdb, "rec", second)
	require.ErrorIs(t, err, ErrSuperseded)
	assert.Equal(t, "1", rdb.HGet(ctx, "rec", "o1").Val(), "the new hold is intact")
	n, held, err = s.Unlock(ctx, rdb, "rec", "o1", "u3", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []any{0, true}, []any{n, held}, "a resend of u3 (same owner and request ID) answers its first result")
	assert.Equal(t, "1", rdb.HGet(ctx, "rec", "o1").Val(), "and releases nothing")
}

func TestUnlockRecordsAreOnePerClient(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	a, b := newScripts(t), newScripts(t)
	require.NotEqual(t, a.token, b.token, "each Scripts has its own token")
	const pairs = 2000
	for i := range pairs {
		s := a
		if i%2 == 1 {
			s = b
		}
		owner := "o" + strconv.Itoa(i) // a new handle for every pair, as a user writes it
		_, err := s.lockAcquire(ctx, rdb, "busy", owner, "a", time.Minute)
		require.NoError(t, err)
		n, held, err := s.Unlock(ctx, rdb, "busy", owner, "u", time.Minute)
		require.NoError(t, err)
		require.Equal(t, []any{0, true}, []any{n, held})
	}
	keys := rdb.Keys(ctx, "*").Val()
	assert.ElementsMatch(t, []string{UnlockRecordKey("busy", a.token), UnlockRecordKey("busy", b.token)}, keys,
		"%d unlocks leave one record per Client", pairs)
	for _, k := range keys {
		ttl := rdb.PTTL(ctx, k).Val()
		assert.Greater(t, ttl, time.Duration(0), k)
		assert.LessOrEqual(t, ttl, LatchTTL, k)
	}
}
