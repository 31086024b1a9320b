// Package wardentest tests code that uses warden locks: a [Kit] is a
// warden Client on an embedded Redis (miniredis) whose time is a fake
// clock shared with the engine, with controls for time and faults. Minutes
// of lock time pass in milliseconds, the same way on every run, with no
// sleeps in the test:
//
//	kit := wardentest.New(t)          // t is the test's *testing.T
//	c := kit.Client()                 // a *client.Client, ready
//	kit.Advance(40 * time.Second)     // leases expire in Redis, the watchdog renews
//
// [Kit.Advance] moves the engine's clock and Redis's together, firing what
// falls due in the order of its deadlines, and returns once the engine has
// handled it all: renewals sent and answered, losses reported on the
// holders' Lost channels, waits timed out, waiters woken, fair-queue
// places lapsed. A test reads the outcome right after it.
//
// The faults a lock meets in production, on call:
//
//   - [Kit.RestartRedis]: Redis stops and starts again, with its keys or
//     without them (a server without persistence);
//   - [Kit.DropPubSub]: the connections that carry unlock messages break;
//   - [Kit.LoseNextReply]: a command runs on Redis but its reply is lost
//     ([ErrReplyLost]), so the engine does not know whether it took effect;
//   - [Kit.PauseEngine]: the process stops for a while, as in a long
//     garbage collection pause or a SIGSTOP: Redis's time goes on, and the
//     engine finds on waking what expired meanwhile.
//
// [Kit.NewClient] adds another process on the same Redis and clock (to
// compete for a lock, or to force-unlock it), [Kit.Redis] gives the test
// its own Redis connection, to look at or delete keys, and [Kit.Clock] the
// fake clock, for code under test that takes a clockwork.Clock.
//
// The test's cleanup closes the kit's clients and Redis, and fails the
// test if a goroutine started since New is still running.
//
// The kit's controls are for the test's goroutine, one at a time; the
// code under test may run on other goroutines. A test that starts a call
// there must know that the call reached the engine before it moves the
// time or frees the lock (a wait's deadline counts from the call, and a
// fair queue's order from the arrivals): [Kit.WaitWaiters](name, n)
// returns once n calls wait for name in the engines of the kit's clients,
// each past its first attempt, with no sleep in the test; [Kit.Waiters]
// reads the count, and WaitWaiters(name, 0) waits until every waiter has
// gone. The engine's
// built-in Redis is miniredis: the kit checks the lock's logic as code
// meets it, not Redis's own behaviour; keep the tests that need a real
// server (replication, cluster) on one.
//
// # Recipe: my code handles Lost()
//
// A holder that keeps working after its lock is gone corrupts what the
// lock protects. Lose the lock in the middle of the work (another client
// force-unlocks it, or the key vanishes), move the time past the next
// renewal, and check that the code stopped:
//
//	func TestCopyStopsWhenTheLockIsLost(t *testing.T) {
//		kit := wardentest.New(t) // watchdog: a 30s lease renewed every 10s
//		ctx := context.Background()
//		operator := kit.NewClient()
//		copied, err := copyRows(ctx, kit.Client().Lock("rows"), 10, func(i int) {
//			if i == 3 {
//				_, _ = operator.Lock("rows").ForceUnlock(ctx)
//			}
//			kit.Advance(4 * time.Second) // each batch takes 4s
//		})
//		// The renewal due at 20s, in batch 4, finds the lock gone.
//		require.ErrorIs(t, err, client.ErrLockLost)
//		require.Equal(t, 5, copied)
//	}
//
// where copyRows, the code under test, looks at l.Lost() before each
// batch.
//
// # Recipe: my code's lease is long enough
//
// A fixed lease (LockLease) ends whether or not the work is done; then
// another owner gets in while the first still works, and the first one's
// Unlock fails with client.ErrNotHeld. Let the work take its worst-case
// time on the kit's clock and try the lock from another client meanwhile:
//
//	func TestTheJobsLeaseIsLongEnough(t *testing.T) {
//		kit := wardentest.New(t)
//		ctx := context.Background()
//		other := kit.NewClient().Lock("nightly")
//		err := runJob(ctx, kit.Client().Lock("nightly"), 30*time.Second, func() {
//			kit.Advance(35 * time.Second) // the job, 35s in
//			ok, err := other.TryLock(ctx)
//			require.NoError(t, err)
//			require.False(t, ok, "another owner got in while the job ran")
//			kit.Advance(5 * time.Second)
//		})
//		require.NoError(t, err)
//	}
//
// With a 30s lease and a 40s job this test fails, as it should; with a
// lease of a minute, or a watchdog lock (Lock), it passes.
//
// # Recipe: my code survives a Redis restart
//
// A Redis that restarts without its data forgets every lock: the holders
// must be told, and another owner can get in at once. One that keeps its
// data keeps the locks, and renewals go on:
//
//	func TestHolderIsToldWhenRedisForgetsTheLock(t *testing.T) {
//		kit := wardentest.New(t)
//		ctx := context.Background()
//		l := kit.Client().Lock("index")
//		require.NoError(t, l.Lock(ctx))
//		kit.RestartRedis(false)       // back, empty
//		kit.Advance(10 * time.Second) // the next renewal finds the lock gone
//		select {
//		case <-l.Lost():
//		default:
//			t.Fatal("the holder was not told")
//		}
//	}
//
// RestartRedis(true), followed by Advance over minutes, shows the lock
// kept: Lost stays open and the key's TTL keeps being renewed.
//
// # Recipe: my code waits its turn
//
// Code that waits for a lock on a goroutine of its own must be waiting in
// the engine before the test moves the time, or its wait would count from
// a later moment. WaitWaiters says when:
//
//	func TestRefreshIsSkippedWhileAnotherHoldsTheLock(t *testing.T) {
//		kit := wardentest.New(t)
//		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//		defer cancel()
//		holder := kit.NewClient().Lock("cache")
//		require.NoError(t, holder.Lock(ctx))
//		done := make(chan bool, 1)
//		go func() {
//			ok, _ := refreshOrSkip(ctx, kit.Client().Lock("cache"), 10*time.Second)
//			done <- ok
//		}()
//		kit.WaitWaiters("cache", 1)   // refreshOrSkip waits in the engine
//		kit.Advance(10 * time.Second) // its wait runs out
//		select {
//		case ok := <-done:
//			require.False(t, ok, "skipped while another held the lock")
//		case <-time.After(5 * time.Second):
//			t.Fatal("refreshOrSkip still waits")
//		}
//	}
//
// where refreshOrSkip, the code under test, calls TryLockWait with the
// wait it is given. Unlocking the holder before the wait ends, and
// Advance(0), shows the other branch: the waiter is woken and refreshes.
//
// The package's own tests (recipes_test.go) run these four recipes in
// full.
package wardentest
