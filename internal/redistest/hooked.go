package redistest

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptCall is one EVALSHA or EVAL passing through a Hooked client. Run
// sends it to Redis and returns its result; a hook may delay it, run code
// before or after it, or not run it and return a made-up result.
type ScriptCall struct {
	// Ctx is the context the call was made with.
	Ctx  context.Context
	Keys []string
	Args []any
	Run  func() *redis.Cmd
}

// Acquires reports whether the call is warden's acquire script of a
// reentrant lock (one key, the lock; its fourth argument the owner's
// acquire record field "<owner>:warden_acq").
func (c ScriptCall) Acquires() bool {
	if len(c.Keys) != 1 || len(c.Args) != 4 {
		return false
	}
	rec, ok := c.Args[3].(string)
	return ok && strings.HasSuffix(rec, ":warden_acq")
}

// Renews reports whether the call is warden's batched renewal (after the
// TTL, a field and a read-timeout prefix per key, the prefix empty, "+"
// or naming rwlock_timeout keys).
func (c ScriptCall) Renews() bool {
	if len(c.Keys) == 0 || len(c.Args) != 2*len(c.Keys)+1 || c.Acquires() {
		return false
	}
	prefix, ok := c.Args[2].(string)
	return ok && (prefix == "" || prefix == "+" || strings.HasSuffix(prefix, ":rwlock_timeout"))
}

// Hooked wraps a Redis client so a test can step into every script call,
// to force an interleaving or a fault at an exact point.
type Hooked struct {
	redis.UniversalClient
	hook atomic.Pointer[func(ScriptCall) *redis.Cmd]
}

// NewHooked wraps rdb; until SetHook is called, calls pass through.
func NewHooked(rdb redis.UniversalClient) *Hooked {
	return &Hooked{UniversalClient: rdb}
}

// SetHook makes fn see every later script call; nil removes the hook.
func (h *Hooked) SetHook(fn func(ScriptCall) *redis.Cmd) {
	if fn == nil {
		h.hook.Store(nil)
		return
	}
	h.hook.Store(&fn)
}

func (h *Hooked) call(ctx context.Context, keys []string, args []any, run func() *redis.Cmd) *redis.Cmd {
	if fn := h.hook.Load(); fn != nil {
		return (*fn)(ScriptCall{Ctx: ctx, Keys: keys, Args: args, Run: run})
	}
	return run()
}

// EvalSha runs through the hook.
func (h *Hooked) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return h.call(ctx, keys, args, func() *redis.Cmd { return h.UniversalClient.EvalSha(ctx, sha, keys, args...) })
}

// Eval runs through the hook.
func (h *Hooked) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return h.call(ctx, keys, args, func() *redis.Cmd { return h.UniversalClient.Eval(ctx, script, keys, args...) })
}

// Failed returns a script result that failed with err without reaching
// Redis.
func Failed(err error) *redis.Cmd {
	c := redis.NewCmd(context.Background())
	c.SetErr(err)
	return c
}
