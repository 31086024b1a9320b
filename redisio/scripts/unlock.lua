-- Release one hold of a reentrant lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name): see acquire.lua; the last release
--          deletes it, the owner's acquire record with it
-- KEYS[2]  unlock channel redisson_lock__channel:{name}
-- KEYS[3]  unlock record warden_unlock:{name}:<token>, one per lock and
--          Scripts (Client): "<seq> <result> <len(owner)> <owner><requestID>"
--          of its last applied unlock, kept for the retry window and
--          overwritten by the next one, so records never pile up
-- ARGV[1]  unlock message ("0")
-- ARGV[2]  lease in ms to refresh a still-held lock to (integer, 1 .. 2^53)
-- ARGV[3]  owner field
-- ARGV[4]  publish command: "publish" or "spublish", or "none" for a lock
--          whose waiters poll instead of listening (the spin lock)
-- ARGV[5]  record TTL in ms (integer, 1 .. 2^53)
-- ARGV[6]  sequence number: increases with every unlock sent under the
--          record's token (integer, 1 .. 2^53)
-- ARGV[7]  request ID (non-empty)
--
-- Reply: the owner's remaining hold count (0 = released, key deleted and
-- the unlock message published unless the command is "none"), -1 when the
-- owner does not hold it, or -2 when a later unlock under the same token
-- was applied already: this is a copy of an older request that arrived
-- late (a retry behind its own answer) and it changes nothing.
-- The same request again (same sequence number: a retry; or same owner
-- and request ID: a resend) returns the first result while the record is
-- its. An unlock of a held lock under one token always has a higher
-- sequence number than the record's: the unlock that wrote the record came
-- before the acquire that this unlock ends.
-- Errors before any write when an argument is malformed; the checks are
-- written out here, not taken from lib.lua (see acquire.lua).
local lease, ttl, pub, seq, req = ARGV[2], ARGV[5], ARGV[4], ARGV[6], ARGV[7]
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
  return redis.error_reply('ERR warden: invalid record ttl')
end
if #seq > 16 or not string.find(seq, '^[1-9]%d*$')
    or (#seq == 16 and seq > '9007199254740992') then
  return redis.error_reply('ERR warden: invalid sequence number')
end
if req == '' then return redis.error_reply('ERR warden: empty request id') end

local tail = ' ' .. #ARGV[3] .. ' ' .. ARGV[3] .. req
local rec = redis.call('get', KEYS[3])
if rec then
  local rseq, rres, rrest = string.match(rec, '^(%d+) (%d+)(.*)$')
  if rseq then
    if rseq == seq or rrest == tail then return tonumber(rres) end
    if tonumber(rseq) > tonumber(seq) then return -2 end
  end
end

local held = redis.call('hget', KEYS[1], ARGV[3])
if not held then return -1 end
if #held > 16 or not string.find(held, '^%-?%d+$') then
  return redis.error_reply('ERR warden: hold count of ' .. ARGV[3] .. ' is not an integer')
end
local n = tonumber(held) - 1
if n < 0 then n = 0 end
redis.call('set', KEYS[3], seq .. ' ' .. string.format('%d', n) .. tail, 'px', ttl)
if n > 0 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('pexpire', KEYS[1], lease)
else
  redis.call('del', KEYS[1])
  if pub ~= 'none' then redis.call(pub, KEYS[2], ARGV[1]) end
end
return n
