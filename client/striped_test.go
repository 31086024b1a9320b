package client_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
)

// The stripe of a key is FNV-1a 32 of its bytes mod stripes, as the doc
// states: checked against the published FNV-1a test vectors (so another
// language's implementation can be checked the same way) and against
// hash/fnv for keys of every kind, non-ASCII UTF-8 included.
func TestStripedLockStripeIsFNV1a32ModStripes(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	vectors := map[string]uint32{ // FNV-1a 32 test vectors
		"":       0x811c9dc5,
		"a":      0xe40c292c,
		"foobar": 0xbf9cf968,
	}
	for _, stripes := range []int{1, 7, 16, 1000, client.MaxStripes} {
		s := c.StripedLock("stock", stripes)
		require.NoError(t, s.Err())
		assert.Equal(t, stripes, s.Stripes())
		for key, h := range vectors {
			n := int(h % uint32(stripes))
			assert.Equal(t, n, s.Stripe(key), "stripe of %q among %d", key, stripes)
			assert.Equal(t, fmt.Sprintf("stock:%d", n), s.Name(key))
			assert.Equal(t, s.Name(key), s.For(key).Name(), "For's lock is the stripe's")
		}
	}
	assert.Equal(t, 8, c.StripedLock("stock", 16).Stripe("foobar"), "the doc's example")

	rnd := rand.New(rand.NewPCG(1, 2))
	s := c.StripedLock("p", 37)
	for i := range 2000 {
		key := fmt.Sprintf("product-%d-%c", rnd.Uint64(), rune(0x4e00+i))
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		assert.Equal(t, int(h.Sum32()%37), s.Stripe(key), "%q", key)
	}
	assert.Empty(t, dataKeys(t, e.rdb), "computing stripes touches no Redis")
}

// Bad stripes, prefixes and key lists are ErrInvalidArgument naming the
// field, from every call of every handle, before any Redis call.
func TestStripedLockRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	ctx := testCtx(t)
	var nilClient *client.Client
	cases := []struct {
		s     *client.StripedLock
		field string
	}{
		{c.StripedLock("p", 0), "stripes"},
		{c.StripedLock("p", -1), "stripes"},
		{c.StripedLock("p", client.MaxStripes+1), "stripes"},
		{c.StripedLock("", 16), "prefix"},
		{c.StripedLock(strings.Repeat("x", 64<<10), 16), "prefix"},
		{nilClient.StripedLock("p", 16), "client"},
		{(*client.StripedLock)(nil), "striped lock"},
	}
	for _, tc := range cases {
		field := "warden: invalid argument: " + tc.field + ": "
		require.ErrorIs(t, tc.s.Err(), client.ErrInvalidArgument, tc.field)
		assert.True(t, strings.HasPrefix(tc.s.Err().Error(), field), "%v names %s", tc.s.Err(), tc.field)
		assert.Equal(t, 1, strings.Count(tc.s.Err().Error(), "warden: "), "one line, one prefix: %v", tc.s.Err())
		assert.Empty(t, tc.s.Name("k"))
		for what, m := range map[string]client.Mutex{"For": tc.s.For("k"), "ForKeys": tc.s.ForKeys("k", "l")} {
			_, err := m.TryLock(ctx)
			require.ErrorIs(t, err, client.ErrInvalidArgument, "%s %s", tc.field, what)
			if tc.field != "client" && tc.field != "striped lock" { // a nil Client's lock is a nil handle
				assert.True(t, strings.HasPrefix(err.Error(), field), "%s: %v", what, err)
			}
			require.ErrorIs(t, m.Lock(ctx), client.ErrInvalidArgument)
			require.ErrorIs(t, m.Unlock(ctx), client.ErrInvalidArgument)
		}
	}
	_, err := c.StripedLock("p", 16).ForKeys().TryLock(ctx)
	require.ErrorIs(t, err, client.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "keys: none")
	assert.Empty(t, dataKeys(t, e.rdb), "nothing was written")
	assert.NoError(t, c.StripedLock("p", client.MaxStripes).Err(), "the bound itself is valid")
}

// keysOnStripes returns, for each stripe index in want, a key of that
// stripe, and a second key of want[0]'s stripe.
func keysOnStripes(t *testing.T, s *client.StripedLock, want ...int) (keys []string, twin string) {
	t.Helper()
	found := map[int]string{}
	for i := 0; i < 100000 && (len(found) < len(want) || twin == ""); i++ {
		k := fmt.Sprintf("key-%d", i)
		n := s.Stripe(k)
		if _, ok := found[n]; ok {
			if n == want[0] && twin == "" && found[n] != k {
				twin = k
			}
			continue
		}
		found[n] = k
	}
	for _, n := range want {
		require.Contains(t, found, n, "a key on stripe %d", n)
		keys = append(keys, found[n])
	}
	require.NotEmpty(t, twin)
	return keys, twin
}

