package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
)

// A busy lock's unlocks leave one record per Client in Redis, however many
// pairs and handles: a handle per call (as most code writes it) on every
// lock kind, from two Clients, leaves two records a lock (a read/write
// lock's reads and writes have one each) and nothing else, each expiring
// by itself.
func TestUnlocksLeaveOneRecordPerLockAndClient(t *testing.T) {
	kinds := []struct {
		kind string
		make func(c *client.Client, name string, opts ...client.LockOption) *client.Lock
	}{
		{"lock", (*client.Client).Lock},
		{"spin", (*client.Client).SpinLock},
		{"nonreentrant", (*client.Client).NonReentrantLock},
		{"fair", (*client.Client).FairLock},
		{"nonreentrant-fair", (*client.Client).NonReentrantFairLock},
	}
	e := realEnv(t)
	ctx := testCtx(t)
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	const pairs = 150
	for _, k := range kinds {
		for i := range pairs {
			l := k.make(clients[i%2], "rec:"+k.kind)
			require.NoError(t, l.Lock(ctx))
			require.NoError(t, l.Unlock(ctx))
		}
	}
	for i := range pairs {
		f := clients[i%2].FencedLock("rec:fenced")
		_, err := f.LockToken(ctx)
		require.NoError(t, err)
		require.NoError(t, f.Unlock(ctx))
	}
	for i := range pairs {
		rw := clients[i%2].ReadWriteLock("rec:rw")
		require.NoError(t, rw.ReadLock().Lock(ctx))
		require.NoError(t, rw.ReadLock().Unlock(ctx))
		require.NoError(t, rw.WriteLock().Lock(ctx))
		require.NoError(t, rw.WriteLock().Unlock(ctx))
		g := clients[i%2].GroupLock("rec:group", "a", "b")
		require.NoError(t, g.Lock(ctx))
		require.NoError(t, g.Unlock(ctx))
	}
	require.NoError(t, e.rdb.Del(ctx, "redisson_lock_token:{rec:fenced}").Err())
	records := map[string]int{}
	for _, key := range dataKeys(t, e.rdb) {
		name, ok := strings.CutPrefix(key, "warden_unlock:{")
		require.True(t, ok, "only unlock records are left, not %q", key)
		name, suffix, _ := strings.Cut(name, "}")
		if strings.HasSuffix(suffix, ":r") || strings.HasSuffix(suffix, ":w") {
			name += suffix[len(suffix)-2:]
		}
		records[name]++
		ttl := e.rdb.PTTL(ctx, key).Val()
		assert.Greater(t, ttl, time.Duration(0), key)
		assert.LessOrEqual(t, ttl, 15*time.Second, key)
	}
	assert.Equal(t, map[string]int{"rec:lock": 2, "rec:spin": 2, "rec:nonreentrant": 2, "rec:fenced": 2, "rec:fair": 2,
		"rec:nonreentrant-fair": 2, "rec:rw:r": 2, "rec:rw:w": 2, "rec:group": 2}, records,
		"%d pairs a kind, two records a kind", pairs)
}
