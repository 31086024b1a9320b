package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/faultproxy"
)

// proxied returns an env whose client reaches real Redis through a fault
// proxy, with every connection the client needs already open and the
// scripts loaded, so an armed fault hits the next command.
func proxied(t *testing.T) (*env, *client.Client, *faultproxy.Proxy) {
	e := realEnv(t)
	p := faultproxy.New(t, e.srv.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	pe := &env{name: "proxied", rdb: rdb, srv: e.srv, clk: e.clk}
	c := pe.newClient(t)
	ctx := context.Background()
	warm := c.Lock("warm-up")
	require.NoError(t, warm.Lock(ctx))
	require.NoError(t, warm.Unlock(ctx))
	eventually(t, 2*time.Second, func() bool { return p.Conns() >= 2 }, "command and pub/sub connections open")
	// Checks go straight to Redis, not through the proxy.
	pe.rdb = e.rdb
	return pe, c, p
}

func TestAcquireIsAppliedOnceWhenItsReplyIsLost(t *testing.T) {
	e, c, p := proxied(t)
	ctx := context.Background()
	l := c.Lock("once")

	p.DropNextReply() // Redis runs the acquire; its reply is lost; go-redis retries.
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, "1", e.rdb.HGet(ctx, "once", l.Owner()).Val(), "one acquire, one hold")

	p.DropNextReply()
	require.NoError(t, l.Lock(ctx), "a reentry under the same fault")
	assert.Equal(t, "2", e.rdb.HGet(ctx, "once", l.Owner()).Val())

	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, "once").Val(), "two unlocks free it: no phantom hold")
}

func TestRetriedUnlockReturnsTheFirstResult(t *testing.T) {
	e, c, p := proxied(t)
	ctx := context.Background()
	l := c.Lock("unlock-once")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Lock(ctx))

	p.DropNextReply()
	require.NoError(t, l.Unlock(ctx), "the retry sees the first run's result")
	assert.Equal(t, "1", e.rdb.HGet(ctx, "unlock-once", l.Owner()).Val(), "released once, not twice")

	p.DropNextReply()
	require.NoError(t, l.Unlock(ctx), "not ErrNotHeld: the retry returns the first result")
	assert.Zero(t, e.rdb.Exists(ctx, "unlock-once").Val())
}

func TestRedisRestartWhileHeldTellsTheOwner(t *testing.T) {
	e := realEnv(t)
	ctx := context.Background()
	c := e.newClient(t)
	l := c.Lock("restarted")
	require.NoError(t, l.Lock(ctx))
	lost := l.Lost()

	e.srv.Restart(t) // persistence is off: the lock is gone
	select {
	case <-lost:
	case <-time.After(3 * watchdog):
		t.Fatal("Lost() not closed after Redis lost the lock")
	}
	require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)

	// A new holding of the same name is renewed and unlocks cleanly.
	again := c.Lock("restarted")
	require.NoError(t, again.Lock(ctx))
	e.advance(2*watchdog + watchdog/2)
	held, err := again.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held, "renewed after the restart")
	select {
	case <-again.Lost():
		t.Fatal("the new holding reported lost")
	default:
	}
	require.NoError(t, again.Unlock(ctx))
}

func TestRedisDownFailsPromptly(t *testing.T) {
	e := realEnv(t)
	ctx := context.Background()
	c := e.newClient(t)
	l := c.Lock("down")
	e.srv.Stop(t)
	start := time.Now()
	ok, err := l.TryLockWait(ctx, 5*time.Second, 10*time.Second)
	assert.False(t, ok)
	require.Error(t, err, "a Redis error, never a plain false")
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = l.IsLocked(ctx)
	require.Error(t, err)

	e.srv.Start(t)
	eventually(t, 5*time.Second, func() bool {
		ok, err := l.TryLock(ctx)
		return err == nil && ok
	}, "works again once Redis is back")
	require.NoError(t, l.Unlock(ctx))
}

func TestWaiterRetriesAfterPubSubReconnect(t *testing.T) {
	e, c, p := proxied(t)
	ctx := context.Background()
	holder := e.newClient(t).Lock("reconnect")
	require.NoError(t, holder.LockLease(ctx, 20*time.Second))
	waiter := c.Lock("reconnect")
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	eventually(t, 2*time.Second, func() bool {
		return len(e.rdb.PubSubChannels(ctx, "*").Val()) == 1
	}, "waiting")
	// Cut the waiter's connections and unlock while they are down: the
	// unlock message is lost, the lease is long, yet the waiter gets in
	// soon after its pub/sub connection is back.
	p.Block(true)
	require.NoError(t, holder.Unlock(ctx))
	time.Sleep(100 * time.Millisecond)
	p.Block(false)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not retried after the pub/sub reconnect")
	}
	require.NoError(t, waiter.Unlock(ctx))
}
