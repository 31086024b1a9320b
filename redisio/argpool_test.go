package redisio

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// argsDuringCall is a go-redis hook that copies each command's arguments
// while its call runs, as the contract of client.New asks of a hook that
// reads them later.
type argsDuringCall struct {
	mu   sync.Mutex
	args [][]any
}

func (h *argsDuringCall) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *argsDuringCall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.args = append(h.args, slices.Clone(cmd.Args()))
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *argsDuringCall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// keepingWrapper is a Redis that is not go-redis's own client: it keeps
// the arguments of every EVALSHA it is given, to read them later.
type keepingWrapper struct {
	*redis.Client
	kept [][]any
}

func (w *keepingWrapper) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	w.kept = append(w.kept, args)
	return w.Client.EvalSha(ctx, sha, keys, args...)
}

// The lock and unlock scripts' argument slices are pooled: a hook sees
// each command's arguments in full while its call runs, and a Redis
// wrapper gets arguments of its own, which later calls do not touch.
func TestPooledScriptArguments(t *testing.T) {
	bothRedis(t, func(t *testing.T, rdb *redis.Client, _ func(time.Duration)) {
		ctx := context.Background()
		s, err := NewScripts("publish")
		require.NoError(t, err)
		h := &argsDuringCall{}
		rdb.AddHook(h)
		for _, id := range []string{"req-a", "req-b"} {
			_, _, err := s.AcquireWith(ctx, rdb, ReplicaSync{}, s.LockArgs("pooled"), "owner", id, time.Minute, false, false)
			require.NoError(t, err)
			_, _, _, err = s.UnlockSynced(ctx, rdb, ReplicaSync{}, "pooled", "owner", id+"-u", time.Minute)
			require.NoError(t, err)
		}
		var seen []any
		for _, a := range h.args {
			seen = append(seen, a...)
		}
		for _, id := range []any{"req-a", "req-a-u", "req-b", "req-b-u"} {
			assert.Contains(t, seen, id, "a hook sees each call's request ID while the call runs")
		}

		w := &keepingWrapper{Client: rdb}
		for _, id := range []string{"req-c", "req-d"} {
			_, _, err := s.AcquireWith(ctx, w, ReplicaSync{}, s.LockArgs("pooled"), "owner", id, time.Minute, false, false)
			require.NoError(t, err)
			_, _, _, err = s.UnlockSynced(ctx, w, ReplicaSync{}, "pooled", "owner", id+"-u", time.Minute)
			require.NoError(t, err)
		}
		require.GreaterOrEqual(t, len(w.kept), 4)
		assert.Contains(t, w.kept[0], any("req-c"), "a wrapper's arguments stay its own after later calls")
		assert.Contains(t, w.kept[1], any("req-c-u"))
	})
}
