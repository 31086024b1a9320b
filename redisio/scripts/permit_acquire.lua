-- Acquire permits of a permit-expirable semaphore under caller-chosen permit
-- IDs, all or none (one permit per ID). Idempotent by those IDs: IDs already
-- held are acquired again without taking more permits.
--
-- KEYS[1]  semaphore (the name): STRING, available permits (absent = 0)
-- KEYS[2]  held permits {name}:timeout: ZSET permit ID -> lease end ms
-- KEYS[3]  channel redisson_sc:{name}
-- KEYS[4]  spent marker warden_latch:{name}:permit:<permitID hex>
-- KEYS[5..] the spent markers of ARGV[5..], in order
-- ARGV[1]  permit ID (16 raw bytes)
-- ARGV[2]  lease in ms (integer, 1 .. 2^53), or 0: never expires
-- ARGV[3]  now, unix ms (integer, 1 .. 2^53)
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5..] more permit IDs (16 raw bytes each, all distinct), when one
--          acquire takes several permits (Redisson's acquire(permits))
--
-- Reclaims expired permits first. Reply: {1, available after, 0} acquired
-- (or already held); {0, available, wait} refused, wait = ms until the
-- earliest held permit's lease ends (0: none of them expires). Errors before
-- any write on a malformed argument, a non-integer count, a permit ID
-- already released or undone (spent), or IDs only some of which are held.
if not leasems(ARGV[2]) then return redis.error_reply('ERR warden: invalid lease') end
if not ms(ARGV[3]) then return redis.error_reply('ERR warden: invalid now') end
if not pubcmd(ARGV[4]) then return redis.error_reply('ERR warden: invalid publish command') end
local ids, bad = permit_ids(true)
if not ids then return bad end
if not counted(KEYS[1]) then return redis.error_reply('ERR warden: semaphore value is not an integer') end
for i = 4, #KEYS do
  if redis.call('exists', KEYS[i]) == 1 then return redis.error_reply('ERR warden: permit id already spent') end
end

reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[3], ARGV[4])

local avail = available(KEYS[1])
local held = 0
for _, id in ipairs(ids) do
  if redis.call('zscore', KEYS[2], id) then held = held + 1 end
end
if held == #ids then return {1, avail, 0} end
if held > 0 then return redis.error_reply('ERR warden: permit ids partly held') end
if avail >= #ids then
  local after = redis.call('decrby', KEYS[1], #ids)
  local score = dec(expiry(ARGV[2], ARGV[3]))
  for _, id in ipairs(ids) do
    redis.call('zadd', KEYS[2], score, id)
  end
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
