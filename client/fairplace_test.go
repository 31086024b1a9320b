package client_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// A fair waiter's place in Redis's queue is kept alive by its engine while
// it waits, as a held lock's lease is: a crashed waiter's place lapses
// within one place time (the watchdog timeout by default), a live one's
// never does, and a place a Redisson client wrote keeps its own deadline.

// childFairWaitEnv names the Redis address, fair lock and watchdog timeout
// ("addr|name|watchdog") a child process of this test binary waits for
// before it waits to be killed.
const childFairWaitEnv = "WARDEN_TEST_CHILD_FAIR_WAIT"

// waitFairUntilKilled is the child: it waits for the fair lock in spec,
// prints "queued <owner>" once its place is in Redis's queue, and blocks.
func waitFairUntilKilled(spec string) int {
	parts := strings.Split(spec, "|")
	watchdog, err := time.ParseDuration(parts[2])
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: parts[0]})
	c, err := client.New(rdb, client.WithWatchdogTimeout(watchdog))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	l := c.FairLock(parts[1])
	returned := make(chan error, 1)
	go func() { returned <- l.Lock(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-returned:
			fmt.Println("error: Lock returned", err)
			return 2
		default:
		}
		if rdb.LPos(ctx, redisio.FairQueueKey(parts[1]), l.Owner(), redis.LPosArgs{}).Err() == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("error: not queued after 10s")
			return 2
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println("queued " + l.Owner())
	select {}
}

// queuePos is owner's position in name's fair queue, -1 when not queued.
func queuePos(t *testing.T, e *env, name, owner string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pos, err := e.rdb.LPos(ctx, redisio.FairQueueKey(name), owner, redis.LPosArgs{}).Result()
	if err == redis.Nil {
		return -1
	}
	require.NoError(t, err)
	return pos
}

// placeDeadline is owner's deadline in name's fair queue (its score).
func placeDeadline(t *testing.T, e *env, name, owner string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := e.rdb.ZScore(ctx, redisio.FairTimeoutKey(name), owner).Result()
	require.NoError(t, err, "%s has a place", owner)
	return time.UnixMilli(int64(ms))
}

// placeAlive is when owner's place in name's fair queue lapses for warden
// (its liveness in the places record).
func placeAlive(t *testing.T, e *env, name, owner string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := e.rdb.HGet(ctx, redisio.FairPlacesKey(name), owner).Int64()
	require.NoError(t, err, "%s has a warden place", owner)
	return time.UnixMilli(ms)
}

// Holder, waiter B in a process of its own, waiter C behind it; B is
// killed with SIGKILL and the holder unlocks at once: C gets the lock
// within about one watchdog timeout of the kill (B's place, refreshed no
// more, lapses), not after B's 5-minute allowance.
func TestCrashedFairWaiterGivesUpItsPlaceWithinOneWatchdog(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	const wd = 1500 * time.Millisecond
	const name = "fair-crashed-waiter"
	ctx := testCtx(t)
	holder := e.newClient(t, client.WithWatchdogTimeout(wd)).FairLock(name)
	require.NoError(t, holder.Lock(ctx))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childFairWaitEnv+"="+e.srv.Addr()+"|"+name+"|"+wd.String())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n') // "" once the child is killed
		lines <- line
	}()
	line := await.Value(t, lines, 20*time.Second, "the child's first line")
	owner, ok := strings.CutPrefix(strings.TrimSpace(line), "queued ")
	require.True(t, ok, "child said %q", line)
	require.Zero(t, queuePos(t, e, name, owner), "the child's waiter B heads the queue")

	c := e.newClient(t, client.WithWatchdogTimeout(wd)).FairLock(name)
	got := inBackground(t, c.Lock)
	eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, c.Owner()) == 1 }, "C queued behind B")

	// B's engine keeps its place alive while it lives.
	first := placeAlive(t, e, name, owner)
	eventually(t, 3*wd, func() bool { return placeAlive(t, e, name, owner).After(first) }, "B's place refreshed")

	require.NoError(t, cmd.Process.Kill()) // kill -9
	killed := time.Now()
	require.NoError(t, holder.Unlock(ctx)) // wakes B only, which is gone
	r, _ := awaitWhileTime(t, e, got, 20*time.Second, "the live waiter C")
	require.NoError(t, r.err)
	took := r.at.Sub(killed)
	t.Logf("live fair waiter C got the lock %v after waiter B's kill -9 and the holder's unlock (watchdog %v)",
		took.Round(time.Millisecond), wd)
	assert.LessOrEqual(t, took, wd+750*time.Millisecond, "within about one watchdog timeout of the kill")
	assert.Equal(t, int64(-1), queuePos(t, e, name, owner), "B's place was given up")
	require.NoError(t, c.Unlock(ctx))
}

