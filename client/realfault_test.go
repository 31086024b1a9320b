package client_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/faultproxy"
)

// Faults on real processes: Redis killed and restarted, Redis frozen
// past the lease, a slow network, a client process killed while it holds
// a lock. Each test logs its figures (TESTING.md reports them).

// childHoldEnv names the Redis address and lock a child process of this
// test binary takes in watchdog mode before it waits to be killed.
const childHoldEnv = "WARDEN_TEST_CHILD_HOLD"

// holdUntilKilled is the child: it takes the lock "addr|name|watchdog",
// prints "held", and blocks.
func holdUntilKilled(spec string) int {
	parts := strings.Split(spec, "|")
	watchdog, err := time.ParseDuration(parts[2])
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: parts[0]})
	c, err := client.New(rdb, client.WithWatchdogTimeout(watchdog))
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if err := c.Lock(parts[1]).Lock(context.Background()); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	fmt.Println("held")
	select {}
}

// A process that dies while it holds a watchdog-mode lock renews it no
// more: the lock frees within the watchdog timeout of its last renewal.
func TestCrashedProcessLockFreesWithinItsLease(t *testing.T) {
	e := realEnv(t)
	const lease = time.Second
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childHoldEnv+"="+e.srv.Addr()+"|crashed|"+lease.String())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)

	time.Sleep(2 * lease) // renewed past its first lease by the child
	ctx := testCtx(t)
	require.Equal(t, int64(1), e.rdb.Exists(ctx, "crashed").Val(), "still held while the child lives")
	require.NoError(t, cmd.Process.Kill()) // kill -9
	killed := time.Now()
	waiter := e.newClient(t).Lock("crashed")
	require.NoError(t, waiter.LockLease(ctx, time.Minute))
	freed := time.Since(killed)
	t.Logf("lock freed %v after the holder's kill -9 (watchdog %v)", freed.Round(time.Millisecond), lease)
	assert.LessOrEqual(t, freed, lease+200*time.Millisecond, "within the lease of the last renewal")
	require.NoError(t, waiter.Unlock(ctx))
}

// faultRun is a contention run: workers on two clients take one lock in
// turn, and every time one enters it checks that nobody else is inside.
type faultRun struct {
	mu         sync.Mutex
	inside     int
	violations []time.Time
	taken      atomic.Int64
	lastTaken  atomic.Int64 // unix nanos
	errs       atomic.Int64
}

func (r *faultRun) enter() {
	r.mu.Lock()
	r.inside++
	if r.inside > 1 {
		r.violations = append(r.violations, time.Now())
	}
	r.mu.Unlock()
	r.taken.Add(1)
	r.lastTaken.Store(time.Now().UnixNano())
}

func (r *faultRun) leave() {
	r.mu.Lock()
	r.inside--
	r.mu.Unlock()
}

// contend runs workers on clients until the stop it returns is called,
// which waits for them; cleanup calls it too, before the clients close.
// A failed call (Redis down) is counted and tried again.
func (r *faultRun) contend(t *testing.T, clients []*client.Client, name string, perClient int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		for range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := c.Lock(name)
				for {
					select {
					case <-done:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					ok, err := l.TryLockWait(ctx, time.Second, 0)
					cancel()
					if err != nil || !ok {
						if err != nil {
							r.errs.Add(1)
							time.Sleep(10 * time.Millisecond)
						}
						continue
					}
					r.enter()
					time.Sleep(200 * time.Microsecond)
					r.leave()
					uctx, ucancel := context.WithTimeout(context.Background(), 2*time.Second)
					_ = l.Unlock(uctx) // ErrNotHeld after the restart lost it
					ucancel()
				}
			}()
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			await.Group(t, &wg, 10*time.Second, "the workers")
		})
	}
	t.Cleanup(stop)
	return stop
}

