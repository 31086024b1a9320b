package client_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
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
	ctx := context.Background()
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

// contendUntil runs workers on clients until stop closes; a failed call
// (Redis down) is counted and tried again.
func (r *faultRun) contendUntil(t *testing.T, clients []*client.Client, name string, perClient int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, c := range clients {
		for range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := c.Lock(name)
				for {
					select {
					case <-stop:
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
	return &wg
}

// kill -9 of Redis during a contention run, restarted with its data lost:
// the run recovers, and the only overlaps are in the restart's window,
// between a holder whose lock the restart erased and one that took the
// fresh lock before the renewal told the first (the documented limit).
func TestRedisKilledDuringContention(t *testing.T) {
	e := realEnv(t)
	clients := []*client.Client{e.newClient(t), e.newClient(t)}
	var r faultRun
	stop := make(chan struct{})
	wg := r.contendUntil(t, clients, "killed", 3, stop)
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
	close(stop)
	await.Group(t, wg, 10*time.Second, "the workers")

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
	ctx := context.Background()
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
	ctx := context.Background()
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
	got := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, waiter.Lock(ctx))
		got <- time.Now()
	}()
	eventually(t, 10*time.Second, func() bool {
		return e.rdb.PubSubNumSub(ctx, "redisson_lock__channel:{slow:wait}").Val()["redisson_lock__channel:{slow:wait}"] == 1
	}, "the slow waiter listens")
	time.Sleep(500 * time.Millisecond) // its refused attempt has come back
	unlocked := time.Now()
	require.NoError(t, blocker.Unlock(ctx))
	woke := await.Value(t, got, 10*time.Second, "the slow waiter").Sub(unlocked)
	t.Logf("lock through 200 ms latency took %v; waiter woken %v after the unlock", lockTook.Round(time.Millisecond),
		woke.Round(time.Millisecond))
	assert.Less(t, woke, 3*time.Second, "woken by the message, not by a lease running out")
	require.NoError(t, waiter.Unlock(ctx))
	require.NoError(t, held.Unlock(ctx))
	p.SetLatency(0)
}
