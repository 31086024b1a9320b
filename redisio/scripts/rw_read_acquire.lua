-- Acquire (or re-enter) the read side of a read/write lock, exactly once per
-- request ID. Readers share the lock; the write holder may also read
-- (downgrade). Every read hold k of an owner gets its own timeout key
-- <prefix>:k with the hold's lease, so that releasing one hold can shrink
-- the lock's TTL to the longest surviving hold.
--
-- KEYS[1]  lock hash (the lock's name): mode -> read|write, owner -> read
--          hold count, owner:write -> write hold count
-- KEYS[2]  acquire latch warden_acquire_latch:{name}:<owner>: the owner's
--          last applied read request ID
-- KEYS[3]  the owner's read timeout prefix {name}:<owner>:rwlock_timeout
-- ARGV[1]  owner field ("<clientID>:<n>"; not "mode")
-- ARGV[2]  lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  request ID (non-empty)
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: {1, holdCount} acquired (or the same request seen again: the
-- owner's current read hold count); {0, pttl} refused: write-held by another
-- owner, or the key exists without a mode (pttl -1 when it has no TTL).
-- Errors before any write when an argument is malformed.
if not text(ARGV[1]) or ARGV[1] == 'mode' then return redis.error_reply('ERR warden: invalid owner') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not text(ARGV[3]) then return redis.error_reply('ERR warden: empty request id') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local held = hold_replayed(KEYS[1], KEYS[2], ARGV[1], ARGV[3])
if held then return {1, held} end
local mode = redis.call('hget', KEYS[1], 'mode')
local free = mode == false and redis.call('exists', KEYS[1]) == 0
if free or mode == 'read'
    or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[1] .. ':write') == 1) then
  if free then
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  local k = redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('set', KEYS[3] .. ':' .. k, '1', 'px', ARGV[2])
  -- The lock lives as long as its longest hold: never shorten it here.
  local pttl = redis.call('pttl', KEYS[1])
  if pttl < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  redis.call('set', KEYS[2], ARGV[3], 'px', ARGV[4])
  return {1, k}
end
return {0, redis.call('pttl', KEYS[1])}
