package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// A first acquire takes the next token; a reentry answers the same token;
// Token reads it while held and refuses a non-holder.
func TestFencedLockTokens(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		f := c.FencedLock("fenced")
		_, err := f.Token(ctx)
		require.ErrorIs(t, err, client.ErrNotHeld)

		first, err := f.LockToken(ctx)
		require.NoError(t, err)
		require.Positive(t, first)
		again, ok, err := f.TryLockToken(ctx, 0, 0)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, first, again, "a reentry keeps its holding's token")
		assert.Equal(t, first, get(t, f.Token))
		assert.Equal(t, 2, get(t, f.HoldCount))

		other := c.FencedLock("fenced")
		_, ok, err = other.TryLockToken(ctx, 0, 0)
		require.NoError(t, err)
		require.False(t, ok, "held elsewhere")
		_, err = other.Token(ctx)
		require.ErrorIs(t, err, client.ErrNotHeld)

		require.NoError(t, f.Unlock(ctx))
		require.NoError(t, f.Unlock(ctx))
		next, ok, err := other.TryLockToken(ctx, 0, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, first+1, next, "the next holding takes the next token")
		require.NoError(t, other.Unlock(ctx))

		// The counter is Redisson's key, without a TTL.
		v, err := e.rdb.Get(ctx, redisio.TokenKey("fenced")).Int64()
		require.NoError(t, err)
		assert.Equal(t, next, v)
		assert.Equal(t, time.Duration(-1), e.rdb.PTTL(ctx, redisio.TokenKey("fenced")).Val())
	})
}

// Tokens increase strictly across two clients and 1,000 acquisitions, and
// every holder's token is the highest yet when it enters.
func TestFencedLockTokensIncreaseAcrossClients(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	const workers, each = 4, 250 // 1,000 acquisitions
	var mu sync.Mutex
	var last int64
	var tokens []int64
	var wg sync.WaitGroup
	ctx := testCtx(t)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := clients[i%2].FencedLock("fenced:many")
			for range each {
				token, err := f.LockToken(ctx)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock() // a protected resource's check: refuse a stale token
				assert.Greater(t, token, last, "a token not above the last one accepted")
				last = token
				tokens = append(tokens, token)
				mu.Unlock()
				if !assert.NoError(t, f.Unlock(ctx)) {
					return
				}
			}
		}()
	}
	await.Group(t, &wg, 2*time.Minute, "the fenced contenders")
	require.Len(t, tokens, workers*each)
	for i := 1; i < len(tokens); i++ {
		require.Greater(t, tokens[i], tokens[i-1], "tokens in acquisition order")
	}
	assert.Equal(t, int64(workers*each), tokens[len(tokens)-1]-tokens[0]+1, "no token skipped without a failed acquire")
}

// A fenced lock excludes a plain reentrant lock of the same name (the same
// hash and channel), and a waiter is woken by its unlock.
func TestFencedLockWaiterWakesOnUnlock(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		ctx := testCtx(t)
		c := e.newClient(t)
		plain := c.Lock("fenced:shared")
		require.NoError(t, plain.Lock(ctx))
		f := c.FencedLock("fenced:shared")
		var token int64 // written before got receives
		got := inBackground(t, func(ctx context.Context) (err error) {
			token, err = f.LockToken(ctx)
			return err
		})
		e.advance(50 * time.Millisecond)
		select {
		case <-got:
			t.Fatal("a fenced lock entered while the plain lock held the name")
		default:
		}
		require.NoError(t, plain.Unlock(ctx))
		r, _ := awaitWhileTime(t, e, got, 5*time.Second, "the fenced waiter")
		require.NoError(t, r.err)
		assert.Positive(t, token)
		require.NoError(t, f.Unlock(ctx))
	})
}

func TestFencedLockInput(t *testing.T) {
	t.Parallel()
	e := miniEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	_, _, err := c.FencedLock("").TryLockToken(ctx, 0, 0)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	_, _, err = c.FencedLock("x").TryLockToken(ctx, -time.Second, 0)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	var nilLock *client.FencedLock
	_, err = nilLock.LockToken(ctx)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	_, err = nilLock.Token(ctx)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	assert.Empty(t, withoutRegistry(e.mini.DB(0).Keys()), "bad input wrote nothing")
}
