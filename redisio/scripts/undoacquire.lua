-- Undo an acquire whose reply was uncertain (lost, timed out), if and only
-- if it was applied: the owner still holds the lock and its acquire record
-- (see acquire.lua) holds the request's ID.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  unlock channel redisson_lock__channel:{name}
-- ARGV[1]  owner field
-- ARGV[2]  request ID of the uncertain acquire
-- ARGV[3]  publish command: "publish" or "spublish", or "none" (the spin
--          lock, whose waiters poll)
-- ARGV[4]  unlock message ("0")
-- ARGV[5]  acquire record field: "<owner>:warden_acq"
--
-- Reply: 1 when the acquire had been applied and was undone, 0 when it had
-- not been applied (nothing changed). Undoing takes the record away, so a
-- second undo of the same request changes nothing.
if not pubcmd_or_none(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty request id') end
if ARGV[5] ~= ARGV[1] .. ':warden_acq' then return redis.error_reply('ERR warden: invalid acquire record field') end
local got = redis.call('hmget', KEYS[1], ARGV[1], ARGV[5])
if not got[1] or got[2] ~= ARGV[2] then return 0 end
if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  redis.call('hdel', KEYS[1], ARGV[5])
  return 1
end
-- The owner's last hold: its count and record go, and a hash left with no
-- field (no other holder) is gone with them: its waiters are woken.
redis.call('hdel', KEYS[1], ARGV[1], ARGV[5])
if redis.call('exists', KEYS[1]) == 0 then
  notify(ARGV[3], KEYS[2], ARGV[4])
end
return 1
