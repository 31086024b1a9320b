package client_test

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/redisio"
)

// scriptCalls counts the script calls (EVALSHA, EVAL) a go-redis client
// sends whose first key is name: a spin lock's acquire attempts and
// unlocks of that name.
type scriptCalls struct {
	name string
	n    *atomic.Int64
}

func (h scriptCalls) count(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 4 {
		return
	}
	op := strings.ToLower(fmt.Sprint(args[0]))
	if (op == "evalsha" || op == "eval") && fmt.Sprint(args[3]) == h.name {
		h.n.Add(1)
	}
}

func (h scriptCalls) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

// countedClient starts a Client on e's server through a go-redis client
// of its own that counts the script calls on name.
func countedClient(t *testing.T, e *env, name string, opts ...client.Option) (*client.Client, *atomic.Int64) {
	t.Helper()
	n := &atomic.Int64{}
	rdb := redis.NewClient(&redis.Options{Addr: e.srv.Addr()})
	rdb.AddHook(scriptCalls{name: name, n: n})
	t.Cleanup(func() { _ = rdb.Close() })
	c, _, _ := ownSystemClient(t, rdb, append([]client.Option{client.WithWatchdogTimeout(watchdog)}, opts...)...)
	return c, n
}

// commandCalls is how many times the server ran cmd (INFO commandstats),
// scripts' calls included.
func commandCalls(t *testing.T, rdb *redis.Client, cmd string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// subscribedConns lists the server's connections subscribed to anything
// (CLIENT LIST's sub, psub and ssub), but the one whose ID is except.
func subscribedConns(t *testing.T, rdb *redis.Client, except int64) []string {
	t.Helper()
	list, err := rdb.ClientList(context.Background()).Result()
	require.NoError(t, err)
	var subscribed []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		if fields["id"] == strconv.FormatInt(except, 10) {
			continue
		}
		for _, k := range []string{"sub", "psub", "ssub"} {
			if v := fields[k]; v != "" && v != "0" {
				subscribed = append(subscribed, line)
				break
			}
		}
	}
	return subscribed
}

func TestSpinLockExcludesAndReenters(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "spin:reentrant"
	c := e.newClient(t)
	l, local, remote := c.SpinLock(name), c.SpinLock(name), e.newClient(t).SpinLock(name)

	require.NoError(t, l.Lock(ctx))
	require.True(t, tryLock(t, l), "the owner re-enters")
	assert.Equal(t, 2, get(t, l.HoldCount))
	assert.Equal(t, "2", e.rdb.HGet(ctx, name, l.Owner()).Val(), "Redisson's hash: owner -> hold count")
	assert.False(t, tryLock(t, local), "another owner of the process is refused")
	assert.False(t, tryLock(t, remote), "another process is refused")
	ok, err := remote.TryLockWait(ctx, 100*time.Millisecond, 0)
	require.NoError(t, err)
	assert.False(t, ok, "a wait that runs out is false, with no error")

	require.NoError(t, l.Unlock(ctx))
	assert.True(t, get(t, l.IsHeld), "still held once")
	assert.False(t, tryLock(t, remote))
	require.NoError(t, l.Unlock(ctx))
	assert.False(t, get(t, l.IsLocked))
	require.ErrorIs(t, l.Unlock(ctx), client.ErrNotHeld)

	require.NoError(t, remote.LockLease(ctx, time.Minute))
	assert.Greater(t, get(t, remote.RemainTTL), 50*time.Second, "a fixed lease")
	deleted, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, deleted)
	require.ErrorIs(t, remote.Unlock(ctx), client.ErrNotHeld, "force-unlocked")
}

