package redisio

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

// scripts is every script newScript made, for Load.
var scripts []*redis.Script

// newScript makes a script of the files scripts/<name>.lua, in order,
// with the shared argument checks (scripts/lib.lua) in front, and
// registers it for Load: newScript("fair_lib", "fair_acquire").
func newScript(names ...string) *redis.Script {
	sc := redis.NewScript(scriptSource(names...))
	scripts = append(scripts, sc)
	return sc
}

// scriptSource is scripts/lib.lua followed by scripts/<name>.lua for each
// name, in order.
func scriptSource(names ...string) string {
	parts := []string{luaFile("lib")}
	for _, n := range names {
		parts = append(parts, luaFile(n))
	}
	return strings.Join(parts, "\n")
}

// luaFile returns scripts/<name>.lua; a missing file is a build mistake.
func luaFile(name string) string {
	b, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

var (
	acquireScript     = newHotScript("acquire")
	unlockScript      = newHotScript("unlock")
	forceUnlockScript = newScript("forceunlock")
	renewScript       = newScript("renew")
	undoAcquireScript = newScript("undoacquire")
)

// LatchTTL is how long an acquire or unlock latch remembers a request's
// result. It must outlast every retry go-redis may send for one call; the
// engine bounds each call by IOTimeout, which is shorter.
const LatchTTL = 15 * time.Second

// IOTimeout bounds one engine call to Redis, retries included, so that no
// retry of a request reaches Redis after its latch expired.
const IOTimeout = 10 * time.Second

// Redis is what the engine needs of a Redis client: scripts and a few
// reads. redis.UniversalClient (single node, Sentinel, Cluster) has it.
type Redis interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
	Process(ctx context.Context, cmd redis.Cmder) error
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
	Get(ctx context.Context, key string) *redis.StringCmd
	HExists(ctx context.Context, key, field string) *redis.BoolCmd
	HGet(ctx context.Context, key, field string) *redis.StringCmd
	PTTL(ctx context.Context, key string) *redis.DurationCmd
}

// Scripts runs warden's Lua scripts: EVALSHA, falling back to EVAL (which
// also loads the script) when the server does not know the script.
type Scripts struct {
	publish    string
	publishArg any // publish as a script argument
	args       argCache
	// token names this Scripts' unlock records (UnlockRecordKey), and seq
	// numbers the unlocks sent under it, in the order they are sent.
	token string
	seq   atomic.Uint64
}

// NewScripts wraps the embedded scripts. publish is the command unlock
// messages go out with: "publish", or "spublish" on a Redis 7 cluster.
// Its unlock records carry a random token (see UnlockRecordKey).
func NewScripts(publish string) (*Scripts, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("warden: unlock record token: %w", err)
	}
	return NewScriptsWithToken(publish, hex.EncodeToString(b[:]))
}

// NewScriptsWithToken is NewScripts with the given unlock record token,
// for a simulation that must replay the same keys. Two Scripts that run
// at once must never share a token: the record's sequence numbers are
// each Scripts' own.
func NewScriptsWithToken(publish, token string) (*Scripts, error) {
	if publish != "publish" && publish != "spublish" {
		return nil, fmt.Errorf("warden: publish command %q: want publish or spublish", publish)
	}
	if token == "" {
		return nil, errors.New("warden: empty unlock record token")
	}
	return &Scripts{publish: publish, publishArg: publish, token: token}, nil
}

// AcquireResult is the outcome of one acquire attempt.
type AcquireResult struct {
	// Acquired reports that the owner now holds the lock HoldCount times.
	Acquired  bool
	HoldCount int
	// Token is a fenced lock holding's fencing token (0 for other kinds).
	Token int64
	// PTTL is the holder's remaining lease when not acquired; -1 when the
	// key has no TTL (never set by warden; a foreign writer).
	PTTL time.Duration
	// AlreadyHeld reports a non-reentrant lock that the owner already
	// holds (HoldCount times, 1 when warden alone wrote it): the attempt
	// changed nothing.
	AlreadyHeld bool
}

