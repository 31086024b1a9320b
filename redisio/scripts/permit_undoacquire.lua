-- Undo a permit acquire whose reply was uncertain: give the permit back if
-- it is held, and mark its ID spent so that an acquire with it that reaches
-- Redis later takes nothing.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  spent marker warden_latch:{name}:permit:<permitID hex>
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reclaims expired permits first. Reply: 1 the permit was held and is given
-- back (the new count published); 0 it was not held.
if not permitid(ARGV[1]) then return redis.error_reply('ERR warden: invalid permit id') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
redis.call('set', KEYS[4], 'spent', 'px', ARGV[4])
if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then return 0 end
local after = redis.call('incr', KEYS[1])
redis.call(ARGV[3], KEYS[3], dec(after))
return 1
