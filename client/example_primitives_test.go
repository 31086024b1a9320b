package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/redisio"
)

// waitFor polls cond every 5ms for up to 5s; the examples use it to see
// that a waiter started in a goroutine has queued.
func waitFor(cond func() bool) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	panic("the condition did not come about within 5s")
}

// received returns what ch delivers, or fails after 5s.
func received[T any](ch <-chan T) T {
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		panic("nothing came within 5s")
	}
}

// A Lock is reentrant: its owner may take it again, and must unlock it as
// many times. Lock waits (without limit, or until ctx ends); while the lock
// is held the watchdog renews its lease.
func ExampleClient_Lock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lock := c.Lock("order:42")
	_ = lock.Lock(ctx)
	_ = lock.Lock(ctx) // the same owner enters again
	n, _ := lock.HoldCount(ctx)
	fmt.Println("holds:", n)

	_ = lock.Unlock(ctx)
	locked, _ := lock.IsLocked(ctx)
	fmt.Println("locked after one unlock:", locked)
	_ = lock.Unlock(ctx)
	locked, _ = lock.IsLocked(ctx)
	fmt.Println("locked after two:", locked)
	// Output:
	// holds: 2
	// locked after one unlock: true
	// locked after two: false
}

// LockLease takes the lock for a fixed lease, with no renewal: Redis
// deletes it when the lease ends, whatever the holder is doing.
func ExampleLock_LockLease() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lock := c.Lock("cache:rebuild")
	if err := lock.LockLease(ctx, 10*time.Second); err != nil {
		panic(err)
	}
	ttl, _ := lock.RemainTTL(ctx)
	fmt.Println("expires within 10s:", ttl > 0 && ttl <= 10*time.Second)
	_ = lock.Unlock(ctx)
	// Output: expires within 10s: true
}

// Lost tells a holder that its lock is gone: here someone force-unlocks
// it, and the watchdog's next renewal finds out. Work done under the lock
// should stop then: another owner may hold it already.
func ExampleLock_Lost() {
	c, stop := exampleClient(client.WithWatchdogTimeout(300 * time.Millisecond))
	defer stop()
	ctx := context.Background()

	lock := c.Lock("job:7")
	_ = lock.Lock(ctx)
	lost := lock.Lost()

	_, _ = c.Lock("job:7").ForceUnlock(ctx) // an operator steps in
	received(lost)
	fmt.Println("told the lock is lost")
	fmt.Println("unlock:", errors.Is(lock.Unlock(ctx), client.ErrNotHeld))
	// Output:
	// told the lock is lost
	// unlock: true
}

// A FairLock hands the lock to its waiters in the order they asked, across
// every process.
func ExampleClient_FairLock() {
	c, rdb, stop := exampleClientRedis()
	defer stop()
	ctx := context.Background()

	holder := c.FairLock("printer")
	_ = holder.Lock(ctx)

	got := make(chan string, 2)
	queued := func(n int64) func() bool {
		return func() bool { return rdb.LLen(ctx, redisio.FairQueueKey("printer")).Val() == n }
	}
	for i, who := range []string{"first", "second"} {
		go func() {
			l := c.FairLock("printer")
			if err := l.Lock(ctx); err != nil {
				panic(err)
			}
			got <- who
			_ = l.Unlock(ctx)
		}()
		waitFor(queued(int64(i + 1))) // the waiter has its place
	}
	_ = holder.Unlock(ctx)
	fmt.Println(received(got))
	fmt.Println(received(got))
	// Output:
	// first
	// second
}

// A ReadWriteLock admits any number of readers, or one writer.
func ExampleClient_ReadWriteLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	r1, r2 := c.ReadWriteLock("prices").ReadLock(), c.ReadWriteLock("prices").ReadLock()
	_ = r1.Lock(ctx)
	ok, _ := r2.TryLock(ctx)
	fmt.Println("second reader:", ok)

	w := c.ReadWriteLock("prices").WriteLock()
	ok, _ = w.TryLock(ctx)
	fmt.Println("writer while read:", ok)

	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	ok, _ = w.TryLock(ctx)
	fmt.Println("writer after the readers:", ok)
	_ = w.Unlock(ctx)
	// Output:
	// second reader: true
	// writer while read: false
	// writer after the readers: true
}

// A FencedLock gives each holding a token that increases strictly per
// name: a resource that refuses tokens lower than the highest it has seen
// also refuses a holder that lost the lock without knowing.
func ExampleFencedLock_LockToken() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	first := c.FencedLock("ledger")
	t1, _ := first.LockToken(ctx)
	_ = first.Unlock(ctx)

	second := c.FencedLock("ledger")
	t2, _ := second.LockToken(ctx)
	_ = second.Unlock(ctx)
	fmt.Println(t1, t2)
	// Output: 1 2
}

