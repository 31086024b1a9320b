-- Shared by the fair lock's scripts; redisio puts it after lib.lua in front
-- of each. Every fair script has the same first keys:
--   KEYS[1] the lock, KEYS[2] its queue LIST, KEYS[3] its deadlines ZSET,
--   KEYS[4] its unlock channel, the prefix of each waiter's own channel
--   (except fair_acquire, whose KEYS[4] is its acquire latch: it must not
--   call fair_wake_head or fair_wake_new_head),
-- and its last key is the places HASH warden_fair_places:{name}, passed to
-- the helpers below as places.
--
-- Two kinds of place share the queue, and every deadline in the ZSET is
-- written as Redisson writes it: the previous tail's deadline (or now +
-- the lock's PTTL) plus the waiter's allowance, so the deadlines increase
-- in queue order and Redisson's unmodified scripts (which drop heads whose
-- deadline passed and, on acquire, move every deadline behind the taker
-- down by its allowance) keep working on them.
--
-- A Redisson client's place lapses at its deadline. A warden waiter's
-- place (a refreshed one) is also in places, owner -> its liveness
-- deadline: its engine moves that to now + its place time at each attempt
-- while it waits, and warden's scripts drop it once that passed, wherever
-- it stands (a dead warden waiter gives its place up within one place
-- time). So that Redisson's scripts never drop a live one, each refresh
-- also keeps its deadline far enough ahead (fair_protect): at least its
-- place time past now, and, behind another place, at least its place time
-- plus the widest allowance ahead of it (as read off the deadlines of the
-- Redisson places ahead; the head's cannot be read and counts as
-- fair_redisson_allowance) past the deadline of the place ahead; when it
-- is moved up, every deadline behind it moves up as much, so the order
-- holds.

-- fair_time: v is a non-negative integer (a unix time in ms).
local function fair_time(v)
  return int(v) and string.sub(v, 1, 1) ~= '-'
end

-- fair_place: v is a place time in ms, or "0" for a place that is not
-- refreshed.
local function fair_place(v)
  return v == '0' or ms(v)
end

-- fair_deadline is when owner's place lapses for warden (unix ms), or false
-- when it has none: a warden waiter's liveness deadline, else its score.
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

-- fair_drop_stale takes out of the queue every waiter whose place lapsed at
-- now (fair_deadline; or that has none), wherever it stands: it gave up or
-- died. Deadlines grow from head to tail, so the Redisson places among
-- these are stale heads, or behind them, as in Redisson; a warden waiter's
-- lapses by its liveness. The deadlines of the others stay as they are.
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

-- fair_redisson_allowance is, in ms, what fair_protect counts as the
-- allowance of a Redisson place it cannot read one off (the head's):
-- Redisson's lock() allowance, 5 minutes.
local fair_redisson_allowance = 300000

-- fair_max_keep is the longest TTL in ms fair_keep_places sets, counted
-- from now to 2^53 ms: a deadline Redisson wrote for a wait of
-- Long.MAX_VALUE is near 2^63, past what PEXPIRE accepts.
local function fair_max_keep(now)
  return math.max(1, 9007199254740992 - now)
end

-- fair_keep_places keeps places alive at least as long as every deadline
-- in the queue, plus place (ms), up to fair_max_keep: a warden waiter's
-- record outlives its deadline, so warden's scripts never take a dead
-- warden waiter's place for a Redisson client's.
local function fair_keep_places(now, place, places)
  local last = redis.call('zrange', KEYS[3], -1, -1, 'withscores')
  local keep = place
  if last[2] then keep = math.max(keep, tonumber(last[2]) - now + place) end
  keep = math.min(keep, fair_max_keep(now))
  if redis.call('pttl', places) < keep then
    redis.call('pexpire', places, string.format('%.0f', keep))
  end
end

-- fair_alive records owner's place as a refreshed one, alive until now +
-- place (ms).
local function fair_alive(owner, now, place, places)
  redis.call('hset', places, owner, string.format('%.0f', now + place))
  fair_keep_places(now, place, places)
end

-- fair_protect moves owner's deadline up, if need be, to what keeps a live
-- warden waiter's place from lapsing for Redisson's scripts until its next
-- refresh (see the top of this file) plus one place time, and every
-- deadline behind it up as much. place is the owner's place time in ms.
local function fair_protect(owner, now, place, places)
  local queue = redis.call('lrange', KEYS[2], 0, -1)
  local scores, k = {}, 0
  for i = 1, #queue do
    local d = redis.call('zscore', KEYS[3], queue[i])
    if d then scores[i] = tonumber(d) end
    if queue[i] == owner then
      k = i
      break
    end
  end
  if k == 0 or not scores[k] then return end
  local need = now + place
  if k > 1 and scores[k - 1] then
    local widest = fair_redisson_allowance
    for i = 2, k - 1 do
      if scores[i] and scores[i - 1] and redis.call('hexists', places, queue[i]) == 0 then
        widest = math.max(widest, scores[i] - scores[i - 1])
      end
    end
    need = math.max(need, scores[k - 1] + place + widest)
  end
  if scores[k] >= need then return end
  -- A place time more than it needs, so that the refreshes that follow
  -- (each needs about a third of a place time more, once the allowance
  -- it joined with is used up) write nothing until it is used up too.
  local by = string.format('%.0f', need - scores[k] + place)
  for i = k, #queue do
    if redis.call('zscore', KEYS[3], queue[i]) then
      redis.call('zincrby', KEYS[3], by, queue[i])
    end
  end
end

-- fair_refresh is a warden waiter's refresh at its attempt: alive until
-- now + place (ms), its deadline protected.
local function fair_refresh(owner, now, place, places)
  place = tonumber(place)
  fair_protect(owner, now, place, places)
  fair_alive(owner, now, place, places)
end

-- fair_gap is how far the deadline of the place at i (of queue) is past
-- the one ahead of it, or, for the head, past the lock's expiry (now when
-- it is free): the allowance it queued with, for a place written as
-- Redisson writes them (each deadline is its predecessor's plus its own
-- allowance, and every move moves a whole tail of the queue). Never
-- negative; 0 when a deadline is missing.
local function fair_gap(i, queue, now)
  local mine = redis.call('zscore', KEYS[3], queue[i])
  local prev
  if i > 1 then
    prev = redis.call('zscore', KEYS[3], queue[i - 1])
  else
    local pttl = redis.call('pttl', KEYS[1])
    if pttl < 0 then pttl = 0 end
    prev = now + pttl
  end
  if not (mine and prev) then return 0 end
  return math.max(0, tonumber(mine) - tonumber(prev))
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
-- its refreshed deadline out of places. shift(i, queue, refreshed) gives,
-- once owner is found at position i (refreshed: its place was a warden
-- waiter's), how many ms every deadline behind it moves down. It returns
-- whether owner was queued.
local function fair_leave(owner, shift, places)
  local queue = redis.call('lrange', KEYS[2], 0, -1)
  if #queue == 0 then
    redis.call('zrem', KEYS[3], owner)
    redis.call('hdel', places, owner)
    return false
  end
  local refreshed = redis.call('hexists', places, owner) == 1
  local found, by = 0, 0
  for i = 1, #queue do
    if found == 0 then
      if queue[i] == owner then
        found = i
        by = shift(i, queue, refreshed)
      end
    elseif queue[i] ~= owner and by > 0 and redis.call('zscore', KEYS[3], queue[i]) then
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
