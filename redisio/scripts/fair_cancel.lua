-- A fair-lock waiter gives up: leave the queue and pull the deadlines of
-- the waiters behind it forward by one allowance.
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
--
-- Reply: 1 when the owner was queued and left, 0 when it was not queued.
-- Queue heads whose deadline is <= now are dropped first (without moving
-- anyone's deadline). When the head changed and the lock is free, "0" is
-- published on the new head's own channel, so it does not sleep on a stale
-- bound. Errors before any write when an argument is malformed.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid allowance') end
if not int(ARGV[3]) or string.sub(ARGV[3], 1, 1) == '-' then
  return redis.error_reply('ERR warden: invalid now')
end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end

local owner = ARGV[1]
local now = tonumber(ARGV[3])
local before = redis.call('lindex', KEYS[2], 0)
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then break end
  local deadline = redis.call('zscore', KEYS[3], head)
  if deadline and tonumber(deadline) > now then break end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end

local queue = redis.call('lrange', KEYS[2], 0, -1)
local found = 0
for i = 1, #queue do
  if found == 0 then
    if queue[i] == owner then found = i end
  elseif queue[i] ~= owner then
    redis.call('zincrby', KEYS[3], '-' .. ARGV[2], queue[i])
  end
end
redis.call('zrem', KEYS[3], owner)
if found > 0 then
  redis.call('lrem', KEYS[2], 0, owner)
end

local after = redis.call('lindex', KEYS[2], 0)
if after and after ~= before and redis.call('exists', KEYS[1]) == 0 then
  redis.call(ARGV[4], KEYS[4] .. ':' .. after, '0')
end
if found > 0 then return 1 end
return 0