func TestSpinLockWatchdogRenews(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	l := e.newClient(t).SpinLock("spin:renewed")
	require.NoError(t, l.Lock(ctx))
	time.Sleep(3 * watchdog) // the renewals (every watchdog/3) must keep it
	assert.True(t, get(t, l.IsHeld), "renewed across three watchdog timeouts")
	assert.Greater(t, get(t, l.RemainTTL), watchdog/3)
	assert.False(t, isClosed(l.Lost()), "not lost")
	require.NoError(t, l.Unlock(ctx))

	// A fixed lease is not renewed.
	require.NoError(t, l.LockLease(ctx, 300*time.Millisecond))
	eventually(t, 5*time.Second, func() bool { return isClosed(l.Lost()) }, "the fixed lease runs out")
	eventually(t, 5*time.Second, func() bool { return !get(t, l.IsLocked) }, "and Redis lets it go")
}

// A spin lock's waiter acquires once the holder unlocks, without any
// subscription: no connection subscribes to anything while it waits, and
// nothing is published on the unlock. The same checks see a plain lock's
// waiter subscribe and its unlock publish.
func TestSpinLockWaiterPollsWithoutPubSub(t *testing.T) {
	t.Parallel()
	for _, spin := range []bool{true, false} {
		t.Run(map[bool]string{true: "spin", false: "plain lock, for contrast"}[spin], func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			const name = "spin:quiet"
			ch := redisio.LockChannel(name)
			holderClient := e.newClient(t)
			waiterClient, attempts := countedClient(t, e, name, client.WithWatchdogTimeout(30*time.Second))
			holder, waiter := holderClient.SpinLock(name), waiterClient.SpinLock(name, client.WithConstantBackOff(20*time.Millisecond))
			if !spin {
				holder, waiter = holderClient.Lock(name), waiterClient.Lock(name)
			}

			// A probe that hears every message published on the server.
			probe := redis.NewClient(&redis.Options{Addr: e.srv.Addr()})
			t.Cleanup(func() { _ = probe.Close() })
			sub := probe.PSubscribe(ctx, "*")
			t.Cleanup(func() { _ = sub.Close() })
			_, err := sub.Receive(ctx)
			require.NoError(t, err)
			probeID := int64(-1)
			eventually(t, 5*time.Second, func() bool {
				for _, line := range strings.Split(e.rdb.ClientList(ctx).Val(), "\n") {
					if strings.Contains(line, " psub=1 ") {
						id, err := strconv.ParseInt(strings.TrimPrefix(strings.Fields(line)[0], "id="), 10, 64)
						probeID = id
						return err == nil
					}
				}
				return false
			}, "the probe's connection is listed")

			require.NoError(t, holder.LockLease(ctx, time.Minute), "a long lease: only a poll or a message lets the waiter in")
			waited := inBackground(t, waiter.Lock)
			if spin {
				eventually(t, 5*time.Second, func() bool { return attempts.Load() >= 5 }, "the waiter polls")
				assert.Empty(t, subscribedConns(t, e.rdb, probeID), "no connection but the probe subscribes")
				assert.Zero(t, e.rdb.PubSubNumSub(ctx, ch).Val()[ch], "nobody listens on the lock's channel")
			} else {
				eventually(t, 5*time.Second, func() bool { return e.rdb.PubSubNumSub(ctx, ch).Val()[ch] == 1 },
					"the plain lock's waiter listens on the lock's channel")
				assert.NotEmpty(t, subscribedConns(t, e.rdb, probeID))
			}

			published := commandCalls(t, e.rdb, "publish")
			require.NoError(t, holder.Unlock(ctx))
			r := await.Value(t, waited, 5*time.Second, "the waiter, after the unlock")
			require.NoError(t, r.err, "the waiter acquires")
			assert.True(t, get(t, waiter.IsHeld))
			require.NoError(t, waiter.Unlock(ctx))

			// The probe's first message tells what was published before it.
			require.NoError(t, probe.Publish(ctx, "marker", "end").Err())
			msg, err := sub.ReceiveMessage(ctx)
			require.NoError(t, err)
			if spin {
				assert.Equal(t, "marker", msg.Channel, "nothing was published before the marker")
				assert.Equal(t, published+1, commandCalls(t, e.rdb, "publish"), "the marker was the only PUBLISH")
			} else {
				assert.Equal(t, ch, msg.Channel, "the plain lock's unlock published")
			}
		})
	}
}

