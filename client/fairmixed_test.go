package client_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/redisio"
)

// redissonFairAcquire does what Redisson's fair-lock acquire script does
// (SPEC §3, "Redisson's fair acquire, as its script does it"): (1) drop
// every head whose deadline is <= now (a head without a deadline makes it
// fail, as Redisson's tonumber(nil) comparison does); (2) a free lock, the
// queue empty or the caller its head: leave the queue, move every deadline
// left down by the caller's allowance, take the lock, reply nil; (3)
// reentry; (4) already queued: reply the lock's PTTL (at least 0); (5)
// else join: ttl = the tail's deadline - now, or the lock's PTTL when the
// queue is empty; deadline = ttl + allowance + now; reply ttl. Its unlock
// is redissonFairUnlock (nonreentrant_test.go).
//
// KEYS: the lock, its queue, its deadlines. ARGV: lease ms, owner,
// allowance ms, now ms.
var redissonFairAcquire = redis.NewScript(`
local now, allowance = tonumber(ARGV[4]), tonumber(ARGV[3])
while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if first == false then break end
  local deadline = tonumber(redis.call('zscore', KEYS[3], first))
  if deadline <= now then
    redis.call('zrem', KEYS[3], first)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local rest = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #rest do
    redis.call('zincrby', KEYS[3], -allowance, rest[i])
  end
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local tail = redis.call('lindex', KEYS[2], -1)
local ttl
if tail ~= false and tail ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], tail)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
redis.call('zadd', KEYS[3], ttl + allowance + now, ARGV[2])
redis.call('rpush', KEYS[2], ARGV[2])
return ttl`)

// javaFair is one Redisson client's thread on a fair lock, driving the
// scripts above with its own clock (now) and allowance.
type javaFair struct {
	rdb       *redis.Client
	owner     string
	allowance time.Duration
	now       func() time.Time
}

// try makes one attempt: acquired, or refused (and queued); an error is
// the script's.
func (j *javaFair) try(ctx context.Context, name string) (bool, error) {
	err := redissonFairAcquire.Run(ctx, j.rdb, []string{name, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name)},
		time.Minute.Milliseconds(), j.owner, j.allowance.Milliseconds(), j.now().UnixMilli()).Err()
	if err == redis.Nil {
		return true, nil
	}
	return false, err
}

