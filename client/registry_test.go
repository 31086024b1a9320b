package client_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/redisio"
)

// registryRecord waits up to 10 s for c's registry record on rdb to exist
// and satisfy ok, and returns it.
func registryRecord(t *testing.T, rdb redis.UniversalClient, c *client.Client, ok func(map[string]string) bool) map[string]string {
	t.Helper()
	key := redisio.ClientRegistryKey(c.ID())
	var rec map[string]string
	require.Eventually(t, func() bool {
		var err error
		rec, err = rdb.HGetAll(context.Background(), key).Result()
		return err == nil && len(rec) > 0 && ok(rec)
	}, 10*time.Second, 5*time.Millisecond, "registry record %s", key)
	return rec
}

func anyRecord(map[string]string) bool { return true }

// dataKeys lists rdb's keys but the client registry's records, which a
// running Client writes whatever its calls do.
func dataKeys(t *testing.T, rdb redis.UniversalClient) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return withoutRegistry(keys)
}

// withoutRegistry is keys without the client registry's records.
func withoutRegistry(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(k, "warden_client:") {
			out = append(out, k)
		}
	}
	return out
}

// millis parses a registry time.
func millis(t *testing.T, s string) time.Time {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "a Unix ms time: %q", s)
	return time.UnixMilli(n)
}

// The record is written as the Client starts, with every field, a TTL of
// the registry retention, refreshed every period, and deleted by Close.
func TestRegistryRecordLifecycle(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	before := time.Now().Add(-time.Millisecond)
	c := e.newClient(t, client.WithService("orders-api"))
	rec := registryRecord(t, e.rdb, c, anyRecord)

	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, "orders-api", rec["service"])
	assert.Equal(t, host, rec["host"])
	assert.Equal(t, strconv.Itoa(os.Getpid()), rec["pid"])
	assert.NotEmpty(t, rec["version"])
	started, seen := millis(t, rec["started"]), millis(t, rec["seen"])
	assert.False(t, started.Before(before.Truncate(time.Millisecond)), "started %v after the test began %v", started, before)
	assert.False(t, seen.Before(started), "seen %v not before started %v", seen, started)
	assert.WithinDuration(t, time.Now(), started, time.Minute)
	assert.Equal(t, strconv.FormatInt((watchdog/3).Milliseconds(), 10), rec["beat"], "the refresh period")
	assert.Equal(t, strconv.FormatInt(client.DefaultRegistryRetention.Milliseconds(), 10), rec["ttl"], "the TTL each write gives")
	assert.Len(t, rec, 8, "exactly the eight fields: %v", rec)

	key := redisio.ClientRegistryKey(c.ID())
	ttl, err := e.rdb.PTTL(context.Background(), key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, client.DefaultRegistryRetention-time.Minute, "TTL of the default retention")
	assert.LessOrEqual(t, ttl, client.DefaultRegistryRetention)

	// Refreshed: seen moves on, and the record outlives its first TTL.
	refreshed := registryRecord(t, e.rdb, c, func(r map[string]string) bool { return r["seen"] != rec["seen"] })
	assert.True(t, millis(t, refreshed["seen"]).After(seen))
	assert.Equal(t, rec["started"], refreshed["started"], "started stays")
	registryRecord(t, e.rdb, c, func(r map[string]string) bool {
		return time.Since(started) > 2*watchdog // alive well past one TTL
	})

	e.close(t, c)
	n, err := e.rdb.Exists(context.Background(), key).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the record is gone after Close")
}

// WithoutRegistry writes no record; a Client that has one shows the
// registry had time to write.
func TestRegistryOff(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	off := e.newClient(t, client.WithoutRegistry())
	on := e.newClient(t)
	ctx := testCtx(t)
	l := off.Lock("registry-off")
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Unlock(ctx))
	first := registryRecord(t, e.rdb, on, anyRecord)
	registryRecord(t, e.rdb, on, func(r map[string]string) bool { return r["seen"] != first["seen"] })
	keys, err := e.rdb.Keys(ctx, "warden_client:*").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{redisio.ClientRegistryKey(on.ID())}, keys)
}

// The default service is the executable's base name.
func TestRegistryDefaultService(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c := e.newClient(t)
	rec := registryRecord(t, e.rdb, c, anyRecord)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Contains(t, exe, rec["service"])
	assert.NotEmpty(t, rec["service"])
}