// Millis renders d as whole milliseconds for a script argument, at least 1.
func Millis(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}

// UndoAcquire reverses the acquire with request ID reqID if, and only if,
// Redis applied it. It reports whether it undid anything.
func (s *Scripts) UndoAcquire(ctx context.Context, r Redis, name, owner, reqID string) (bool, error) {
	return runFlag(ctx, r, undoAcquireScript, "undo acquire", name, []string{name, LockChannel(name)},
		owner, reqID, s.publish, UnlockMessage, AcquireRecordField(owner))
}

// Unlock releases one hold of owner's. It returns the remaining hold count
// and held=false when owner did not hold the lock. lease is the TTL a lock
// that stays held is refreshed to. The latch is keyed by owner and reqID
// together, so two owners that happen to use the same request ID never see
// each other's result.
func (s *Scripts) Unlock(ctx context.Context, r Redis, name, owner, reqID string, lease time.Duration) (remaining int, held bool, err error) {
	remaining, held, _, err = s.UnlockSynced(ctx, r, ReplicaSync{}, name, owner, reqID, lease)
	return remaining, held, err
}

// ForceUnlock deletes the lock whoever holds it; it reports whether it
// existed.
func (s *Scripts) ForceUnlock(ctx context.Context, r Redis, name string) (bool, error) {
	return runFlag(ctx, r, forceUnlockScript, "force unlock", name, []string{name, LockChannel(name)}, UnlockMessage, s.publish)
}

// Held names one watchdog-mode holding to renew: the lock hash Name and
// the holder's Field in it (the owner, or "<owner>:write" for a write
// lock). Shared is set for a hold of a read/write lock, read or write: its
// hash is shared by every hold of the lock, each with its own lease.
// ReadPrefix is set for a read hold: the owner's read timeout prefix
// (ReadTimeoutPrefix), whose keys "<ReadPrefix>:<k>" are renewed too.
// Values is set for a group lock's holding (Name the group, Field the
// owner): its values joined by GroupValueSep, each value's hold renewed.
type Held struct {
	Name, Field, ReadPrefix string
	Shared                  bool
	Values                  string
}

// renewRaiseOnly is the renewal script's prefix argument for a shared hash
// whose hold has no timeout keys (a write hold): raise its TTL, nothing
// more.
const renewRaiseOnly = "+"

// Renew renews every lock in batch that its holder still holds. The hash
// of a lock held by one owner alone gets ttl, even when that is shorter
// than its TTL. A Shared hash's TTL is only raised to ttl, never cut (the
// write holder may also read, and a read hold's lease, its own or another
// reader's, may be longer); a read hold's timeout keys are renewed to ttl
// with it. The result has one entry per lock: true renewed, false gone.
// All names must share a cluster slot when r is a cluster client.
func (s *Scripts) Renew(ctx context.Context, r Redis, batch []Held, ttl time.Duration) ([]bool, error) {
	if slices.ContainsFunc(batch, func(h Held) bool { return h.Values != "" }) {
		return s.renewWithGroups(ctx, r, batch, ttl)
	}
	keys, args := renewArgs(batch, ttl)
	return renewReply(renewScript.Run(ctx, r, keys, args...), len(batch))
}

// renewArgs are the renewal script's keys and arguments for batch, none of
// them a group lock's holding.
func renewArgs(batch []Held, ttl time.Duration) ([]string, []any) {
	keys := make([]string, len(batch))
	args := make([]any, 0, 2*len(batch)+1)
	args = append(args, Millis(ttl))
	for i, h := range batch {
		keys[i] = h.Name
		prefix := h.ReadPrefix
		if prefix == "" && h.Shared {
			prefix = renewRaiseOnly
		}
		args = append(args, h.Field, prefix)
	}
	return keys, args
}

