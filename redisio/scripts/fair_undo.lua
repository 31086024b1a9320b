-- Undo a fair-lock acquire whose reply was uncertain (lost, timed out): if
-- it was applied (the owner's acquire latch holds its request ID) release
-- that one hold; if it was not, make sure the owner is not left queued by
-- it (a refused, enqueuing attempt whose reply was lost).
--
-- KEYS[1]  lock hash (the lock's name)
-- KEYS[2]  waiter queue redisson_lock_queue:{name}
-- KEYS[3]  waiter deadlines redisson_lock_timeout:{name}
-- KEYS[4]  unlock channel redisson_lock__channel:{name}; each waiter listens
--          on KEYS[4] .. ':' .. <owner>
-- KEYS[5]  acquire latch warden_acquire_latch:{name}:<owner>
-- KEYS[6]  refreshed places warden_fair_places:{name} (see fair_lib.lua)
-- ARGV[1]  owner field
-- ARGV[2]  request ID of the uncertain acquire
-- ARGV[3]  now, unix ms (integer, 0 .. 2^53)
-- ARGV[4]  publish command: "publish" or "spublish"
--
-- Reply: 1 when the acquire had been applied and one hold was undone (when
-- that freed the lock, "0" is published on the head waiter's channel); 0
-- when it had not been applied (the owner left the queue, if it was in it;
-- a new head of a free lock is woken). Queued waiters whose deadline is
-- <= now are dropped first. Errors before any write when an argument is malformed.
--
-- The deadlines behind the removed owner move forward by the allowance it
-- queued with, read off the deadlines themselves (the caller's allowance
-- is not an argument): fair_gap, its deadline minus its predecessor's,
-- or, for the head, minus the lock's current expiry (now when free), never
-- negative. Each deadline is its predecessor's plus its own allowance (a
-- warden waiter's maybe more, moved up by its refreshes), and every shift
-- moves a whole tail of the queue, so the first difference is that
-- allowance; the second never pulls the next waiter in front of the
-- current lock's expiry plus its allowance.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not text(ARGV[2]) then return redis.error_reply('ERR warden: empty request id') end
if not fair_time(ARGV[3]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end

local owner = ARGV[1]
local now = tonumber(ARGV[3])
local before = redis.call('lindex', KEYS[2], 0)
fair_drop_stale(now, KEYS[6])

local undone = 0
if redis.call('get', KEYS[5]) == ARGV[2] then
  redis.call('del', KEYS[5])
  if redis.call('hexists', KEYS[1], owner) == 1 then
    undone = 1
    if hold_undo(KEYS[1], owner) then
      before = false -- the lock is free now: wake the head
    end
  end
else
  -- Not applied: leave the queue as a waiter that gives up would, by the
  -- allowance it queued with: its deadline less the one ahead of it (or
  -- the lock's expiry, for the head).
  fair_leave(owner, function(i, queue) return fair_gap(i, queue, now) end, KEYS[6])
end

fair_wake_new_head(before, ARGV[4])
return undone
