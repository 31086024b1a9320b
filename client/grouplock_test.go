package client_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// groupFields are the fields of the group's hash, without the values'.
func groupFields(t *testing.T, e *env, group string) map[string]string {
	t.Helper()
	f, err := e.rdb.HGetAll(context.Background(), group).Result()
	require.NoError(t, err)
	return f
}

// A group lock takes its values all or none, in one hash with Redisson's
// layout; a handle sharing one value is refused and takes nothing, one
// on other values of the group is held at the same time; reentry counts
// per value; the last unlock empties the hash.
func TestGroupLockAllOrNone(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c, o := e.newClient(t), e.newClient(t)

	g := c.GroupLock("class:100", "jack", "mary", "anna")
	require.NoError(t, g.Lock(ctx))
	f := groupFields(t, e, "class:100")
	assert.Len(t, f, 9, "three fields per value: %v", f)
	for _, v := range []string{"anna", "jack", "mary"} {
		assert.Equal(t, g.Owner(), f[v], "%s's holder", v)
		assert.Equal(t, "1", f[v+":"+g.Owner()+":lock_count"])
		ends, err := strconv.ParseInt(f[v+":"+g.Owner()+":expire_time"], 10, 64)
		require.NoError(t, err)
		assert.InDelta(t, time.Now().Add(watchdog).UnixMilli(), ends, float64((2 * time.Second).Milliseconds()),
			"%s's hold ends a watchdog timeout from now (unix ms)", v)
	}
	assert.Positive(t, e.rdb.PTTL(ctx, "class:100").Val())

	overlap := o.GroupLock("class:100", "zoe", "mary")
	ok, err := overlap.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "one value held elsewhere: refused")
	assert.False(t, e.rdb.HExists(ctx, "class:100", "zoe").Val(), "and nothing taken")
	assert.True(t, get(t, overlap.IsLocked), "IsLocked: some value is held")
	assert.Zero(t, get(t, overlap.HoldCount))

	other := o.GroupLock("class:100", "zoe", "tom")
	ok, err = other.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "other values of the group are free")

	ok, err = g.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "a reentry")
	assert.Equal(t, 2, get(t, g.HoldCount))
	assert.Equal(t, "2", e.rdb.HGet(ctx, "class:100", "jack:"+g.Owner()+":lock_count").Val())
	require.NoError(t, g.Unlock(ctx))
	assert.Equal(t, 1, get(t, g.HoldCount))
	require.NoError(t, g.Unlock(ctx))
	assert.Zero(t, get(t, g.HoldCount))
	require.ErrorIs(t, g.Unlock(ctx), client.ErrNotHeld)

	ok, err = overlap.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "zoe is still other's")
	require.NoError(t, other.Unlock(ctx))
	ok, err = overlap.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "free once both unlocked")
	require.NoError(t, overlap.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, "class:100").Val(), "the hash is gone with its last value")
}

// Bad input is ErrInvalidArgument naming the field, from every call,
// before any Redis call.
func TestGroupLockRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	for what, tc := range map[string]struct {
		l     *client.Lock
		field string
	}{
		"empty group":     {c.GroupLock("", "a"), "group"},
		"long group":      {c.GroupLock(strings.Repeat("g", 64<<10+1), "a"), "group"},
		"no values":       {c.GroupLock("g"), "values"},
		"duplicate value": {c.GroupLock("g", "a", "b", "a"), "values"},
		"empty value":     {c.GroupLock("g", "a", ""), "values"},
		"value with ':'":  {c.GroupLock("g", "a:b"), "values"},
	} {
		prefix := "warden: invalid argument: " + tc.field + ": "
		for call, err := range map[string]error{
			"Lock":      tc.l.Lock(ctx),
			"LockLease": tc.l.LockLease(ctx, time.Second),
			"Unlock":    tc.l.Unlock(ctx),
			"Do":        tc.l.Do(ctx, func(context.Context) error { return nil }),
		} {
			require.ErrorIs(t, err, client.ErrInvalidArgument, "%s: %s", what, call)
			assert.True(t, strings.HasPrefix(err.Error(), prefix), "%s: %s: %v", what, call, err)
		}
		_, err := tc.l.TryLock(ctx)
		require.ErrorIs(t, err, client.ErrInvalidArgument, what)
		_, err = tc.l.IsLocked(ctx)
		require.ErrorIs(t, err, client.ErrInvalidArgument, what)
		_, err = tc.l.ForceUnlock(ctx)
		require.ErrorIs(t, err, client.ErrInvalidArgument, what)
	}
	assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
}

