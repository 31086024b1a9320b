-- Acquire (or re-enter) a reentrant lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name): owner -> hold count, and the
--          holder's acquire record "<owner>:warden_acq" -> the request ID
--          of its last applied acquire. Only the holder's fields exist, so
--          only the holder can have written the record, and it lives
--          exactly as long as the hold (it goes with the key). The record's
--          field cannot be a holder's: warden's owners ("<clientID>:<n>")
--          and Redisson's ("<uuid>:<threadId>") end in a number, and the
--          read/write lock's fields ("mode", "<owner>:write") are not in
--          this hash. A Redisson client that counts the hash's fields
--          (HLEN, HKEYS) sees one more while warden holds the lock.
-- ARGV[1]  owner field ("<clientID>:<n>")
-- ARGV[2]  lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  request ID (non-empty)
-- ARGV[4]  acquire record field: "<owner>:warden_acq"
-- ARGV[5]  (optional) "1" for a non-reentrant lock: the owner that holds
--          it is refused instead of entering again
-- KEYS[2]  (fenced lock only) token counter redisson_lock_token:{name}
--
-- Reply: {1, holdCount} acquired (or the same request seen again: its first
-- result); {0, pttl} held by another owner (pttl -1 when the key has no TTL);
-- {2, holdCount} a non-reentrant lock that the owner already holds
-- (Redisson's NON_REENTRANT_REACQUIRE): nothing changed.
-- With KEYS[2] an acquired reply carries the holding's fencing token third:
-- a first acquire takes the counter's next value, a reentry (or a replay)
-- reads the current one, which is this holding's while it holds.
-- Errors before any write when an argument is malformed. The checks are
-- written out here rather than taken from lib.lua: this script runs on
-- every acquire, and defining helpers costs each call.
local owner, lease, req, rec = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if owner == '' then return redis.error_reply('ERR warden: empty owner') end
-- The lease: 1 .. 2^53 ms as decimal text (Lua numbers are doubles).
if #lease > 16 or not string.find(lease, '^[1-9]%d*$')
    or (#lease == 16 and lease > '9007199254740992') then
  return redis.error_reply('ERR warden: invalid lease')
end
if req == '' then return redis.error_reply('ERR warden: empty request id') end
if rec ~= owner .. ':warden_acq' then return redis.error_reply('ERR warden: invalid acquire record field') end
if ARGV[5] and ARGV[5] ~= '1' then return redis.error_reply('ERR warden: invalid non-reentrant flag') end
if KEYS[2] then
  -- The counter must be what INCRBY takes and Lua reads exactly: an
  -- integer, -2^53 .. 2^53, without leading zeros or "-0".
  local current = redis.call('get', KEYS[2])
  if current and current ~= '0' then
    local digits = current
    if string.sub(current, 1, 1) == '-' then digits = string.sub(current, 2) end
    if #digits > 16 or not string.find(digits, '^[1-9]%d*$')
        or (#digits == 16 and digits > '9007199254740992') then
      return redis.error_reply('ERR warden: the token counter ' .. KEYS[2] .. ' is not an integer')
    end
  end
end

-- A free lock is taken at once: no request can have taken it already,
-- since a hold it had added would still be there (a lock that ended since
-- is taken again, as a new acquire would).
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
  redis.call('hset', KEYS[1], owner, '1', rec, req)
  redis.call('pexpire', KEYS[1], lease)
  if KEYS[2] then return {1, 1, redis.call('incr', KEYS[2])} end
  return {1, 1}
end
local got = redis.call('hmget', KEYS[1], owner, rec)
local held = got[1]
if not held then return {0, pttl} end
if #held > 16 or not string.find(held, '^%-?%d+$') then
  return redis.error_reply('ERR warden: hold count of ' .. owner .. ' is not an integer')
end
-- The owner holds the lock: this very request again (its reply was lost),
-- which the record tells, or a reentry.
if got[2] == req then
  if KEYS[2] then return {1, tonumber(held), tonumber(redis.call('get', KEYS[2]) or '0')} end
  return {1, tonumber(held)}
end
if ARGV[5] == '1' then return {2, tonumber(held)} end
local n = tonumber(held) + 1
redis.call('hset', KEYS[1], owner, string.format('%d', n), rec, req)
redis.call('pexpire', KEYS[1], lease)
if KEYS[2] then
  if n == 1 then return {1, n, redis.call('incr', KEYS[2])} end
  return {1, n, tonumber(redis.call('get', KEYS[2]) or '0')}
end
return {1, n}
