package fence

import (
	"context"
	_ "embed" // the scripts
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/guard.lua
	guardLua string
	//go:embed scripts/set.lua
	setLua string
	//go:embed scripts/del.lua
	delLua string
	//go:embed scripts/hset.lua
	hsetLua string
	//go:embed scripts/incrby.lua
	incrbyLua string
	//go:embed scripts/eval.lua
	evalLua string
)

// staleReply opens the error reply of a script that refused its token.
const staleReply = "STALETOKEN "

// evalPrelude is what Eval puts in front of the caller's script: the
// guard and the prelude of eval.lua, on one line, which the script's first
// line continues.
var evalPrelude = oneLine(guardLua + evalLua)

// oneLine joins the lines of a Lua source with spaces, without its
// comment lines and blank lines. A comment after code on a line would
// swallow what follows it: the scripts have none, and oneLine panics on
// one.
func oneLine(lua string) string {
	var code []string
	for line := range strings.Lines(lua) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		if strings.Contains(line, "--") {
			panic("fence: a comment after code in a script: " + line)
		}
		code = append(code, line)
	}
	return strings.Join(code, " ")
}

// Redis is the guard for resources kept in Redis: each write carries a
// token, and runs in one Lua script with the check of the resource key's
// guard (GuardKey names it), which keeps the highest token seen. A token
// below it is refused with ErrStaleToken and nothing is written; else the
// write is made (equal tokens pass) and the guard raised to the token. A
// write that fails (WRONGTYPE, or IncrBy on a value that is no integer)
// writes nothing and leaves the guard as it was; Eval is the exception
// (see there).
//
// The guard keys have no TTL and outlive the resource keys (Del and an
// expiring Set leave the guard): a guard that vanished would let a stale
// holder write again. A Redis that loses data (a restart without
// persistence, a failover to a replica that missed the write, eviction
// under maxmemory) loses guards too: see docs/fencing.md.
//
// A Redis is safe for concurrent use.
type Redis struct {
	rdb                    redis.UniversalClient
	set, del, hset, incrby *redis.Script
}

// NewRedis returns the Redis guard on rdb. A nil rdb (a nil interface,
// or one holding a nil pointer, such as a nil *redis.Client) makes every
// write fail with ErrInvalidArgument.
func NewRedis(rdb redis.UniversalClient) *Redis {
	if isNil(rdb) {
		rdb = nil
	}
	return &Redis{
		rdb:    rdb,
		set:    redis.NewScript(guardLua + setLua),
		del:    redis.NewScript(guardLua + delLua),
		hset:   redis.NewScript(guardLua + hsetLua),
		incrby: redis.NewScript(guardLua + incrbyLua),
	}
}

// Set sets key to value, as SET does, if token is not below key's guard:
// with a TTL of ttl, a whole number of milliseconds; 0 for no expiry, or
// redis.KeepTTL to keep the key's TTL (SET's KEEPTTL, Redis 6.0 and
// later). value is encoded as go-redis encodes a command's arguments.
func (r *Redis) Set(ctx context.Context, token int64, key string, value any, ttl time.Duration) error {
	if ttl != redis.KeepTTL && (ttl < 0 || ttl%time.Millisecond != 0) {
		return invalid("ttl", "%v: want 0 (no expiry), redis.KeepTTL (keep the key's TTL) "+
			"or a positive whole number of milliseconds", ttl)
	}
	if err := r.check(); err != nil {
		return err
	}
	px := int64(ttl / time.Millisecond) // 0: none
	if ttl == redis.KeepTTL {
		px = -1 // set.lua's KEEPTTL
	}
	_, err := r.run(ctx, r.set, token, "key", key, []any{value, px})
	return err
}

// Del deletes key, as DEL does, if token is not below key's guard. The
// guard stays, so a stale holder cannot write the key again.
func (r *Redis) Del(ctx context.Context, token int64, key string) error {
	if err := r.check(); err != nil {
		return err
	}
	_, err := r.run(ctx, r.del, token, "key", key, nil)
	return err
}

// HSet sets fields of the hash key, as HSET does, if token is not below
// key's guard. values are field-value pairs ("f1", v1, "f2", v2), or one
// map[string]any, map[string]string, []string or []any of them.
func (r *Redis) HSet(ctx context.Context, token int64, key string, values ...any) error {
	if err := r.check(); err != nil {
		return err
	}
	pairs, err := hashPairs(values)
	if err != nil {
		return err
	}
	_, err = r.run(ctx, r.hset, token, "key", key, pairs)
	return err
}

// IncrBy adds n to the integer at key, as INCRBY does, if token is not
// below key's guard, and returns the new value.
func (r *Redis) IncrBy(ctx context.Context, token int64, key string, n int64) (int64, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	v, err := r.run(ctx, r.incrby, token, "key", key, []any{n})
	if err != nil {
		return 0, err
	}
	i, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("warden: fence: %s: incrby: reply %T, not an integer", key, v)
	}
	return i, nil
}