// renewReply reads the renewal script's reply for a batch of n holdings.
func renewReply(c *redis.Cmd, n int) ([]bool, error) {
	v, err := c.Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("warden: renew %d locks: %w", n, err)
	}
	if len(v) != n {
		return nil, fmt.Errorf("warden: renew: %d replies for %d locks", len(v), n)
	}
	out := make([]bool, len(v))
	for i, x := range v {
		out[i] = x == 1
	}
	return out, nil
}

// ReplicaSync asks that a write be acknowledged by Replicas replicas
// within Timeout (Redis WAIT on the write's connection). The zero value
// asks for nothing.
type ReplicaSync struct {
	Replicas int
	Timeout  time.Duration
}

// runSynced runs sc and, when rs asks for replicas, WAIT on the same
// connection (one pipeline), returning the script's reply and how many
// replicas acknowledged it.
func runSynced(ctx context.Context, r Redis, rs ReplicaSync, sc *redis.Script, keys []string, args ...any) (*redis.Cmd, int64, error) {
	if rs.Replicas <= 0 {
		c := sc.Run(ctx, r, keys, args...)
		return c, 0, c.Err()
	}
	if ap, ok := r.(*AutoPipeline); ok {
		r = ap.Unwrap() // WAIT needs the write's own connection
	}
	if cc, ok := r.(interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}); ok {
		// On a cluster, WAIT must go to the master that took the write, on
		// the same connection: pipeline on that node's client.
		node, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, 0, err
		}
		r = node
	}
	var c, wait *redis.Cmd
	pipelineScripts(ctx, r, func(pipe redis.Pipeliner, eval evalFunc) {
		c = eval(sc, ctx, pipe, keys, args...)
		wait = pipe.Do(ctx, "wait", rs.Replicas, rs.Timeout.Milliseconds())
	})
	if err := c.Err(); err != nil {
		return c, 0, err
	}
	acks, err := wait.Int64()
	if err != nil {
		return c, 0, fmt.Errorf("warden: wait for replicas: %w", err)
	}
	return c, acks, nil
}

// evalFunc queues one script call on a pipeline: (*redis.Script).EvalSha
// or (*redis.Script).Eval.
type evalFunc func(sc *redis.Script, ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd

// pipelineScripts sends the commands fill queues as one pipeline on r (one
// connection, in order), the scripts by their SHA; when the server has one
// of them not cached (NOSCRIPT), it sends the pipeline again with the
// scripts' sources. A script that did run the first time then runs again,
// so the scripts of a pipeline of several must be exactly once (a repeat
// answers the first result).
func pipelineScripts(ctx context.Context, r Redis, fill func(pipe redis.Pipeliner, eval evalFunc)) {
	for _, eval := range []evalFunc{(*redis.Script).EvalSha, (*redis.Script).Eval} {
		pipe := r.Pipeline()
		fill(pipe, eval)
		cmds, _ := pipe.Exec(ctx)
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return redis.HasErrorPrefix(c.Err(), "NOSCRIPT") }) {
			return
		}
	}
}

// acquireReply reads an acquire script's {1, count} / {0, pttl} reply.
func acquireReply(op, name string, c *redis.Cmd) (AcquireResult, error) {
	var buf [3]int64
	v, err := int64s(c, buf[:0])
	if err != nil || len(v) < 2 || len(v) > 3 {
		return AcquireResult{}, fmt.Errorf("warden: %s %s: unexpected reply %v: %w", op, name, c.Val(), err)
	}
	if v[0] == 2 {
		return AcquireResult{AlreadyHeld: true, HoldCount: int(v[1])}, nil
	}
	if v[0] == 1 {
		res := AcquireResult{Acquired: true, HoldCount: int(v[1])}
		if len(v) == 3 {
			res.Token = v[2]
		}
		return res, nil
	}
	pttl := time.Duration(v[1]) * time.Millisecond
	if v[1] < 0 {
		pttl = -1
	}
	return AcquireResult{PTTL: pttl}, nil
}

