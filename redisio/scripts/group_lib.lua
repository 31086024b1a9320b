-- Shared by the group lock's scripts (Redisson's RedissonFasterMultiLock:
-- many values of one group locked all-or-none in one hash); redisio puts
-- it after lib.lua in front of each. It has no KEYS, ARGV or reply of its
-- own.
--
-- The group's hash holds, for each value v locked by owner o (Redisson's
-- layout, which Redisson clients read and write alike):
--   v                   -> o, the value's holder
--   v:o:expire_time     -> when o's hold of v ends, unix ms (Redis's clock)
--   v:o:lock_count      -> o's hold count of v
-- A value is held while its holder's expire_time is in the future; the
-- hash's own TTL is raised to outlive every hold. A value never contains
-- ':' (Redisson's values are Base64 hashes), so a value's field is never
-- another's expire_time or lock_count field.

-- group_now is Redis's clock in unix ms.
local function group_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- group_values checks ARGV[first..] (at least one): each a non-empty
-- value without ':'. It returns an error reply, or nil.
local function group_values(first)
  if #ARGV < first then return redis.error_reply('ERR warden: no values') end
  for i = first, #ARGV do
    if not text(ARGV[i]) or string.find(ARGV[i], ':', 1, true) then
      return redis.error_reply('ERR warden: invalid value')
    end
  end
  return nil
end

-- group_holds is owner's hold count of v when owner holds it at now (its
-- holder, with an expire_time not before now), else false.
local function group_holds(key, v, owner, now)
  if redis.call('hget', key, v) ~= owner then return false end
  local got = redis.call('hmget', key, v .. ':' .. owner .. ':expire_time', v .. ':' .. owner .. ':lock_count')
  if not got[1] or tonumber(got[1]) == nil or tonumber(got[1]) < now then return false end
  return tonumber(got[2]) or 0
end

-- group_holder is v's holder and when its hold ends (unix ms; nil when
-- the holder has no expire_time that is a number), or false when v has
-- no holder.
local function group_holder(key, v)
  local holder = redis.call('hget', key, v)
  if not holder then return false end
  return holder, tonumber(redis.call('hget', key, v .. ':' .. holder .. ':expire_time'))
end

-- group_drop deletes v's holder field and holder's two fields of v.
local function group_drop(key, v, holder)
  redis.call('hdel', key, v, v .. ':' .. holder .. ':expire_time', v .. ':' .. holder .. ':lock_count')
end

-- group_raise raises the hash's TTL to ttl ms when it is shorter (or has
-- none): it must outlive every hold in it, another owner's longer ones
-- included.
local function group_raise(key, ttl)
  local left = redis.call('pttl', key)
  if left < tonumber(ttl) then redis.call('pexpire', key, ttl) end
end
