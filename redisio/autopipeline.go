package redisio

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// AutoPipeline is a Redis that sends the script calls made at the same
// time by many callers (the engine's actors, each on its own worker) as one
// pipeline per round trip, in the spirit of rueidis's auto-pipelining: a
// caller that finds a free flush slot sends everything queued so far,
// its own call included; a caller that finds every slot busy queues its
// call and waits, and the next caller to find a free slot sends it. A call
// made alone goes straight to Redis, as it would without the wrapper, so
// the uncontended path pays nothing for it.
//
// Only EVAL and EVALSHA are pipelined; every other command passes through.
// There is no goroutine of its own: the callers do the flushing. In a
// pipeline, two or more calls of the plain lock's acquire, or of the
// unlock, go as one call of a batch script that runs each as its own
// script would (batchScript); on a Cluster, two or more of one hash slot.
type AutoPipeline struct {
	Redis

	mu       sync.Mutex
	cond     *sync.Cond
	queue    []*pipedCall
	inflight int

	batches, piped uint64 // how many pipelines of more than one call, and their calls
	cluster        bool   // a Cluster client: no batch scripts

	scriptBatches, scriptBatched atomic.Uint64 // batch script calls, and the calls they ran
}

// pipedCall is one queued script call.
type pipedCall struct {
	ctx  context.Context
	cmd  *redis.Cmd
	done bool
}

// Pipelining bounds: flushSlots pipelines in flight at once (one
// connection each), of at most maxBatch calls. Measured on 2 cores with a
// local Redis (BenchmarkLockUnlockParallel, alternating runs): 8 slots
// made a pair of 16 goroutines on 16 names take 26-28 µs, against 33 µs
// with 4 and 27 µs with no pipelining, and 25-27 µs at 64 and 256
// goroutines (4 slots: 26-27 µs; no pipelining: 38 and 47 µs).
const (
	flushSlots = 8
	maxBatch   = 256
)

// NewAutoPipeline wraps r.
func NewAutoPipeline(r Redis) *AutoPipeline {
	_, cluster := r.(*redis.ClusterClient)
	p := &AutoPipeline{Redis: r, cluster: cluster}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Unwrap returns the wrapped Redis.
func (p *AutoPipeline) Unwrap() Redis { return p.Redis }

// ScriptBatches reports how many batch script calls were sent (calls of
// the plain lock's acquire, or of the unlock, queued together and sent as
// one EVALSHA of scripts/batch.lua) and how many calls they ran.
func (p *AutoPipeline) ScriptBatches() (batches, calls uint64) {
	return p.scriptBatches.Load(), p.scriptBatched.Load()
}

// Stats reports how many pipelines of more than one call were sent and how
// many calls they carried.
func (p *AutoPipeline) Stats() (batches, calls uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.batches, p.piped
}

// EvalSha runs a cached script, pipelined with concurrent calls.
func (p *AutoPipeline) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.do(ctx, scriptCmd(ctx, "evalsha", sha1, keys, args))
}

// Eval runs a script from its source, pipelined with concurrent calls.
func (p *AutoPipeline) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.do(ctx, scriptCmd(ctx, "eval", script, keys, args))
}

// scriptCmd builds the command go-redis's EvalSha or Eval would send, with
// its first key marked for a cluster pipeline's routing.
func scriptCmd(ctx context.Context, name, body string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, body, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// do queues c and returns once it has run, sending pipelines while a flush
// slot is free and calls are queued.
func (p *AutoPipeline) do(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	p.mu.Lock()
	if p.inflight < flushSlots && len(p.queue) == 0 {
		// Alone: sent at once on a slot of its own, with nothing to queue.
		p.inflight++
		p.mu.Unlock()
		defer p.freeSlot() // a panic in the call (a hook) gives the slot back too
		_ = p.Redis.Process(ctx, cmd)
		return cmd
	}
	c := &pipedCall{ctx: ctx, cmd: cmd}
	p.queue = append(p.queue, c)
	for !c.done {
		if p.inflight < flushSlots && len(p.queue) > 0 {
			n := min(len(p.queue), maxBatch)
			batch := p.queue[:n:n]
			p.queue = p.queue[n:]
			if len(p.queue) == 0 {
				p.queue = nil
			}
			p.inflight++
			if n > 1 {
				p.batches++
				p.piped += uint64(n)
			}
			p.mu.Unlock()
			p.flush(batch)
			p.mu.Lock()
			p.inflight--
			for _, b := range batch {
				b.done = true
			}
			p.cond.Broadcast()
			continue
		}
		p.cond.Wait()
	}
	p.mu.Unlock()
	return cmd
}

// freeSlot gives back the flush slot of a call sent alone.
func (p *AutoPipeline) freeSlot() {
	p.mu.Lock()
	p.inflight--
	if len(p.queue) > 0 {
		p.cond.Broadcast() // calls queued meanwhile: one of them sends
	}
	p.mu.Unlock()
}

// flush sends batch (send). Should that panic (a hook of the client, say),
// every call of batch fails with the panic, as a call whose outcome is
// unknown, and is answered, its slot given back, before the panic goes on:
// no caller waits for ever on a flush that never ends.
func (p *AutoPipeline) flush(batch []*pipedCall) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("warden: a pipeline of %d calls panicked, their outcome unknown: %v", len(batch), r)
			p.mu.Lock()
			p.inflight--
			for _, b := range batch {
				b.cmd.SetErr(err)
				b.done = true
			}
			p.cond.Broadcast()
			p.mu.Unlock()
			panic(r)
		}
	}()
	p.send(batch)
}