// int64s appends c's reply, an array of integers, to dst (as
// (*redis.Cmd).Int64Slice reads it, without a slice of its own).
func int64s(c *redis.Cmd, dst []int64) ([]int64, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	vals, ok := c.Val().([]any)
	if !ok {
		return c.Int64Slice()
	}
	for _, x := range vals {
		n, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("warden: redis: unexpected element type %T in an integer array", x)
		}
		dst = append(dst, n)
	}
	return dst, nil
}

// unlockSuperseded is the unlock script's reply to a copy of an older
// request that arrived after a later one was applied.
const unlockSuperseded = -2

// ErrSuperseded is the error of an unlock whose request reached Redis
// only after a later unlock of the same lock from the same Scripts had
// been applied: a late copy, which changed nothing.
var ErrSuperseded = errors.New("superseded by a later unlock")

// unlockReply reads an unlock script's count / -1 / -2 reply.
func unlockReply(op, name string, c *redis.Cmd) (remaining int, held bool, err error) {
	v, err := c.Int64()
	if err != nil {
		return 0, false, fmt.Errorf("warden: %s %s: %w", op, name, err)
	}
	if v == unlockSuperseded {
		return 0, false, fmt.Errorf("warden: %s %s: %w", op, name, ErrSuperseded)
	}
	if v < 0 {
		return 0, false, nil
	}
	return int(v), true, nil
}

// AcquireWith runs one attempt of the reentrant lock's acquire script on
// a's lock (the plain, fenced, spin and non-reentrant locks share it) for
// owner with request ID reqID, then WAIT for rs.Replicas on the same
// connection; it returns how many replicas acknowledged. A repeated reqID
// that acquired returns its first result instead of adding a hold. With
// fenced, a first acquire also takes the next value of the name's token
// counter, and an acquired result carries the holding's token (a reentry
// or a replay of the same request reads it). With nonReentrant, an owner
// that already holds the lock is answered AlreadyHeld with nothing
// changed, its lease included.
func (s *Scripts) AcquireWith(ctx context.Context, r Redis, rs ReplicaSync, a *LockArgs, owner, reqID string, lease time.Duration,
	fenced, nonReentrant bool) (AcquireResult, int, error) {
	call := s.acquireCall(a, owner, reqID, lease, fenced, nonReentrant)
	defer call.free()
	c, acks, err := runCallSynced(ctx, r, rs, call)
	if err != nil {
		return AcquireResult{}, 0, fmt.Errorf("warden: acquire lock %s: %w", a.name, err)
	}
	res, err := acquireReply("acquire", a.name, c)
	return res, int(acks), err
}

// runCallSynced runs c and, when rs asks for replicas, WAIT on the same
// connection (see runSynced).
func runCallSynced(ctx context.Context, r Redis, rs ReplicaSync, c scriptCall) (*redis.Cmd, int64, error) {
	if rs.Replicas <= 0 {
		cmd := c.run(ctx, r)
		return cmd, 0, cmd.Err()
	}
	return runSynced(ctx, r, rs, c.sc.Script, c.keys(), c.argv()...)
}

// acquireCall is the acquire script's call.
func (s *Scripts) acquireCall(a *LockArgs, owner, reqID string, lease time.Duration, fenced, nonReentrant bool) scriptCall {
	nkeys := 1
	if fenced {
		nkeys = 2
	}
	c := newScriptCall(acquireScript, nkeys, nkeys+5)
	c.add(a.nameArg)
	if fenced {
		c.add(a.tokenArg)
	}
	o := a.ownerArgs(owner)
	c.add(o.ownerArg, s.args.leaseArg(lease), reqID, o.recArg)
	if nonReentrant {
		c.add(nonReentrantArg)
	}
	return c
}

