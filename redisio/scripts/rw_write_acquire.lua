-- Acquire (or re-enter) the write side of a read/write lock, exactly once per
-- request ID. Only a free lock can be write-acquired; a read holder can
-- never take the write lock, not even the same owner.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  acquire latch warden_acquire_latch:{name}:<owner>:write: the
--          owner's last applied write request ID
-- ARGV[1]  write field ("<owner>:write")
-- ARGV[2]  lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  request ID (non-empty)
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: {1, holdCount} acquired (or the same request seen again: the
-- current write hold count); {0, pttl} refused (pttl -1 when the key has no
-- TTL). A reentry adds the lease to the remaining TTL (as Redisson).
-- Errors before any write when an argument is malformed.
if not text(ARGV[1]) or ARGV[1] == 'mode' then return redis.error_reply('ERR warden: invalid write field') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not text(ARGV[3]) then return redis.error_reply('ERR warden: empty request id') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local held = hold_replayed(KEYS[1], KEYS[2], ARGV[1], ARGV[3])
if held then return {1, held} end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'mode', 'write')
  return {1, hold_take(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
  local pttl = redis.call('pttl', KEYS[1])
  if pttl < 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
  else
    redis.call('pexpire', KEYS[1], string.format('%.0f', pttl + tonumber(ARGV[2])))
  end
  redis.call('set', KEYS[2], ARGV[3], 'px', ARGV[4])
  return {1, n}
end
return {0, redis.call('pttl', KEYS[1])}
