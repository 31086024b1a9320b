-- Release one hold of a fair lock, exactly once per request ID.
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  waiter queue redisson_lock_queue:{name}
-- KEYS[3]  waiter deadlines redisson_lock_timeout:{name}
-- KEYS[4]  unlock channel redisson_lock__channel:{name}; each waiter listens
--          on KEYS[4] .. ':' .. <owner>
-- KEYS[5]  unlock record warden_unlock:{name}:<token> (see unlock.lua)
-- KEYS[6]  acquire latch warden_acquire_latch:{name}:<owner>
-- KEYS[7]  refreshed places warden_fair_places:{name} (see fair_lib.lua)
-- ARGV[1]  owner field
-- ARGV[2]  lease in ms to refresh a still-held lock to (integer, 1 .. 2^53)
-- ARGV[3]  now, unix ms (integer, 0 .. 2^53)
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  record TTL in ms (integer, 1 .. 2^53)
-- ARGV[6]  sequence number (see unlock.lua)
-- ARGV[7]  request ID
--
-- Reply: the owner's remaining hold count (0 = released: key deleted and
-- "0" published on the head waiter's own channel only), or -1 when the
-- owner does not hold it: another owner holds it, or it is free (it
-- expired, was force-unlocked, was never held). A free lock's unlock still
-- publishes "0" on the head waiter's channel, as Redisson's fair unlock
-- does (Redisson replies success there; warden does not). A repeated
-- request ID returns the first result. Queued waiters whose deadline is
-- <= now are dropped first.
-- Errors before any write when an argument is malformed.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not fair_time(ARGV[3]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[5]) then return redis.error_reply('ERR warden: invalid record ttl') end
if not ms(ARGV[6]) then return redis.error_reply('ERR warden: invalid sequence number') end
if not text(ARGV[7]) then return redis.error_reply('ERR warden: empty request id') end

local tail = unlock_tail(ARGV[1], ARGV[7])
local done = unlock_seen(KEYS[5], ARGV[6], tail)
if done then return done end

local now = tonumber(ARGV[3])
fair_drop_stale(now, KEYS[7])

if redis.call('exists', KEYS[1]) == 0 then
  redis.call('del', KEYS[6])
  fair_wake_head(ARGV[4])
  return -1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
else
  n = 0
  redis.call('del', KEYS[1], KEYS[6])
  fair_wake_head(ARGV[4])
end
unlock_write(KEYS[5], ARGV[6], n, tail, ARGV[5])
return n
