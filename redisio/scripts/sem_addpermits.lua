-- Add (or, with a negative delta, remove) permits, exactly once per request
-- ID. The count may go negative.
--
-- KEYS[1]  semaphore (the name): STRING, available permits (absent = 0)
-- KEYS[2]  channel redisson_sc:{name}
-- KEYS[3]  operation latch warden_latch:{name}:<requestID>
-- KEYS[4]  total warden_permits_total:{name}: STRING, the permits set
-- ARGV[1]  delta (integer, -2^53 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
-- ARGV[3]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: the new count, published on the channel when it is above 0 and
-- kept in the latch as "added:<count>"; a repeated request ID returns that
-- first result and changes nothing. A total recorded beside an existing
-- semaphore moves by the delta too (its TTL kept); one left by a semaphore
-- that no longer exists is deleted (the total is then unknown). Errors
-- before any write when an argument is malformed, the value or the total
-- is not an integer.
if not int(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local again, first = replayed(KEYS[3], 'added')
if again then return first end

local v = redis.call('get', KEYS[1])
if v and not int(v) then
  return redis.error_reply('ERR warden: semaphore value is not an integer')
end
local total = redis.call('get', KEYS[4])
if total and v and not int(total) then
  return redis.error_reply('ERR warden: semaphore total is not an integer')
end

local after = redis.call('incrby', KEYS[1], ARGV[1])
if total and v then
  redis.call('incrby', KEYS[4], ARGV[1])
elseif total then
  redis.call('del', KEYS[4])
end
if after > 0 then redis.call(ARGV[2], KEYS[2], dec(after)) end
record(KEYS[3], 'added', after, ARGV[3])
return after
