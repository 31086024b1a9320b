-- Set a semaphore's available permits, whether or not it exists, keeping
-- its TTL if it has one.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  channel redisson_sc:{name}
-- KEYS[3]  total warden_permits_total:{name}: STRING, the permits set
-- ARGV[1]  permits (integer, 0 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
--
-- Reply: the count there was (0 when absent). permits also becomes the
-- total recorded beside it, with the semaphore's TTL. The new count is published
-- when it is above 0 (waiters may take it). Errors before any write when an
-- argument is malformed or the value is not an integer.
if not whole(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end

local v = redis.call('get', KEYS[1])
if v and not int(v) then
  return redis.error_reply('ERR warden: semaphore value is not an integer')
end
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 then
  redis.call('set', KEYS[1], ARGV[1], 'px', ttl)
  redis.call('set', KEYS[3], ARGV[1], 'px', ttl)
else
  redis.call('set', KEYS[1], ARGV[1])
  redis.call('set', KEYS[3], ARGV[1])
end
if tonumber(ARGV[1]) > 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
return tonumber(v or '0')
