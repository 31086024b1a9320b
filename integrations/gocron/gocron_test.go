package wardengocron_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/client"
	"github.com/warden-go/warden/election"
	wardengocron "github.com/warden-go/warden/integrations/gocron"
	"github.com/warden-go/warden/internal/redistest"
)

// run is one run of the job: when, on which scheduler.
type run struct {
	at        time.Time
	scheduler int
}

// runs records the job's runs across schedulers.
type runs struct {
	mu   sync.Mutex
	list []run
}

func (r *runs) add(scheduler int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, run{time.Now(), scheduler})
}

func (r *runs) since(t time.Time) []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []run
	for _, x := range r.list {
		if !x.at.Before(t) {
			out = append(out, x)
		}
	}
	return out
}

func newClient(t *testing.T, rdb redis.UniversalClient) *client.Client {
	t.Helper()
	c, err := client.New(rdb, client.WithWatchdogTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// startScheduler starts, in its own goroutine, a scheduler with opts and
// one job named "report" every second from start on, recording its runs
// as scheduler i. The returned stop shuts it down (also at cleanup).
func startScheduler(t *testing.T, i int, start time.Time, r *runs, opts ...gocron.SchedulerOption) (stop func()) {
	t.Helper()
	started := make(chan error, 1)
	var s gocron.Scheduler
	go func() {
		var err error
		s, err = gocron.NewScheduler(opts...)
		if err == nil {
			_, err = s.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() { r.add(i) }),
				gocron.WithName("report"), gocron.WithStartAt(gocron.WithStartDateTime(start)))
		}
		if err == nil {
			s.Start()
		}
		started <- err
	}()
	require.NoError(t, <-started)
	var once sync.Once
	stop = func() { once.Do(func() { require.NoError(t, s.Shutdown()) }) }
	t.Cleanup(stop)
	return stop
}

// Three schedulers, in three goroutines on three clients, share a job due
// every second: with the Locker, each tick runs exactly once across them.
func TestEachRunHappensOnceAcrossThreeSchedulers(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var r runs
	for i := range 3 {
		locker, err := wardengocron.NewLocker(newClient(t, rdb))
		require.NoError(t, err)
		startScheduler(t, i, start, &r, gocron.WithDistributedLocker(locker))
	}
	const ticks = 5
	time.Sleep(time.Until(start.Add(ticks*time.Second - 300*time.Millisecond)))

	per := map[int][]int{} // tick -> schedulers that ran it
	for _, x := range r.since(start.Add(-100 * time.Millisecond)) {
		tick := int(x.at.Sub(start).Round(time.Second) / time.Second)
		off := x.at.Sub(start.Add(time.Duration(tick) * time.Second))
		assert.Less(t, off, 450*time.Millisecond, "run at %v: close to its tick", x.at)
		per[tick] = append(per[tick], x.scheduler)
	}
	t.Logf("schedulers per tick: %v", per)
	for tick := range ticks {
		assert.Len(t, per[tick], 1, "tick %d ran exactly once: %v", tick, per[tick])
	}
	assert.Len(t, per, ticks, "no run outside the ticks")
}