// On a fake clock the record is refreshed exactly when the clock passes a
// renewal period, with seen on that clock, and a record deleted behind the
// engine's back comes back whole at the next refresh.
func TestRegistryRefreshOnFakeClock(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	fake := clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e.clk = fake
	c := e.newClient(t, client.WithService("batch"))
	start := fake.Now()
	rec := registryRecord(t, e.rdb, c, anyRecord)
	assert.Equal(t, redisio.UnixMillis(start), rec["started"])
	assert.Equal(t, redisio.UnixMillis(start), rec["seen"])

	period := watchdog / 3
	ctx := testCtx(t)
	key := redisio.ClientRegistryKey(c.ID())
	// The engine arms the registry timer once its last write has come
	// back, a moment after the write shows in Redis: the clock may pass a
	// period before that, and the refresh then comes a period later. Each
	// refresh is at a period's end on the fake clock all the same.
	refreshed := func(want string) bool {
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if seen, err := e.rdb.HGet(ctx, key, "seen").Result(); err == nil && seen == want {
				return true
			}
		}
		return false
	}
	for i := 1; i <= 3; i++ {
		require.NoError(t, fake.BlockUntilContext(ctx, 1), "a timer is armed")
		if i == 2 {
			require.NoError(t, e.rdb.Del(ctx, key).Err())
		}
		for tries := 0; ; tries++ {
			require.Less(t, tries, 10, "refresh %d: no refresh after 10 periods", i)
			fake.Advance(period)
			if refreshed(redisio.UnixMillis(fake.Now())) {
				break
			}
		}
		rec = registryRecord(t, e.rdb, c, anyRecord)
		assert.Equal(t, "batch", rec["service"], "refresh %d", i)
		assert.Equal(t, redisio.UnixMillis(start), rec["started"], "refresh %d", i)
		assert.Len(t, rec, 8, "refresh %d writes every field", i)
	}
}

// A bad service name is refused by New, naming the field.
func TestRegistryServiceValidation(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	for _, name := range []string{"", "a b", "tab\there", "nl\n", string([]byte{0xff}), string(make([]byte, 257))} {
		_, err := client.New(e.rdb, client.WithService(name))
		require.ErrorIs(t, err, client.ErrInvalidArgument, "%q", name)
		assert.Contains(t, err.Error(), "service")
	}
}

// On a Cluster the record is one key in its own slot, the client ID's,
// and nothing else is written for it.
func TestRegistryOnCluster(t *testing.T) {
	t.Parallel()
	e := newClusterEnv(t)
	c := e.newClient(t, client.WithService("cluster-svc"))
	rec := registryRecord(t, e.rdb, c, anyRecord)
	assert.Equal(t, "cluster-svc", rec["service"])
	key := redisio.ClientRegistryKey(c.ID())
	assert.Equal(t, redisio.Slot(c.ID()), redisio.Slot(key), "the client ID is the hash tag")
	ctx := testCtx(t)
	l := c.Lock("cluster-registry-lock")
	require.NoError(t, l.Lock(ctx))
	fields, err := e.rdb.HKeys(ctx, "cluster-registry-lock").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{l.Owner(), redisio.AcquireRecordField(l.Owner())}, fields,
		"the lock's hash holds what it holds without the registry")
	require.NoError(t, l.Unlock(ctx))
}

