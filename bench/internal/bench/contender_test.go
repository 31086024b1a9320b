package bench_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/bench/internal/bench"
	"github.com/warden-go/warden/internal/redistest"
)

// TestContendersExcludeEachOther is every lock contender's contention test:
// 4 goroutines on one name for a short while, and the workload's holder
// counter never sees two holders.
func TestContendersExcludeEachOther(t *testing.T) {
	cs, srv := contenders(t)
	stats := srv.Client(t)
	for _, c := range cs {
		if !c.Role.Contended() {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			r, err := bench.RunContention(context.Background(), c, stats, "test:c:"+c.Name, 4, 50*time.Microsecond, 200*time.Millisecond)
			require.NoError(t, err)
			assert.Zero(t, r.Violations)
			assert.Positive(t, r.Acquired)
			assert.Equal(t, r.Acquired, r.Wait.N)
			assert.Equal(t, r.Successions, r.Reacquired+r.Handoff.N)
			assert.Positive(t, r.Cost.Sent.Cmds)
			assert.Positive(t, r.Cost.Server.Calls)
		})
	}
}

// TestThroughputCountsCommands checks the command accounting on the floor,
// whose cost is known exactly: two PINGs per pair, sent and executed, plus
// the setup of any connection dialled meanwhile.
func TestThroughputCountsCommands(t *testing.T) {
	cs, srv := contenders(t)
	var floor *bench.Contender
	for _, c := range cs {
		if c.Name == bench.Floor {
			floor = c
		}
	}
	require.NotNil(t, floor)
	r, err := bench.RunThroughput(context.Background(), floor, srv.Client(t), "test:floor", 2, 0, 101)
	require.NoError(t, err)
	assert.Equal(t, 101, r.Pairs)
	by := r.Cost.Server.ByCommand
	assert.Equal(t, uint64(202), by["ping"], "%v", by)
	// A second goroutine may dial a connection: HELLO and two CLIENT
	// SETINFO, sent through the hook too (Redis before 7.2 rejects SETINFO,
	// and commandstats does not count it).
	dials := by["hello"]
	assert.GreaterOrEqual(t, r.Cost.Sent.Cmds, 202+dials, "%v", by)
	assert.LessOrEqual(t, r.Cost.Sent.Cmds, 202+3*dials, "%v", by)
	assert.Equal(t, 202+dials+by["client|setinfo"], r.Cost.Server.Calls, "%v", by)
	assert.Zero(t, r.Cost.Server.Scripts, "PINGs run no script")
	assert.Positive(t, r.Cost.Server.CPU, "Redis used CPU")
	assert.Positive(t, r.Cost.ClientCPU, "this process used CPU")

	// warden's pairs are two scripts each: their time is counted, and it
	// is part of Redis's CPU.
	w, err := bench.RunThroughput(context.Background(), cs[0], srv.Client(t), "test:scripts", 1, 0, 50)
	require.NoError(t, err)
	require.Equal(t, bench.Warden, cs[0].Name)
	assert.Equal(t, uint64(100), w.Cost.Server.ByCommand["evalsha"])
	assert.Positive(t, w.ScriptsPerPair())
	assert.Less(t, w.ScriptsPerPair(), w.RedisCPUPerPair()*1.5, "script time is within Redis's CPU (with its clock's grain)")
}

// TestLibrariesSpeakTheirProtocol checks each peer's unlock refuses a lock
// it does not hold (the compare in compare-and-delete), and that a Lock
// on a held name returns when its context ends (warden's fair lock too).
func TestLibrariesSpeakTheirProtocol(t *testing.T) {
	cs, _ := contenders(t)
	ctx := context.Background()
	for i, c := range cs {
		if c.Role != bench.RoleLock && c.Role != bench.RoleVariant {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			name := "test:protocol:" + strconv.Itoa(i)
			a, b := c.NewMutex(name), c.NewMutex(name)
			require.NoError(t, a.Lock(ctx))
			short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			defer cancel()
			assert.Error(t, b.Lock(short), "second holder got the lock")
			require.NoError(t, a.Unlock(ctx))
			if c.Role == bench.RoleVariant {
				return // warden's fair lock: unlocking one that is gone succeeds, as Redisson's does
			}
			assert.Error(t, a.Unlock(ctx), "unlock of a released lock succeeded")
		})
	}
}

