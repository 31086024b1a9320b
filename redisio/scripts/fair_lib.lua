-- Shared by the fair lock's scripts; redisio puts it after lib.lua in front
-- of each. Every fair script has the same first keys:
--   KEYS[1] the lock, KEYS[2] its queue LIST, KEYS[3] its deadlines ZSET,
--   KEYS[4] its unlock channel, the prefix of each waiter's own channel
--   (except fair_acquire, whose KEYS[4] is its acquire latch: it must not
--   call fair_wake_head or fair_wake_new_head).

-- fair_time: v is a non-negative integer (a unix time in ms).
local function fair_time(v)
  return int(v) and string.sub(v, 1, 1) ~= '-'
end

-- fair_drop_stale pops the queue's heads whose deadline passed at now (or
-- who have none).
local function fair_drop_stale(now)
  while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if not head then return end
    local deadline = redis.call('zscore', KEYS[3], head)
    if deadline and tonumber(deadline) > now then return end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
  end
end

-- fair_wake_head publishes "0" on the head waiter's own channel, if there
-- is a head; cmd is the publish command.
local function fair_wake_head(cmd)
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call(cmd, KEYS[4] .. ':' .. head, '0')
  end
end

-- fair_wake_new_head wakes the head when it is not before (the head when
-- the script began) and the lock is free: it would otherwise sleep on a
-- bound that assumed a waiter ahead.
local function fair_wake_new_head(before, cmd)
  local after = redis.call('lindex', KEYS[2], 0)
  if after and after ~= before and redis.call('exists', KEYS[1]) == 0 then
    redis.call(cmd, KEYS[4] .. ':' .. after, '0')
  end
end

-- fair_leave takes owner out of the queue and its deadline out of the
-- ZSET. shift(i, queue) gives, once owner is found at position i, how many
-- ms every later waiter's deadline moves forward. It returns whether owner
-- was queued.
local function fair_leave(owner, shift)
  local queue = redis.call('lrange', KEYS[2], 0, -1)
  local found, by = 0, 0
  for i = 1, #queue do
    if found == 0 then
      if queue[i] == owner then
        found = i
        by = shift(i, queue)
      end
    elseif queue[i] ~= owner and by > 0 then
      redis.call('zincrby', KEYS[3], string.format('%.0f', -by), queue[i])
    end
  end
  redis.call('zrem', KEYS[3], owner)
  if found > 0 then
    redis.call('lrem', KEYS[2], 0, owner)
  end
  return found > 0
end
