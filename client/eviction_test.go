package client_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/redisproc"
	"github.com/warden-go/warden/internal/redistest"
	"github.com/warden-go/warden/redisio"
)

// policyRecords returns what a Client started on rdb logged: once it
// logged something when logs is set, else once the server (admin's) ran
// its CONFIG GET; the Client is closed then.
func policyRecords(t *testing.T, rdb redis.UniversalClient, admin *redis.Client, logs bool) []recorded {
	t.Helper()
	configCalls := func() int64 {
		var n int64
		for name, rest := range redisproc.InfoFields(admin.Info(context.Background(), "commandstats").Val()) {
			if strings.HasPrefix(name, "cmdstat_config") {
				calls, _, err := redisproc.CommandStat(rest)
				require.NoError(t, err)
				n += int64(calls)
			}
		}
		return n
	}
	before := configCalls()
	rec := newRecorder()
	c, err := client.New(rdb, client.WithLogger(slog.New(rec)))
	require.NoError(t, err)
	if logs {
		eventually(t, 5*time.Second, func() bool { return len(rec.all()) > 0 }, "the check's record")
	} else {
		eventually(t, 5*time.Second, func() bool { return configCalls() > before }, "the Client asked for the policy")
	}
	time.Sleep(50 * time.Millisecond) // for a second record, if any
	require.NoError(t, c.Close(testCtx(t)))
	return rec.all()
}

// A Client started on a server whose maxmemory-policy may evict keys
// (allkeys-*, and volatile-*: every lock has a TTL) logs one warning that
// names the policy; on noeviction it logs nothing; a user the ACL refuses
// CONFIG GET is noted at Debug, and the Client works.
func TestClientWarnsOnceWhenTheServerMayEvictLocks(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"allkeys-lru", "volatile-lru", "allkeys-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", policy))
			admin := srv.Client(t)
			got := policyRecords(t, admin, admin, true)
			require.Len(t, got, 1, "one record: %+v", got)
			assert.Equal(t, slog.LevelWarn, got[0].level)
			assert.Equal(t, policy, got[0].attrs["policy"])
			assert.Equal(t, srv.Addr(), got[0].attrs["addr"], "it names the server")
			assert.Contains(t, got[0].msg, "noeviction", "it says what to set")
			if strings.HasPrefix(policy, "allkeys-") {
				assert.Contains(t, got[0].msg, "so are fencing token counters", "counters go too")
			} else {
				assert.Contains(t, got[0].msg, "fencing token counters, which have no TTL, are kept")
				assert.NotContains(t, got[0].msg, "ErrFencingReset")
			}
		})
	}
	t.Run("noeviction", func(t *testing.T) {
		admin := redistest.Start(t).Client(t)
		assert.Empty(t, policyRecords(t, admin, admin, false), "nothing logged")
	})
	t.Run("CONFIG refused", func(t *testing.T) {
		srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
		admin := srv.Client(t)
		ctx := testCtx(t)
		require.NoError(t, admin.Do(ctx, "acl", "setuser", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config").Err())
		user := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "noconfig", Password: "pw"})
		t.Cleanup(func() { _ = user.Close() })
		got := policyRecords(t, user, admin, true)
		require.Len(t, got, 1, "one record: %+v", got)
		assert.Equal(t, slog.LevelDebug, got[0].level)
		assert.Contains(t, got[0].msg, "could not ask")
		assert.Contains(t, got[0].attrs["err"], "NOPERM")
		assert.Equal(t, srv.Addr(), got[0].attrs["addr"], "it names the server")

		c, _, _ := ownSystemClient(t, user)
		l := c.Lock("works")
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	})
	t.Run("no answer", func(t *testing.T) {
		// A server that does not answer within the check's 5 s bound (a
		// frozen process; the go-redis client gives up at the context's
		// deadline) is noted at Debug.
		srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
		user := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, ReadTimeout: time.Minute, MaxRetries: -1})
		t.Cleanup(func() { _ = user.Close() })
		srv.Pause(t)
		resumed := false
		t.Cleanup(func() {
			if !resumed {
				srv.Resume(t)
			}
		})
		rec := newRecorder()
		c, err := client.New(user, client.WithLogger(slog.New(rec)))
		require.NoError(t, err)
		eventually(t, 10*time.Second, func() bool { return len(rec.all()) > 0 }, "the check's record")
		srv.Resume(t)
		resumed = true
		require.NoError(t, c.Close(testCtx(t)))
		got := rec.all()
		require.NotEmpty(t, got)
		assert.Equal(t, slog.LevelDebug, got[0].level)
		assert.Contains(t, got[0].msg, "timed out")
		assert.Equal(t, srv.Addr(), got[0].attrs["addr"])
	})
	t.Run("closed", func(t *testing.T) {
		// Close during the check ends it without a note.
		srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
		user := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, ReadTimeout: time.Minute, MaxRetries: -1})
		t.Cleanup(func() { _ = user.Close() })
		srv.Pause(t)
		rec := newRecorder()
		c, err := client.New(user, client.WithLogger(slog.New(rec)))
		require.NoError(t, err)
		closed := make(chan error, 1)
		go func() { closed <- c.Close(testCtx(t)) }()
		time.Sleep(100 * time.Millisecond) // the close under way
		srv.Resume(t)
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
		for _, r := range rec.all() {
			assert.NotContains(t, r.msg, "maxmemory", "no note of the check: %+v", r)
		}
	})
}

