-- Acquire one permit of a permit-expirable semaphore under a caller-chosen
-- permit ID. Idempotent by that ID: an ID already held is acquired again
-- without taking another permit.
--
-- KEYS[1]  semaphore (the name): STRING, available permits (absent = 0)
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  spent marker warden_latch:{name}:permit:<permitID hex>
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  lease in ms (integer, 1 .. 2^53), or 0: never expires
-- ARGV[3]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[4]  publish command: "publish" or "spublish"
--
-- Reclaims expired permits first. Reply: {1, available after, 0} acquired
-- (or already held); {0, available, wait} refused, wait = ms until the
-- earliest held permit's lease ends (0: none of them expires). Errors before
-- any write on a malformed argument, a non-integer count, or a permit ID
-- already released or undone (spent).
if not permitid(ARGV[1]) then return redis.error_reply('ERR warden: invalid permit id') end
if not leasems(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end
if redis.call('exists', KEYS[4]) == 1 then return redis.error_reply('ERR warden: permit id already spent') end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])

local avail = available(KEYS[1])
if redis.call('zscore', KEYS[2], ARGV[1]) then return {1, avail, 0} end
if avail >= 1 then
  local after = redis.call('decr', KEYS[1])
  redis.call('zadd', KEYS[2], dec(expiry(ARGV[2], ARGV[3])), ARGV[1])
  -- A semaphore with a TTL (set by Redisson) takes its permits with it.
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return {1, after, 0}
end

local wait = 0
local head = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if head[2] then
  local at = tonumber(head[2])
  if at < NO_EXPIRY then
    wait = at - tonumber(ARGV[3])
    if wait < 1 then wait = 1 end
  end
end
return {0, avail, wait}
