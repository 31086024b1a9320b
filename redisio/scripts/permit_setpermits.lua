-- Set a permit-expirable semaphore's number of permits, held ones included
-- (Redisson's setPermits): the available count moves by the difference.
--
-- KEYS[1]  semaphore (the name): STRING, available permits
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- ARGV[1]  permits (integer, 0 .. 2^53)
-- ARGV[2]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[3]  publish command: "publish" or "spublish"
--
-- Reclaims expired permits first. A missing semaphore is set to ARGV[1]
-- (held permits, if any, are not counted then, as in Redisson). Reply: the
-- available count after; published when it changed and is above 0 (Redisson
-- publishes the total, which wakes waiters the available count may not
-- serve). Errors before any write when an argument is malformed or the
-- value is not an integer.
if not whole(ARGV[1]) then return redis.error_reply('ERR warden: invalid permits') end
if not ms(ARGV[2]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[3]) then return redis.error_reply('ERR warden: invalid publish command') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
local want = tonumber(ARGV[1])
local avail = redis.call('get', KEYS[1])
local after
if not avail then
  redis.call('set', KEYS[1], ARGV[1])
  after = want
else
  local total = tonumber(avail) + redis.call('zcard', KEYS[2])
  if total == want then return tonumber(avail) end
  after = redis.call('incrby', KEYS[1], dec(want - total))
end
if after > 0 then redis.call(ARGV[3], KEYS[3], dec(after)) end
return after