// On a server with maxmemory-policy allkeys-lru, memory pressure evicts a
// fenced lock's token counter, which INCR then starts again at 1. The
// Client that handed out tokens up to 3 never hands out 1, 2 or 3 again:
// the acquire fails with ErrFencingReset, naming both tokens, raises the
// counter back to 3 and is given back; tokens go on from there.
func TestFencedLockRefusesATokenTheCounterGaveOutBefore(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	rdb := srv.Client(t)
	c, _, _ := ownSystemClient(t, rdb)
	ctx := testCtx(t)
	const name = "fence"
	counter := redisio.TokenKey(name)
	f := c.FencedLock(name)
	for want := int64(1); want <= 3; want++ {
		token, err := f.LockToken(ctx)
		require.NoError(t, err)
		require.Equal(t, want, token)
		require.NoError(t, f.Unlock(ctx))
	}

	// Evict for real: a memory limit just above what is used, and writes
	// until the server has evicted the counter.
	used, err := strconv.ParseInt(infoField(t, rdb, "memory", "used_memory"), 10, 64)
	require.NoError(t, err)
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+1<<20, 10)).Err())
	value := strings.Repeat("x", 2048)
	evicted := false
	for i := 0; i < 200 && !evicted; i++ {
		pipe := rdb.Pipeline()
		for j := range 100 {
			pipe.Set(ctx, "filler:"+strconv.Itoa(i*100+j), value, 0)
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		evicted = rdb.Exists(ctx, counter).Val() == 0
	}
	require.True(t, evicted, "the server evicted the counter")
	t.Logf("the counter was evicted (evicted_keys %s)", infoField(t, rdb, "stats", "evicted_keys"))
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())

	token, err := f.LockToken(ctx)
	require.ErrorIs(t, err, client.ErrFencingReset, "token %d", token)
	assert.Zero(t, token)
	t.Log(err)
	assert.Contains(t, err.Error(), "got token 1")
	assert.Contains(t, err.Error(), "handed out 3")
	assert.Equal(t, 1, strings.Count(err.Error(), "warden: "), "one prefix")
	locked, err := f.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked, "the acquire was given back")
	select {
	case <-f.Lost():
		t.Fatal("no holding began, none was lost")
	default:
	}

	// The refused acquire raised the counter back to 3: tokens go on from
	// there, by every way in.
	assert.Equal(t, "3", rdb.Get(ctx, counter).Val(), "the counter raised to the highest token handed out")
	token, ok, err := f.TryLockToken(ctx, 0, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(4), token)
	require.NoError(t, f.Unlock(ctx))
	require.NoError(t, f.Lock(ctx))
	token, err = f.Token(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(5), token)

	// A counter lost while the lock is held: Token says so too.
	require.NoError(t, rdb.Del(ctx, counter).Err())
	_, err = f.Token(ctx)
	require.ErrorIs(t, err, client.ErrFencingReset)
	require.NoError(t, f.Unlock(ctx))
}

