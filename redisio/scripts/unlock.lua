-- Release one hold of a reentrant lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name): see acquire.lua; the last release
--          deletes it, the owner's acquire record with it
-- KEYS[2]  unlock channel redisson_lock__channel:{name}
-- KEYS[3]  unlock latch redisson_unlock_latch:{name}:<owner>:<requestID>
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  lease in ms to refresh a still-held lock to (integer, 1 .. 2^53)
-- ARGV[3]  owner field
-- ARGV[4]  publish command: "publish" or "spublish", or "none" for a lock
--          whose waiters poll instead of listening (the spin lock)
-- ARGV[5]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: the owner's remaining hold count (0 = released, key deleted and
-- the unlock message published unless the command is "none"), or -1 when
-- the owner does not hold it.
-- A repeated request ID returns the first result.
-- Errors before any write when an argument is malformed; the checks are
-- written out here, not taken from lib.lua (see acquire.lua).
local lease, ttl, pub = ARGV[2], ARGV[5], ARGV[4]
if #lease > 16 or not string.find(lease, '^[1-9]%d*$')
    or (#lease == 16 and lease > '9007199254740992') then
  return redis.error_reply('ERR warden: invalid lease')
end
if ARGV[3] == '' then return redis.error_reply('ERR warden: empty owner') end
if pub ~= 'publish' and pub ~= 'spublish' and pub ~= 'none' then
  return redis.error_reply('ERR warden: invalid publish command')
end
if #ttl > 16 or not string.find(ttl, '^[1-9]%d*$')
    or (#ttl == 16 and ttl > '9007199254740992') then
  return redis.error_reply('ERR warden: invalid latch ttl')
end

-- Not held: the lock is gone, or this request already ran (its reply was
-- lost) and its latch has the first result.
local held = redis.call('hget', KEYS[1], ARGV[3])
if not held then
  local done = redis.call('get', KEYS[3])
  if done then return tonumber(done) end
  return -1
end
if #held > 16 or not string.find(held, '^%-?%d+$') then
  return redis.error_reply('ERR warden: hold count of ' .. ARGV[3] .. ' is not an integer')
end
local n = tonumber(held) - 1
if n < 0 then n = 0 end
-- The latch is written only if it is new (SET NX, which every Redis
-- version has): a request seen before answers its first result, unchanged.
if not redis.call('set', KEYS[3], string.format('%d', n), 'px', ttl, 'nx') then
  return tonumber(redis.call('get', KEYS[3]))
end
if n > 0 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('pexpire', KEYS[1], lease)
else
  redis.call('del', KEYS[1])
  if pub ~= 'none' then redis.call(pub, KEYS[2], ARGV[1]) end
end
return n