// lock waits as Redisson's lock() does: subscribe to its own channel,
// attempt, sleep until a message or 100 ms, again.
func (j *javaFair) lock(ctx context.Context, name string) error {
	sub := j.rdb.Subscribe(ctx, redisio.FairChannel(name, j.owner))
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		return err
	}
	for {
		ok, err := j.try(ctx, name)
		if ok || err != nil {
			return err
		}
		select {
		case <-sub.Channel():
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (j *javaFair) unlock(ctx context.Context, name string) error {
	return redissonFairUnlock.Run(ctx, j.rdb,
		[]string{name, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name), redisio.LockChannel(name)},
		"0", time.Minute.Milliseconds(), j.owner, j.now().UnixMilli()).Err()
}

// newJava is a Redisson thread with lock()'s allowance (5 minutes) on the
// real clock.
func newJava(e *env, owner string) *javaFair {
	return &javaFair{rdb: e.rdb, owner: "5d3f0c4e-redisson-client:" + owner, allowance: 5 * time.Minute, now: time.Now}
}

// queueOf is name's fair queue.
func queueOf(t *testing.T, e *env, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q, err := e.rdb.LRange(ctx, redisio.FairQueueKey(name), 0, -1).Result()
	require.NoError(t, err)
	return q
}

// assertDeadlinesIncrease checks that name's queue deadlines increase in
// queue order and are all ahead of now.
func assertDeadlinesIncrease(t *testing.T, e *env, name string) {
	t.Helper()
	assertDeadlinesIncreaseFrom(t, e, name, time.Now())
}

// mixedNames are a plain name and a name with a hash tag.
var mixedNames = []string{"mixed-fair", "{mixed}:fair"}

// Holder, Redisson lock() thread J1, warden waiter W, Redisson J2: when J1
// takes the lock (moving every deadline behind it down by its 5-minute
// allowance), W keeps its place while J2 attempts for several of its
// place times (with equal 5-minute allowances over a few seconds this
// checks the formula; longer waits behind a wider allowance are
// TestWardenWaiterOutlivesALongRedissonAllowanceAhead's), and is served
// before J2. Before, W's deadline was now + its place time, so J1's
// acquire left it in the past and J2's next attempt dropped it: the queue
// was [J2].
func TestRedissonThreadAcquiringAheadKeepsTheWardenWaiter(t *testing.T) {
	for _, name := range mixedNames {
		t.Run(name, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			holder := e.newClient(t).FairLock(name)
			require.NoError(t, holder.Lock(ctx))
			j1, j2 := newJava(e, "1"), newJava(e, "2")
			ok, err := j1.try(ctx, name)
			require.NoError(t, err)
			require.False(t, ok)
			w := e.newClient(t).FairLock(name)
			got := inBackground(t, w.Lock)
			eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, w.Owner()) == 1 }, "W queued behind J1")
			ok, err = j2.try(ctx, name)
			require.NoError(t, err)
			require.False(t, ok)
			require.Equal(t, []string{j1.owner, w.Owner(), j2.owner}, queueOf(t, e, name))
			assertDeadlinesIncrease(t, e, name)

			require.NoError(t, holder.Unlock(ctx)) // wakes J1 only
			ok, err = j1.try(ctx, name)
			require.NoError(t, err)
			require.True(t, ok, "J1 takes the lock")
			ok, err = j2.try(ctx, name)
			require.NoError(t, err)
			require.False(t, ok)
			assert.Equal(t, []string{w.Owner(), j2.owner}, queueOf(t, e, name), "J2's attempt left W in place")

			// W waits several place times (the watchdog, 1 s) while J2
			// keeps attempting: it stays first, its deadline ahead.
			for end := time.Now().Add(3 * watchdog); time.Now().Before(end); {
				time.Sleep(100 * time.Millisecond)
				ok, err = j2.try(ctx, name)
				require.NoError(t, err)
				require.False(t, ok)
				require.Equal(t, []string{w.Owner(), j2.owner}, queueOf(t, e, name))
				assertDeadlinesIncrease(t, e, name)
			}

			require.NoError(t, j1.unlock(ctx, name)) // wakes W, the head
			r := await.Value(t, got, 5*time.Second, "W, woken by J1's unlock")
			require.NoError(t, r.err)
			ok, err = j2.try(ctx, name)
			require.NoError(t, err)
			assert.False(t, ok, "W holds")
			require.NoError(t, w.Unlock(ctx))
			ok, err = j2.try(ctx, name)
			require.NoError(t, err)
			assert.True(t, ok, "J2 after W")
			require.NoError(t, j2.unlock(ctx, name))
			assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name),
				redisio.FairPlacesKey(name)).Val(), "the queue is gone with its last waiter")
		})
	}
}

// A queue of warden waiters and Redisson threads, arriving in turn behind
// a Redisson holder, is served in arrival order: every Redisson thread
// polls (dropping stale heads, moving deadlines down when it acquires),
// every holder holds a while, and nobody is dropped or overtaken.
func TestMixedFairQueueIsServedInArrivalOrder(t *testing.T) {
	for _, name := range mixedNames {
		t.Run(name, func(t *testing.T) {
			e := realEnv(t)
			ctx := testCtx(t)
			holder := newJava(e, "holder")
			ok, err := holder.try(ctx, name)
			require.NoError(t, err)
			require.True(t, ok)

			const n = 8 // even: warden, odd: Redisson
			var mu sync.Mutex
			var order []int
			served := func(i int, unlock func(context.Context) error) error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(400 * time.Millisecond) // several Redisson polls, about half a place time
				return unlock(ctx)
			}
			b := newBackground(t, n)
			var owners []string
			for i := range n {
				if i%2 == 0 {
					l := e.newClient(t).FairLock(name)
					owners = append(owners, l.Owner())
					b.run(i, func(ctx context.Context) error {
						if err := l.Lock(ctx); err != nil {
							return err
						}
						return served(i, l.Unlock)
					})
				} else {
					j := newJava(e, string(rune('a'+i)))
					owners = append(owners, j.owner)
					b.run(i, func(ctx context.Context) error {
						if err := j.lock(ctx, name); err != nil {
							return err
						}
						return served(i, func(ctx context.Context) error { return j.unlock(ctx, name) })
					})
				}
				eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, owners[i]) == int64(i) }, "queued in turn")
			}
			assert.Equal(t, owners, queueOf(t, e, name))
			assertDeadlinesIncrease(t, e, name)

			require.NoError(t, holder.unlock(ctx, name))
			for range n {
				r := await.Value(t, b.C, 20*time.Second, "a waiter of the mixed queue")
				require.NoError(t, r.err, "waiter %d", r.i)
			}
			mu.Lock()
			defer mu.Unlock()
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			assert.Equal(t, want, order, "served in arrival order")
			assert.Zero(t, e.rdb.Exists(ctx, redisio.FairQueueKey(name), redisio.FairTimeoutKey(name),
				redisio.FairPlacesKey(name)).Val())
		})
	}
}