// A live waiter that waits many place times (and many watchdog timeouts)
// never loses its place: a waiter that comes later never overtakes it,
// neither while the holder holds nor after another waiter took the lock
// ahead of both (which moves the deadlines of Redisson's places).
func TestLiveFairWaiterNeverLosesItsPlace(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		const name = "fair-long-wait"
		// Long enough that a refresh delayed by a loaded machine (make
		// test's race-built packages on 2 CPUs) does not lapse the place.
		const place = 600 * time.Millisecond
		ctx := testCtx(t)
		holder := e.newClient(t).FairLock(name)
		require.NoError(t, holder.Lock(ctx))
		opts := []client.Option{client.WithFairPlaceTime(place)}
		first := e.newClient(t, opts...).FairLock(name)
		second := e.newClient(t, opts...).FairLock(name)
		late := e.newClient(t, opts...).FairLock(name)
		b := newBackground(t, 3)
		b.run(0, first.Lock)
		eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, first.Owner()) == 0 }, "first queued")
		b.run(1, second.Lock)
		eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, second.Owner()) == 1 }, "second queued")

		// keeps checks, over d, that every one of owners stays where it is
		// with a deadline ahead.
		keeps := func(d time.Duration, owners ...string) {
			t.Helper()
			for end := e.clk.Now().Add(d); e.clk.Now().Before(end); {
				e.advance(place / 4)
				now := e.clk.Now()
				for i, o := range owners {
					require.Equal(t, int64(i), queuePos(t, e, name, o), "%s keeps its place", o)
					require.True(t, placeDeadline(t, e, name, o).After(now), "%s's deadline is ahead", o)
				}
			}
		}
		keeps(3*watchdog, first.Owner(), second.Owner()) // 5 place times, 3 watchdogs

		require.NoError(t, holder.Unlock(ctx))
		r := await.Value(t, b.C, 10*time.Second, "first")
		require.NoError(t, r.err)
		require.Equal(t, 0, r.i, "first acquires first")

		b.run(2, late.Lock)
		eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, late.Owner()) == 1 }, "late queued")
		keeps(2*watchdog, second.Owner(), late.Owner())

		require.NoError(t, first.Unlock(ctx))
		r = await.Value(t, b.C, 10*time.Second, "second")
		require.NoError(t, r.err)
		assert.Equal(t, 1, r.i, "second acquires before late")
		require.NoError(t, second.Unlock(ctx))
		r = await.Value(t, b.C, 10*time.Second, "late")
		require.NoError(t, r.err)
		assert.Equal(t, 2, r.i)
		require.NoError(t, late.Unlock(ctx))
		assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name),
			redisio.FairPlacesKey(name)).Val(), "the queue is gone with its last waiter")
	})
}

// A place written the way a Redisson client's fair-lock script writes it
// (a queue entry whose deadline is the lock's expiry plus its allowance)
// is never refreshed by warden: it lapses at its own deadline, and warden's
// waiter behind it (its deadline behind the Redisson place's, as Redisson
// would write it) takes the lock then, while its own place is refreshed
// all along.
func TestRedissonFairPlaceKeepsItsDeadline(t *testing.T) {
	both(t, func(t *testing.T, e *env) {
		const name = "fair-redisson-place"
		const redisson = "1b9c3e0a-redisson-client:42"
		ctx := testCtx(t)
		holder := e.newClient(t).FairLock(name)
		require.NoError(t, holder.Lock(ctx))
		pttl := e.rdb.PTTL(ctx, name).Val()
		require.Positive(t, pttl)
		deadline := e.clk.Now().Add(pttl + 3*watchdog).Truncate(time.Millisecond) // allowance: 3 watchdogs
		require.NoError(t, e.rdb.RPush(ctx, redisio.FairQueueKey(name), redisson).Err())
		require.NoError(t, e.rdb.ZAdd(ctx, redisio.FairTimeoutKey(name),
			redis.Z{Score: float64(deadline.UnixMilli()), Member: redisson}).Err())

		live := e.newClient(t).FairLock(name)
		got := inBackground(t, live.Lock)
		eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, live.Owner()) == 1 }, "queued behind")
		liveFirst := placeAlive(t, e, name, live.Owner())
		require.NoError(t, holder.Unlock(ctx)) // wakes the Redisson waiter only

		staysBlocked(t, e, got, deadline.Sub(e.clk.Now())-200*time.Millisecond, "the live waiter, before the Redisson place lapses")
		assert.Zero(t, queuePos(t, e, name, redisson), "the Redisson place stays at the head until its deadline")
		assert.Equal(t, deadline.UnixMilli(), placeDeadline(t, e, name, redisson).UnixMilli(), "and its deadline never moved")
		assert.True(t, placeAlive(t, e, name, live.Owner()).After(liveFirst), "the live waiter's place was refreshed")
		assert.True(t, placeDeadline(t, e, name, live.Owner()).After(deadline), "its deadline is behind the Redisson place's")

		r, _ := awaitWhileTime(t, e, got, 10*time.Second, "the live waiter")
		require.NoError(t, r.err)
		assert.Less(t, e.clk.Now().Sub(deadline), watchdog/3+500*time.Millisecond,
			"taken within one look-again bound of the Redisson place's deadline")
		assert.Equal(t, int64(-1), queuePos(t, e, name, redisson), "the lapsed Redisson place was dropped")
		require.NoError(t, live.Unlock(ctx))
	})
}