// kill -9 of Redis during a contention run, restarted with its data lost:
// the run recovers, and the only overlaps are in the restart's window,
// between a holder whose lock the restart erased and one that took the
// fresh lock before the renewal told the first (the documented limit).
func TestRedisKilledDuringContention(t *testing.T) {
	e := realEnv(t)
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	var r faultRun
	stop := r.contend(t, clients, "killed", 3)
	time.Sleep(time.Second)
	before := r.taken.Load()
	killedAt := time.Now()
	e.srv.Kill(t)
	time.Sleep(300 * time.Millisecond)
	e.srv.Start(t) // persistence is off: every lock is gone
	restarted := time.Now()
	eventually(t, 10*time.Second, func() bool { return r.lastTaken.Load() > restarted.UnixNano() }, "acquisitions resume")
	recovered := time.Unix(0, r.lastTaken.Load()).Sub(restarted)
	time.Sleep(time.Second)
	stop()

	window := restarted.Add(watchdog) // a holder is told within a renewal period; a watchdog is ample
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		assert.True(t, !v.Before(killedAt) && v.Before(window),
			"an overlap at %v outside the restart's window [%v, %v]", v, killedAt, window)
	}
	t.Logf("%d acquisitions (%d before the kill), %d failed calls while Redis was down, first acquisition %v after the restart, %d overlaps (all within the restart's window)",
		r.taken.Load(), before, r.errs.Load(), recovered.Round(time.Millisecond), len(r.violations))
}

// Redis frozen (SIGSTOP) for longer than the lease: the holder is told
// its lock is lost once no renewal succeeded for a whole watchdog timeout;
// once Redis runs again the lock has expired and another client takes it.
func TestRedisFrozenPastTheLease(t *testing.T) {
	e := realEnv(t)
	ctx := testCtx(t)
	holder := e.newClient(t).Lock("frozen")
	require.NoError(t, holder.Lock(ctx))
	lost := holder.Lost()
	e.srv.Pause(t)
	paused := time.Now()
	await.Value(t, lost, 5*watchdog, "Lost() while Redis is frozen")
	told := time.Since(paused)
	time.Sleep(watchdog / 2)
	e.srv.Resume(t)
	resumed := time.Now()
	other := e.newClient(t).Lock("frozen")
	require.NoError(t, other.LockLease(ctx, time.Minute))
	took := time.Since(resumed)
	t.Logf("holder told %v after the freeze (watchdog %v); another client held it %v after the resume",
		told.Round(time.Millisecond), watchdog, took.Round(time.Millisecond))
	assert.GreaterOrEqual(t, told, watchdog/3)
	require.ErrorIs(t, holder.Unlock(ctx), client.ErrNotHeld)
	require.NoError(t, other.Unlock(ctx))
}

// 200 ms of latency each way on every connection of one client: its
// locks still work, its renewals keep a held lock alive, and its waiters
// are woken by the unlock message.
func TestSlowNetwork(t *testing.T) {
	e := realEnv(t)
	p := faultproxy.New(t, e.srv.Addr())
	slow := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = slow.Close() })
	se := &env{name: "slow", rdb: slow, srv: e.srv, clk: e.clk}
	const slowWatchdog = 3 * time.Second // renewals every 1 s, each 400 ms round trips
	c := se.newClient(t, client.WithWatchdogTimeout(slowWatchdog))
	fast := e.newClient(t)
	ctx := testCtx(t)
	p.SetLatency(200 * time.Millisecond)

	held := c.Lock("slow")
	start := time.Now()
	require.NoError(t, held.Lock(ctx))
	lockTook := time.Since(start)
	lost := held.Lost()
	time.Sleep(slowWatchdog + time.Second)
	select {
	case <-lost:
		t.Fatal("lost while renewals are slow but succeed")
	default:
	}
	assert.Equal(t, int64(1), e.rdb.Exists(ctx, "slow").Val(), "renewed past its lease")

	blocker := fast.Lock("slow:wait")
	require.NoError(t, blocker.LockLease(ctx, time.Minute))
	waiter := c.Lock("slow:wait")
	got := inBackground(t, waiter.Lock)
	eventually(t, 10*time.Second, func() bool {
		return e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{slow:wait}").Val()["redisson_lock__channel:{slow:wait}"] == 1
	}, "the slow waiter listens")
	time.Sleep(500 * time.Millisecond) // its refused attempt has come back
	unlocked := time.Now()
	require.NoError(t, blocker.Unlock(ctx))
	r := await.Value(t, got, 10*time.Second, "the slow waiter")
	require.NoError(t, r.err)
	woke := r.at.Sub(unlocked)
	t.Logf("lock through 200 ms latency took %v; waiter woken %v after the unlock", lockTook.Round(time.Millisecond),
		woke.Round(time.Millisecond))
	assert.Less(t, woke, 3*time.Second, "woken by the message, not by a lease running out")
	require.NoError(t, waiter.Unlock(ctx))
	require.NoError(t, held.Unlock(ctx))
	p.SetLatency(0)
}

