-- Release several held permits at once, all or none (Redisson's
-- tryRelease(List)), exactly once per request ID.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  operation latch warden_latch:{name}:<requestID>
-- KEYS[5..] spent markers warden_latch:{name}:permit:<permitID hex>, one
--          per permit ID, in ARGV's order
-- ARGV[1]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[2]  publish command: "publish" or "spublish"
-- ARGV[3]  latch TTL in ms (integer, 1 .. 2^53)
-- ARGV[4..] permit IDs (16 raw bytes each, at least one, no duplicates)
--
-- When any of the permits is not held (unknown, released, or its lease
-- ended), none is released: reply 0. Otherwise expired permits are
-- reclaimed, the given ones released, the new count published, and the
-- reply is how many were released. The result is kept in the latch as
-- "permits-released:<n>"; a repeated request ID returns it and changes
-- nothing. The permit IDs are marked spent either way.
if not ms(ARGV[1]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[2]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid latch ttl') end
if #ARGV < 4 then return redis.error_reply('ERR warden: no permit ids') end
if #KEYS ~= #ARGV + 1 then return redis.error_reply('ERR warden: one spent marker per permit id') end
local seen = {}
for i = 4, #ARGV do
  if not permitid(ARGV[i]) then return redis.error_reply('ERR warden: invalid permit id') end
  if seen[ARGV[i]] then return redis.error_reply('ERR warden: duplicate permit id') end
  seen[ARGV[i]] = true
end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

local again, first = replayed(KEYS[4], 'permits-released')
if again then return first end

local now = tonumber(ARGV[1])
local all = true
for i = 4, #ARGV do
  local at = redis.call('zscore', KEYS[2], ARGV[i])
  if not at or tonumber(at) <= now then
    all = false
    break
  end
end

local released = 0
if all then
  reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
  for i = 4, #ARGV do
    released = released + redis.call('zrem', KEYS[2], ARGV[i])
  end
  local after = redis.call('incrby', KEYS[1], released)
  redis.call(ARGV[2], KEYS[3], dec(after))
end
record(KEYS[4], 'permits-released', released, ARGV[3])
for i = 5, #KEYS do
  redis.call('set', KEYS[i], 'spent', 'px', ARGV[3])
end
return released
