package client_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// Renewal must never outlive an unlock (Redisson #7272, #6844): after many
// racing watchdog-mode TryLock/Unlock pairs, the same owner's next
// fixed-lease holding expires on time.
func TestRenewalNeverOutlivesUnlock(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		l := c.Lock("no-orphan")
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					ok, err := l.TryLock(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						if err := l.Unlock(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
		}
		await.Group(t, &wg, time.Minute, "the contenders")
		locked, _ := l.IsLocked(ctx)
		require.False(t, locked, "every holding was released")

		require.NoError(t, l.LockLease(ctx, 500*time.Millisecond))
		e.advance(700 * time.Millisecond)
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "no leftover watchdog registration renewed the fixed lease")
	})
}

// A holding taken after another owner's reentrant lock/unlock cycles is
// renewed like any other (Redisson #6144).
func TestRenewalAfterAnotherOwnersReentrantCycle(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		first, second := c.Lock("reentrant-renew"), c.Lock("reentrant-renew")
		require.NoError(t, first.Lock(ctx))
		require.NoError(t, first.Lock(ctx))
		require.NoError(t, first.Unlock(ctx))
		require.NoError(t, first.Unlock(ctx))
		require.NoError(t, second.Lock(ctx))
		e.advance(4 * watchdog)
		held, err := second.IsHeld(ctx)
		require.NoError(t, err)
		assert.True(t, held)
		require.NoError(t, second.Unlock(ctx))
	})
}

// Many short critical sections on a few names from two clients: no error,
// and no subscription is left behind (Redisson's testSubscriptionsPerConnection).
func TestNoSubscriptionLeftAfterChurn(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	a, b := e.newClient(t), e.newClient(t)
	names := []string{"churn:1", "churn:2", "churn:3", "churn:4", "churn:5"}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := a
			if g%2 == 1 {
				c = b
			}
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 40 {
				l := c.Lock(names[r.IntN(len(names))])
				if err := l.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	await.Group(t, &wg, time.Minute, "the contenders")
	eventually(t, 2*time.Second, func() bool {
		return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 0
	}, "every subscription ended with its last waiter")
	assert.Zero(t, e.rdb.Exists(ctx, names...).Val())
}

// One process holds one pub/sub connection however many names it waits
// on, and one subscription per name however many local waiters it has.
func TestOnePubSubConnectionPerClient(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	holder, waiters := e.newClient(t), e.newClient(t)
	const names, perName = 10, 3
	var wg sync.WaitGroup
	held := make([]*client.Lock, names)
	for i := range names {
		name := "one-conn:" + string(rune('a'+i))
		held[i] = holder.Lock(name)
		require.NoError(t, held[i].LockLease(ctx, time.Minute))
		for range perName {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := waiters.Lock(name)
				if err := l.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	eventually(t, 3*time.Second, func() bool {
		return len(e.rdb.PubSubChannels(ctx, "*").Val()) == names
	}, "one subscription per name")
	pubsubConns := 0
	for _, line := range strings.Split(e.rdb.ClientList(ctx).Val(), "\n") {
		if strings.Contains(line, " flags=P ") {
			pubsubConns++
		}
	}
	assert.Equal(t, 1, pubsubConns, "the waiting client uses one pub/sub connection; the holder subscribes to nothing")
	for _, n := range e.rdb.PubSubNumSub(ctx, e.rdb.PubSubChannels(ctx, "*").Val()...).Val() {
		assert.Equal(t, int64(1), n, "one subscriber per channel, shared by the local waiters")
	}
	for _, l := range held {
		require.NoError(t, l.Unlock(ctx))
	}
	await.Group(t, &wg, time.Minute, "the waiters")
}
