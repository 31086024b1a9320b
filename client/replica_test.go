package client_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redistest"
)

// With replica sync, an acquire the replica does not acknowledge is undone
// and fails with ErrNotReplicated, never leaving a hold behind.
func TestReplicaSync(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	master := redistest.Start(t, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	mrdb, rrdb := master.Client(t), replica.Client(t)
	eventually(t, 10*time.Second, func() bool {
		// Attached, loaded, and acknowledging writes.
		if !strings.Contains(mrdb.Info(ctx, "replication").Val(), "state=online") {
			return false
		}
		mrdb.Set(ctx, "probe", 1, 0)
		return mrdb.Do(ctx, "wait", 1, 100).Val() == int64(1)
	}, "the replica acknowledges writes")
	require.NoError(t, mrdb.Del(ctx, "probe").Err())

	e := &env{name: "replicated", rdb: mrdb, srv: master, clk: clockwork.NewRealClock()}
	c := e.newClient(t, client.WithReplicaSync(1, 200*time.Millisecond))
	l := c.Lock("synced")
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, "1", rrdb.HGet(ctx, "synced", l.Owner()).Val(), "on the replica when Lock returns")

	replica.Pause(t) // acknowledges nothing while stopped
	err := l.Lock(ctx)
	require.ErrorIs(t, err, client.ErrNotReplicated)
	assert.Equal(t, "1", mrdb.HGet(ctx, "synced", l.Owner()).Val(), "the unacknowledged reentry was undone")
	other := c.Lock("synced-2")
	ok, err := other.TryLock(ctx)
	assert.False(t, ok)
	require.ErrorIs(t, err, client.ErrNotReplicated)
	assert.Zero(t, mrdb.Exists(ctx, "synced-2").Val(), "no hold left behind")

	replica.Resume(t)
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, mrdb.Exists(ctx, "synced").Val())
}