// pubSubRoute is a go-redis client whose pub/sub connections go through a
// toxiproxy proxy while its command connections go straight to Redis, so
// a fault on the proxy hits the pub/sub connection alone. It stays a
// *redis.Client, so the engine uses it as it would in production
// (automatic pipelining included).
type pubSubRoute struct {
	proxy *toxiproxy.Proxy
	rdb   *redis.Client
	// pubSubDials and commandDials count the connections opened each way;
	// commandCloses the command connections closed.
	pubSubDials, commandDials, commandCloses atomic.Int64
}

// countedConn counts its Close in closes.
type countedConn struct {
	net.Conn
	closes *atomic.Int64
}

func (c *countedConn) Close() error {
	c.closes.Add(1)
	return c.Conn.Close()
}

// routePubSub starts a toxiproxy proxy (used as a library: no API server)
// to upstream and a client that dials its pub/sub connections through it.
func routePubSub(t *testing.T, upstream string) *pubSubRoute {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "pubsub", "127.0.0.1:0", upstream)
	require.NoError(t, proxy.Start())
	t.Cleanup(proxy.Stop)
	listen := proxy.Listen // the port it took; a restart listens there again
	r := &pubSubRoute{proxy: proxy}
	var d net.Dialer
	r.rdb = redis.NewClient(&redis.Options{
		Addr: upstream,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dialingPubSub() {
				r.pubSubDials.Add(1)
				return d.DialContext(ctx, network, listen)
			}
			r.commandDials.Add(1)
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countedConn{Conn: conn, closes: &r.commandCloses}, nil
		},
	})
	t.Cleanup(func() { _ = r.rdb.Close() })
	return r
}

// dialingPubSub reports whether the dial in progress opens a pub/sub
// connection: go-redis has one dialer for both kinds and dials pub/sub
// connections, and only those, from its PubSubPool, in the caller's
// goroutine. (If a go-redis upgrade renamed it, no dial would go through
// the proxy and the test's count of pub/sub dials says so.)
func dialingPubSub() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "go-redis/v9/internal/pool.(*PubSubPool).NewConn") {
			return true
		}
		if !more {
			return false
		}
	}
}

// logTimes records when the engine first logged a message containing each
// of a few phrases.
type logTimes struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func (l *logTimes) Enabled(context.Context, slog.Level) bool { return true }
func (l *logTimes) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logTimes) WithGroup(string) slog.Handler            { return l }
func (l *logTimes) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, phrase := range []string{"pub/sub connection lost", "pub/sub connection restored"} {
		if _, seen := l.first[phrase]; !seen && strings.Contains(r.Message, phrase) {
			l.first[phrase] = time.Now()
		}
	}
	return nil
}

// since is how long after from the engine first logged phrase, or "not
// logged".
func (l *logTimes) since(phrase string, from time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.first[phrase]
	if !ok {
		return "not logged"
	}
	return at.Sub(from).Round(time.Millisecond).String()
}