func TestRenewalWaitersPassivation(t *testing.T) {
	srv := redistest.Start(t)
	stats := srv.Client(t)
	ctx := context.Background()

	rn, err := bench.RunRenewal(ctx, srv.Addr(), stats, "test:d", 50, 300*time.Millisecond, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, rn.Periods)
	assert.Positive(t, rn.Cost.Sent.Cmds, "no renewal seen")
	assert.Positive(t, rn.CPU)

	w, err := bench.RunWaiters(ctx, srv.Addr(), stats, "test:e", 30, 100*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 30, w.Acquired)
	assert.Zero(t, w.Failed)
	assert.Zero(t, w.Violations)
	assert.Equal(t, 30, w.Handoff.N)

	p, err := bench.RunPassivation(ctx, srv.Addr(), "test:f", 40, 100*time.Millisecond, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, p.Passivated.KeyActors)
	assert.Positive(t, p.Touched.HeapAlloc)
}

// contender returns the contender called name, on a Redis of its own.
func contender(t *testing.T, name string) (*bench.Contender, *redistest.Server) {
	t.Helper()
	cs, srv := contenders(t)
	for _, c := range cs {
		if c.Name == name {
			return c, srv
		}
	}
	require.FailNow(t, "no contender "+name)
	return nil, nil
}

// TestRueidislockHoldsOnAContextOfItsOwn checks the rueidislock peer as the
// benchmark configures it: one key (KeyMajority 1) and a hold that outlives
// the context Lock was called with, ended by Unlock alone.
func TestRueidislockHoldsOnAContextOfItsOwn(t *testing.T) {
	c, srv := contender(t, bench.Rueidislock)
	rdb := srv.Client(t)
	ctx := context.Background()
	a, b := c.NewMutex("test:rueidis"), c.NewMutex("test:rueidis")

	call, cancel := context.WithCancel(ctx)
	require.NoError(t, a.Lock(call))
	cancel()
	assert.Equal(t, []int64{1, 0}, []int64{
		rdb.Exists(ctx, "rueidislock:0:test:rueidis").Val(),
		rdb.Exists(ctx, "rueidislock:1:test:rueidis").Val(),
	}, "one key per lock")
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	assert.ErrorIs(t, b.Lock(short), context.DeadlineExceeded, "the hold ended with the Lock call's context")

	require.NoError(t, a.Unlock(ctx))
	assert.Zero(t, rdb.Exists(ctx, "rueidislock:0:test:rueidis").Val(), "Unlock returned before the key was gone")
	wait, stop2 := context.WithTimeout(ctx, 10*time.Second)
	defer stop2()
	require.NoError(t, b.Lock(wait), "the waiter was not given the released lock")
	require.NoError(t, b.Unlock(ctx))
	assert.Positive(t, c.Counter.Read().Cmds, "rueidislock's commands are not counted")
}

