-- Release one held permit, exactly once per request ID.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  operation latch warden_latch:{name}:<requestID>
-- KEYS[5]  spent marker warden_latch:{name}:permit:<permitID hex>
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
--
-- Reclaims expired permits first (so an expired permit is not released).
-- Reply: 1 released (the new count published); 0 unknown or expired. The
-- result is kept in the latch as "permit-released:<0|1>"; a repeated
-- request ID returns it and changes nothing. The permit ID is marked spent.
if not permitid(ARGV[1]) then return redis.error_reply('ERR warden: invalid permit id') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

local again, first = replayed(KEYS[4], 'permit-released')
if again then return first end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
local released = 0
if redis.call('zrem', KEYS[2], ARGV[1]) == 1 then
  released = 1
  local after = redis.call('incr', KEYS[1])
  redis.call(ARGV[3], KEYS[3], dec(after))
end
record(KEYS[4], 'permit-released', released, ARGV[4])
redis.call('set', KEYS[5], 'spent', 'px', ARGV[4])
return released
