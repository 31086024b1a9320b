package redisio

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warden-go/warden/internal/redistest"
)

// batchCase is a run of calls of one batched script on a state setup
// makes.
type batchCase struct {
	name  string
	b     *batchScript
	setup func(ctx context.Context, rdb *redis.Client)
	calls []scriptCall
}

// reply is a call's reply as the tests compare it: its value, or its
// error's text.
type reply struct {
	val any
	err string
}

func replyOf(c *redis.Cmd) reply {
	if err := c.Err(); err != nil {
		return reply{err: err.Error()}
	}
	v := c.Val()
	if r, ok := v.([]any); ok && len(r) == 2 && r[0] == int64(0) {
		// A refusal's PTTL moves on between the two runs: compare
		// whether the holder's key has a TTL, not its milliseconds.
		pttl, _ := r[1].(int64)
		v = []any{int64(0), pttl > 0}
	}
	return reply{val: v}
}

// snapshot is every key's type, value and whether it has a TTL.
func snapshot(t *testing.T, ctx context.Context, rdb *redis.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range rdb.Keys(ctx, "*").Val() {
		typ := rdb.Type(ctx, k).Val()
		var v any
		switch typ {
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		case "string":
			v = rdb.Get(ctx, k).Val()
		}
		out[k] = fmt.Sprintf("%s %v ttl=%t", typ, v, rdb.PTTL(ctx, k).Val() > 0)
	}
	return out
}

// A batch answers each call what its own script answers, and leaves what
// the calls one after the other leave: every branch of the acquire and
// the unlock (a first acquire, a replay, a reentry, a refusal, malformed
// arguments, a corrupt hold count, a key of another type, a release, a
// partial one, a resend, a late copy, not held).
func TestBatchRunsEachCallAsItsOwnScript(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	strayValues := func(ctx context.Context, rdb *redis.Client) {
		rdb.Set(ctx, "str", "x", 0)
		rdb.HSet(ctx, "bad", "o", "x1")
	}
	a := s.LockArgs
	acq := func(name, owner, req string, lease time.Duration) scriptCall {
		return s.acquireCall(a(name), owner, req, lease, false, false)
	}
	unl := func(name, owner, req string) scriptCall {
		return s.unlockCall(a(name), owner, req, time.Minute, s.publishArg)
	}
	u1 := unl("k1", "o", "u1") // sent again at once (a resend: its first result), and last (a late copy)
	malformed := acq("k2", "o", "r9", time.Minute)
	malformed.args[len(malformed.args)-3] = "05" // the lease
	late := unl("k5", "o", "u9")
	late.args[len(late.args)-2] = "1" // an older sequence number than the record's
	badPublish := unl("k5", "o", "u10")
	badPublish.args[len(badPublish.args)-4] = "flushall"
	cases := []batchCase{
		{name: "acquire", b: batchScripts[0], setup: strayValues, calls: []scriptCall{
			acq("k1", "o", "r1", time.Minute), acq("k1", "o", "r1", time.Minute), acq("k1", "o", "r2", time.Minute),
			acq("k1", "p", "r3", time.Minute), malformed, acq("str", "o", "r4", time.Minute),
			acq("bad", "o", "r5", time.Minute), acq("k5", "o", "r6", time.Second),
		}},
		{name: "unlock", b: batchScripts[1], setup: func(ctx context.Context, rdb *redis.Client) {
			strayValues(ctx, rdb)
			rdb.HSet(ctx, "k1", "o", "2", AcquireRecordField("o"), "r2")
			rdb.HSet(ctx, "k5", "o", "1")
		}, calls: []scriptCall{
			u1, u1, unl("k1", "o", "u2"), unl("k1", "o", "u3"), unl("str", "o", "u4"),
			unl("bad", "o", "u5"), unl("k5", "o", "u6"), late, badPublish, unl("none", "o", "u7"), u1,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, call := range c.calls {
				i := batchFor(call.cmd(ctx))
				require.GreaterOrEqual(t, i, 0, "a call of a batched script in its arity")
				require.Same(t, c.b, batchScripts[i])
			}
			require.NoError(t, rdb.FlushAll(ctx).Err())
			c.setup(ctx, rdb)
			var alone []reply
			for _, call := range c.calls {
				alone = append(alone, replyOf(call.run(ctx, rdb)))
			}
			want := snapshot(t, ctx, rdb)

			require.NoError(t, rdb.FlushAll(ctx).Err())
			c.setup(ctx, rdb)
			calls := make([]*pipedCall, len(c.calls))
			for i, call := range c.calls {
				calls[i] = &pipedCall{ctx: ctx, cmd: call.cmd(ctx)}
			}
			batch := c.b.cmd(ctx, calls, true)
			_ = rdb.Process(ctx, batch)
			require.NoError(t, batch.Err())
			c.b.answer(calls, batch)
			for i, call := range calls {
				got := replyOf(call.cmd)
				if alone[i].err != "" && got.err != "" && !isErrorReply(alone[i].err) {
					// A Lua error's text names where it was raised: the
					// batch's line, not the script's. The cause is the same.
					assert.Contains(t, got.err, "WRONGTYPE", "call %d", i)
					assert.Contains(t, alone[i].err, "WRONGTYPE", "call %d", i)
					continue
				}
				assert.Equal(t, alone[i], got, "call %d", i)
			}
			assert.Equal(t, want, snapshot(t, ctx, rdb), "the same writes")
		})
	}
}