// A Semaphore shares permits between any processes; nobody owns a
// permit, so anyone may release one.
func ExampleClient_Semaphore() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.Semaphore("uploads")
	_, _ = sem.TrySetPermits(ctx, 2)
	_ = sem.Acquire(ctx, 2)
	ok, _ := sem.TryAcquire(ctx, 1, 0)
	fmt.Println("a third permit:", ok)

	_ = sem.Release(ctx, 1)
	ok, _ = sem.TryAcquire(ctx, 1, time.Second)
	fmt.Println("after a release:", ok)
	_ = sem.Release(ctx, 2)
	n, _ := sem.AvailablePermits(ctx)
	fmt.Println("available:", n)
	// Output:
	// a third permit: false
	// after a release: true
	// available: 2
}

// A PermitExpirableSemaphore's permits have IDs and leases: a permit not
// released within its lease returns by itself, and its late release fails.
func ExampleClient_PermitExpirableSemaphore() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	sem := c.PermitExpirableSemaphore("reports")
	_, _ = sem.TrySetPermits(ctx, 1)
	id, _ := sem.Acquire(ctx, 200*time.Millisecond)
	fmt.Println("permit ID of", len(id), "hex characters")

	// The only permit is out: a second acquire waits until its lease ends.
	next, ok, _ := sem.TryAcquire(ctx, 5*time.Second, 0)
	fmt.Println("got it once the lease ran out:", ok)

	released, _ := sem.TryRelease(ctx, id)
	fmt.Println("late release of the first:", released)
	_ = sem.Release(ctx, next)
	// Output:
	// permit ID of 32 hex characters
	// got it once the lease ran out: true
	// late release of the first: false
}

// A CountDownLatch lets waiters block until the count reaches zero.
func ExampleClient_CountDownLatch() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	ready := c.CountDownLatch("services-ready")
	_, _ = ready.TrySetCount(ctx, 2)
	done := make(chan error, 1)
	go func() { done <- c.CountDownLatch("services-ready").Await(ctx) }()

	_ = ready.CountDown(ctx) // the database is up
	n, _ := ready.Count(ctx)
	fmt.Println("count:", n)
	_ = ready.CountDown(ctx) // the cache is up
	fmt.Println("await returned:", received(done))
	// Output:
	// count: 1
	// await returned: <nil>
}

// A MultiLock holds several locks as one (Redisson's RedissonMultiLock),
// here on two Redis servers: all of them, or none.
func ExampleNewMultiLock() {
	c1, stop1 := exampleClient()
	defer stop1()
	c2, stop2 := exampleClient()
	defer stop2()
	ctx := context.Background()

	both := client.NewMultiLock(c1.Lock("account:1"), c2.Lock("account:2"))
	if err := both.Lock(ctx); err != nil {
		panic(err)
	}
	ok, _ := c2.Lock("account:2").TryLock(ctx)
	fmt.Println("another owner gets account:2:", ok)

	_ = both.Unlock(ctx)
	ok, _ = c1.Lock("account:1").TryLock(ctx)
	fmt.Println("after the unlock, account:1:", ok)
	// Output:
	// another owner gets account:2: false
	// after the unlock, account:1: true
}

// A GroupLock takes many values of one group at once, all or none, in
// one round trip (Redisson's faster multi-lock): handles that share a
// value exclude each other, handles on other values of the group do not.
func ExampleClient_GroupLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	trip := c.GroupLock("class:100", "jack", "mary")
	if err := trip.Lock(ctx); err != nil {
		panic(err)
	}
	ok, _ := c.GroupLock("class:100", "mary", "zoe").TryLock(ctx)
	fmt.Println("another owner gets mary and zoe:", ok)
	other := c.GroupLock("class:100", "zoe", "tom")
	ok, _ = other.TryLock(ctx)
	fmt.Println("another owner gets zoe and tom:", ok)
	_ = other.Unlock(ctx)
	_ = trip.Unlock(ctx)
	// Output:
	// another owner gets mary and zoe: false
	// another owner gets zoe and tom: true
}

// A StripedLock maps keys to a fixed number of locks, its stripes, by a
// hash every client computes alike (FNV-1a 32 of the key mod stripes):
// keys on different stripes are locked in parallel.
func ExampleClient_StripedLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	stock := c.StripedLock("stock", 16)
	fmt.Println("foobar is on", stock.Name("foobar"))
	l := stock.For("foobar")
	if err := l.Lock(ctx); err != nil {
		panic(err)
	}
	ok, _ := c.Lock("stock:8").TryLock(ctx)
	fmt.Println("another owner gets stock:8:", ok)
	_ = l.Unlock(ctx)
	// Output:
	// foobar is on stock:8
	// another owner gets stock:8: false
}

