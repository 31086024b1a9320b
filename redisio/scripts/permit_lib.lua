-- Shared by the permit_*.lua scripts of the permit-expirable semaphore:
-- redisio puts this file (after lib.lua) in front of each of them. It has no
-- KEYS, ARGV or reply of its own.
--
-- Layout (Redisson's RedissonPermitExpirableSemaphore):
--   name                STRING, available permits (absent = 0)
--   {name}:timeout      ZSET, permit ID (its 16 raw bytes, as Redisson stores
--                       it) -> lease end in unix ms; 922337203685477 (Redisson's
--                       nonExpirableTimeout) = never expires
--   redisson_sc:{name}  channel, message = the new available count

local NO_EXPIRY = 922337203685477
local RECLAIM_CHUNK = 1000

-- permitid: v is a permit ID as stored, 16 raw bytes.
local function permitid(v)
  return type(v) == 'string' and string.len(v) == 16
end

-- permit_ids gathers the permit IDs of a script that takes one in ARGV[1]
-- and more in ARGV[5..], each with its spent marker in KEYS[4..], in
-- order. It checks each is a permit ID and, when distinct, that none
-- comes twice. It returns the IDs, or nil and an error reply.
local function permit_ids(distinct)
  local ids = {ARGV[1]}
  for i = 5, #ARGV do ids[#ids + 1] = ARGV[i] end
  if #KEYS ~= #ids + 3 then return nil, redis.error_reply('ERR warden: one spent marker per permit id') end
  local seen = {}
  for _, id in ipairs(ids) do
    if not permitid(id) then return nil, redis.error_reply('ERR warden: invalid permit id') end
    if distinct and seen[id] then return nil, redis.error_reply('ERR warden: duplicate permit id') end
    seen[id] = true
  end
  return ids
end

-- leasems: v is a lease in whole ms (1 .. 2^53), or '0' for never expires.
local function leasems(v)
  return v == '0' or ms(v)
end

-- expiry is the score of a permit leased at now (ms) for lease (ms, '0' =
-- never expires). A lease ending beyond Redisson's never-expires score is
-- stored as never expiring.
local function expiry(lease, now)
  if lease == '0' then return NO_EXPIRY end
  local e = tonumber(now) + tonumber(lease)
  if e > NO_EXPIRY then return NO_EXPIRY end
  return e
end

-- counted: the semaphore's value is absent or an integer INCRBY and DECRBY
-- take (see int: no leading zeros, within 2^53), so they cannot fail half
-- way through a script.
local function counted(key)
  local v = redis.call('get', key)
  return v == false or int(v)
end

-- available is the semaphore's count, 0 when absent.
local function available(key)
  return tonumber(redis.call('get', key) or '0')
end

-- reclaim gives back every permit whose lease ended at or before now (ms),
-- in chunks (unpack has a stack limit), and publishes the new count when it
-- is above 0.
local function reclaim(name, timeout, channel, now, pub)
  local total = 0
  while true do
    local ids = redis.call('zrangebyscore', timeout, '-inf', now, 'limit', 0, RECLAIM_CHUNK)
    if #ids == 0 then break end
    redis.call('zrem', timeout, unpack(ids))
    total = total + #ids
    if #ids < RECLAIM_CHUNK then break end
  end
  if total > 0 then
    local after = redis.call('incrby', name, total)
    if after > 0 then redis.call(pub, channel, dec(after)) end
  end
end
