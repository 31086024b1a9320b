package redisio

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/await"
	"github.com/warden-go/warden/internal/redistest"
)

// hammer runs workers goroutines, each making rounds acquire+unlock pairs
// on a name of its own through r, and fails t on any wrong result.
func hammer(t *testing.T, r Redis, workers, rounds int) {
	t.Helper()
	s := newScripts(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("auto:%d", w)
			for i := range rounds {
				id := fmt.Sprintf("%d:%d", w, i)
				res, err := s.lockAcquire(ctx, r, name, "o", id, time.Minute)
				if !assert.NoError(t, err) || !assert.Equal(t, AcquireResult{Acquired: true, HoldCount: 1}, res) {
					return
				}
				left, held, err := s.Unlock(ctx, r, name, "o", id, time.Minute)
				if !assert.NoError(t, err) || !assert.True(t, held) || !assert.Zero(t, left) {
					return
				}
			}
		}()
	}
	await.Group(t, &wg, time.Minute, "the acquire and unlock rounds")
}

// deadlineHook records the deadline of every pipeline's context.
type deadlineHook struct {
	mu        sync.Mutex
	deadlines []time.Time // zero: none
}

func (h *deadlineHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *deadlineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *deadlineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		dl, _ := ctx.Deadline()
		h.mu.Lock()
		h.deadlines = append(h.deadlines, dl)
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// A pipeline of several calls runs with the earliest of their deadlines,
// so that its retries stay within every call's bound, and without their
// cancellation.
func TestAutoPipelineKeepsTheEarliestDeadline(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	h := &deadlineHook{}
	rdb.AddHook(h)
	p := NewAutoPipeline(rdb)
	soon := time.Now().Add(time.Minute)
	early, cancelEarly := context.WithDeadline(context.Background(), soon)
	defer cancelEarly()
	late, cancelLate := context.WithDeadline(context.Background(), soon.Add(time.Hour))
	defer cancelLate()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	batch := []*pipedCall{
		{ctx: cancelled, cmd: redis.NewCmd(cancelled, "ping")}, // the first caller gave up: the others still run
		{ctx: late, cmd: redis.NewCmd(late, "ping")},
		{ctx: early, cmd: redis.NewCmd(early, "ping")},
	}
	p.send(batch)
	for _, c := range batch {
		assert.NoError(t, c.cmd.Err())
	}
	require.NotEmpty(t, h.deadlines)
	for _, dl := range h.deadlines {
		assert.True(t, dl.Equal(soon), "the pipeline's deadline %v is the earliest of its calls', %v", dl, soon)
	}

	h.deadlines = nil
	none := []*pipedCall{{ctx: context.Background(), cmd: redis.NewCmd(context.Background(), "ping")},
		{ctx: context.Background(), cmd: redis.NewCmd(context.Background(), "ping")}}
	p.send(none)
	require.NotEmpty(t, h.deadlines)
	for _, dl := range h.deadlines {
		assert.True(t, dl.IsZero(), "calls without deadlines give the pipeline none")
	}
}

// Concurrent script calls share pipelines and each gets its own result;
// a lone call is sent as it is.
func TestAutoPipelineBatchesConcurrentCalls(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	p := NewAutoPipeline(rdb)
	s := newScripts(t)
	ctx := context.Background()
	_, err := s.lockAcquire(ctx, p, "alone", "o", "r1", time.Minute)
	require.NoError(t, err)
	batches, _ := p.Stats()
	assert.Zero(t, batches, "a lone call is not a pipeline")

	require.NoError(t, rdb.ScriptFlush(ctx).Err()) // the first calls fall back to EVAL, pipelined too
	hammer(t, p, 32, 50)
	batches, calls := p.Stats()
	assert.Positive(t, batches, "concurrent calls were pipelined")
	scripted, ran := p.ScriptBatches()
	assert.Positive(t, scripted, "calls of one script in a pipeline went as a batch script call")
	t.Logf("%d pipelines carried %d of %d calls; %d batch script calls ran %d", batches, calls, 32*50*2, scripted, ran)
}

// One call's script error stays its own.
func TestAutoPipelineErrorsStayPerCall(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	p := NewAutoPipeline(rdb)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := "return ARGV[1]"
			if i%4 == 0 {
				body = "return redis.error_reply('ERR bad ' .. ARGV[1])"
			}
			v, err := p.Eval(ctx, body, []string{fmt.Sprint("k", i)}, i).Result()
			if i%4 == 0 {
				assert.EqualError(t, err, fmt.Sprintf("ERR bad %d", i))
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, fmt.Sprint(i), v)
		}()
	}
	await.Group(t, &wg, time.Minute, "the pipelined calls")
}

// On a cluster the pipelines are split per master by go-redis, routed by
// each script's first key.
func TestAutoPipelineOnACluster(t *testing.T) {
	cc := redistest.StartCluster(t, 3).Client(t)
	p := NewAutoPipeline(cc)
	hammer(t, p, 24, 20)
	batches, _ := p.Stats()
	assert.Positive(t, batches)
	scripted, _ := p.ScriptBatches()
	// (auto:0 .. auto:23 are 24 distinct slots.)
	assert.Zero(t, scripted, "no batch script call spans a Cluster's slots")
	ctx := context.Background()
	for w := range 24 {
		assert.Zero(t, cc.Exists(ctx, fmt.Sprintf("auto:%d", w)).Val())
	}
	var _ Redis = (*redis.ClusterClient)(nil)
}

