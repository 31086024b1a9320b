-- Count a permit-expirable semaphore's permits, after reclaiming expired
-- ones (a write): what Redisson's availablePermits, acquiredPermits and
-- getPermits read.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- ARGV[1]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
--
-- Reply: {exists (1 or 0), available (0 when absent), held permits}.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
local exists = redis.call('exists', KEYS[1])
return {exists, available(KEYS[1]), redis.call('zcard', KEYS[2])}