// ForKeys takes the stripes of several keys at once, each once, in
// ascending stripe index: two callers never hold one each of two stripes
// the other wants.
func ExampleStripedLock_ForKeys() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	stock := c.StripedLock("stock", 16)
	order := stock.ForKeys("product:1", "product:2", "product:42")
	if err := order.Lock(ctx); err != nil {
		panic(err)
	}
	for _, k := range []string{"product:1", "product:2", "product:42"} {
		fmt.Println(k, "->", stock.Name(k))
	}
	ok, _ := c.StripedLock("stock", 16).For("product:2").TryLock(ctx)
	fmt.Println("another owner gets product:2's stripe:", ok)
	_ = order.Unlock(ctx)
	// Output:
	// product:1 -> stock:9
	// product:2 -> stock:0
	// product:42 -> stock:0
	// another owner gets product:2's stripe: false
}

// A RedLock takes one name on a majority of independent Redis masters.
func ExampleNewRedLock() {
	var members []*client.Lock
	for range 3 {
		c, stop := exampleClient()
		defer stop()
		members = append(members, c.Lock("payout"))
	}
	ctx := context.Background()

	rl := client.NewRedLock(members...)
	if err := rl.LockLease(ctx, 10*time.Second); err != nil {
		panic(err)
	}
	fmt.Println("valid for a while:", time.Until(rl.ValidUntil()) > 5*time.Second)

	other := client.NewRedLock(members[0], members[1], members[2])
	ok, _ := other.TryLockWait(ctx, 0, 10*time.Second)
	fmt.Println("another RedLock:", ok)
	_ = rl.Unlock(ctx)
	// Output:
	// valid for a while: true
	// another RedLock: false
}

// CloseAndRelease releases every lock the Client holds before closing it,
// so that waiters elsewhere need not wait for the leases to run out.
func ExampleClient_CloseAndRelease() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	c, _ := client.New(rdb)
	_ = c.Lock("nightly").Lock(ctx)
	_ = c.ReadWriteLock("catalog").ReadLock().Lock(ctx)
	fmt.Println("close:", c.CloseAndRelease(ctx))

	other, _ := client.New(rdb)
	defer other.Close(ctx)
	ok, _ := other.Lock("nightly").TryLock(ctx)
	fmt.Println("free at once:", ok)
	err := c.Lock("nightly").Lock(ctx)
	fmt.Println("the closed client:", errors.Is(err, client.ErrClosed))
	// Output:
	// close: <nil>
	// free at once: true
	// the closed client: true
}

// WithWatchdogTimeout sets the lease of watchdog-mode locks: a crashed
// holder's lock expires within it, and a live holder's is renewed every
// third of it.
func ExampleWithWatchdogTimeout() {
	c, stop := exampleClient(client.WithWatchdogTimeout(5 * time.Second))
	defer stop()
	ctx := context.Background()

	lock := c.Lock("sync:feeds")
	_ = lock.Lock(ctx)
	ttl, _ := lock.RemainTTL(ctx)
	fmt.Println("lease of at most 5s:", ttl > 0 && ttl <= 5*time.Second)
	_ = lock.Unlock(ctx)
	// Output: lease of at most 5s: true
}

// WithOwner gives handles one owner, so that they are reentries of each
// other (Redisson's owner is a thread; here it is whatever the caller
// chooses, e.g. one per request).
func ExampleWithOwner() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	owner := c.ID() + ":request-81"
	a := c.Lock("basket:5", client.WithOwner(owner))
	b := c.Lock("basket:5", client.WithOwner(owner))
	_ = a.Lock(ctx)
	ok, _ := b.TryLock(ctx)
	n, _ := a.HoldCount(ctx)
	fmt.Println("same owner enters:", ok, "holds:", n)
	_ = b.Unlock(ctx)
	_ = a.Unlock(ctx)
	// Output: same owner enters: true holds: 2
}

// WithClientID sets the first part of every owner, which is what Redis
// shows in the lock's hash: useful to tell which service holds a lock.
func ExampleWithClientID() {
	c, rdb, stop := exampleClientRedis(client.WithClientID("billing-7"))
	defer stop()
	ctx := context.Background()

	lock := c.Lock("invoice:12")
	_ = lock.Lock(ctx)
	fields, _ := rdb.HKeys(ctx, "invoice:12").Result()
	fmt.Println(strings.HasPrefix(fields[0], "billing-7:"), fields[0] == lock.Owner())
	_ = lock.Unlock(ctx)
	// Output: true true
}

// WithLogger receives what the engine has to report with nobody to return
// it to: here a lost lock.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a deterministic output
			}
			return a
		},
	}))
	c, stop := exampleClient(client.WithLogger(logger), client.WithClientID("billing-7"),
		client.WithWatchdogTimeout(300*time.Millisecond))
	defer stop()
	ctx := context.Background()

	lock := c.Lock("invoice:13")
	_ = lock.Lock(ctx)
	_, _ = c.Lock("invoice:13").ForceUnlock(ctx)
	received(lock.Lost())
	// Output: level=WARN msg="warden: lock lost" name=invoice:13 owner=billing-7:1
}
