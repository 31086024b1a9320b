package redisio

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The reentrant lock's acquire and unlock run on every lock+unlock pair,
// so their commands are built here with as few allocations as go-redis
// allows: one argument slice, the keys that must be made, and the command.
// The strings a call shares with every other (the scripts' SHAs, the
// latch TTL, the publish command, the lease) are made into command
// arguments once.

// hotScript is a script of the hot path, with its SHA ready as a command
// argument.
type hotScript struct {
	*redis.Script
	sha any
}

// newHotScript makes the script of scripts/<name>.lua alone, without
// lib.lua in front: a hot script writes its argument checks out, so that
// no call pays for defining helpers it does not use.
func newHotScript(name string) hotScript {
	sc := redis.NewScript(luaFile(name))
	scripts = append(scripts, sc)
	return hotScript{Script: sc, sha: sc.Hash()}
}

// latchTTLArg is LatchTTL as a script argument.
var latchTTLArg any = Millis(LatchTTL)

// millisArg is one duration as a script argument (Millis), kept for the
// next call with the same duration.
type millisArg struct {
	d   time.Duration
	arg any
}

// argCache keeps the arguments that change seldom: the lease, which is the
// watchdog timeout for every watchdog-mode call.
type argCache struct {
	lease atomic.Pointer[millisArg]
}

// leaseArg is Millis(d) as a script argument.
func (c *argCache) leaseArg(d time.Duration) any {
	if m := c.lease.Load(); m != nil && m.d == d {
		return m.arg
	}
	m := &millisArg{d: d, arg: Millis(d)}
	c.lease.Store(m)
	return m.arg
}

// scriptCall is one call of a hot-path script: the command's arguments
// from the fourth on (the keys, then the script's arguments) and how many
// of them are keys.
type scriptCall struct {
	sc    hotScript
	nkeys int
	args  []any // "evalsha", sha, nkeys, then the keys and arguments
	// buf is where args came from (argSlices), for free.
	buf *[]any
}

// argSlices keeps the argument slices of finished calls: the hot path's
// calls then make none.
var argSlices = sync.Pool{New: func() any { return new([]any) }}

// newScriptCall starts a call of sc with nkeys keys and room for n keys
// and arguments in all. Its arguments are taken from argSlices: free gives
// them back once the call's reply is read.
func newScriptCall(sc hotScript, nkeys, n int) scriptCall {
	buf := argSlices.Get().(*[]any)
	args := *buf
	if cap(args) < 3+n {
		args = make([]any, 0, max(3+n, 16))
	}
	args = append(args[:0], "evalsha", sc.sha, nkeys)
	return scriptCall{sc: sc, nkeys: nkeys, args: args, buf: buf}
}

// free gives the call's argument slice back to argSlices. The call's
// command must not be used after: it shares the slice (cmd). go-redis
// reads a command's arguments only while it sends it, and every way run
// sends one returns once its reply is in. A hook on the user's client that
// keeps a command past its own call sees its arguments cleared (the
// contract client.New states).
func (c scriptCall) free() {
	if c.buf == nil {
		return
	}
	clear(c.args) // no reference kept to the keys and arguments
	*c.buf = c.args[:0]
	argSlices.Put(c.buf)
}

// add appends keys or arguments, keys first.
func (c *scriptCall) add(v ...any) {
	c.args = append(c.args, v...)
}

// keys and argv are the call's keys and script arguments as
// (*redis.Script).Run takes them.
func (c scriptCall) keys() []string {
	keys := make([]string, c.nkeys)
	for i := range keys {
		keys[i] = c.args[3+i].(string)
	}
	return keys
}

func (c scriptCall) argv() []any { return c.args[3+c.nkeys:] }

// cmd is the EVALSHA command of the call, as go-redis's EvalSha builds it
// (its first key marked for a cluster's routing).
func (c scriptCall) cmd(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx, c.args...)
	if c.nkeys > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// run sends the call to r: EVALSHA, then EVAL when the server does not
// know the script. On go-redis's own clients (and the AutoPipeline over
// them) the prepared command goes as it is; any other Redis (a wrapper, a
// simulation) gets the calls (*redis.Script).Run makes.
func (c scriptCall) run(ctx context.Context, r Redis) *redis.Cmd {
	var cmd *redis.Cmd
	switch r := r.(type) {
	case *AutoPipeline:
		cmd = r.do(ctx, c.cmd(ctx))
	case *redis.Client, *redis.ClusterClient:
		cmd = c.cmd(ctx)
		_ = r.Process(ctx, cmd)
	default:
		// A wrapper may keep what it is given past the call: it gets
		// arguments of its own, not the pooled slice (free).
		return c.sc.Run(ctx, r, c.keys(), slices.Clone(c.argv())...)
	}
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return c.sc.Eval(ctx, r, c.keys(), c.argv()...)
	}
	return cmd
}
