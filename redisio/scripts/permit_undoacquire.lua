-- Undo a permit acquire whose reply was uncertain: give back the permits of
-- its IDs that are held, and mark every ID spent so that an acquire with
-- them that reaches Redis later takes nothing.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  spent marker warden_latch:{name}:permit:<permitID hex>
-- KEYS[5..] the spent markers of ARGV[5..], in order
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  latch TTL in ms (integer, 1 .. 2^53)
-- ARGV[5..] the acquire's other permit IDs (16 raw bytes each)
--
-- Reclaims expired permits first. Reply: 1 a permit was held and is given
-- back (the new count published); 0 none was held.
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not ms(ARGV[4]) then return redis.error_reply('ERR warden: invalid latch ttl') end
local ids, bad = permit_ids(false)
if not ids then return bad end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
for i = 4, #KEYS do
  redis.call('set', KEYS[i], 'spent', 'px', ARGV[4])
end
local removed = 0
for _, id in ipairs(ids) do
  removed = removed + redis.call('zrem', KEYS[2], id)
end
if removed == 0 then return 0 end
local after = redis.call('incrby', KEYS[1], removed)
redis.call(ARGV[3], KEYS[3], dec(after))
return 1