// infoField reads one field of an INFO section.
func infoField(t *testing.T, rdb *redis.Client, section, field string) string {
	t.Helper()
	for _, line := range strings.Split(rdb.Info(context.Background(), section).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("no %s in INFO %s", field, section)
	return ""
}

// A Client that finds a fenced lock's counter reset raises it to the
// highest token it handed out before it gives the refused hold back: the
// one acquire fails with ErrFencingReset, and the next, from this Client
// or any other, takes the token after the highest (no run of refused
// acquires until the counter catches up, no token repeated by a process
// that never saw the higher ones). Token, which finds a reset of a held
// lock, raises the counter the same way.
func TestFencedLockResetRaisesTheCounter(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := testCtx(t)
	const name = "fence-raise"
	counter := redisio.TokenKey(name)
	a, _, _ := ownSystemClient(t, rdb)
	fa := a.FencedLock(name)
	require.NoError(t, rdb.Set(ctx, counter, 1000, 0).Err())
	token, err := fa.LockToken(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1001), token)
	require.NoError(t, fa.Unlock(ctx))

	require.NoError(t, rdb.Del(ctx, counter).Err())
	_, err = fa.LockToken(ctx)
	require.ErrorIs(t, err, client.ErrFencingReset)
	t.Log(err)
	assert.Contains(t, err.Error(), "raised to 1001", "the error says the counter was put back")
	assert.Equal(t, "1001", rdb.Get(ctx, counter).Val(), "the counter is back at the highest token handed out")
	assert.Zero(t, rdb.Exists(ctx, name).Val(), "the refused hold was given back")

	// A fresh Client, which never saw the higher tokens, goes on from them.
	b, _, _ := ownSystemClient(t, rdb)
	fb := b.FencedLock(name)
	token, err = fb.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1002), token, "the other Client's next token")
	require.NoError(t, fb.Unlock(ctx))
	token, err = fa.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1003), token, "the next acquire of the Client that saw the reset")

	// A counter lost while held: Token fails once and raises it.
	require.NoError(t, rdb.Del(ctx, counter).Err())
	_, err = fa.Token(ctx)
	require.ErrorIs(t, err, client.ErrFencingReset)
	t.Log(err)
	assert.True(t, strings.HasPrefix(err.Error(), "warden: fenced lock "+name+": fencing token counter went backwards: "+
		"the counter reads 0, this Client handed out 1003 before (the counter "+counter+" was evicted"), "the acquire's shape: %v", err)
	assert.Contains(t, err.Error(), "raised to 1003")
	assert.Equal(t, "1003", rdb.Get(ctx, counter).Val())
	token, err = fa.Token(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1003), token, "the holding's own token once the counter is back")

	// A reentry after a reset is refused too, giving back its own hold
	// only; once the counter is raised, a reentry answers the holding's
	// token.
	require.NoError(t, rdb.Del(ctx, counter).Err())
	_, err = fa.LockToken(ctx)
	require.ErrorIs(t, err, client.ErrFencingReset)
	assert.Contains(t, err.Error(), "got token 0")
	held, err := fa.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, held, "the holding keeps its first hold")
	token, err = fa.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1003), token, "the reentry answers the holding's token")
	require.NoError(t, fa.Unlock(ctx))
	require.NoError(t, fa.Unlock(ctx))
	token, err = fb.LockToken(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1004), token)
	require.NoError(t, fb.Unlock(ctx))
}
