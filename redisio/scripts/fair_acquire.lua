-- One attempt to acquire (or re-enter) a fair lock, exactly once per
-- request ID.
--
-- KEYS[1]  lock hash (the lock's name): owner -> hold count
-- KEYS[2]  waiter queue redisson_lock_queue:{name} (LIST of owners, FIFO)
-- KEYS[3]  waiter deadlines redisson_lock_timeout:{name} (ZSET owner ->
--          absolute deadline in unix ms)
-- KEYS[4]  acquire latch warden_acquire_latch:{name}:<owner>
-- KEYS[5]  gave-up marker warden_gaveup:{name}:<owner>: the request ID of
--          a waiter of owner's that gave up its place
-- KEYS[6]  refreshed places warden_fair_places:{name} (HASH owner ->
--          absolute deadline in unix ms; see fair_lib.lua)
-- ARGV[1]  owner field ("<clientID>:<n>")
-- ARGV[2]  lease in ms (integer, 1 .. 2^53)
-- ARGV[3]  request ID (non-empty)
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
-- ARGV[5]  wait-time allowance in ms (integer, 1 .. 2^53)
-- ARGV[6]  now, unix ms (integer, 0 .. 2^53)
-- ARGV[7]  enqueue: "1" queue the owner when refused, "0" never touch the
--          queue
-- ARGV[8]  place time in ms (integer, 1 .. 2^53): the owner is a warden
--          waiter whose place is a refreshed one: alive until now +
--          ARGV[8] when it joins and again at every attempt of its while it
--          is queued, its deadline kept ahead by the join and those
--          attempts (fair_protect, see fair_lib.lua). "0": a place that is
--          never refreshed. Either way the deadline it joins with is
--          Redisson's (the previous tail's deadline, or now + the lock's
--          PTTL, plus the allowance), a refreshed place's then moved up as
--          far as fair_protect needs.
-- ARGV[9]  (optional) "1" for a non-reentrant fair lock: the owner that
--          holds it is refused instead of entering again
--
-- Reply: {1, holdCount} acquired (or the same request seen again: its first
-- result). {0, ttl} refused, ttl in ms:
--   not enqueued, lock held:            the lock's PTTL (-1 without TTL)
--   not enqueued, lock free:            until the queue head's deadline (>= 1)
--   already queued:                     the lock's PTTL (>= 0; -1 without
--                                       TTL), or until the head's deadline
--                                       (>= 1) when the lock is free
--   newly queued:                       until the previous tail's deadline,
--                                       or the lock's PTTL (-1 without TTL)
-- {2, holdCount}: a non-reentrant fair lock that the owner already holds
-- (Redisson's NON_REENTRANT_REACQUIRE): the queue is left as it is.
-- Queued waiters whose place lapsed (fair_drop_stale) are dropped first.
-- When the owner takes the lock from the head of the queue, every deadline
-- behind it moves down: by the allowance (as Redisson's acquire does) for
-- a place that is not refreshed; for a warden waiter's, by as much as puts
-- the next deadline at its own allowance past the new lease's end (its
-- deadline may have been moved up by its refreshes), never up.
-- Errors before any write when an argument is malformed.
if not text(ARGV[1]) then return redis.error_reply('ERR warden: empty owner') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not text(ARGV[3]) then return redis.error_reply('ERR warden: empty request id') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end
if not ms(ARGV[5]) then return redis.error_reply('ERR warden: invalid allowance') end
if not fair_time(ARGV[6]) then return redis.error_reply('ERR warden: invalid now') end
if ARGV[7] ~= '0' and ARGV[7] ~= '1' then return redis.error_reply('ERR warden: invalid enqueue flag') end
if not fair_place(ARGV[8]) then return redis.error_reply('ERR warden: invalid place time') end
if ARGV[9] and ARGV[9] ~= '1' then return redis.error_reply('ERR warden: invalid non-reentrant flag') end

local owner = ARGV[1]
local now = tonumber(ARGV[6])

-- A repeated request whose first run acquired: its first result, no change.
local held = hold_replayed(KEYS[1], KEYS[4], owner, ARGV[3])
if held then return {1, held} end

-- An attempt of a waiter that already gave up its place (it was in flight
-- when the waiter left): refused, and the owner is not queued again.
if redis.call('get', KEYS[5]) == ARGV[3] then
  return {0, redis.call('pttl', KEYS[1])}
end

-- Drop stale places: a waiter whose deadline passed (or that has none)
-- gave up or died. The deadlines behind it stay as they are.
fair_drop_stale(now, KEYS[6])

local head = redis.call('lindex', KEYS[2], 0)
local free = redis.call('exists', KEYS[1]) == 0 and (not head or head == owner)
if not free and ARGV[9] == '1' then
  local mine = redis.call('hget', KEYS[1], owner)
  if mine then return {2, tonumber(mine)} end
end
if free or redis.call('hexists', KEYS[1], owner) == 1 then
  if free then
    -- Leave the queue; everyone behind waits less.
    fair_leave(owner, function(i, queue, refreshed)
      if not refreshed then return tonumber(ARGV[5]) end
      local mine = redis.call('zscore', KEYS[3], owner)
      if not mine then return 0 end
      return math.max(0, tonumber(mine) - now - tonumber(ARGV[2]))
    end, KEYS[6])
  end
  return {1, hold_take(KEYS[1], KEYS[4], owner, ARGV[2], ARGV[3], ARGV[4])}
end

-- Refused. pttl is -2 when the lock is free but another waiter is first in
-- line: then the bound is that waiter's deadline.
local pttl = redis.call('pttl', KEYS[1])
local function untilHead()
  local d = fair_deadline(head, KEYS[6]) - now
  if d < 1 then d = 1 end
  return d
end

if ARGV[7] == '0' then
  if pttl == -2 then return {0, untilHead()} end
  return {0, pttl}
end

if redis.call('zscore', KEYS[3], owner) then
  -- Already queued: a refreshed place stays alive, its deadline ahead.
  if ARGV[8] ~= '0' then fair_refresh(owner, now, ARGV[8], KEYS[6]) end
  if pttl == -2 then return {0, untilHead()} end
  return {0, pttl}
end

local tail = redis.call('lindex', KEYS[2], -1)
local tailDeadline = false
if tail and tail ~= owner then
  tailDeadline = redis.call('zscore', KEYS[3], tail)
end
local base, reply
if tailDeadline then
  base = tonumber(tailDeadline)
  reply = base - now
  if reply < 1 then reply = 1 end
elseif pttl == -2 then
  -- Lock free, a waiter ahead: only reachable when the tail lost its
  -- deadline; queue behind the head's.
  reply = untilHead()
  base = now + reply
else
  local ttl = pttl
  if ttl < 0 then ttl = 0 end
  base = now + ttl
  reply = pttl
end
redis.call('lrem', KEYS[2], 0, owner)
redis.call('rpush', KEYS[2], owner)
redis.call('zadd', KEYS[3], string.format('%.0f', base + tonumber(ARGV[5])), owner)
if ARGV[8] == '0' then
  redis.call('hdel', KEYS[6], owner)
else
  -- Protected from the start, as at each later attempt: the new place is
  -- the tail, so only its own deadline may move up.
  fair_refresh(owner, now, ARGV[8], KEYS[6])
end
return {0, reply}
