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
	src := luaFile("unlock")
	check := "local held = redis.call('hget', KEYS[1], ARGV[3])"
	if !strings.Contains(src, check) {
		panic("redisio: the broken build no longer finds unlock's owner check")
	}
	sc := redis.NewScript(strings.Replace(src, check, check+" or '1'", 1))
	unlockScript = hotScript{Script: sc, sha: sc.Hash()}
}
