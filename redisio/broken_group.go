//go:build wardenbroken

package redisio

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// A deliberately broken group lock, built only with -tags wardenbroken:
// a refused acquire still takes the values nobody holds, so a waiter holds
// part of its values while it waits for the rest (not all-or-none). The
// simulation's checkers must catch it (see sim/broken_test.go).
func init() {
	src := scriptSource("group_lib", "group_acquire")
	refusal := "if last >= 0 then return {0, last - now} end"
	if !strings.Contains(src, refusal) {
		panic("redisio: the broken build no longer finds group_acquire's refusal")
	}
	partial := `if last >= 0 then
  for i = 5, #ARGV do
    if not redis.call('hget', key, ARGV[i]) then
      redis.call('hset', key, ARGV[i], owner, ARGV[i] .. ':' .. owner .. ':expire_time', dec(now + tonumber(lease)),
        ARGV[i] .. ':' .. owner .. ':lock_count', '1')
      group_raise(key, lease)
    end
  end
  return {0, last - now}
end`
	*groupAcquireScript = *redis.NewScript(strings.Replace(src, refusal, partial, 1))
}
