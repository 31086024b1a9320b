-- Give permits to a semaphore only if it exists (Redisson's
-- releaseIfExists), exactly once per request ID.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  channel redisson_sc:{name}
-- KEYS[3]  operation latch warden_latch:{name}:<requestID>
-- ARGV[1]  permits to give (integer, 1 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
-- ARGV[3]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reply: {1, new count} given (the count published on the channel and kept
-- in the latch as "released-if:<count>"; a repeated request ID returns that
-- first result and changes nothing); {0, 0} the semaphore does not exist
-- (nothing written). Errors before any write when an argument is malformed
-- or the value is not an integer.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid latch ttl') end

local again, first = replayed(KEYS[3], 'released-if')
if again then
  if type(first) ~= 'number' then return first end
  return {1, first}
end

local v = redis.call('get', KEYS[1])
if not v then return {0, 0} end
if not int(v) then
  return redis.error_reply('ERR warden: semaphore value is not an integer')
end
local after = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], dec(after))
record(KEYS[3], 'released-if', after, ARGV[3])
return {1, after}