// A warden waiter whose process is killed (kill -9: its engine never
// leaves the queue) in a mixed queue still gives up its place within one
// place time: Redisson holder J0, dead warden waiter B, live warden waiter
// C, Redisson thread J behind; J0 unlocks at the kill. C takes the lock
// within about one place time (the watchdog) of the kill, and J after C.
func TestDeadWardenWaiterInAMixedQueueLapsesWithinOnePlaceTime(t *testing.T) {
	for _, name := range mixedNames {
		t.Run(name, func(t *testing.T) {
			e := realEnv(t)
			const wd = 1500 * time.Millisecond
			ctx := testCtx(t)
			j0, j := newJava(e, "holder"), newJava(e, "behind")
			ok, err := j0.try(ctx, name)
			require.NoError(t, err)
			require.True(t, ok)

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childFairWaitEnv+"="+e.srv.Addr()+"|"+name+"|"+wd.String())
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			lines := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(out).ReadString('\n')
				lines <- line
			}()
			line := await.Value(t, lines, 20*time.Second, "the child's first line")
			dead, ok := strings.CutPrefix(strings.TrimSpace(line), "queued ")
			require.True(t, ok, "child said %q", line)

			c := e.newClient(t, client.WithWatchdogTimeout(wd)).FairLock(name)
			gotC := inBackground(t, c.Lock)
			eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, c.Owner()) == 1 }, "C queued behind B")
			jctx, jcancel := context.WithCancel(ctx)
			defer jcancel()
			gotJ := make(chan error, 1)
			go func() { gotJ <- j.lock(jctx, name) }()
			eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, j.owner) == 2 }, "J queued behind C")
			assert.Equal(t, []string{dead, c.Owner(), j.owner}, queueOf(t, e, name))

			require.NoError(t, cmd.Process.Kill())
			killed := time.Now()
			require.NoError(t, j0.unlock(ctx, name)) // wakes B only, which is gone
			r, _ := awaitWhileTime(t, e, gotC, 20*time.Second, "the live warden waiter C")
			require.NoError(t, r.err)
			took := r.at.Sub(killed)
			t.Logf("%s: live warden waiter C got the lock %v after dead warden waiter B's kill -9 (place time %v)",
				name, took.Round(time.Millisecond), wd)
			assert.LessOrEqual(t, took, wd+750*time.Millisecond, "within about one place time of the kill")
			assert.Equal(t, int64(-1), queuePos(t, e, name, dead), "B's place was given up")
			select {
			case err := <-gotJ:
				t.Fatalf("J acquired while C holds: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			require.NoError(t, c.Unlock(ctx))
			select {
			case err := <-gotJ:
				require.NoError(t, err, "J after C")
			case <-time.After(5 * time.Second):
				t.Fatal("J did not get the lock after C")
			}
			require.NoError(t, j.unlock(ctx, name))
		})
	}
}