// Two Clients given one client ID share their owners, and so each other's
// locks: the second warns as it starts, and the first one's Close leaves
// the second's record alone (it deletes only its own).
func TestRegistrySharedClientIDWarnsAndCloseKeepsTheOthersRecord(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	first, err := client.New(e.rdb, client.WithClientID("shared-id"), client.WithService("one"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Close(context.Background()) })
	registryRecord(t, e.rdb, first, anyRecord)
	// A record of its own: started, in Unix ms, differs.
	begun := time.Now().UnixMilli()
	require.Eventually(t, func() bool { return time.Now().UnixMilli() > begun }, time.Second, time.Millisecond)

	rec := newRecorder()
	second, err := client.New(e.rdb, client.WithClientID("shared-id"), client.WithService("two"),
		client.WithLogger(slog.New(rec)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = second.Close(context.Background()) })
	registryRecord(t, e.rdb, second, func(r map[string]string) bool { return r["service"] == "two" })
	require.Eventually(t, func() bool {
		for _, r := range rec.all() {
			if r.level == slog.LevelWarn && strings.Contains(r.msg, "used this client ID") {
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "the second Client warns of the first")

	require.NoError(t, first.Close(ctx))
	got := e.rdb.HGet(ctx, redisio.ClientRegistryKey("shared-id"), "service").Val()
	assert.Equal(t, "two", got, "the first Client's Close left the second's record")
	require.NoError(t, second.Close(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, redisio.ClientRegistryKey("shared-id")).Val(), "the second deleted its own")
}

// WithRegistryRetention sets the record's TTL; a retention below three
// renewal periods is three periods; a bad one is refused naming the field.
func TestRegistryRetention(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	for _, tc := range []struct {
		retention, want time.Duration
	}{{time.Hour, time.Hour}, {time.Millisecond, watchdog}} {
		c := e.newClient(t, client.WithRegistryRetention(tc.retention))
		registryRecord(t, e.rdb, c, anyRecord)
		ttl, err := e.rdb.PTTL(ctx, redisio.ClientRegistryKey(c.ID())).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, tc.want-10*time.Second, "retention %v", tc.retention)
		assert.LessOrEqual(t, ttl, tc.want, "retention %v", tc.retention)
	}
	for _, d := range []time.Duration{0, -time.Second, 1500 * time.Microsecond, 31 * 24 * time.Hour} {
		_, err := client.New(e.rdb, client.WithRegistryRetention(d))
		require.ErrorIs(t, err, client.ErrInvalidArgument, "%v", d)
		assert.Contains(t, err.Error(), "registry retention")
	}
}

// A record left by a Client that stopped without Close (its refreshes
// ended two periods ago) is no reason to warn: a Client that comes back
// under the same client ID writes its own over it quietly.
func TestRegistryStaleRecordUnderTheSameIDIsQuiet(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	key := redisio.ClientRegistryKey("restarted-id")
	stale := time.Now().Add(-time.Minute)
	require.NoError(t, e.rdb.HSet(ctx, key, "service", "old", "host", "elsewhere", "pid", "1",
		"started", redisio.UnixMillis(stale), "seen", redisio.UnixMillis(stale), "beat", "1000").Err())
	rec := newRecorder()
	c, err := client.New(e.rdb, client.WithClientID("restarted-id"), client.WithService("new"),
		client.WithLogger(slog.New(rec)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	registryRecord(t, e.rdb, c, func(r map[string]string) bool { return r["service"] == "new" })
	for _, r := range rec.all() {
		assert.NotContains(t, r.msg, "used this client ID")
	}
}

// A Client started again under the ID of one that closed holding a lock
// is alive: its record is written whole, with no closed mark or field of
// the old record's left in it.
func TestRegistryRestartUnderAClosedID(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	key := redisio.ClientRegistryKey("restarted-closed")
	require.NoError(t, e.rdb.HSet(ctx, key, "service", "old", "host", "elsewhere", "pid", "1", "stray", "x",
		"started", redisio.UnixMillis(time.Now().Add(-time.Minute)), "seen", redisio.UnixMillis(time.Now()),
		redisio.RegistryClosed, redisio.UnixMillis(time.Now())).Err())
	c, err := client.New(e.rdb, client.WithClientID("restarted-closed"), client.WithService("new"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	rec := registryRecord(t, e.rdb, c, func(r map[string]string) bool { return r["service"] == "new" })
	assert.NotContains(t, rec, redisio.RegistryClosed, "the old record's closed mark is gone")
	assert.NotContains(t, rec, "stray", "nothing of the old record is left")
	found := false
	for r, err := range client.Clients(ctx, e.rdb) {
		require.NoError(t, err)
		if r.ID == "restarted-closed" {
			found = true
			assert.True(t, r.Alive(), "the restarted Client is alive")
			assert.True(t, r.Closed.IsZero(), "and not closed")
		}
	}
	assert.True(t, found, "listed by Clients")
}

// Alive tells a running Client's entry from one whose refreshes stopped
// more than two periods ago, by Idle; an entry without a period is alive;
// a closed entry never is.
func TestClientRecordAlive(t *testing.T) {
	t.Parallel()
	r := client.ClientRecord{Idle: 3 * time.Second, Beat: 2 * time.Second}
	assert.True(t, r.Alive())
	r.Beat = time.Second
	assert.False(t, r.Alive())
	r.Beat = 0
	assert.True(t, r.Alive(), "an older warden's entry")
	r.Closed = time.Now()
	assert.False(t, r.Alive(), "a closed entry")
}

// holderRecord inspects name and returns its one holder's registry entry.
func holderRecord(t *testing.T, rdb redis.UniversalClient, name string) *client.ClientRecord {
	t.Helper()
	o, err := client.Inspect(testCtx(t), rdb, name)
	require.NoError(t, err)
	require.Len(t, o.Holders, 1)
	return o.Holders[0].Client
}

// Close releases nothing, so a lock it leaves in Redis keeps its holder
// named: the record is written one last time, closed, with the retention's
// TTL, and Inspect shows the holder as service@host:pid, not alive. A
// Client that held nothing, and CloseAndRelease, delete the record.
func TestRegistryCloseKeepsALockHolderNamed(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	c := e.newClient(t, client.WithService("batch-job"), client.WithRegistryRetention(time.Hour))
	registryRecord(t, e.rdb, c, anyRecord)
	require.NoError(t, c.Lock("close-named").LockLease(ctx, 5*time.Minute))
	before := time.Now().Add(-time.Millisecond)
	e.close(t, c)

	key := redisio.ClientRegistryKey(c.ID())
	rec, err := e.rdb.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	require.NotEmpty(t, rec, "the record of a Client that closed holding a lock stays")
	assert.Equal(t, "batch-job", rec["service"])
	closed := millis(t, rec["closed"])
	assert.False(t, closed.Before(before.Truncate(time.Millisecond)), "closed %v as Close ran (%v)", closed, before)
	ttl, err := e.rdb.PTTL(ctx, key).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 5*time.Minute-time.Minute, "it outlives the lock it held")
	assert.LessOrEqual(t, ttl, time.Hour, "never longer than the retention")

	holder := holderRecord(t, e.rdb, "close-named")
	require.NotNil(t, holder, "the lock's holder is still named after Close")
	assert.Equal(t, "batch-job", holder.Service)
	assert.False(t, holder.Alive(), "a closed Client is not alive")
	assert.Equal(t, closed, holder.Closed)

	idle := e.newClient(t)
	registryRecord(t, e.rdb, idle, anyRecord)
	l := idle.Lock("close-unlocked")
	require.NoError(t, l.LockLease(ctx, 5*time.Minute))
	require.NoError(t, l.Unlock(ctx))
	e.close(t, idle)
	assert.Zero(t, e.rdb.Exists(ctx, redisio.ClientRegistryKey(idle.ID())).Val(), "a Client that holds nothing any more leaves no record")

	rel := e.newClient(t)
	registryRecord(t, e.rdb, rel, anyRecord)
	require.NoError(t, rel.Lock("close-released").LockLease(ctx, 5*time.Minute))
	e.closing[rel].Store(true)
	require.NoError(t, rel.CloseAndRelease(ctx))
	assert.Zero(t, e.rdb.Exists(ctx, redisio.ClientRegistryKey(rel.ID())).Val(), "CloseAndRelease deletes the record")
}

// Alive is judged on the server's clock alone: an entry written a moment
// ago by a host whose clock is a minute off (either way) is alive, and one
// whose TTL shows it unrefreshed for longer than two periods is gone,
// whatever its seen says.
func TestClientRecordAliveByServerClock(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	write := func(id string, seen time.Time, ttl, left time.Duration) {
		key := redisio.ClientRegistryKey(id)
		require.NoError(t, e.rdb.HSet(ctx, key, "service", id, "host", "h", "pid", "1", "started", redisio.UnixMillis(seen),
			"seen", redisio.UnixMillis(seen), "beat", "1000", "ttl", strconv.FormatInt(ttl.Milliseconds(), 10)).Err())
		require.NoError(t, e.rdb.PExpire(ctx, key, left).Err())
	}
	write("skew-behind", time.Now().Add(-time.Minute), time.Hour, time.Hour)
	write("skew-ahead", time.Now().Add(time.Minute), time.Hour, time.Hour)
	write("quiet", time.Now(), time.Hour, time.Hour-10*time.Second)
	got := map[string]client.ClientRecord{}
	for r, err := range client.Clients(ctx, e.rdb) {
		require.NoError(t, err)
		got[r.ID] = r
	}
	assert.True(t, got["skew-behind"].Alive(), "a host a minute behind: %+v", got["skew-behind"])
	assert.True(t, got["skew-ahead"].Alive(), "a host a minute ahead: %+v", got["skew-ahead"])
	assert.False(t, got["quiet"].Alive(), "unrefreshed for 10 s on the server's clock: %+v", got["quiet"])
	assert.InDelta(t, 10*time.Second, got["quiet"].Idle, float64(2*time.Second))
}