// Keys on one stripe exclude each other, keys on different stripes do
// not; the stripe's lock in Redis is "<prefix>:<n>", an ordinary
// reentrant lock.
func TestStripedLockExcludesKeysOfOneStripeOnly(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	a, b := e.newClient(t).StripedLock("stock", 16), e.newClient(t).StripedLock("stock", 16)
	keys, twin := keysOnStripes(t, a, 3, 5)

	l := a.For(keys[0])
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, int64(1), e.rdb.Exists(ctx, "stock:3").Val(), "stripe 3's lock is held")
	assert.Equal(t, "1", e.rdb.HGet(ctx, "stock:3", l.Owner()).Val(), "with Redisson's layout")
	ok, err := b.For(twin).TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "another key of the same stripe is refused")
	other := b.For(keys[1])
	ok, err = other.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "a key of another stripe is free")
	require.NoError(t, other.Unlock(ctx))

	ok, err = l.TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "a stripe's handle is reentrant")
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	ok, err = b.For(twin).TryLock(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "free once unlocked")
}

// ForKeys takes each stripe of its keys once, in ascending stripe index:
// with stripe 10 held elsewhere, a ForKeys over stripes 10, 2 and 3 holds
// 2 and 3 while it waits for 10 (by name, "p:10" would come first and it
// would hold nothing), then gets all three, and gives all back.
func TestStripedLockForKeysTakesStripesInAscendingIndex(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t)
	s := c.StripedLock("p", 16)
	keys, twin := keysOnStripes(t, s, 10, 2, 3)
	blocker := e.newClient(t).StripedLock("p", 16).For(keys[0])
	require.NoError(t, blocker.Lock(ctx))

	m := s.ForKeys(keys[0], twin, keys[1], keys[2], keys[1])
	done := inBackground(t, m.Lock)
	eventually(t, 5*time.Second, func() bool { return e.rdb.Exists(ctx, "p:2", "p:3").Val() == 2 },
		"stripes 2 and 3 taken while 10 is awaited")
	require.NoError(t, blocker.Unlock(ctx))
	require.NoError(t, await.Value(t, done, 10*time.Second, "ForKeys's Lock, once stripe 10 is free").err)
	assert.Equal(t, int64(3), e.rdb.Exists(ctx, "p:2", "p:3", "p:10").Val(), "three stripes held")
	n, err := e.rdb.Keys(ctx, "p:*").Result()
	require.NoError(t, err)
	assert.Len(t, n, 3, "each stripe once: %v", n)
	for _, k := range n {
		assert.Equal(t, []string{"1"}, holdCounts(t, e, k), "%s held once, by one owner", k)
	}
	require.NoError(t, m.Unlock(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, "p:2", "p:3", "p:10").Val(), "all given back")
}

// holdCounts are the hold counts in the lock hash key: the values of its
// owner fields (not of warden's acquire records, "<owner>:warden_acq").
func holdCounts(t *testing.T, e *env, key string) []string {
	t.Helper()
	fields, err := e.rdb.HGetAll(context.Background(), key).Result()
	require.NoError(t, err)
	var counts []string
	for f, v := range fields {
		if !strings.HasSuffix(f, ":warden_acq") {
			counts = append(counts, v)
		}
	}
	return counts
}

// Goroutines taking the stripes of random key sets, given in random
// orders, never deadlock and never share a stripe.
func TestStripedLockForKeysContention(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const stripes, workers, rounds = 8, 6, 15
	var holders [stripes]atomic.Int32
	var violations atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		s := e.newClient(t).StripedLock("contend", stripes)
		rnd := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for range rounds {
				keys := make([]string, 1+rnd.IntN(4))
				for i := range keys {
					keys[i] = fmt.Sprintf("k%d", rnd.IntN(40))
				}
				m := s.ForKeys(keys...)
				if !assert.NoError(t, m.Lock(ctx)) {
					return
				}
				seen := map[int]bool{}
				for _, k := range keys {
					if n := s.Stripe(k); !seen[n] {
						seen[n] = true
						if holders[n].Add(1) > 1 {
							violations.Add(1)
						}
					}
				}
				time.Sleep(time.Millisecond)
				for n := range seen {
					holders[n].Add(-1)
				}
				if !assert.NoError(t, m.Unlock(ctx)) {
					return
				}
			}
		})
	}
	await.Group(t, &wg, 60*time.Second, "every worker's rounds (a deadlock would hang here)")
	assert.Zero(t, violations.Load(), "a stripe held by two at once")
}
