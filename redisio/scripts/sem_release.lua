-- Give permits to a semaphore (no prior acquire needed), exactly once per
-- request ID.
--
-- KEYS[1]  semaphore (the name): STRING, available permits (absent = 0)
-- KEYS[2]  channel redisson_sc:{name}
-- KEYS[3]  operation latch warden_latch:{name}:<requestID>
-- KEYS[4]  total warden_permits_total:{name}: STRING, the permits set;
--          deleted when the release makes the semaphore anew (its total
--          belonged to a semaphore deleted since)
-- ARGV[1]  permits to give (integer, 1 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
-- ARGV[3]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: the new available count, which is also published on the channel
-- and kept in the latch as "released:<count>"; a repeated request ID
-- returns that first result and changes nothing.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local again, first = replayed(KEYS[3], 'released')
if again then return first end

if redis.call('exists', KEYS[1]) == 0 then
  redis.call('del', KEYS[4])
end
local after = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], dec(after))
record(KEYS[3], 'released', after, ARGV[3])
return after