// A Redisson thread that waited at the head long past its expected turn
// takes the lock ahead of a live warden waiter and moves its deadline down
// by its whole allowance (here a tryLock's 20 minutes): the warden waiter,
// whose refreshes kept its deadline at least its place time plus the
// widest allowance ahead of it (read off the deadlines while that thread
// was second) past the deadline ahead, keeps its place, and is served
// before a Redisson thread that came later. On a fake clock (the engine's
// and the Redisson threads'; Redis's own TTLs stay real), 25 minutes in.
func TestWardenWaiterOutlivesALongRedissonAllowanceAhead(t *testing.T) {
	for _, name := range mixedNames {
		t.Run(name, func(t *testing.T) {
			e := realEnv(t)
			fake := clockwork.NewFakeClockAt(time.Now())
			e.clk = fake
			ctx := testCtx(t)
			const place = time.Minute
			start := fake.Now()
			java := func(owner string, allowance time.Duration) *javaFair {
				j := newJava(e, owner)
				j.allowance, j.now = allowance, fake.Now
				return j
			}
			// stepTo moves the fake clock to at in steps of a quarter of
			// the place time, letting the engine's look-again attempts
			// run. After each step it waits until the waiter's last
			// refresh (in Redis) is at most three quarters of a place time
			// old, less 5 s, so that the next step never takes the clock
			// past the waiter's liveness, however late the engine runs: the
			// waiter attempts at least every third of its place time, so
			// this holds once the engine has caught up with the clock.
			stepTo := func(waiter string, at time.Duration) {
				t.Helper()
				for fake.Now().Before(start.Add(at)) {
					fake.Advance(place / 4)
					now := fake.Now()
					eventually(t, 10*time.Second, func() bool {
						c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						defer cancel()
						ms, err := e.rdb.HGet(c, redisio.FairPlacesKey(name), waiter).Int64()
						return err == nil && time.UnixMilli(ms).Sub(now) >= place/4+5*time.Second
					}, "the waiter's engine caught up with the clock")
					time.Sleep(5 * time.Millisecond) // the engine handles its attempt's answer
				}
			}
			try := func(j *javaFair) bool {
				t.Helper()
				ok, err := j.try(ctx, name)
				require.NoError(t, err)
				return ok
			}

			holder, ja, jb, jc := java("holder", time.Minute), java("a", 5*time.Minute), java("b", 20*time.Minute),
				java("c", 5*time.Minute)
			require.True(t, try(holder))
			require.False(t, try(ja))
			require.False(t, try(jb))
			w := e.newClient(t, client.WithFairPlaceTime(place)).FairLock(name)
			got := inBackground(t, w.Lock)
			eventually(t, 5*time.Second, func() bool { return queuePos(t, e, name, w.Owner()) == 2 }, "W queued third")
			require.Equal(t, []string{ja.owner, jb.owner, w.Owner()}, queueOf(t, e, name))

			// W's refreshes read Jb's 20 minutes off the deadlines.
			stepTo(w.Owner(), 4*time.Minute)
			assert.GreaterOrEqual(t, placeDeadline(t, e, name, w.Owner()).Sub(placeDeadline(t, e, name, jb.owner)),
				place+20*time.Minute, "W protected by Jb's allowance")

			// The holder lets go; Ja takes the lock (W and Jb move down by
			// 5 minutes). Ja holds until minute 20, Jb waiting at the head
			// all along, and takes the lock then (W moves down by 20).
			require.NoError(t, holder.unlock(ctx, name))
			require.True(t, try(ja))
			require.False(t, try(jc))
			stepTo(w.Owner(), 20*time.Minute)
			require.Equal(t, []string{jb.owner, w.Owner(), jc.owner}, queueOf(t, e, name))
			require.NoError(t, ja.unlock(ctx, name))
			require.True(t, try(jb), "Jb, still within its deadline")
			require.False(t, try(jc))
			assert.Equal(t, []string{w.Owner(), jc.owner}, queueOf(t, e, name), "W kept its place")
			assert.True(t, placeDeadline(t, e, name, w.Owner()).After(fake.Now()), "W's deadline is ahead")
			assertDeadlinesIncreaseFrom(t, e, name, fake.Now())

			// W waits on as the head while Jb holds, Jc attempting.
			stepTo(w.Owner(), 25*time.Minute)
			require.False(t, try(jc))
			assert.Equal(t, []string{w.Owner(), jc.owner}, queueOf(t, e, name))
			assertDeadlinesIncreaseFrom(t, e, name, fake.Now())

			require.NoError(t, jb.unlock(ctx, name)) // wakes W
			r := await.Value(t, got, 5*time.Second, "W, woken by Jb's unlock")
			require.NoError(t, r.err)
			require.False(t, try(jc), "W holds")
			require.NoError(t, w.Unlock(ctx))
			require.True(t, try(jc), "Jc after W")
			require.NoError(t, jc.unlock(ctx, name))
		})
	}
}

// assertDeadlinesIncreaseFrom is assertDeadlinesIncrease on a clock of the
// test's own: the deadlines are ahead of now.
func assertDeadlinesIncreaseFrom(t *testing.T, e *env, name string, now time.Time) {
	t.Helper()
	prev := now
	for _, o := range queueOf(t, e, name) {
		d := placeDeadline(t, e, name, o)
		assert.True(t, d.After(prev), "%s's deadline %v is after the one ahead (or now) %v", o, d, prev)
		prev = d
	}
}
