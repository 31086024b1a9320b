-- Acquire (or re-enter) a reentrant lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name): owner -> hold count
-- KEYS[2]  acquire latch warden_acquire_latch:{name}:<owner>: the owner's
--          last applied request ID
-- ARGV[1]  owner field ("<clientID>:<n>")
-- ARGV[2]  lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  request ID (non-empty)
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
-- KEYS[3]  (fenced lock only) token counter redisson_lock_token:{name}
--
-- Reply: {1, holdCount} acquired (or the same request seen again: its first
-- result); {0, pttl} held by another owner (pttl -1 when the key has no TTL).
-- With KEYS[3] an acquired reply carries the holding's fencing token third:
-- a first acquire takes the counter's next value, a reentry (or a replay)
-- reads the current one, which is this holding's while it holds.
-- Errors before any write when an argument is malformed.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not text(ARGV[3]) then return redis.error_reply('ERR warden: empty request id') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local function token()
  return tonumber(redis.call('get', KEYS[3]) or '0')
end
if KEYS[3] then
  local current = redis.call('get', KEYS[3])
  if current and not int(current) then
    return redis.error_reply('ERR warden: the token counter ' .. KEYS[3] .. ' is not an integer')
  end
end
-- A free lock is taken at once: no request can have taken it already,
-- since a hold it had added would still be there (a lock that ended since
-- is taken again, as a new acquire would).
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
  local n = hold_take(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
  if KEYS[3] then return {1, n, redis.call('incr', KEYS[3])} end
  return {1, n}
end
local held = redis.call('hget', KEYS[1], ARGV[1])
if not held then return {0, pttl} end
if not int(held) then return redis.error_reply('ERR warden: hold count of ' .. ARGV[1] .. ' is not an integer') end
-- The owner holds the lock: a reentry, or this very request again (its
-- reply was lost), which the latch tells.
if redis.call('get', KEYS[2]) == ARGV[3] then
  if KEYS[3] then return {1, tonumber(held), token()} end
  return {1, tonumber(held)}
end
local n = hold_take(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])
if KEYS[3] then
  if n == 1 then return {1, n, redis.call('incr', KEYS[3])} end
  return {1, n, token()}
end
return {1, n}