// The waiters of one name in one Client share one poll: with five of them
// waiting, Redis sees the polls of one.
func TestSpinLockLocalWaitersShareOnePoll(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "spin:shared"
	const pause = 20 * time.Millisecond
	const waiters = 5
	holder := e.newClient(t).SpinLock(name)
	c, attempts := countedClient(t, e, name, client.WithWatchdogTimeout(30*time.Second))
	require.NoError(t, holder.LockLease(ctx, time.Minute))

	b := newBackground(t, waiters)
	start := time.Now()
	for i := range waiters {
		l := c.SpinLock(name, client.WithConstantBackOff(pause))
		b.run(i, func(ctx context.Context) error {
			if err := l.Lock(ctx); err != nil {
				return err
			}
			return l.Unlock(ctx)
		})
	}
	time.Sleep(time.Second) // the window the polls are counted in
	polls := attempts.Load()
	window := time.Since(start)
	require.NoError(t, holder.Unlock(ctx))
	for range waiters {
		r := await.Value(t, b.C, 10*time.Second, "a waiter")
		require.NoError(t, r.err, "every waiter gets the lock in turn")
	}

	onePoller := int64(window/pause) + 1 // one first attempt, then one poll per pause at most
	t.Logf("%d polls in %v by %d waiters (one poller: at most %d)", polls, window, waiters, onePoller)
	assert.LessOrEqual(t, polls, onePoller+2, "the polls of one waiter, not of %d", waiters)
	assert.GreaterOrEqual(t, polls, int64(5), "the waiters did poll")
}

// The shared poll runs on the first waiter's back-off, but never pauses
// longer than the longest pause of any waiter's: a waiter with the
// default back-off (at most 128ms) queued behind one whose handle polls
// every hour gets the lock soon after another process's unlock, not an
// hour later.
func TestSpinLockSharedPollKeepsToTheQuickestBackOff(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "spin:mixed"
	holder := e.newClient(t).SpinLock(name)
	c, attempts := countedClient(t, e, name, client.WithWatchdogTimeout(30*time.Second))
	require.NoError(t, holder.LockLease(ctx, time.Minute))

	b := newBackground(t, 2)
	for i, l := range []*client.Lock{c.SpinLock(name, client.WithConstantBackOff(time.Hour)), c.SpinLock(name)} {
		b.run(i, func(ctx context.Context) error {
			if err := l.Lock(ctx); err != nil {
				return err
			}
			return l.Unlock(ctx)
		})
		eventually(t, 5*time.Second, func() bool { return attempts.Load() >= int64(i+1) },
			fmt.Sprintf("an attempt after waiter %d came (the first's own, then a poll the second brought forward)", i))
	}
	eventually(t, 5*time.Second, func() bool { return attempts.Load() >= 4 }, "the shared poll goes on")
	require.NoError(t, holder.Unlock(ctx))
	for range 2 {
		r := await.Value(t, b.C, 5*time.Second, "a waiter, after another process's unlock")
		require.NoError(t, r.err)
	}
}