// Incr adds 1 to the integer at key, as IncrBy(ctx, token, key, 1).
func (r *Redis) Incr(ctx context.Context, token int64, key string) (int64, error) {
	return r.IncrBy(ctx, token, key, 1)
}

// Eval runs script, a Lua script of the caller's, with keys and args, if
// token is not below the guard of keys[0] (the resource the token
// fences), and returns its reply as go-redis's Cmd.Result does (redis.Nil
// for a nil reply). The script sees its own keys and args as KEYS and
// ARGV; it runs in the same script as the guard's check, after it. On a
// Cluster every key must be in keys[0]'s slot (share its hash tag). No
// key may be in the guards' namespace (GuardNamespace).
//
// Unlike the other writes, which raise the guard after their command
// succeeded, Eval raises the guard before the script runs, and it stays
// raised if the script then fails: Redis undoes none of a failed script's
// writes, so the script may have written before its error. A script that
// only reads raises the guard too: a read through Eval makes every older
// holder's later write stale.
//
// The guard's part goes on the script's first line, in front of it, so
// the line numbers in the script's errors are the script's own. A first
// line "#!lua ..." (the flags of Redis 7) stays the first line; a script
// flagged no-writes is refused, as it could not raise the guard, and so
// is a script empty but for that line.
func (r *Redis) Eval(ctx context.Context, token int64, script string, keys []string, args ...any) (any, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, invalid("keys", "empty: keys[0] is the resource the token fences")
	}
	for i, k := range keys[1:] {
		if err := notGuard(fmt.Sprintf("keys[%d]", i+1), k); err != nil {
			return nil, err
		}
	}
	shebang, body := "", script
	if strings.HasPrefix(script, "#!") {
		shebang, body, _ = strings.Cut(script, "\n")
		if strings.Contains(shebang, "no-writes") {
			return nil, invalid("script", "flagged no-writes: the guard must write its token")
		}
		shebang += "\n"
	}
	if strings.TrimSpace(body) == "" {
		return nil, invalid("script", "empty (after its #! line, if any)")
	}
	s := redis.NewScript(shebang + evalPrelude + " " + body)
	return r.run(ctx, s, token, "keys[0]", keys[0], args, keys[1:]...)
}

// check reports a nil guard or client.
func (r *Redis) check() error {
	if r == nil || r.rdb == nil {
		return invalid("redis client", "nil")
	}
	return nil
}

// isNil tells a nil interface from one that holds a nil pointer (or
// another nil reference) too.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// run runs s with the guard of key, key and more as KEYS, token and args
// as ARGV, after checking what every write needs; field names key in the
// errors of a bad key.
func (r *Redis) run(ctx context.Context, s *redis.Script, token int64, field, key string, args []any,
	more ...string) (any, error) {
	if ctx == nil {
		return nil, invalid("ctx", "nil")
	}
	if err := validToken(token); err != nil {
		return nil, err
	}
	guard, err := guardKey(field, key)
	if err != nil {
		return nil, err
	}
	keys := append([]string{guard, key}, more...)
	argv := append([]any{strconv.FormatInt(token, 10)}, args...)
	v, err := s.Run(ctx, r.rdb, keys, argv...).Result()
	if err == nil || errors.Is(err, redis.Nil) {
		return v, err
	}
	if highest, ok := staleHighest(err, guard); ok {
		return nil, &StaleTokenError{Resource: key, Token: token, Highest: highest}
	}
	return nil, fmt.Errorf("warden: fence: %s: %w", key, err)
}

// staleHighest reads the highest token from the guard's refusal,
// "STALETOKEN <highest> <guard>": an error of Eval's script that only
// looks like one (it does not name guard) is the script's error.
func staleHighest(err error, guard string) (int64, bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return 0, false
	}
	rest, ok := strings.CutPrefix(re.Error(), staleReply)
	if !ok {
		return 0, false
	}
	seen, key, ok := strings.Cut(rest, " ")
	if !ok || key != guard {
		return 0, false
	}
	highest, perr := strconv.ParseInt(seen, 10, 64)
	return highest, perr == nil
}

// hashPairs flattens HSet's values into field-value pairs.
func hashPairs(values []any) ([]any, error) {
	if len(values) == 1 {
		switch v := values[0].(type) {
		case []any:
			values = v
		case []string:
			values = make([]any, len(v))
			for i, s := range v {
				values[i] = s
			}
		case map[string]any:
			values = make([]any, 0, 2*len(v))
			for _, f := range slices.Sorted(maps.Keys(v)) {
				values = append(values, f, v[f])
			}
		case map[string]string:
			values = make([]any, 0, 2*len(v))
			for _, f := range slices.Sorted(maps.Keys(v)) {
				values = append(values, f, v[f])
			}
		default:
			return nil, invalid("values", "one %T: want field-value pairs, a map or a slice of them", v)
		}
	}
	switch {
	case len(values) == 0:
		return nil, invalid("values", "no field")
	case len(values)%2 != 0:
		return nil, invalid("values", "%d values: want field-value pairs", len(values))
	}
	return values, nil
}