// Three schedulers share an election through Electors: only the leader
// runs the job, and when the leader's scheduler stops (its Elector closed,
// which resigns), another takes over at the next tick.
func TestOnlyTheLeaderRunsJobsAndAnotherTakesOver(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var r runs
	electors := make([]*wardengocron.Elector, 3)
	stops := make([]func(), 3)
	for i := range electors {
		c := newClient(t, rdb)
		e, err := election.New(c, "scheduler")
		require.NoError(t, err)
		el, err := wardengocron.NewElector(e, fmt.Sprintf("scheduler-%d", i))
		require.NoError(t, err)
		electors[i] = el
		t.Cleanup(func() { require.NoError(t, el.Close(context.Background())) })
		stops[i] = startScheduler(t, i, start, &r, gocron.WithDistributedElector(el))
	}
	leaderOf := func() int {
		leader := -1
		require.Eventually(t, func() bool {
			leader = -1
			for i, el := range electors {
				if stops[i] != nil && el.IsLeader(context.Background()) == nil {
					if leader >= 0 {
						return false // never two
					}
					leader = i
				}
			}
			return leader >= 0
		}, 5*time.Second, 5*time.Millisecond, "one leader")
		return leader
	}
	first := leaderOf()
	time.Sleep(time.Until(start.Add(3*time.Second - 300*time.Millisecond)))
	before := r.since(start.Add(-100 * time.Millisecond))
	require.Len(t, before, 3, "three ticks, each run once")
	for _, x := range before {
		assert.Equal(t, first, x.scheduler, "only the leader runs the job")
	}

	stops[first]()
	require.NoError(t, electors[first].Close(context.Background()))
	stopped := time.Now()
	stops[first] = nil
	second := leaderOf()
	require.NotEqual(t, first, second)
	tookOver := time.Since(stopped)
	time.Sleep(3 * time.Second)
	after := r.since(stopped)
	require.GreaterOrEqual(t, len(after), 2, "the new leader runs the job")
	for _, x := range after {
		assert.Equal(t, second, x.scheduler, "only the new leader runs the job")
	}
	t.Logf("scheduler %d led, then %d (elected %v after the first stopped); runs after: %d",
		first, second, tookOver.Round(time.Millisecond), len(after))
}

// A job name that is no valid lock name is refused with
// ErrInvalidArgument before any Redis call: the Redis client points at a
// port nothing listens on.
func TestBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	c, err := client.New(rdb)
	require.NoError(t, err)
	defer c.Close(context.Background())

	_, err = wardengocron.NewLocker(nil)
	assert.ErrorIs(t, err, wardengocron.ErrInvalidArgument)
	_, err = wardengocron.NewLocker(c, wardengocron.WithMinHold(0))
	assert.ErrorIs(t, err, wardengocron.ErrInvalidArgument)
	assert.ErrorContains(t, err, "min hold")
	locker, err := wardengocron.NewLocker(c)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = locker.Lock(ctx, "")
	assert.ErrorIs(t, err, wardengocron.ErrInvalidArgument)
	assert.ErrorContains(t, err, "job name")
	_, err = locker.Lock(ctx, string(make([]byte, 64<<10)))
	assert.ErrorIs(t, err, wardengocron.ErrInvalidArgument)
	assert.ErrorContains(t, err, "job name")

	_, err = wardengocron.NewElector(nil, "v")
	assert.ErrorIs(t, err, wardengocron.ErrInvalidArgument)
	e, err := election.New(c, "x")
	require.NoError(t, err)
	_, err = wardengocron.NewElector(e, "")
	assert.ErrorIs(t, err, wardengocron.ErrInvalidArgument)
}

// A tick taken by one scheduler is refused to another at once, and so is
// a job still running elsewhere after its tick marker expired.
func TestLockRefusesATakenTickAndARunningJob(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	a, err := wardengocron.NewLocker(newClient(t, rdb), wardengocron.WithMinHold(200*time.Millisecond))
	require.NoError(t, err)
	b, err := wardengocron.NewLocker(newClient(t, rdb), wardengocron.WithMinHold(200*time.Millisecond))
	require.NoError(t, err)
	held, err := a.Lock(ctx, "job")
	require.NoError(t, err)
	require.NoError(t, held.Unlock(ctx))
	_, err = b.Lock(ctx, "job")
	require.ErrorIs(t, err, wardengocron.ErrJobLocked, "the tick is taken though the run ended")

	time.Sleep(300 * time.Millisecond) // the tick marker expires
	held, err = a.Lock(ctx, "job")
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // a run longer than the marker
	_, err = b.Lock(ctx, "job")
	require.ErrorIs(t, err, wardengocron.ErrJobLocked, "the job still runs on a")
	require.NoError(t, held.Unlock(ctx))
	time.Sleep(300 * time.Millisecond)
	held, err = b.Lock(ctx, "job")
	require.NoError(t, err)
	require.NoError(t, held.Unlock(ctx))
}
