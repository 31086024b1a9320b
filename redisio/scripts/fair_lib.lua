-- Shared by the fair lock's scripts; redisio puts it after lib.lua in front
-- of each. Every fair script has the same first keys:
--   KEYS[1] the lock, KEYS[2] its queue LIST, KEYS[3] its deadlines ZSET,
--   KEYS[4] its unlock channel, the prefix of each waiter's own channel
--   (except fair_acquire, whose KEYS[4] is its acquire latch: it must not
--   call fair_wake_head or fair_wake_new_head),
-- and its last key is the places HASH warden_fair_places:{name}, passed to
-- the helpers below as places.
--
-- Two kinds of place share the queue. A place written the way Redisson
-- writes it has a deadline counted from the one ahead of it plus the
-- waiter's allowance; nobody refreshes it, and it lapses at that deadline.
-- A refreshed place (warden's waiters) is also in places, owner -> its
-- deadline: its engine pushes that deadline (and its score in the ZSET)
-- forward while it waits, so it lapses only once its engine stopped. A
-- refreshed place is never moved by another waiter's coming or going, and
-- its deadline is read from places (a Redisson script may have moved its
-- score meanwhile).

-- fair_time: v is a non-negative integer (a unix time in ms).
local function fair_time(v)
  return int(v) and string.sub(v, 1, 1) ~= '-'
end

-- fair_place: v is a place time in ms, or "0" for a place that is not
-- refreshed.
local function fair_place(v)
  return v == '0' or ms(v)
end

-- fair_deadline is owner's deadline (unix ms), or false when it has none:
-- its refreshed deadline, else its score.
local function fair_deadline(owner, places)
  local d = redis.call('hget', places, owner)
  if not d then d = redis.call('zscore', KEYS[3], owner) end
  if d then return tonumber(d) end
  return false
end

-- fair_forget_places deletes places once the queue is empty.
local function fair_forget_places(places)
  if redis.call('llen', KEYS[2]) == 0 then
    redis.call('del', places)
  end
end

-- fair_drop_stale takes out of the queue every waiter whose deadline passed
-- at now (or who has none), wherever it stands: it gave up or died. In a
-- queue of Redisson's places only, deadlines grow from head to tail, so
-- these are its stale heads, as in Redisson. The deadlines of the others
-- stay as they are.
local function fair_drop_stale(now, places)
  local queue = redis.call('lrange', KEYS[2], 0, -1)
  if #queue == 0 then return end
  local refreshed = {}
  local flat = redis.call('hgetall', places)
  for i = 1, #flat, 2 do refreshed[flat[i]] = tonumber(flat[i + 1]) end
  local dropped = false
  for i = 1, #queue do
    local owner = queue[i]
    local d = refreshed[owner]
    if not d then
      d = redis.call('zscore', KEYS[3], owner)
      if d then d = tonumber(d) end
    end
    if not d or d <= now then
      redis.call('zrem', KEYS[3], owner)
      redis.call('hdel', places, owner)
      redis.call('lrem', KEYS[2], 0, owner)
      dropped = true
    end
  end
  if dropped then fair_forget_places(places) end
end

-- fair_refresh gives owner's place the deadline now + place (ms) and
-- records it as refreshed, keeping places alive at least that long.
local function fair_refresh(owner, now, place, places)
  local deadline = string.format('%.0f', now + tonumber(place))
  redis.call('zadd', KEYS[3], deadline, owner)
  redis.call('hset', places, owner, deadline)
  if redis.call('pttl', places) < tonumber(place) then
    redis.call('pexpire', places, place)
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

-- fair_leave takes owner out of the queue, its deadline out of the ZSET and
-- its refreshed deadline out of places. When owner's place was not
-- refreshed, shift(i, queue) gives, once owner is found at position i, how
-- many ms the deadline of every later place that is not refreshed moves
-- forward. A refreshed place moves nobody: the deadlines written behind it
-- were counted from its deadline, not from an allowance of its. It returns
-- whether owner was queued.
local function fair_leave(owner, shift, places)
  local queue = redis.call('lrange', KEYS[2], 0, -1)
  if #queue == 0 then
    redis.call('zrem', KEYS[3], owner)
    return false
  end
  local refreshed = redis.call('hexists', places, owner) == 1
  local found, by = 0, 0
  for i = 1, #queue do
    if found == 0 then
      if queue[i] == owner then
        found = i
        if not refreshed then by = shift(i, queue) end
      end
    elseif queue[i] ~= owner and by > 0 and redis.call('hexists', places, queue[i]) == 0 then
      redis.call('zincrby', KEYS[3], string.format('%.0f', -by), queue[i])
    end
  end
  redis.call('zrem', KEYS[3], owner)
  redis.call('hdel', places, owner)
  if found > 0 then
    redis.call('lrem', KEYS[2], 0, owner)
  end
  fair_forget_places(places)
  return found > 0
end