// On a cluster, calls of a batched script whose names share a hash slot
// ("{t}:0", "{t}:1", ...) go as one batch script call on that slot's
// master; calls of other slots go as they are, beside it in the pipeline.
// Each gets its own reply, and a batch script a master does not know
// (after SCRIPT FLUSH) runs by EVAL.
func TestAutoPipelineBatchesOneSlotOnACluster(t *testing.T) {
	ctx := context.Background()
	cc := redistest.StartCluster(t, 3).Client(t)
	s := newScripts(t)
	p := NewAutoPipeline(cc)
	names := []string{"{t}:0", "{t}:1", "a", "{t}:2", "b", "{t}:3", "{u}:0"}
	acquire := func(round int, names []string) {
		t.Helper()
		var batch []*pipedCall
		for i, name := range names {
			call := s.acquireCall(s.LockArgs(name), "o", fmt.Sprint("r", round, i), time.Minute, false, false)
			batch = append(batch, &pipedCall{ctx: ctx, cmd: call.cmd(ctx)})
		}
		p.send(batch)
		for i, c := range batch {
			res, err := acquireReply("acquire", names[i], c.cmd)
			require.NoError(t, err, "round %d, call %d (%s)", round, i, names[i])
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: round + 1}, res, "round %d, call %d (%s)", round, i, names[i])
		}
	}
	load := func() {
		t.Helper()
		require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return s.Load(ctx, m) }))
	}
	load()
	acquire(0, names)
	// The batch script gone from the masters: the batch runs by EVAL. (A
	// lone call's NOSCRIPT is its caller's to answer, by EVAL: see
	// scriptCall.run.)
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.ScriptFlush(ctx).Err()
	}))
	acquire(1, []string{"{t}:0", "{t}:1", "{t}:2", "{t}:3"})
	batches, calls := p.ScriptBatches()
	assert.Equal(t, []uint64{2, 8}, []uint64{batches, calls}, "the four {t} calls as one batch, each round")
	for i, name := range names {
		want := "1"
		if strings.HasPrefix(name, "{t}") {
			want = "2"
		}
		assert.Equal(t, want, cc.HGet(ctx, name, "o").Val(), "call %d (%s)", i, name)
	}
	load()

	// Unlocks of one slot batch too, each with its own reply.
	var batch []*pipedCall
	for i, name := range names {
		call := s.unlockCall(s.LockArgs(name), "o", fmt.Sprint("u", i), time.Minute, s.publishArg)
		batch = append(batch, &pipedCall{ctx: ctx, cmd: call.cmd(ctx)})
	}
	p.send(batch)
	for i, c := range batch {
		require.NoError(t, c.cmd.Err(), "unlock %d (%s)", i, names[i])
		if !strings.HasPrefix(names[i], "{t}") {
			assert.Zero(t, cc.Exists(ctx, names[i]).Val(), "unlock %d (%s) released its one hold", i, names[i])
			continue
		}
		assert.Equal(t, "1", cc.HGet(ctx, names[i], "o").Val(), "unlock %d (%s) took one of two holds", i, names[i])
	}
	batches, calls = p.ScriptBatches()
	assert.Equal(t, []uint64{3, 12}, []uint64{batches, calls})
}

// panicHook panics in the next calls and pipelines while left is above 0,
// as a broken hook of the user's client would.
type panicHook struct{ left *atomic.Int32 }

func (h panicHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.left.Add(-1) >= 0 {
			panic("hook failed")
		}
		return next(ctx, cmd)
	}
}
func (h panicHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.left.Add(-1) >= 0 {
			panic("hook failed")
		}
		return next(ctx, cmds)
	}
}

// A panic in the client under the pipelining (a hook of the user's) goes on
// to the caller that flushed, but the pipelining keeps no trace of it:
// the flush slot of a call sent alone comes back, and every call of a
// pipeline that panicked is answered with an error, so none waits for
// ever and the next calls run.
func TestAutoPipelineSurvivesAPanickingHook(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	var left atomic.Int32
	rdb.AddHook(panicHook{&left})
	p := NewAutoPipeline(rdb)
	left.Store(flushSlots + 1)
	for range flushSlots + 1 {
		require.PanicsWithValue(t, "hook failed", func() { p.Eval(ctx, "return 1", []string{"k"}) })
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Eval(ctx, "return 1", []string{"k"}).Err() }()
	require.NoError(t, await.Value(t, ran, 5*time.Second, "a call after the panics"), "every flush slot came back")

	left.Store(1)
	batch := []*pipedCall{
		{ctx: ctx, cmd: redis.NewCmd(ctx, "eval", "return 1", 1, "a")},
		{ctx: ctx, cmd: redis.NewCmd(ctx, "eval", "return 2", 1, "b")},
	}
	p.mu.Lock()
	p.inflight++ // as do takes a slot for the flush
	p.mu.Unlock()
	require.PanicsWithValue(t, "hook failed", func() { p.flush(batch) })
	for i, c := range batch {
		assert.True(t, c.done, "call %d answered", i)
		assert.ErrorContains(t, c.cmd.Err(), "panicked, their outcome unknown: hook failed", "call %d", i)
	}
	p.mu.Lock()
	assert.Zero(t, p.inflight, "the flush's slot came back")
	p.mu.Unlock()
	go func() { ran <- p.Eval(ctx, "return 1", []string{"k"}).Err() }()
	require.NoError(t, await.Value(t, ran, 5*time.Second, "a call after the pipeline's panic"))
}
