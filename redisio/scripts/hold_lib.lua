-- Shared by the scripts that acquire or undo holds of a lock hash (field ->
-- hold count) with an acquire latch key: the fair and read/write locks.
-- redisio puts it after lib.lua in front of each. It has no KEYS, ARGV or
-- reply of its own. (The reentrant and fenced locks keep their acquire
-- record in the lock's hash: see acquire.lua.)

-- hold_replayed is field's hold count when request reqID is the one the
-- acquire latch recorded and field still holds the lock (a repeated
-- request: its result, no change); false otherwise.
local function hold_replayed(lock, latch, field, reqID)
  if redis.call('get', latch) ~= reqID then return false end
  local held = redis.call('hget', lock, field)
  if held then return tonumber(held) end
  return false
end

-- hold_take adds one hold of field, sets the lock's TTL to lease and
-- records reqID in the acquire latch for latchTTL. It returns the new count.
local function hold_take(lock, latch, field, lease, reqID, latchTTL)
  local n = redis.call('hincrby', lock, field, 1)
  redis.call('pexpire', lock, lease)
  redis.call('set', latch, reqID, 'px', latchTTL)
  return n
end

-- hold_undo takes one hold of field off the lock; at 0 the field goes, and
-- a lock left without fields is deleted. It returns whether it deleted the
-- lock (its waiters are then to be woken).
local function hold_undo(lock, field)
  if redis.call('hincrby', lock, field, -1) > 0 then return false end
  redis.call('hdel', lock, field)
  if redis.call('hlen', lock) > 0 then return false end
  redis.call('del', lock)
  return true
end
