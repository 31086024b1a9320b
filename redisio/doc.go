// Package redisio is warden's Redis layer: the Lua scripts (embedded from
// scripts/*.lua), the Redisson-compatible key layout, the script runner
// (EVALSHA falling back to EVAL), the pub/sub adapter, and the mapping of
// Redis replies to domain outcomes. Nothing above this package sees
// redis.Nil or a raw script reply.
//
// redisio is internal to the engine: only client, messages and sim are
// warden's supported API.
package redisio
