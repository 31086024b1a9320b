-- Add (or, with a negative delta, remove) permits of a permit-expirable
-- semaphore, exactly once per request ID. The count may go negative.
--
-- KEYS[1]  semaphore (the name): STRING, available permits (absent = 0)
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  operation latch warden_latch:{name}:<requestID>
-- ARGV[1]  delta (integer, -2^53 .. 2^53)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reclaims expired permits first. Reply: the new count, published when it
-- is above 0 and kept in the latch as "added:<count>"; a repeated request
-- ID returns that first result and changes nothing.
if not int(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

local again, first = replayed(KEYS[4], 'added')
if again then return first end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
local after = redis.call('incrby', KEYS[1], ARGV[1])
if after > 0 then redis.call(ARGV[3], KEYS[3], dec(after)) end
record(KEYS[4], 'added', after, ARGV[4])
return after
