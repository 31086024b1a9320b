-- Set a held permit's lease anew, counted from now.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  lease in ms (integer, 1 .. 2^53), or 0: never expires
-- ARGV[3]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[4]  publish command: "publish" or "spublish"
--
-- Reclaims expired permits first. Reply: 1 updated; 0 the permit is not
-- held (unknown, released or expired).
if not permitid(ARGV[1]) then return redis.error_reply('ERR warden: invalid permit id') end
if not leasems(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])
if not redis.call('zscore', KEYS[2], ARGV[1]) then return 0 end
redis.call('zadd', KEYS[2], dec(expiry(ARGV[2], ARGV[3])), ARGV[1])
return 1
