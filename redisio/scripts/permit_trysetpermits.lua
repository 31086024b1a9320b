-- Set a permit-expirable semaphore's permits if, and only if, it does not
-- exist yet.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- ARGV[1]  permits (integer, 0 .. 2^53)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
--
-- Reclaims expired permits first. Reply: 1 set (the count published); 0 it
-- already existed.
if not whole(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[3], KEYS[3], ARGV[1])
return 1
