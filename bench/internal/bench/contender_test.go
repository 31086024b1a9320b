package bench_test

import (
	"context"
	"strconv"
	"testing"
	"time"

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
		if c.Role == bench.RoleFloor {
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
// on a held name returns when its context ends.
func TestLibrariesSpeakTheirProtocol(t *testing.T) {
	cs, _ := contenders(t)
	ctx := context.Background()
	for i, c := range cs {
		if c.Role != bench.RoleLock {
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