// unlockCall is the unlock script's call, publishing with pub (the
// Scripts' publish command, or noPublish).
func (s *Scripts) unlockCall(a *LockArgs, owner, reqID string, lease time.Duration, pub any) scriptCall {
	c := newScriptCall(unlockScript, 3, 10)
	c.add(a.nameArg, a.channelArg, a.recordArg,
		UnlockMessage, s.args.leaseArg(lease), a.ownerArgs(owner).ownerArg, pub, latchTTLArg, s.seq.Add(1), reqID)
	return c
}

// UnlockSynced is Unlock followed by WAIT for rs.Replicas on the same
// connection. It returns how many replicas acknowledged.
func (s *Scripts) UnlockSynced(ctx context.Context, r Redis, rs ReplicaSync, name, owner, reqID string, lease time.Duration) (remaining int, held bool, acks int, err error) {
	return s.unlockSynced(ctx, r, rs, "unlock lock", s.LockArgs(name), owner, reqID, lease, s.publishArg)
}

// unlockSynced is UnlockSynced publishing with pub; its errors read
// "warden: <op> <name>: ...".
func (s *Scripts) unlockSynced(ctx context.Context, r Redis, rs ReplicaSync, op string, a *LockArgs, owner, reqID string,
	lease time.Duration, pub any) (remaining int, held bool, acks int, err error) {
	call := s.unlockCall(a, owner, reqID, lease, pub)
	defer call.free()
	c, n, err := runCallSynced(ctx, r, rs, call)
	if err != nil {
		return 0, false, 0, fmt.Errorf("warden: %s %s: %w", op, a.name, err)
	}
	remaining, held, err = unlockReply(op, a.name, c)
	return remaining, held, int(n), err
}

// IsLocked reports whether the lock exists.
func IsLocked(ctx context.Context, r Redis, name string) (bool, error) {
	n, err := r.Exists(ctx, name).Result()
	if err != nil {
		return false, fmt.Errorf("warden: is locked %s: %w", name, err)
	}
	return n == 1, nil
}

// HoldCount returns owner's hold count of the lock, 0 when it holds none.
func HoldCount(ctx context.Context, r Redis, name, owner string) (int, error) {
	n, err := r.HGet(ctx, name, owner).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("warden: hold count %s: %w", name, err)
	}
	return n, nil
}

// RemainTTL returns the lock's remaining TTL. exists is false when the lock
// is absent; ttl is -1 when it exists without a TTL.
func RemainTTL(ctx context.Context, r Redis, name string) (ttl time.Duration, exists bool, err error) {
	d, err := r.PTTL(ctx, name).Result()
	if err != nil {
		return 0, false, fmt.Errorf("warden: remain ttl %s: %w", name, err)
	}
	switch {
	case d == -2 || d == -2*time.Millisecond:
		return 0, false, nil
	case d == -1 || d == -1*time.Millisecond:
		return -1, true, nil
	}
	return d, true, nil
}

// Load loads every script into Redis's script cache, so that the first
// EVALSHA of each does not miss.
func (s *Scripts) Load(ctx context.Context, r redis.Scripter) error {
	for _, sc := range scripts {
		if err := sc.Load(ctx, r).Err(); err != nil {
			return fmt.Errorf("warden: load scripts: %w", err)
		}
	}
	return nil
}

// runInt runs sc and returns its integer reply; an error, Redis's or the
// script's, reads "warden: <op> <name>: ...".
func runInt(ctx context.Context, r Redis, sc *redis.Script, op, name string, keys []string, args ...any) (int64, error) {
	n, err := sc.Run(ctx, r, keys, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("warden: %s %s: %w", op, name, err)
	}
	return n, nil
}

// runFlag is runInt for a script that replies 1 (done) or 0 (not).
func runFlag(ctx context.Context, r Redis, sc *redis.Script, op, name string, keys []string, args ...any) (bool, error) {
	n, err := runInt(ctx, r, sc, op, name, keys, args...)
	return n == 1, err
}