// Only the pub/sub connection is dropped (toxiproxy: the proxy disabled,
// or a reset_peer toxic that resets it when the unlock message comes),
// and the unlock message is lost with it. The client's commands keep
// working meanwhile, and the waiter acquires soon after the pub/sub
// connection is back, long before the holder's 20 s lease would have
// freed the lock.
func TestOnlyThePubSubConnectionDropped(t *testing.T) {
	faults := []struct {
		name          string
		drop, restore func(t *testing.T, p *toxiproxy.Proxy)
	}{
		{
			name: "proxy disabled",
			drop: func(t *testing.T, p *toxiproxy.Proxy) { p.Stop() }, // closes it, refuses new ones
			restore: func(t *testing.T, p *toxiproxy.Proxy) {
				require.NoError(t, p.Start())
			},
		},
		{
			name: "reset_peer on the unlock message",
			drop: func(t *testing.T, p *toxiproxy.Proxy) {
				_, err := p.Toxics.AddToxicJson(strings.NewReader(
					`{"name":"reset","type":"reset_peer","stream":"downstream","attributes":{"timeout":0}}`))
				require.NoError(t, err)
			},
			restore: func(t *testing.T, p *toxiproxy.Proxy) {
				require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "reset"))
			},
		},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			e := realEnv(t)
			r := routePubSub(t, e.srv.Addr())
			logs := &logTimes{first: map[string]time.Time{}}
			pe := &env{name: "pubsub-proxied", rdb: r.rdb, srv: e.srv, clk: e.clk}
			c := pe.newClient(t, client.WithLogger(slog.New(logs)))
			ctx := testCtx(t)
			const name = "pubsub-drop"
			channel := "redisson_lock__channel:{" + name + "}"
			listening := func() int64 { return e.rdb.PubSubNumSub(ctx, channel).Val()[channel] }

			holder := e.newClient(t).Lock(name)
			require.NoError(t, holder.LockLease(ctx, 20*time.Second))
			waiter := c.Lock(name)
			attempts := scriptRuns(t, e.rdb)
			got := inBackground(t, waiter.Lock)
			eventually(t, 5*time.Second, func() bool { return listening() == 1 }, "the waiter listens")
			// Its attempt after subscribing has run and been refused, so no
			// attempt of the waiter can come after the unlock and win.
			eventually(t, 5*time.Second, func() bool { return scriptRuns(t, e.rdb)-attempts >= 2 },
				"the waiter tried again once subscribed")
			require.Equal(t, int64(1), r.pubSubDials.Load(), "the pub/sub connection went through the proxy")
			commandDials := r.commandDials.Load()
			require.NotZero(t, commandDials, "the commands went straight to Redis")

			dropped := time.Now()
			f.drop(t, r.proxy)
			require.NoError(t, holder.Unlock(ctx)) // its message is lost
			eventually(t, 5*time.Second, func() bool { return listening() == 0 }, "Redis saw the pub/sub connection go")

			// Commands keep working on the same client meanwhile.
			other := c.Lock("pubsub-drop:other")
			start := time.Now()
			require.NoError(t, other.LockLease(ctx, time.Minute))
			require.NoError(t, other.Unlock(ctx))
			commandTook := time.Since(start)
			time.Sleep(300 * time.Millisecond)
			select {
			case w := <-got:
				t.Fatalf("the waiter returned while its pub/sub connection was down: %v", w.err)
			default:
			}

			f.restore(t, r.proxy)
			restored := time.Now()
			w := await.Value(t, got, 10*time.Second, "the waiter, after the pub/sub reconnect")
			require.NoError(t, w.err)
			recovered := w.at.Sub(restored)
			t.Logf("%s: drop logged %s after it; lock+unlock of another name during the outage took %v; after the restore: reconnect logged %s, waiter acquired %v (holder's lease 20 s); pub/sub dials %d, command dials %d before the drop and %d after",
				f.name, logs.since("pub/sub connection lost", dropped), commandTook.Round(time.Millisecond),
				logs.since("pub/sub connection restored", restored), recovered.Round(time.Millisecond),
				r.pubSubDials.Load(), commandDials, r.commandDials.Load())
			assert.Less(t, recovered, 5*time.Second, "retried after the reconnect, not when the lease ran out")
			assert.GreaterOrEqual(t, r.pubSubDials.Load(), int64(2), "reconnected through the proxy")
			// The pool may open another command connection when calls
			// overlap; none of those it had was broken.
			assert.Zero(t, r.commandCloses.Load(), "the command connections stayed up")
			require.NoError(t, waiter.Unlock(ctx))
		})
	}
}