// A waiter on one value is woken by the unlock message on
// redisson_lock__channel:{group}, well before the holder's lease ends.
func TestGroupLockWaiterWokenByUnlock(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	holder := e.newClient(t).GroupLock("wake", "a", "b")
	require.NoError(t, holder.LockLease(ctx, time.Minute))
	waiter := e.newClient(t).GroupLock("wake", "b", "c")
	woke := wokenBy(t, waiter.Lock, func() bool {
		n, err := e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{wake}").Result()
		return err == nil && n["redisson_lock__channel:{wake}"] == 1
	}, holder.Unlock)
	assert.Less(t, woke, 2*time.Second, "woken by the message, not the minute's lease")
	assert.Equal(t, 1, get(t, waiter.HoldCount))
	require.NoError(t, waiter.Unlock(ctx))
}

// A watchdog-mode holding is renewed past the watchdog timeout; deleting
// one value's fields loses the holding (Lost closes) at the next renewal.
func TestGroupLockWatchdogAndLoss(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	g := e.newClient(t).GroupLock("dog", "x", "y")
	require.NoError(t, g.Lock(ctx))
	lost := g.Lost()
	time.Sleep(2 * watchdog)
	assert.Equal(t, 1, get(t, g.HoldCount), "renewed past the watchdog timeout")
	assert.False(t, isClosed(lost))
	ends, err := strconv.ParseInt(e.rdb.HGet(ctx, "dog", "y:"+g.Owner()+":expire_time").Val(), 10, 64)
	require.NoError(t, err)
	assert.Greater(t, ends, time.Now().UnixMilli(), "y's hold extended")

	require.NoError(t, e.rdb.HDel(ctx, "dog", "y").Err())
	await.Value(t, lost, 5*time.Second, "Lost, once y was taken from the owner")
	require.ErrorIs(t, g.Unlock(ctx), client.ErrNotHeld)
}

// Goroutines with overlapping value sets of one group never hold a value
// together, and all finish.
func TestGroupLockContention(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const workers, rounds = 6, 12
	sets := [][]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "a"}, {"a", "c"}, {"e"}}
	var holders [5]atomic.Int32
	var violations atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		g := e.newClient(t).GroupLock("contend", sets[w]...)
		wg.Go(func() {
			for range rounds {
				if !assert.NoError(t, g.Lock(ctx)) {
					return
				}
				for _, v := range sets[w] {
					if holders[v[0]-'a'].Add(1) > 1 {
						violations.Add(1)
					}
				}
				time.Sleep(time.Millisecond)
				for _, v := range sets[w] {
					holders[v[0]-'a'].Add(-1)
				}
				if !assert.NoError(t, g.Unlock(ctx)) {
					return
				}
			}
		})
	}
	await.Group(t, &wg, 60*time.Second, "every worker's rounds")
	assert.Zero(t, violations.Load(), "a value held twice at once")
	assert.Zero(t, e.rdb.Exists(ctx, "contend").Val())
}

// An owner waits for or holds one set of values of a group at a time:
// an actor application's acquire of other values by the same owner is
// refused, and so is a release naming other values.
func TestGroupLockOneValueSetPerOwner(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c, sys, _ := ownSystemClient(t, e.rdb)
	g := c.GroupLock("sets", "a")
	require.NoError(t, g.Lock(ctx))
	for _, msg := range []any{
		&messages.Acquire{Name: "sets", Kind: messages.KindGroupLock, Owner: g.Owner(), RequestID: "other", Values: []string{"b"}},
		&messages.Release{Name: "sets", Kind: messages.KindGroupLock, Owner: g.Owner(), RequestID: "other-rel", Values: []string{"a", "b"}},
	} {
		reply, err := sys.Root.RequestFuture(c.PID(), msg, 5*time.Second).Result()
		require.NoError(t, err)
		var got error
		switch r := reply.(type) {
		case *messages.AcquireFailed:
			got = r.Err
		case *messages.ReleaseFailed:
			got = r.Err
		}
		require.ErrorIs(t, got, client.ErrInvalidArgument, "%T: %+v", msg, reply)
		assert.Contains(t, got.Error(), "values: ")
	}
	assert.Equal(t, 1, get(t, g.HoldCount), "the holding is untouched")
	require.NoError(t, g.Unlock(ctx))
}