// TestRedissonBareSpeaksRedissonsLayout checks the redisson-bare baseline
// keeps Redisson's RLock layout: a hash with the owner's entry count, the
// fixed lease as its TTL, the unlock message on the lock's channel, and
// exclusion against a hold another Redisson client wrote.
func TestRedissonBareSpeaksRedissonsLayout(t *testing.T) {
	c, srv := contender(t, bench.RedissonBare)
	rdb := srv.Client(t)
	ctx := context.Background()
	m := c.NewMutex("test:rb")

	require.NoError(t, m.Lock(ctx))
	h := rdb.HGetAll(ctx, "test:rb").Val()
	require.Len(t, h, 1, "%v", h)
	for owner, count := range h {
		assert.Regexp(t, `^[0-9a-f-]{36}:[0-9]+$`, owner, "owner is <client id>:<thread id>")
		assert.Equal(t, "1", count)
	}
	ttl := rdb.PTTL(ctx, "test:rb").Val()
	assert.Greater(t, ttl, bench.PeerLease-5*time.Second)
	assert.LessOrEqual(t, ttl, bench.PeerLease)

	sub := rdb.Subscribe(ctx, "redisson_lock__channel:{test:rb}")
	defer func() { require.NoError(t, sub.Close()) }()
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Unlock(ctx))
	got, err := sub.ReceiveTimeout(ctx, 10*time.Second)
	require.NoError(t, err)
	msg, ok := got.(*redis.Message)
	require.True(t, ok, "%T", got)
	assert.Equal(t, "0", msg.Payload)
	assert.Zero(t, rdb.Exists(ctx, "test:rb").Val())

	require.NoError(t, rdb.HSet(ctx, "test:rb", "another-client:7", 1).Err())
	require.NoError(t, rdb.PExpire(ctx, "test:rb", time.Minute).Err())
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, m.Lock(short), context.DeadlineExceeded, "took a lock another Redisson client holds")
	assert.Error(t, m.Unlock(ctx), "released another Redisson client's lock")
	assert.Equal(t, map[string]string{"another-client:7": "1"}, rdb.HGetAll(ctx, "test:rb").Val())
}

// TestWardenBareSpeaksWardensProtocol checks the warden-bare baseline
// sends warden's own plain-lock calls: a warden Client sees its lock held
// (the hash with the owner's count and acquire record), waits for it and
// is woken by its unlock message; an Unlock with a local waiter queued
// hands the lock over in the unlock's round trip, in arrival order.
func TestWardenBareSpeaksWardensProtocol(t *testing.T) {
	c, srv := contender(t, bench.WardenBare)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wc, wrdb, _, err := bench.NewWarden(srv.Addr())
	require.NoError(t, err)
	defer func() { require.NoError(t, wc.Close(ctx)); require.NoError(t, wrdb.Close()) }()

	first, second, third := c.NewMutex("test:wb"), c.NewMutex("test:wb"), c.NewMutex("test:wb")
	require.NoError(t, first.Lock(ctx))
	h := rdb.HGetAll(ctx, "test:wb").Val()
	require.Len(t, h, 2, "the owner's count and its acquire record: %v", h)
	for field, v := range h {
		if strings.HasSuffix(field, ":warden_acq") {
			assert.NotEmpty(t, v, "the acquire's request ID")
		} else {
			assert.Regexp(t, `:[0-9]+$`, field, "the owner ends in a number")
			assert.Equal(t, "1", v)
		}
	}
	ttl := rdb.PTTL(ctx, "test:wb").Val()
	assert.Greater(t, ttl, bench.PeerLease-5*time.Second)
	ok, err := wc.Lock("test:wb").TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a warden Client took a lock warden-bare holds")

	// Two local waiters, queued in order; the first Unlock hands over.
	got := make(chan string, 2)
	go func() { assert.NoError(t, second.Lock(ctx)); got <- "second" }()
	require.Eventually(t, func() bool { return bench.QueuedLocks(c, "test:wb") == 1 }, 5*time.Second, time.Millisecond)
	go func() { assert.NoError(t, third.Lock(ctx)); got <- "third" }()
	require.Eventually(t, func() bool { return bench.QueuedLocks(c, "test:wb") == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, first.Unlock(ctx))
	assert.Equal(t, "second", <-got, "handed to the first waiter")
	assert.Equal(t, int64(1), rdb.Exists(ctx, "test:wb").Val(), "held throughout")
	require.NoError(t, second.Unlock(ctx))
	assert.Equal(t, "third", <-got)

	// A warden Client waiting on it is woken by the last Unlock's message.
	woke := make(chan error, 1)
	go func() { woke <- wc.Lock("test:wb").LockLease(ctx, time.Minute) }()
	time.Sleep(50 * time.Millisecond) // the Client's attempt is refused and it listens
	require.NoError(t, third.Unlock(ctx))
	select {
	case err := <-woke:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the warden Client was not woken by warden-bare's unlock")
	}
}