// Contenders on several clients never hold a spin lock together, and all
// get it.
func TestSpinLockContention(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "spin:contended"
	const rounds = 15
	var holders, violations atomic.Int32
	counter := 0
	var wg sync.WaitGroup
	for range 3 {
		c := e.newClient(t)
		for range 2 {
			l := c.SpinLock(name, client.WithExponentialBackOff(time.Millisecond, 8*time.Millisecond, 2))
			wg.Go(func() {
				for range rounds {
					if err := l.Lock(ctx); err != nil {
						t.Error(err)
						return
					}
					if holders.Add(1) != 1 {
						violations.Add(1)
					}
					counter++
					time.Sleep(200 * time.Microsecond)
					holders.Add(-1)
					if err := l.Unlock(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	await.Group(t, &wg, 2*time.Minute, "the contenders")
	assert.Zero(t, violations.Load(), "two holders at once")
	assert.Equal(t, 6*rounds, counter)
}

// A bad back-off is refused, naming its field, by every call on the
// handle, before any Redis call; so is a back-off on a lock that does not
// poll.
func TestSpinLockRejectsBadBackOff(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	ctx := testCtx(t)
	const name = "spin:bad"
	c, calls := countedClient(t, e, name)
	ms := time.Millisecond
	cases := []struct {
		what  string
		l     *client.Lock
		field string
	}{
		{"max below initial", c.SpinLock(name, client.WithExponentialBackOff(10*ms, 5*ms, 2)), "back-off max"},
		{"zero initial", c.SpinLock(name, client.WithExponentialBackOff(0, 5*ms, 2)), "back-off initial"},
		{"negative initial", c.SpinLock(name, client.WithExponentialBackOff(-ms, 5*ms, 2)), "back-off initial"},
		{"zero max", c.SpinLock(name, client.WithExponentialBackOff(ms, 0, 2)), "back-off max"},
		{"zero multiplier", c.SpinLock(name, client.WithExponentialBackOff(ms, 5*ms, 0)), "back-off multiplier"},
		{"negative multiplier", c.SpinLock(name, client.WithExponentialBackOff(ms, 5*ms, -1)), "back-off multiplier"},
		{"zero constant", c.SpinLock(name, client.WithConstantBackOff(0)), "back-off delay"},
		{"negative constant", c.SpinLock(name, client.WithConstantBackOff(-ms)), "back-off delay"},
		// 50 where 50*time.Millisecond was meant: a 50ns pause would poll
		// Redis in a busy loop.
		{"sub-millisecond constant", c.SpinLock(name, client.WithConstantBackOff(50)), "back-off delay"},
		{"sub-millisecond initial", c.SpinLock(name, client.WithExponentialBackOff(999*time.Microsecond, 5*ms, 2)), "back-off initial"},
		{"a plain lock", c.Lock(name, client.WithConstantBackOff(ms)), "back-off"},
		{"a fair lock", c.FairLock(name, client.WithExponentialBackOff(ms, 2*ms, 2)), "back-off"},
	}
	for _, tc := range cases {
		ok, err := tc.l.TryLock(ctx)
		assert.False(t, ok)
		require.ErrorIs(t, err, client.ErrInvalidArgument, tc.what)
		assert.Contains(t, err.Error(), tc.field+":", "%s: the message names the field", tc.what)
		require.ErrorIs(t, tc.l.Lock(ctx), client.ErrInvalidArgument, tc.what)
		require.ErrorIs(t, tc.l.Unlock(ctx), client.ErrInvalidArgument, tc.what)
		_, err = tc.l.IsLocked(ctx)
		require.ErrorIs(t, err, client.ErrInvalidArgument, tc.what)
	}
	assert.Zero(t, calls.Load(), "no script ran")
	assert.Zero(t, e.rdb.Exists(ctx, name).Val(), "nothing changed")

	// The last back-off given wins; a valid one works.
	l := c.SpinLock(name, client.WithConstantBackOff(0), client.WithExponentialBackOff(ms, 4*ms, 3))
	require.True(t, tryLock(t, l))
	require.NoError(t, l.Unlock(ctx))
}

// On the 3-master cluster, spin locks on every shard are renewed while
// held, and their waiters get in after the unlocks by polling: no shard
// has a subscriber, and no shard ran a PUBLISH or SPUBLISH.
func TestSpinLockOnCluster(t *testing.T) {
	t.Parallel()
	e := newClusterEnv(t)
	ctx := testCtx(t)
	const wd = 600 * time.Millisecond
	holderClient := e.newClient(t, client.WithWatchdogTimeout(wd))
	waiterClient := e.newClient(t)
	published := func() int {
		n := 0
		for _, node := range e.nodes {
			n += commandCalls(t, node, "publish") + commandCalls(t, node, "spublish")
		}
		return n
	}
	before := published()

	var holders, waiters []*client.Lock
	var waited []<-chan returned
	for node := range 3 {
		name := e.nameOn(t, node, "spin")
		h, w := holderClient.SpinLock(name), waiterClient.SpinLock(name, client.WithConstantBackOff(10*time.Millisecond))
		require.NoError(t, h.Lock(ctx), "node %d", node)
		require.True(t, tryLock(t, h), "reentry on node %d", node)
		assert.Equal(t, "2", e.rdb.HGet(ctx, name, h.Owner()).Val())
		assert.False(t, tryLock(t, w), "excluded on node %d", node)
		holders, waiters = append(holders, h), append(waiters, w)
		waited = append(waited, inBackground(t, w.Lock))
	}
	time.Sleep(4 * wd) // renewals (every wd/3) must keep every holder's lock
	for i, h := range holders {
		assert.True(t, get(t, h.IsHeld), "%s renewed across four watchdog timeouts", h.Name())
		assert.False(t, isClosed(h.Lost()), h.Name())
		ch := redisio.LockChannel(h.Name())
		assert.Zero(t, e.shardSubscribers(t, ch), "nobody listens on %s", ch)
		for _, node := range e.nodes {
			assert.Empty(t, subscribedConns(t, node, -1), "no subscription on any master")
		}
		select {
		case r := <-waited[i]:
			t.Fatalf("waiter %d returned while the lock was held: %v", i, r.err)
		default:
		}
	}
	for _, h := range holders {
		require.NoError(t, h.Unlock(ctx))
		require.NoError(t, h.Unlock(ctx))
	}
	for i, w := range waiters {
		r := await.Value(t, waited[i], 10*time.Second, "a waiter")
		require.NoError(t, r.err)
		assert.True(t, get(t, w.IsHeld))
		require.NoError(t, w.Unlock(ctx))
	}
	assert.Equal(t, before, published(), "no unlock published, on any master")
}

// An actor application's spin lock Acquire with a bad back-off is refused
// with ErrInvalidArgument naming the field; a good one is served.
func TestSpinLockActorRequestBackOff(t *testing.T) {
	t.Parallel()
	e := realEnv(t)
	c, sys, _ := ownSystemClient(t, e.rdb)
	const name = "spin:actor"
	bad := &messages.Acquire{Name: name, Kind: messages.KindSpinLock, Owner: "app:1", RequestID: "r1",
		BackOff: messages.BackOff{Initial: 10 * time.Millisecond, Max: time.Millisecond, Multiplier: 2}}
	reply, err := sys.Root.RequestFuture(c.PID(), bad, 5*time.Second).Result()
	require.NoError(t, err)
	failed, ok := reply.(*messages.AcquireFailed)
	require.True(t, ok, "refused, not %T", reply)
	require.ErrorIs(t, failed.Err, client.ErrInvalidArgument)
	assert.Contains(t, failed.Err.Error(), "back-off max:")
	assert.Zero(t, e.rdb.Exists(context.Background(), name).Val(), "nothing written")

	good := &messages.Acquire{Name: name, Kind: messages.KindSpinLock, Owner: "app:1", RequestID: "r2",
		BackOff: messages.ConstantBackOff(5 * time.Millisecond)}
	reply, err = sys.Root.RequestFuture(c.PID(), good, 5*time.Second).Result()
	require.NoError(t, err)
	require.IsType(t, &messages.Acquired{}, reply)
	reply, err = sys.Root.RequestFuture(c.PID(), &messages.Release{Name: name, Kind: messages.KindSpinLock, Owner: "app:1",
		RequestID: "r3"}, 5*time.Second).Result()
	require.NoError(t, err)
	require.IsType(t, &messages.Released{}, reply)
}