// On a 3-master cluster: a group of many values on each shard is taken
// all-or-none by one script (a CROSSSLOT key would fail it) and reentered,
// a waiter is woken by sharded pub/sub, the watchdog renews groups on
// every shard, and a value taken away loses the holding.
func TestClusterGroupLock(t *testing.T) {
	t.Parallel()
	e := newClusterEnv(t)
	ctx := testCtx(t)
	values := make([]string, 50)
	for i := range values {
		values[i] = fmt.Sprintf("student-%03d", i)
	}

	t.Run("AllOrNoneAndWakeUp", func(t *testing.T) {
		holderClient, waiterClient := e.newClient(t), e.newClient(t)
		for node := range 3 {
			group := e.nameOn(t, node, "class")
			holder := holderClient.GroupLock(group, values...)
			require.NoError(t, holder.LockLease(ctx, time.Minute), "a long lease: polling would take a minute")
			assert.Equal(t, int64(3*len(values)), e.rdb.HLen(ctx, group).Val(), "every value on node %d", node)
			assert.True(t, tryLock(t, holder), "a reentry")
			assert.Equal(t, 2, get(t, holder.HoldCount))
			require.NoError(t, holder.Unlock(ctx))
			assert.Equal(t, 1, get(t, holder.HoldCount), "held once more")
			waiter := waiterClient.GroupLock(group, "late", values[len(values)-1])
			assert.False(t, tryLock(t, waiter), "one shared value: refused")
			assert.False(t, e.rdb.HExists(ctx, group, "late").Val(), "and nothing taken")
			ch := redisio.LockChannel(group)
			woke := wokenBy(t, waiter.Lock, e.listening(t, ch), holder.Unlock)
			assert.Less(t, woke, promptly, "woken by sharded pub/sub on node %d", node)
			assert.Equal(t, 1, get(t, waiter.HoldCount))
			require.NoError(t, waiter.Unlock(ctx))
			assert.Zero(t, e.rdb.Exists(ctx, group).Val())
			e.awaitShardSubscribers(t, ch, 0)
		}
	})

	t.Run("WatchdogAndLoss", func(t *testing.T) {
		const watchdog = 600 * time.Millisecond
		c := e.newClient(t, client.WithWatchdogTimeout(watchdog))
		var groups []*client.Lock
		for node := range 3 {
			g := c.GroupLock(e.nameOn(t, node, "renewed-group"), values[:5]...)
			require.NoError(t, g.Lock(ctx))
			groups = append(groups, g)
		}
		time.Sleep(4 * watchdog)
		for _, g := range groups {
			assert.Equal(t, 1, get(t, g.HoldCount), "%s renewed across four watchdog timeouts", g.Name())
			assert.False(t, isClosed(g.Lost()), g.Name())
		}
		lost := groups[1].Lost()
		require.NoError(t, e.rdb.HDel(ctx, groups[1].Name(), values[2]).Err())
		await.Value(t, lost, 5*time.Second, "Lost, once a value was taken away")
		assert.False(t, isClosed(groups[0].Lost()), "the other groups are still held")
		for _, g := range []*client.Lock{groups[0], groups[2]} {
			require.NoError(t, g.Unlock(ctx))
		}
		require.ErrorIs(t, groups[1].Unlock(ctx), client.ErrNotHeld)
	})

	t.Run("StripesOnEveryShard", func(t *testing.T) {
		s := e.newClient(t).StripedLock("stock", 16)
		keys := make([]string, 40)
		for i := range keys {
			keys[i] = fmt.Sprintf("product-%d", i)
		}
		m := s.ForKeys(keys...)
		require.NoError(t, m.Lock(ctx))
		nodes := map[int]bool{}
		for _, k := range keys {
			nodes[e.cluster.NodeForSlot(redisio.Slot(s.Name(k)))] = true
		}
		assert.Len(t, nodes, 3, "the stripes held span the three masters")
		other := e.newClient(t).StripedLock("stock", 16).For(keys[7])
		assert.False(t, tryLock(t, other), "a held stripe")
		require.NoError(t, m.Unlock(ctx))
		assert.True(t, tryLock(t, other))
		require.NoError(t, other.Unlock(ctx))
		assert.ErrorIs(t, e.newClient(t).StripedLock("a}b", 4).Err(), client.ErrInvalidArgument,
			"a prefix whose stripes' keys would span slots")
	})
}

// Two group locks of one group in a MultiLock are refused with a message
// that says what to do instead: one GroupLock over their values.
func TestMultiLockOfOneGroupSaysToUseOneGroupLock(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	err := client.NewMultiLock(c.GroupLock("grp", "a"), c.GroupLock("grp", "b")).Lock(testCtx(t))
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "put their values in one GroupLock")
}