// WithFairPlaceTime takes whole milliseconds, at least 30ms, and a bad
// value fails New with ErrInvalidArgument naming it, before any Redis
// call.
func TestFairPlaceTimeOptionIsValidated(t *testing.T) {
	t.Parallel()
	e := miniEnv(t)
	var calls atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: e.mini.Addr()})
	rdb.AddHook(countingHook{n: &calls})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, d := range []time.Duration{0, -time.Second, 29 * time.Millisecond, 1500 * time.Microsecond} {
		c, err := client.New(rdb, client.WithFairPlaceTime(d))
		require.ErrorIs(t, err, client.ErrInvalidArgument, "%v", d)
		assert.Contains(t, err.Error(), "fair place time")
		assert.Nil(t, c)
	}
	assert.Zero(t, calls.Load(), "no Redis call")

	c := e.newClient(t, client.WithFairPlaceTime(30*time.Millisecond))
	l := c.FairLock("fair-place-option")
	require.NoError(t, l.Lock(testCtx(t)))
	require.NoError(t, l.Unlock(testCtx(t)))
}

// countingHook counts the commands and dials of a go-redis client.
type countingHook struct{ n *atomic.Int64 }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.n.Add(1)
		return next(ctx, network, addr)
	}
}

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// A waiter's place is refreshed only while it waits: once it timed out or
// was cancelled, no late attempt brings its place back, however long the
// lock stays held.
func TestFairWaiterThatLeftKeepsNoPlace(t *testing.T) {
	t.Parallel()
	both(t, func(t *testing.T, e *env) {
		const name = "fair-left"
		const place = 300 * time.Millisecond
		ctx := testCtx(t)
		holder := e.newClient(t).FairLock(name)
		require.NoError(t, holder.Lock(ctx))
		c := e.newClient(t, client.WithFairPlaceTime(place))
		timedOut, cancelled := c.FairLock(name), c.FairLock(name)

		b := newBackground(t, 2)
		b.run(0, func(ctx context.Context) error {
			ok, err := timedOut.TryLockWait(ctx, 2*place, 0)
			if err == nil && ok {
				return fmt.Errorf("acquired a held lock")
			}
			return err
		})
		cctx, cancel := context.WithCancel(ctx)
		b.run(1, func(context.Context) error { return cancelled.Lock(cctx) })
		eventually(t, 5*time.Second, func() bool {
			return queuePos(t, e, name, timedOut.Owner()) >= 0 && queuePos(t, e, name, cancelled.Owner()) >= 0
		}, "both queued")
		cancel()
		for range 2 {
			r, _ := awaitWhileTime(t, e, b.C, 10*time.Second, "a waiter that leaves")
			if r.i == 0 {
				require.NoError(t, r.err, "the wait ran out")
			} else {
				require.ErrorIs(t, r.err, context.Canceled)
			}
		}
		eventually(t, 5*time.Second, func() bool {
			return e.rdb.Exists(ctx, redisio.FairQueueKey(name)).Val() == 0
		}, "both places given up")
		for range 8 { // many place times and look-again bounds
			e.advance(place / 2)
			assert.Equal(t, int64(-1), queuePos(t, e, name, timedOut.Owner()))
			assert.Equal(t, int64(-1), queuePos(t, e, name, cancelled.Owner()))
			assert.Zero(t, e.rdb.Exists(ctx, redisio.FairTimeoutKey(name), redisio.FairPlacesKey(name)).Val(),
				"no deadline and no refreshed place left")
		}
		require.NoError(t, holder.Unlock(ctx))
	})
}
