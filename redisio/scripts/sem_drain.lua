-- Take every available permit: set the count to 0, keeping the semaphore's
-- TTL if it has one (Redisson's drainPermits drops it; a semaphore set with
-- a TTL would then live on, drained, for ever).
--
-- KEYS[1]  semaphore (the name): STRING, available permits
--
-- Reply: the count there was (0 when absent, nothing written then; a
-- negative count is returned as it was and becomes 0, as Redisson's
-- drainPermits does). Nothing is published: no permit became available.
local v = redis.call('get', KEYS[1])
if not v then return 0 end
if not int(v) then
  return redis.error_reply('ERR warden: semaphore value is not an integer')
end
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 then
  redis.call('set', KEYS[1], '0', 'px', ttl)
else
  redis.call('set', KEYS[1], '0')
end
return tonumber(v)
