//go:build wardenbroken

package redisio

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// A deliberately broken engine, built only with -tags wardenbroken: its
// unlock skips the owner check, so an owner whose lock expired deletes the
// next holder's lock. The simulation's checkers must catch it (see
// sim/broken_test.go).
func init() {
	src := scriptSource("unlock")
	check := "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return -1 end"
	if !strings.Contains(src, check) {
		panic("redisio: the broken build no longer finds unlock's owner check")
	}
	unlockScript = redis.NewScript(strings.Replace(src, check, "", 1))
}
