-- A fair-lock waiter gives up: leave the queue and pull every deadline
-- behind it forward: by its allowance (as Redisson's give-up does) when
-- its place was not a refreshed one; for a warden waiter's, by how far its
-- deadline is past the one ahead of it (or the lock's expiry), which its
-- refreshes may have moved up (fair_gap).
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  waiter queue redisson_lock_queue:{name}
-- KEYS[3]  waiter deadlines redisson_lock_timeout:{name}
-- KEYS[4]  unlock channel redisson_lock__channel:{name}; each waiter listens
--          on KEYS[4] .. ':' .. <owner>
-- ARGV[1]  owner field of the waiter that gives up
-- ARGV[2]  wait-time allowance in ms (integer, 1 .. 2^53)
-- ARGV[3]  now, unix ms (integer, 0 .. 2^53)
-- ARGV[4]  publish command: "publish" or "spublish"
-- KEYS[5]  gave-up marker warden_gaveup:{name}:<owner>
-- ARGV[5]  the request ID of the waiter that gives up
-- ARGV[6]  marker TTL in ms (integer, 1 .. 2^53)
-- KEYS[6]  refreshed places warden_fair_places:{name} (see fair_lib.lua)
--
-- Reply: 1 when the owner was queued and left, 0 when it was not queued.
-- Queued waiters whose deadline is <= now are dropped first (without
-- moving anyone's deadline). When the head changed and the lock is free, "0" is
-- published on the new head's own channel, so it does not sleep on a stale
-- bound. Errors before any write when an argument is malformed.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid allowance') end
if not fair_time(ARGV[3]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end
if not text(ARGV[5]) then return redis.error_reply('ERR warden: empty request id') end
if not ms(ARGV[6]) then return redis.error_reply('ERR warden: invalid marker ttl') end

local owner = ARGV[1]
local now = tonumber(ARGV[3])
local before = redis.call('lindex', KEYS[2], 0)
fair_drop_stale(now, KEYS[6])

-- An attempt of this request still on its way must not queue it again.
redis.call('set', KEYS[5], ARGV[5], 'px', ARGV[6])
local left = fair_leave(owner, function(i, queue, refreshed)
  if refreshed then return fair_gap(i, queue, now) end
  return tonumber(ARGV[2])
end, KEYS[6])
fair_wake_new_head(before, ARGV[4])
if left then return 1 end
return 0
