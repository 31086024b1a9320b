-- Delete a fair lock whoever holds it, and wake the head waiter.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  waiter queue redisson_lock_queue:{name}
-- KEYS[3]  waiter deadlines redisson_lock_timeout:{name}
-- KEYS[4]  unlock channel redisson_lock__channel:{name}; each waiter listens
--          on KEYS[4] .. ':' .. <owner>
-- KEYS[5]  refreshed places warden_fair_places:{name} (see fair_lib.lua)
-- ARGV[1]  now, unix ms (integer, 0 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
--
-- Reply: 1 when the lock existed and was deleted ("0" published on the head
-- waiter's channel), 0 otherwise. Queued waiters whose deadline is <= now
-- are dropped first. Errors before any write when an argument is malformed.
if not fair_time(ARGV[1]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end

local now = tonumber(ARGV[1])
fair_drop_stale(now, KEYS[5])

if redis.call('del', KEYS[1]) == 1 then
  fair_wake_head(ARGV[2])
  return 1
end
return 0
