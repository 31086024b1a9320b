package redisio

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// publishCalls is how many PUBLISH commands the server ran, scripts'
// included (INFO commandstats).
func publishCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_publish:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// The spin lock's unlock, undo and force unlock change the lock as the
// reentrant lock's do, and publish nothing; the reentrant lock's, run
// alongside, publish (so the count would see a publish).
func TestSpinScriptsPublishNothing(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	const name, owner = "spin", "c:1"
	sub := rdb.PSubscribe(ctx, "*")
	defer func() { _ = sub.Close() }()
	_, err := sub.Receive(ctx)
	require.NoError(t, err, "the subscription is confirmed")

	for i := 1; i <= 2; i++ {
		res, err := s.lockAcquire(ctx, rdb, name, owner, "a"+strconv.Itoa(i), time.Minute)
		require.NoError(t, err)
		require.True(t, res.Acquired)
		assert.Equal(t, i, res.HoldCount)
	}
	before := publishCalls(t, rdb)
	remaining, held, _, err := s.SpinUnlockSynced(ctx, rdb, ReplicaSync{}, name, owner, "u1", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 1, remaining)
	remaining, held, _, err = s.SpinUnlockSynced(ctx, rdb, ReplicaSync{}, name, owner, "u2", time.Minute)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, 0, remaining, "the last hold frees the lock")
	assert.Zero(t, rdb.Exists(ctx, name).Val())
	remaining, held, _, err = s.SpinUnlockSynced(ctx, rdb, ReplicaSync{}, name, owner, "u2", time.Minute)
	require.NoError(t, err)
	assert.True(t, held && remaining == 0, "a repeated request answers its first result")
	_, held, _, err = s.SpinUnlockSynced(ctx, rdb, ReplicaSync{}, name, owner, "u3", time.Minute)
	require.NoError(t, err)
	assert.False(t, held, "not held any more")

	_, err = s.lockAcquire(ctx, rdb, name, owner, "a3", time.Minute)
	require.NoError(t, err)
	undone, err := s.SpinUndoAcquire(ctx, rdb, name, owner, "a3")
	require.NoError(t, err)
	assert.True(t, undone)
	assert.Zero(t, rdb.Exists(ctx, name).Val(), "the undo freed the lock")

	_, err = s.lockAcquire(ctx, rdb, name, owner, "a4", time.Minute)
	require.NoError(t, err)
	deleted, err := s.SpinForceUnlock(ctx, rdb, name)
	require.NoError(t, err)
	assert.True(t, deleted)
	deleted, err = s.SpinForceUnlock(ctx, rdb, name)
	require.NoError(t, err)
	assert.False(t, deleted)
	assert.Equal(t, before, publishCalls(t, rdb), "no spin lock script published")

	// The reentrant lock's scripts, on the same server, do publish.
	_, err = s.lockAcquire(ctx, rdb, "plain", owner, "p1", time.Minute)
	require.NoError(t, err)
	_, _, err = s.Unlock(ctx, rdb, "plain", owner, "p2", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, before+1, publishCalls(t, rdb), "the reentrant unlock published")
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, LockChannel("plain"), msg.Channel, "the first message any channel saw is the reentrant lock's")
}

func TestSpinScriptsRejectBadPublishCommand(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	rec := AcquireRecordField("o")
	for _, bad := range []string{"", "None", "del", "flushall"} {
		require.Error(t, unlockScript.Run(ctx, rdb, []string{"k", "c", "l"}, "0", "1000", "o", bad, "1000").Err(), "%q", bad)
		require.Error(t, undoAcquireScript.Run(ctx, rdb, []string{"k", "c"}, "o", "r1", bad, "0", rec).Err(), "%q", bad)
		require.Error(t, forceUnlockScript.Run(ctx, rdb, []string{"k", "c"}, "0", bad).Err(), "%q", bad)
	}
	assert.Zero(t, rdb.DBSize(ctx).Val())
}
