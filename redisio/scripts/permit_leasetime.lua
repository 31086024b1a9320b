-- Read what is left of a held permit's lease (Redisson's getLeaseTime),
-- after reclaiming expired permits (a write).
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
--
-- Reply: the ms left (at least 1); -1 the permit never expires; -2 it is
-- not held (unknown, released or expired).
if not permitid(ARGV[1]) then return redis.error_reply('ERR warden: invalid permit id') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
local at = redis.call('zscore', KEYS[2], ARGV[1])
if not at then return -2 end
at = tonumber(at)
if at >= NO_EXPIRY then return -1 end
return at - tonumber(ARGV[2])