// isErrorReply tells a script's own error reply (redis.error_reply, "ERR
// warden: ...") from a Lua error raised by a Redis command.
func isErrorReply(text string) bool {
	return len(text) > 12 && text[:12] == "ERR warden: "
}

// Calls of a batched script queued together go as one script call; each
// gets its own reply, a failing one (a key of another type) alone, and a
// batch the server does not know (after SCRIPT FLUSH) runs by EVAL and is
// known after.
func TestAutoPipelineSendsQueuedCallsAsOneBatch(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client(t)
	s := newScripts(t)
	p := NewAutoPipeline(rdb)
	require.NoError(t, rdb.Set(ctx, "b:3", "a string", 0).Err())
	for round, flush := range []bool{true, false} {
		if flush {
			require.NoError(t, rdb.ScriptFlush(ctx).Err())
		}
		var batch []*pipedCall
		for i := range 6 {
			call := s.acquireCall(s.LockArgs(fmt.Sprint("b:", i)), "o", fmt.Sprint("r", round, i), time.Minute, false, false)
			batch = append(batch, &pipedCall{ctx: ctx, cmd: call.cmd(ctx)})
		}
		batch = append(batch, &pipedCall{ctx: ctx, cmd: redis.NewCmd(ctx, "ping")})
		p.send(batch)
		for i, c := range batch[:6] {
			if i == 3 {
				assert.ErrorContains(t, c.cmd.Err(), "WRONGTYPE", "the key of another type fails alone")
				continue
			}
			res, err := acquireReply("acquire", "b", c.cmd)
			require.NoError(t, err, "call %d", i)
			assert.Equal(t, AcquireResult{Acquired: true, HoldCount: round + 1}, res, "call %d", i)
		}
		assert.Equal(t, "PONG", batch[6].cmd.Val(), "a command of another kind, pipelined beside the batch")
		known, err := rdb.ScriptExists(ctx, batchScripts[0].sha.(string)).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, known, "the batch script is known after its first run")
	}
	batches, calls := p.ScriptBatches()
	assert.Equal(t, []uint64{2, 12}, []uint64{batches, calls})
	// A lone call is no batch (TestAutoPipelineOnACluster: nor are calls
	// on a Cluster).
	one := s.acquireCall(s.LockArgs("b:9"), "o", "r", time.Minute, false, false)
	p.send([]*pipedCall{{ctx: ctx, cmd: one.cmd(ctx)}, {ctx: ctx, cmd: redis.NewCmd(ctx, "ping")}})
	batches, _ = p.ScriptBatches()
	assert.Equal(t, uint64(2), batches)
}