// send runs a batch: a lone call on its caller's context, as a plain call;
// several as one pipeline, under the first caller's context without its
// cancellation (the calls of the others must not fail with it) but with
// the earliest deadline of the batch's calls, so that go-redis retries the
// pipeline no later than any of its calls may run (IOTimeout, which keeps
// every retry within its latch's TTL).
func (p *AutoPipeline) send(batch []*pipedCall) {
	if len(batch) == 1 {
		_ = p.Redis.Process(batch[0].ctx, batch[0].cmd)
		return
	}
	ctx := context.WithoutCancel(batch[0].ctx)
	if dl, ok := earliestDeadline(batch); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	pipe := p.Redis.Pipeline()
	var groups []callGroup
	for _, c := range p.grouped(batch, &groups) {
		_ = pipe.Process(ctx, c.cmd)
	}
	for i := range groups {
		g := &groups[i]
		g.cmd = g.b.cmd(ctx, g.calls, false)
		_ = pipe.Process(ctx, g.cmd)
	}
	_, _ = pipe.Exec(ctx)
	for i := range groups {
		g := &groups[i]
		if err := g.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// The server lost the batch script (a restart, SCRIPT
			// FLUSH): its calls ran none; EVAL runs and loads it.
			g.cmd = g.b.cmd(ctx, g.calls, true)
			_ = p.Redis.Process(ctx, g.cmd)
		}
		g.b.answer(g.calls, g.cmd)
	}
}

// callGroup is the calls of one batch script in a pipeline, and the
// command that runs them.
type callGroup struct {
	b     *batchScript
	calls []*pipedCall
	cmd   *redis.Cmd
}

// grouped returns the calls of batch that go in the pipeline as they are,
// and appends to groups the calls of each batch script that has two or
// more of them (batchFor), to go as one call of it. On a Cluster a group
// is also of one hash slot, that of its calls' first key (every key of a
// call is in its slot): one script call cannot span slots, and names that
// share a hash tag ("{order}:a", "{order}:b") share one.
func (p *AutoPipeline) grouped(batch []*pipedCall, groups *[]callGroup) []*pipedCall {
	type groupKey struct{ script, slot int }
	var keys []groupKey
	var of [][]*pipedCall
	var at map[groupKey]int // keys' indexes, on a Cluster (a batch may span many slots)
	if p.cluster {
		at = map[groupKey]int{}
	}
	rest := batch[:0:0]
	for _, c := range batch {
		i := batchFor(c.cmd)
		if i < 0 {
			rest = append(rest, c)
			continue
		}
		k, j := groupKey{script: i}, -1
		if p.cluster {
			key, _ := c.cmd.Args()[3].(string) // a batched script's calls have keys
			k.slot = Slot(key)
			if v, ok := at[k]; ok {
				j = v
			}
		} else {
			j = slices.Index(keys, k) // one group a batched script
		}
		if j < 0 {
			j = len(keys)
			keys, of = append(keys, k), append(of, nil)
			if at != nil {
				at[k] = j
			}
		}
		of[j] = append(of[j], c)
	}
	for j, calls := range of {
		if len(calls) == 1 {
			rest = append(rest, calls[0])
			continue
		}
		*groups = append(*groups, callGroup{b: batchScripts[keys[j].script], calls: calls})
		p.scriptBatches.Add(1)
		p.scriptBatched.Add(uint64(len(calls)))
	}
	return rest
}

// earliestDeadline is the earliest deadline of the batch's contexts, if
// any has one.
func earliestDeadline(batch []*pipedCall) (time.Time, bool) {
	var earliest time.Time
	found := false
	for _, c := range batch {
		if dl, ok := c.ctx.Deadline(); ok && (!found || dl.Before(earliest)) {
			earliest, found = dl, true
		}
	}
	return earliest, found
}
