package election

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/proclaim.lua
	proclaimLua string
	//go:embed scripts/leader.lua
	leaderLua string
	//go:embed scripts/resign.lua
	resignLua string
)

// scripts are the election's Lua scripts, run with EVALSHA falling back to
// EVAL.
type scripts struct {
	proclaim, leader, resign *redis.Script
}

func newScripts() scripts {
	return scripts{
		proclaim: redis.NewScript(proclaimLua),
		leader:   redis.NewScript(leaderLua),
		resign:   redis.NewScript(resignLua),
	}
}
